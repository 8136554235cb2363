"""Type aliases of mdmt's public API (annotations only: importing this module costs nothing at run time).

* ``Language`` -- an :class:`~mdmt.constructions.languages.hmm.HMM`, an
  :class:`~mdmt.constructions.languages.ngram.NGram` (Section 4.1 of the paper) or an
  :class:`~mdmt.constructions.languages.explicit.ExplicitLanguage` (a law listed on its support);
* ``RevealProbabilities`` -- pi = (p_1, .., p_N), the law of a position's reveal step (a schedule turned into
  numbers by :func:`~mdmt.constructions.reverse.schedules.reveal_probabilities`);
* ``Denoiser`` -- a callable from partially revealed sequences (n, L) (``MASK`` where masked) to the laws
  (n, L, V) of every position, the oracle denoiser's protocol (Section 3.2);
* ``Seed`` -- what :func:`~mdmt.runtime.validation.as_rng` accepts: an int, a ``numpy.random.Generator``,
  a ``SeedSequence`` or None;
* ``PathLike`` -- a path as a string or an ``os.PathLike``.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Callable, Union

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from .languages.explicit import ExplicitLanguage
    from .languages.hmm import HMM
    from .languages.ngram import NGram

Language = Union["HMM", "NGram", "ExplicitLanguage"]
RevealProbabilities = ArrayLike
Denoiser = Callable[[np.ndarray], np.ndarray]
Seed = Union[int, np.random.Generator, np.random.SeedSequence, None]
PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["ArrayLike", "Denoiser", "Language", "PathLike", "RevealProbabilities", "Seed"]
