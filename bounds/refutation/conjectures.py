"""A catalogue of conjectured bounds for :func:`mdmt.refute`: the bounds of the papers in the atlas, the paper's own
chain bound, a seeded wrong constant, and questions of mdmt's own making, each with the search that settles it.

The verdicts are not written here: ``benchmarks/refute.py`` runs every search (each first tries a proof,
:func:`~.rules.prove_search`) and writes the table of docs/results/refute.md (verdict; how it is proved, the
certificate of a violation, or why it stays open; evaluations, time, the command).
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass

LI_CAI = "KL <= (2 ** ceil(log2(s_max)) - 1) / L * sum_MI"
THEOREM_4_4 = "SER >= 1 - (1 - exp(-2 * eps) / 2 * (1 - P_distinct)) ** (L / l)"


@dataclass(frozen=True)
class Conjecture:
    """A claim and the search space and budget that :func:`mdmt.refute` is given for it."""

    name: str
    claim: str
    family: str
    lengths: tuple
    steps: tuple
    processes: tuple
    budget: int
    source: str  # where the claim comes from
    question: str  # what the search asks, in words
    seed: int = 0

    def search_arguments(self) -> dict:
        return {"family": self.family, "lengths": self.lengths, "steps": self.steps, "processes": self.processes,
                "budget": self.budget, "seed": self.seed}

    def command(self) -> str:
        """The ``mdmt refute`` command line of this search."""
        join = lambda xs: ",".join(str(x) for x in xs)  # noqa: E731
        return (f"mdmt refute --claim {shlex.quote(self.claim)} --family {self.family} --lengths {join(self.lengths)} "
                f"--steps {join(self.steps)} --processes {join(self.processes)} --budget {self.budget} "
                f"--seed {self.seed}")


CONJECTURES = (
    Conjecture("li-cai-confidence", LI_CAI, "ngram:n=3,V=2", (5,), (3,), ("confidence",), 40,
               "Li & Cai (2025), outside its assumption (docs/atlas.md)",
               "does the bound survive top-k confidence unmasking?"),
    Conjecture("li-cai-margin", LI_CAI, "ngram:n=3,V=2", (5,), (3,), ("margin",), 40,
               "Li & Cai (2025), outside its assumption", "does it survive top-k margin unmasking?"),
    Conjecture("li-cai-uniform", LI_CAI, "ngram:n=3,V=2", (4, 5), (2, 3), ("uniform",), 200,
               "Li & Cai (2025), inside its assumption (uniformly random positions)",
               "how tight is it where it is proved?"),
    Conjecture("parallelbench-iid", "E_TC <= KL", "ngram:n=2,V=2", (2, 3), (2,), ("iid",), 40,
               "ParallelBench's partition lower bound, for random partitions",
               "does the lower bound hold for the mixture of partitions of i.i.d. steps?"),
    Conjecture("parallelbench-stride", "E_TC <= KL", "ngram:n=2,V=2", (3, 4), (2,), ("stride",), 60,
               "ParallelBench's partition lower bound, for one fixed partition",
               "is it attained where it is proved?"),
    Conjecture("parallelbench-confidence", "E_TC <= KL", "ngram:n=2,V=2", (3, 4), (2,), ("confidence",), 100,
               "ParallelBench's partition lower bound, for adaptive unmasking",
               "does the lower bound hold when the denoiser chooses the positions?"),
    Conjecture("chain-bound", "KL <= L * eps + log(V) * E_D", "ngram:n=2,V=2", (3, 4), (1, 2), ("iid",), 120,
               "Feng et al., Lemma B.9 (total form; with Lemmas B.8, A.1)",
               "is the paper's chain bound attained, and by what?"),
    Conjecture("chain-bound-adaptive", "KL <= L * eps + log(V) * E_D", "ngram:n=2,V=2", (3, 4), (2,),
               ("confidence", "margin", "uniform", "random:tc", "threshold:0.6"), 300,
               "Lemma B.9's argument with E[sum_j D_j] of the process's own (U_j, S_j) (docs/atlas.md)",
               "does the chain bound carry over to adaptive and random-size unmasking?"),
    Conjecture("chain-bound-halved", "KL <= L * eps + log(V) * E_D / 2", "ngram:n=2,V=2", (2, 3, 4), (1, 2),
               ("iid",), 120, "Lemma B.9 with a seeded wrong constant (1/2)",
               "is a wrong constant caught, on the smallest instance?"),
    Conjecture("chain-bound-0.9", "KL <= L * eps + 0.9 * log(V) * E_D", "ngram:n=2,V=2", (3, 4), (1, 2), ("iid",),
               300, "Lemma B.9 with a seeded constant 0.9", "is a constant 10 % too small caught?"),
    Conjecture("dtc-over-steps", "KL <= DTC / N", "ngram:n=2,V=2", (4,), (2,), ("uniform",), 200,
               "mdmt's own (the atlas's DTC/K column)", "is DTC/N an upper bound on KL for balanced random steps?"),
    Conjecture("tc-over-steps", "KL <= TC / N", "ngram:n=2,V=2", (4,), (2,), ("uniform",), 200,
               "mdmt's own (the atlas's TC/K column)", "is TC/N an upper bound on KL for balanced random steps?"),
    Conjecture("kl-below-tc", "KL <= TC", "ngram:n=3,V=2", (4, 5), (2, 3),
               ("iid", "confidence", "margin", "threshold:0.5", "stride", "blocks"), 300,
               "mdmt's own", "is revealing every token at once (KL = TC) the worst a process can do?"),
    Conjecture("theorem-4.4-perturbed", THEOREM_4_4, "interval:3", (3, 6), (2, 3), ("iid",), 200,
               "Feng et al., Theorem 4.4, on perturbations of its counterexample HMM",
               "does the SER lower bound need the exact counterexample?"),
    Conjecture("ser-below-kl", "SER <= 1 - exp(-KL)", "interval:3", (3, 6), (2, 3), ("iid",), 100,
               "mdmt's own (data processing: p(support of q) >= exp(-KL))",
               "is the SER bounded by the KL, and attained?"),
    Conjecture("han-dtc", "DTC <= (L - 1) * TC", "ngram:n=3,V=2", (3, 4, 5), (1,), ("iid",), 40,
               "Han-type inequality between the two total correlations (Han 1978)",
               "is DTC at most (L - 1) TC for every distribution?"),
    Conjecture("han-tc", "TC <= (L - 1) * DTC", "ngram:n=3,V=2", (3, 4, 5), (1,), ("iid",), 40,
               "Han-type inequality between the two total correlations (Han 1978)",
               "is TC at most (L - 1) DTC for every distribution?"),
    Conjecture("dtc-below-tc", "DTC <= TC", "ngram:n=3,V=2", (3, 4), (1,), ("iid",), 40,
               "a Shannon-type claim that is false (X3 = X1 xor X2: TC = log 2, DTC = 2 log 2)",
               "is a false claim over the entropies refuted and certified, not proved?"),
)


def conjecture(name: str) -> Conjecture:
    """The catalogue entry called ``name``."""
    for c in CONJECTURES:
        if c.name == name:
            return c
    raise ValueError(f"conjecture {name!r}: expected one of {', '.join(c.name for c in CONJECTURES)}")
