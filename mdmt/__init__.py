"""mdmt: a verification toolkit for the theory of masked diffusion language models.

It turns Feng et al., *Theoretical Benefit and Limitation of Diffusion Language Model*
(NeurIPS 2025, arXiv 2502.09622) into software: exact languages, the exact law of the
masked diffusion sampler, every link of the paper's proofs as a check, bound curves, and
trained networks measured against the same quantities.

Subpackages: :mod:`mdmt.constructions` (languages, the reverse process), :mod:`mdmt.bounds`
(theorem statements, dependency counts, checks, curves), :mod:`mdmt.empirical` (networks) and
:mod:`mdmt.commands` (the ``mdmt`` console script).

The public API below is importable from ``mdmt`` directly (``from mdmt import HMM``); each name
is loaded on first use, so ``import mdmt`` is cheap.

Languages
    ``HMM``, ``NGram``, ``preset``, ``PRESETS``, ``random_ngram``, ``random_hmm``,
    ``interval_hmm`` (the Theorem 4.4 counterexample), ``ExplicitLanguage`` (a law listed on its support),
    ``task_language`` and ``TASKS`` (the task presets of docs/tasks.md), ``language_from_spec``,
    ``load_language``, ``save_language``, ``MASK``
Schedules
    ``get_schedule``, ``parse_schedule``, ``reveal_probabilities``, ``p_distinct``, ``expected_nfe``
Denoisers
    ``oracle_denoiser``, ``TemperedOracle``, ``UniformMixture``, ``BitBiasedInterval``
Exact evaluators
    ``exact_output_law``, ``exact_metrics``, ``chain_quantities``, ``assignment_quantities``,
    ``learning_error``, ``oracle_ser``, ``ser_lower_bound``, ``expected_dependencies``, ``chain_bound``
The oracle sampler
    ``sample_mdm``, ``sample_metrics``, ``assignment_kl_estimate``, ``SampleResult``
Policies beyond i.i.d. reveal steps (docs/atlas.md, docs/adaptive.md)
    ``parse_policy``, ``exact_policy_law``, ``teacher_forced``, ``sample_policy``, ``teacher_forced_estimate``,
    ``IntervalOracle``, ``information_quantities``, ``atlas``, ``support_law`` (the exact law on an explicit law's
    support, docs/tasks.md); the optimal fixed sizes ``optimal_sizes`` and
    ``schedule_study`` (``mdmt schedule``), ``samplers_study`` (``mdmt samplers``, docs/samplers.md)
Theorem statements and the main job
    ``STATEMENTS`` (the sympy statements of Lemmas A.1-A.3, B.10/B.11 and Theorems 4.2-4.4), ``verify``
Conjectured bounds (docs/claims.md, docs/refute.md)
    ``parse_claim``, ``instance_quantities``, ``certify_claim``, ``refute`` (the seeded counterexample search),
    ``CONJECTURES`` (the catalogue of docs/refute.md)
Curves, studies and their figures
    ``ter_curve``, ``ser_curve`` (``mdmt curve ter|ser``), ``atlas`` and ``atlas_sweep`` (``mdmt atlas``),
    ``ser_study``, ``ter_study`` (``mdmt adaptive ser|ter``): each returns a ``Result`` -- the dict ``--json``
    prints, with ``.to_frame()``, ``.to_csv()``, ``.column()`` and ``.plot()`` (the command's figure, drawn by
    :mod:`mdmt.plots`, which holds every figure mdmt draws; ``mdmt.plots`` loads on first use like every name here)
Sweeps (docs/cluster.md)
    ``run_parts`` (independent parts in this process or on a Dask cluster)
Networks (the ``empirical`` extra; more in :mod:`mdmt.empirical`)
    ``train`` (an MDM or AR transformer on a language)
"""

from __future__ import annotations

__version__ = "0.1.0"

