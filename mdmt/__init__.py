"""mdmt: a verification toolkit for the theory of masked diffusion language models.

The package ``mdmt`` holds the command-line interface; the mathematics lives in
``bounds`` (theorem statements and bound curves), ``constructions`` (languages,
exact inference, the reverse process) and ``empirical`` (trained networks).
"""

__version__ = "0.1.0"
