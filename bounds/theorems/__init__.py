"""mdmt.bounds.theorems: the paper's lemmas and theorems as sympy statements, separators and
dependencies (Definitions B.4-B.5), the Theorem 4.4 bound, and how each derivation step is known
(proved, certified by ball arithmetic, or exact), with the rigorous number types behind it."""
