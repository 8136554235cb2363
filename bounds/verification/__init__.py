"""mdmt.bounds.verification: the checks behind ``mdmt verify`` -- every link of the proofs and of
the layer beyond the paper as a family of rows, each side computed by a different code path
(independent references, brute-force enumeration) with derived rounding-error bounds."""
