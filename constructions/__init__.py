"""Languages, exact inference and the masked diffusion reverse process.

Public names are re-exported here; see each module's docstring for the
statement of the paper it implements.
"""

from .validation import MASK
from .hmm import HMM
from .ngram import NGram, as_hmm
from .interval import decode_token, interval_hmm, pair_consistent, support_size
from .io import from_hmmlearn, load_language, save_language, to_hmmlearn
from .random_languages import PRESETS, preset, pruned_fraction, random_hmm, random_ngram
from .schedules import expected_nfe, get_schedule, p_distinct, reveal_probabilities, reveal_rates
