"""Languages, exact inference and the masked diffusion reverse process.

Public names are re-exported here; see each module's docstring for the
statement of the paper it implements.
"""

from .validation import MASK
from .hmm import HMM
from .ngram import NGram, as_hmm
