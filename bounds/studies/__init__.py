"""mdmt.bounds.studies: bound curves and the step counts they imply (Theorems 4.2-4.4), the bound
atlas, and the SER/TER studies of policies beyond i.i.d. reveal steps."""
