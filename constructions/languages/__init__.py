"""Languages: validated HMMs, n-grams and explicit laws (a support with weights) with exact batched inference, random Table 1 languages,
the interval counterexample of Theorem 4.4, file formats and the language SPEC grammar."""

from .explicit import ExplicitLanguage
from .hmm import HMM
from .interval import decode_token, interval_hmm, pair_consistent, support_size
from .io import from_hmmlearn, load_language, save_language, to_hmmlearn
from .ngram import NGram, as_hmm
from .random_languages import PRESETS, preset, pruned_fraction, random_hmm, random_ngram
from .spec import canonical_spec, language_from_spec
from .tasks import TASKS, task_language

__all__ = ["ExplicitLanguage", "HMM", "NGram", "PRESETS", "TASKS", "as_hmm", "canonical_spec", "decode_token", "from_hmmlearn", "interval_hmm",
           "language_from_spec", "load_language", "pair_consistent", "preset", "pruned_fraction", "random_hmm",
           "random_ngram", "save_language", "support_size", "task_language", "to_hmmlearn"]
