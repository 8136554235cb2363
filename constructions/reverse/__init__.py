"""The reverse process: schedules, denoisers, the exact output law, the proof-chain quantities,
the oracle sampler at any L, sample metrics, the learning error and the interval HMM's exact SER
(its Theorem 4.4 bounds are in :mod:`mdmt.bounds.theorems.interval_bounds`).

The names below are loaded from their submodules on first use, so that importing one submodule
(e.g. ``mdmt.constructions.reverse.chain``) does not import the sampler, the Monte Carlo
metrics and their dependencies.
"""

import importlib

_WHERE = {
    "assignment_quantities": "chain", "chain_quantities": "chain",
    "BitBiasedInterval": "denoisers", "OracleDenoiser": "denoisers", "TemperedOracle": "denoisers",
    "UniformMixture": "denoisers", "oracle_denoiser": "denoisers",
    "ExactResult": "exact", "exact_metrics": "exact", "exact_output_law": "exact",
    "oracle_ser": "interval_closed_forms", "rho": "interval_closed_forms",
    "learning_error": "learning",
    "sample_metrics": "metrics",
    "SampleResult": "sampler", "assignment_kl_estimate": "sampler", "sample_mdm": "sampler",
    "Schedule": "schedules", "expected_nfe": "schedules", "get_schedule": "schedules", "p_distinct": "schedules",
    "parse_schedule": "schedules", "reveal_probabilities": "schedules", "reveal_rates": "schedules",
}

__all__ = sorted(_WHERE, key=str.lower)


def __getattr__(name):
    """The public name ``name``, imported from its submodule (PEP 562)."""
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))