_API = {
    "HMM": "mdmt.constructions.languages.hmm",
    "NGram": "mdmt.constructions.languages.ngram",
    "preset": "mdmt.constructions.languages.random_languages",
    "PRESETS": "mdmt.constructions.languages.random_languages",
    "random_ngram": "mdmt.constructions.languages.random_languages",
    "random_hmm": "mdmt.constructions.languages.random_languages",
    "interval_hmm": "mdmt.constructions.languages.interval",
    "ExplicitLanguage": "mdmt.constructions.languages.explicit",
    "task_language": "mdmt.constructions.languages.tasks",
    "TASKS": "mdmt.constructions.languages.tasks",
    "language_from_spec": "mdmt.constructions.languages.spec",
    "load_language": "mdmt.constructions.languages.io",
    "save_language": "mdmt.constructions.languages.io",
    "MASK": "mdmt.runtime.validation",
    "get_schedule": "mdmt.constructions.reverse.schedules",
    "parse_schedule": "mdmt.constructions.reverse.schedules",
    "reveal_probabilities": "mdmt.constructions.reverse.schedules",
    "p_distinct": "mdmt.constructions.reverse.schedules",
    "expected_nfe": "mdmt.constructions.reverse.schedules",
    "oracle_denoiser": "mdmt.constructions.reverse.denoisers",
    "TemperedOracle": "mdmt.constructions.reverse.denoisers",
    "UniformMixture": "mdmt.constructions.reverse.denoisers",
    "BitBiasedInterval": "mdmt.constructions.reverse.denoisers",
    "exact_output_law": "mdmt.constructions.reverse.exact",
    "exact_metrics": "mdmt.constructions.reverse.exact",
    "chain_quantities": "mdmt.constructions.reverse.chain",
    "assignment_quantities": "mdmt.constructions.reverse.chain",
    "learning_error": "mdmt.constructions.reverse.learning",
    "oracle_ser": "mdmt.constructions.reverse.interval_closed_forms",
    "ser_lower_bound": "mdmt.bounds.theorems.interval_bounds",
    "sample_mdm": "mdmt.constructions.reverse.sampler",
    "assignment_kl_estimate": "mdmt.constructions.reverse.sampler",
    "SampleResult": "mdmt.constructions.reverse.sampler",
    "sample_metrics": "mdmt.constructions.reverse.metrics",
    "expected_dependencies": "mdmt.bounds.theorems.dependencies",
    "chain_bound": "mdmt.bounds.theorems.dependencies",
    "verify": "mdmt.bounds.verification.verify",
    "parse_policy": "mdmt.constructions.reverse.policies",
    "exact_policy_law": "mdmt.constructions.reverse.policy_exact",
    "teacher_forced": "mdmt.constructions.reverse.policy_exact",
    "support_law": "mdmt.constructions.reverse.support_exact",
    "sample_policy": "mdmt.constructions.reverse.policy_sampler",
    "teacher_forced_estimate": "mdmt.constructions.reverse.policy_sampler",
    "IntervalOracle": "mdmt.constructions.reverse.interval_oracle",
    "information_quantities": "mdmt.constructions.reverse.information",
    "atlas": "mdmt.bounds.studies.atlas",
    "optimal_sizes": "mdmt.constructions.reverse.optimal_schedule",
    "schedule_study": "mdmt.bounds.studies.schedule",
    "samplers_study": "mdmt.bounds.studies.samplers",
    "parse_claim": "mdmt.bounds.refutation.claims",
    "instance_quantities": "mdmt.bounds.refutation.quantities",
    "certify_claim": "mdmt.bounds.refutation.certificate",
    "ter_curve": "mdmt.bounds.studies.curves",
    "ser_curve": "mdmt.bounds.studies.curves",
    "atlas_sweep": "mdmt.bounds.studies.atlas",
    "ser_study": "mdmt.bounds.studies.adaptive",
    "ter_study": "mdmt.bounds.studies.adaptive",
    "Result": "mdmt.results",
}
_RENAMED = {"STATEMENTS": ("mdmt.bounds.theorems.statements", "ALL"), "refute": ("mdmt.bounds.refutation.refute", "search"),
            "CONJECTURES": ("mdmt.bounds.refutation.conjectures", "CONJECTURES"), "run_parts": ("mdmt.sweep", "run_parts"),
            "train": ("mdmt.empirical.train", "train")}

from mdmt.lazy import lazy_exports  # noqa: E402

#: Submodules read as attributes of ``mdmt`` without their own import (``mdmt.plots.atlas_figure``).
_MODULES = ("bounds", "constructions", "empirical", "plots", "results", "sweep")

__getattr__, __dir__, __all__ = lazy_exports("mdmt", globals(), _API, _RENAMED, _MODULES)
