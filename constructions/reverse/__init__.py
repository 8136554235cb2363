"""The reverse process: schedules, denoisers, the exact output law, the proof-chain quantities,
the oracle sampler at any L, sample metrics, the learning error and the interval HMM's exact SER
(its Theorem 4.4 bounds are in :mod:`mdmt.bounds.interval_bounds`)."""

from .chain import assignment_quantities, chain_quantities
from .denoisers import BitBiasedInterval, OracleDenoiser, TemperedOracle, UniformMixture, oracle_denoiser
from .exact import ExactResult, exact_metrics, exact_output_law
from .interval_closed_forms import oracle_ser, rho
from .learning import learning_error
from .metrics import sample_metrics
from .sampler import SampleResult, assignment_kl_estimate, sample_mdm
from .schedules import (Schedule, expected_nfe, get_schedule, p_distinct, parse_schedule, reveal_probabilities,
                        reveal_rates)

__all__ = ["BitBiasedInterval", "ExactResult", "OracleDenoiser", "SampleResult", "Schedule", "TemperedOracle",
           "UniformMixture", "assignment_kl_estimate", "assignment_quantities", "chain_quantities", "exact_metrics",
           "exact_output_law", "expected_nfe", "get_schedule", "learning_error",
           "oracle_denoiser", "oracle_ser", "p_distinct", "parse_schedule", "reveal_probabilities", "reveal_rates",
           "rho", "sample_mdm", "sample_metrics"]
