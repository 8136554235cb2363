"""Search for a counterexample to a claim over a family of languages, and certify what it finds.

:func:`search` first tries to prove the claim (:func:`~.rules.prove_search`: by the elemental Shannon inequalities
and mdmt's lemmas, checked exactly); where every length (or every length, number of steps and process) is proved,
that is the verdict and nothing is searched.  Otherwise it runs three phases on instances (a language of the family,
:mod:`.families`; a length L; a number of steps N; a reverse process), each instance's margin computed with mdmt's
exact evaluators (:func:`~.quantities.instance_quantities`):

1. **explore**: Hypothesis draws instances as integer codes and is steered toward small relative
   margins by :func:`hypothesis.target`.  On a violation it shrinks (families of at most
   :data:`~.families.SHRINK_ENTRIES` table entries; larger ones by the moves below): the instance reported is the
   smallest one found that still violates (:meth:`~.refute_result.Candidate.size`: shortest, fewest
   steps, sparsest tables, then the larger violation);
2. **refine** (no violation yet): the tightest instance is moved by structural moves toward
   sparse and deterministic rows and back (drop a row's smallest entry, make a row one-hot at its
   largest, sharpen a row to p^2, soften it to p^(1/2), flatten it on its support, mix it with the
   uniform row), each kept when it lowers the relative margin; then its tables, re-parameterised
   by softmax logits (zeros kept), by Nelder-Mead (:func:`scipy.optimize.minimize`); then by
   structural moves again.  A violation found here is shrunk by the same moves and by shorter
   lengths and fewer steps, as long as it still violates;
3. **certify**: a violation is re-established exactly, on the instance's tables rounded to dyadic
   rationals (:mod:`.refute_result`, which holds the result types, the verdicts and the certificate).

What the search lowers is the *relative* margin, margin / (|lhs| + |rhs|)
(:meth:`~.claims.Claim.relative_margin`): scale-free, 0 where a bound is attained, and undefined on
the instances where both sides vanish (independent tokens, for a bound on a KL by a correlation),
which are therefore never reported as tight.  A violation is decided on the margin itself.

The budget is a number of margin evaluations (``200``) or a time (``30s``, ``5m``).  The search runs
in rounds until the budget is used or a violation is found: a round explores with half of what
is left (Hypothesis seeded with ``seed`` + the round's index) and refines with the rest or until
the refinement converges; a violation found while exploring may use the rest to shrink.  A tenth of
the budget (at least one evaluation per (L, N) pair, at most half) is withheld from the rounds for the shrink
phase, and released for more rounds where no violation is found; the shrink phase tries every smaller (L, N)
even where the budget is used (at most one evaluation per pair beyond it).  Given
a budget of evaluations and a seed, the search is deterministic: the same instances, the same
result.
"""

from __future__ import annotations

import math
import re
import time
from typing import Iterable

import numpy as np

from mdmt.runtime.resources import ResourceError
from mdmt.runtime.validation import positive_int

from .claims import Claim, ClaimError, parse_claim
from .families import SHRINK_ENTRIES, Family, parse_family  # noqa: F401  (parse_family: public here)
from .families import family as family_of
from .families import instance_size as instance_size  # noqa: F401  (importable from here, as before)
# the result types and the certificate live in .refute_result; re-exported here on purpose (importable as before)
from .refute_result import (CERTIFY_BITS as CERTIFY_BITS, CERTIFY_COST as CERTIFY_COST,  # noqa: F401
                            NUMERIC_TOL as NUMERIC_TOL, VERDICTS as VERDICTS, Candidate as Candidate,
                            RefuteResult as RefuteResult, _announce_certificate as _announce_certificate,
                            _certify as _certify, _verdict as _verdict, certificate_work as certificate_work,
                            describe_language as describe_language)

_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0}
MAX_EVALUATIONS = 10 ** 8  # a larger budget is a run that does not end (an evaluation takes a millisecond or more)
MAX_SECONDS = 7 * 24 * 3600.0
STATE_COST = 1000  # operations per (revealed state, token, step) of one exact evaluation (about 1 ns each, measured)
STEP_COST = 30_000  # operations per step of one exact evaluation, whatever its size (a step's own overhead)


def evaluation_work(V: int, L: int, N: int) -> int:
    """Operations of one exact margin evaluation at (V, L, N): the output law steps through (V+1)^L revealed states
    and V tokens at each of the N steps (L is bounded by :func:`~mdmt.constructions.reverse.tables.check_exact_size`
    first, so the power is small)."""
    return ((V + 1) ** L * V * STATE_COST + STEP_COST) * (N + 2)


def check_search_work(V: int, lengths, steps, budget: "Budget") -> None:
    """Refuse (:class:`~mdmt.runtime.resources.ResourceError`, naming the flag) a search whose evaluations would
    take more than ``MDMT_MAX_WORK`` operations, before anything is built: one evaluation at the largest length and
    number of steps, and a budget of evaluations of them."""
    from mdmt.runtime.resources import check_work
    from mdmt.constructions.reverse.tables import check_exact_size

    L, N = max(lengths), max(steps)
    check_exact_size(V, L)
    one = evaluation_work(V, L, N)
    flag = "--steps" if evaluation_work(V, L, 1) * 1000 < one else "--lengths"
    check_work(f"{flag}: one exact evaluation at L = {L}, N = {N}", one,
               f"use a smaller {flag}" + (" or a time budget" if flag == "--lengths" else ""))
    if budget.evaluations is not None:
        check_work(f"--budget {budget.evaluations}: {budget.evaluations} exact evaluations at L = {L}, N = {N}",
                   one * budget.evaluations, "give a smaller --budget or a time (--budget 10m)")


class Budget:
    """At most ``evaluations`` margin evaluations, or at most ``seconds`` of search (one of the two)."""

    def __init__(self, evaluations: int | None = None, seconds: float | None = None):
        if (evaluations is None) == (seconds is None):
            raise ValueError("a budget is a number of evaluations or a number of seconds (one of the two)")
        self.evaluations = None if evaluations is None else positive_int("budget (evaluations)", evaluations)
        if self.evaluations is not None and self.evaluations > MAX_EVALUATIONS:
            raise ValueError(f"budget: {self.evaluations} evaluations exceed mdmt's limit of {MAX_EVALUATIONS} (give a "
                             "time instead, e.g. 2h)")
        if seconds is not None and not (isinstance(seconds, (int, float)) and math.isfinite(seconds)
                                        and 0 < seconds <= MAX_SECONDS):
            raise ValueError(f"budget: seconds must be a positive number up to {MAX_SECONDS:.0f} (7 days), "
                             f"got {seconds!r}")
        self.seconds = None if seconds is None else float(seconds)
        self.held = 0.0  # withheld from exploring and refining, for the shrink phase (search releases it)
        self.used = 0
        self.start = time.perf_counter()
        self.bar = None  # a tqdm bar over evaluations, or over seconds

    def count(self) -> None:
        """One evaluation used (and shown on the progress bar, if any)."""
        self.used += 1
        if self.bar is not None:
            shown = 1 if self.evaluations is not None else round(min(self.seconds, self.elapsed()) - self.bar.n, 1)
            if shown > 0:
                self.bar.update(shown)

    @classmethod
    def parse(cls, value) -> "Budget":
        """``200`` (evaluations), ``"200"``, ``"30s"``, ``"5m"``, ``"1h"`` or a :class:`Budget`."""
        if isinstance(value, Budget):
            return value
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            return cls(evaluations=int(value))
        m = re.fullmatch(r"\s*(\d+(?:\.\d*)?)\s*([smh]?)\s*", str(value))
        if m is None or (not m.group(2) and "." in m.group(1)):
            raise ValueError(f"budget {value!r}: expected a number of evaluations (200) or a time (30s, 5m, 1h)")
        if not m.group(2):
            return cls(evaluations=int(m.group(1)))
        seconds = float(m.group(1)) * _UNITS[m.group(2)]
        if not 0 < seconds <= MAX_SECONDS:
            raise ValueError(f"budget {value!r}: the time must be positive and at most 7 days")
        return cls(seconds=seconds)

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def position(self) -> float:
        """How much is used: evaluations, or seconds."""
        return self.used if self.evaluations is not None else self.elapsed()

    def total(self) -> float:
        """What may be used now: the whole budget less what is withheld (:attr:`held`)."""
        return float(self.evaluations if self.evaluations is not None else self.seconds or 0.0) - self.held

    def point(self, fraction: float) -> float:
        """The position after ``fraction`` of what is left (at least one more evaluation)."""
        if self.evaluations is not None:
            return self.used + max(1, math.ceil(fraction * (self.total() - self.used)))
        return self.elapsed() + fraction * max(0.0, self.total() - self.elapsed())

    def reserve(self, at_least: int = 1, fraction: float = 0.1) -> float:
        """The part :func:`search` keeps for shrinking: ``fraction`` of the budget, at least ``at_least`` evaluations
        (one per smaller (L, N) pair), at most half of it."""
        if self.evaluations is not None:
            return float(min(max(at_least, math.ceil(fraction * self.evaluations)), self.evaluations // 2))
        return fraction * float(self.seconds or 0.0)

    def reached(self, point: float) -> bool:
        return self.position() >= point

    def spent(self) -> bool:
        """Whether the budget is used (less what is withheld)."""
        return self.reached(self.total())

    def describe(self) -> str:
        return f"{self.evaluations} evaluations" if self.evaluations is not None else f"{self.seconds:g} s"


class _Spent(BaseException):
    """The budget is used: stops Hypothesis at once (a BaseException, which it does not shrink)."""


class _Violated(Exception):
    """A violation: Hypothesis shrinks the instance that raised it."""


class _Search:
    """The state of one search: the claim, the family, the budget, every margin, the best and smallest instances."""

    def __init__(self, claim: Claim, fam: Family, budget: Budget):
        self.claim, self.family, self.budget = claim, fam, budget
        self.history: list = []
        self.phases = {"explore": 0, "refine": 0, "shrink": 0}
        self.phase = "explore"
        self.best: Candidate | None = None  # the smallest objective (relative margin): the tightest instance
        self.smallest: Candidate | None = None  # the smallest violating instance
        self.first_violation: dict | None = None  # evaluations and seconds when the first violation was found
        self.undefined: str | None = None  # where the claim was first found undefined: the part, why, the instance
        self._seen: dict = {}

    def evaluate(self, lang, L: int, N: int, process: str, key=None) -> Candidate:
        """The instance with its margins (NaN where the process cannot run it); counted and remembered by ``key``."""
        if key is not None and (key, L, N, process) in self._seen:
            return self._seen[key, L, N, process]
        if self.budget.spent():
            raise _Spent
        margin, relative, undefined = _margins(self.claim, lang, L, N, process, self.family.interval)
        cand = Candidate(lang, L, N, process, margin, relative, self.claim.strict)
        if undefined is not None and self.undefined is None:
            self.undefined = (f"{undefined.expression} is undefined ({undefined.reason}) at L = {L}, N = {N}, "
                              f"process {process}")
        self.budget.count()
        self.phases[self.phase] += 1
        self.history.append(cand.margin)
        if key is not None:
            self._seen[key, L, N, process] = cand
        if not math.isnan(cand.margin):  # an infinite margin is a verdict too (KL >= 10**400: -inf)
            if self.best is None or (cand.objective, cand.margin) < (self.best.objective, self.best.margin):
                self.best = cand
            if cand.violates and (self.smallest is None or cand.size() < self.smallest.size()):
                if self.smallest is None:
                    self.first_violation = {"evaluations": self.budget.used, "seconds": self.budget.elapsed()}
                self.smallest = cand
        return cand

    def explore(self, lengths, steps, processes, seed: int, stop: float) -> None:
        """Phase 1: Hypothesis with target() on minus the relative margin, shrinking a violation (module docstring)."""
        from hypothesis import HealthCheck, Phase, Verbosity, given, settings, target
        from hypothesis import seed as hypothesis_seed
        from hypothesis import strategies as st

        from .families import choice

        self.phase = "explore"
        fam = self.family
        instances = st.tuples(choice(sorted(set(lengths))), choice(sorted(set(steps))), choice(processes), fam.codes())
        limit = stop - self.budget.used if self.budget.evaluations is not None else 10 ** 6

        @settings(max_examples=max(1, math.ceil(limit)), database=None, deadline=None, print_blob=False,
                  derandomize=False, suppress_health_check=list(HealthCheck), report_multiple_bugs=False,
                  verbosity=Verbosity.quiet,
                  phases=(Phase.generate, Phase.target) + ((Phase.shrink,) if fam.entries <= SHRINK_ENTRIES else ()))
        @hypothesis_seed(seed)
        @given(instances)
        def probe(instance):
            L, N, process, codes = instance
            if self.smallest is None and self.budget.reached(stop):
                raise _Spent
            cand = self.evaluate(fam.language(codes), L, N, process, key=codes)
            if math.isfinite(cand.objective):
                target(-cand.objective, label="-relative margin")
                if cand.violates:
                    raise _Violated

        import warnings

        from hypothesis.errors import HypothesisDeprecationWarning

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", HypothesisDeprecationWarning)  # a Dask worker's threads touch `random`
                probe()
        except (_Spent, _Violated):
            pass

    def refine(self, cand: Candidate) -> Candidate:
        """Phase 2: structural moves, Nelder-Mead on the softmax logits (2/3 of what is left), structural moves."""
        self.phase = "refine"
        lower = lambda c, best: c.objective < best.objective  # noqa: E731
        try:
            _structural_moves(self, cand, lower)
            assert self.best is not None  # set by the evaluations of cand
            _nelder_mead(self, self.best, self.budget.point(2 / 3))
            _structural_moves(self, self.best, lower)
        except _Spent:
            pass
        assert self.best is not None
        return self.best

    def shrink(self, cand: Candidate, lengths, steps) -> Candidate:
        """A violating instance made smaller while it still violates: shorter, fewer steps, sparser rows."""
        self.phase = "shrink"
        budget = self.budget
        try:
            smaller = [(L, N) for L in sorted(set(lengths)) for N in sorted(set(steps)) if (L, N) < (cand.L, cand.N)]
            # each smaller (L, N) is tried even where the budget is used (a violation found at its very end): at most
            # one evaluation per pair beyond it, so that the L and N reported are the smallest that violate
            per = 1.0 if budget.evaluations is not None else budget.elapsed() / max(budget.used, 1)
            budget.held = min(budget.held, budget.total() + budget.held - budget.position() - len(smaller) * per)
            for L, N in smaller:  # in order: the first that violates is the smallest
                shorter = self.evaluate(cand.language, L, N, cand.process)
                if shorter.violates:
                    cand = shorter
                    break
            budget.held = 0.0
            return _structural_moves(self, cand, lambda c, best: c.violates and c.size() < best.size(),
                                     moves=("drop", "one-hot"))
        except _Spent:
            assert self.smallest is not None  # cand violates, so a smallest violation is on record
            return self.smallest
        finally:
            budget.held = 0.0


def _margins(claim: Claim, lang, L: int, N: int, process: str, interval: int | None = None) -> tuple:
    """(margin, relative margin, where the claim is undefined) on the instance: NaNs and None where the process cannot
    run it; NaNs and the :class:`~.claims.UndefinedError` naming the part where the claim has no value there."""
    from .quantities import instance_quantities

    try:
        values = instance_quantities(lang, L, process, N, interval=interval)
    except (ClaimError, ResourceError):
        raise
    except ValueError:  # an instance the process cannot run (N > L for fixed sizes, ...): no verdict
        return math.nan, math.nan, None
    margin = claim.margin(values)
    return margin, claim.relative_margin(values), claim.undefined(values) if math.isnan(margin) else None


def _nelder_mead(state: _Search, cand: Candidate, stop: float) -> None:
    """Nelder-Mead on the softmax logits of the candidate's tables (zeros kept), until the budget reaches ``stop``."""
    from scipy.optimize import minimize

    from .certificate import tables_of, with_tables

    tables = tables_of(cand.language)
    masks = [np.asarray(t) > 0 for t in tables]
    x0 = np.concatenate([np.log(np.asarray(t)[m]) for t, m in zip(tables, masks)])
    budget = state.budget

    def build(x):
        out, k = [], 0
        for t, m in zip(tables, masks):
            logits = np.full(np.shape(t), -np.inf)
            logits[m] = x[k:k + int(m.sum())]
            k += int(m.sum())
            z = np.exp(logits - logits.max(axis=-1, keepdims=True))
            out.append(z / z.sum(axis=-1, keepdims=True))
        return with_tables(cand.language, out)

    class _Done(Exception):
        pass

    def objective(x):
        if budget.reached(stop):
            raise _Done
        objective = state.evaluate(build(x), cand.L, cand.N, cand.process).objective
        return objective if math.isfinite(objective) else 1e300

    try:
        minimize(objective, x0, method="Nelder-Mead", options={"maxfev": 10 ** 9, "xatol": 1e-9, "fatol": 1e-12})
    except _Done:
        pass


def _row_moves(table: np.ndarray, moves) -> list:
    """Tables one structural move away: per row with two or more positive entries, drop its smallest, make it one-hot
    at its largest, sharpen it to p^2, soften it to p^(1/2) (normalised) or flatten it (uniform on its support); per
    row with a zero, mix it with the uniform row (0.8 p + 0.2 / V: the way out of a sparse vertex)."""
    out = []
    rows = table.reshape(-1, table.shape[-1])
    for r, row in enumerate(rows):
        positive = np.flatnonzero(row > 0)
        for move in moves:
            if (move == "mix") != (positive.size < row.size) or (move != "mix" and positive.size < 2):
                continue
            new = row.copy()
            if move == "drop":
                new[positive[np.argmin(row[positive])]] = 0.0
            elif move == "one-hot":
                new = np.zeros_like(row)
                new[int(np.argmax(row))] = 1.0
            elif move == "sharpen":
                new = row ** 2
            elif move == "soften":
                new = np.sqrt(row)
            elif move == "flatten":
                new = (row > 0).astype(np.float64)
            else:  # mix
                new = 0.8 * row + 0.2 / row.size
            changed = rows.copy()
            changed[r] = new / new.sum()
            out.append(changed.reshape(table.shape))
    return out


MOVES = ("drop", "one-hot", "sharpen", "soften", "flatten", "mix")


def _structural_moves(state: _Search, cand: Candidate, better, moves=MOVES) -> Candidate:
    """Greedy: apply the first move (in row order) that ``better(new, current)`` accepts, until none does."""
    from .certificate import tables_of, with_tables

    current = cand
    improved = True
    while improved:
        improved = False
        tables = tables_of(current.language)
        for t, table in enumerate(tables):
            for new in _row_moves(np.asarray(table, dtype=np.float64), moves):
                try:
                    lang = with_tables(current.language, tables[:t] + [new] + tables[t + 1:])
                except ValueError:  # a move the language's own checks refuse
                    continue
                c = state.evaluate(lang, current.L, current.N, current.process)
                if not math.isnan(c.margin) and better(c, current):
                    current, improved = c, True
                    break
            if improved:
                break
    return current


def search(claim: str | Claim, family: str = "ngram:n=3,V=2", lengths: Iterable[int] = (5,),
           steps: Iterable[int] = (3,), processes: Iterable[str] = ("iid",), budget: int | str | Budget = 200,
           seed: int = 0, refine: bool = True, certify: bool = True, progress: bool = False, shards: int = 1,
           jobs: int = 1, scheduler: str | None = None, prove: bool = True) -> RefuteResult:
    """Look for an instance of ``family`` that violates ``claim`` (module docstring).

    ``prove``: first try to prove the claim at every length (a Shannon-type claim) or every (length, number of
    steps, process) (:func:`~.rules.prove_search`); where every one is proved, the verdict is ``proved
    (Shannon-type)`` or ``proved (lemmas)`` and nothing is searched; otherwise the search runs as without it, and
    the report keeps each proof and each reason.

    ``budget``: margin evaluations (an int) or a time (``"30s"``, ``"5m"``), or a :class:`Budget`;
    ``progress``: a tqdm bar on standard error (evaluations, or seconds, used of the budget).

    ``shards`` > 1 splits the search into that many independent searches (:func:`shard_seeds`), run in
    this process (``jobs`` = 1) or on a Dask cluster (:func:`mdmt.sweep.run_parts`: ``jobs`` local worker
    processes, or the cluster at ``scheduler``): a budget of evaluations is divided among them; a time
    budget is divided among them too where they run one after another in this process (so that the search takes
    the time given, not K times it), and is each one's where they run in parallel.  The result depends on
    ``shards`` and ``seed``, not on ``jobs`` or the cluster (for a budget of evaluations): the smallest violation over the shards (else the tightest instance) is certified here.
    """
    claim = claim if isinstance(claim, Claim) else parse_claim(claim)
    fam = family if isinstance(family, Family) else family_of(family)
    lengths = [positive_int("length", L) for L in lengths]
    steps = [positive_int("number of steps", N) for N in steps]
    processes = [str(p) for p in processes]
    if not (lengths and steps and processes):
        raise ValueError("search needs at least one length, one number of steps and one process")
    if fam.length is not None and set(lengths) != {fam.length}:
        raise ValueError(f"family {fam.spec!r} holds explicit laws of length {fam.length} only; search lengths "
                         f"{','.join(map(str, lengths))} (use --lengths {fam.length})")
    budget = Budget.parse(budget)
    check_search_work(fam.n_symbols, lengths, steps, budget)  # before a schedule of N steps is built
    for process in processes:
        from mdmt.constructions.reverse.policies import parse_policy

        parse_policy(process, steps[0])  # a process spec mdmt does not know is named before the search
    from mdmt.constructions.reverse.tables import check_exact_size

    check_exact_size(fam.n_symbols, max(lengths))  # every evaluation is exact: refuse what cannot be, before it starts
    from mdmt.runtime.validation import seed_value

    seed = seed_value(seed) if seed is not None else 0  # 1.5 is refused, never truncated to 1
    shards = positive_int("shards", shards)
    settings = {"lengths": lengths, "steps": steps, "processes": processes, "budget": budget.describe(),
                "seed": seed}
    if shards > 1 and budget.evaluations is not None and budget.evaluations < shards:  # before any proof, too
        raise ValueError(f"a budget of {budget.evaluations} evaluations cannot be split into {shards} shards")
    proofs = None
    if prove:
        from .rules import prove_search

        proofs = prove_search(claim, fam, lengths, steps, processes)
        if proofs["proved"]:
            return RefuteResult(claim.text, f"proved ({proofs['kind']})", None, None, 0, proofs["seconds"], [],
                                fam.spec, {"explore": 0, "refine": 0, "shrink": 0}, settings, fam.interval,
                                proof=proofs)
    if shards > 1:
        res = _sharded(claim, fam, lengths, steps, processes, budget, seed, refine, certify, progress, shards, jobs,
                       scheduler, settings)
        return _with_proofs(res, proofs)
    if budget.seconds is not None:  # compile each process's kernels before the clock starts (not counted)
        for process in processes:
            _margins(claim, fam.language([0] * fam.entries), min(lengths), min(steps), process, fam.interval)
        budget.start = time.perf_counter()
    state = _Search(claim, fam, budget)
    if progress:
        from tqdm.auto import tqdm

        budget.bar = tqdm(total=budget.evaluations or budget.seconds, desc="mdmt refute", leave=False, disable=None,
                          unit="evaluation" if budget.evaluations else "s", dynamic_ncols=True)
    try:
        best, rounds = None, 0
        # a tenth of the budget is withheld for shrinking a violation (so that the one reported is the smallest in
        # L and N, however late it was found); where none is found, it is released for more rounds
        for held in ((budget.reserve(len(set(lengths)) * len(set(steps))), 0.0) if refine else (0.0,)):
            budget.held = held
            while not budget.spent() and (best is None or not best.violates):
                # a round: Hypothesis explores half of what is left, the refinement the rest (or until it converges);
                # a round that evaluates nothing new (a family Hypothesis has exhausted) ends the search
                used = budget.used
                state.explore(lengths, steps, processes, seed + rounds, budget.point(0.5 if refine else 1.0))
                best = state.smallest or state.best
                if refine and best is not None and not best.violates:
                    best = state.refine(best)
                rounds += 1
                if budget.used == used or not refine:
                    break
            if best is not None and best.violates:
                break
        budget.held = 0.0
        if best is not None and best.violates:
            best = state.shrink(best, lengths, steps) if refine else best
    finally:
        if budget.bar is not None:
            budget.bar.close()
    if best is None and state.undefined is not None:
        raise ClaimError(f"claim {claim.text!r} has no value on any instance evaluated: {state.undefined}")
    if progress and certify and best is not None and best.violates:
        _announce_certificate(best)
    certify_start = budget.elapsed()
    verdict, best, cert = _verdict(claim, best, certify, fam.interval)
    return _with_proofs(RefuteResult(claim.text, verdict, best, cert, budget.used, budget.elapsed(), state.history,
                                     fam.spec, dict(state.phases), settings, fam.interval,
                                     budget.elapsed() - certify_start, state.first_violation), proofs)


def _with_proofs(res: RefuteResult, proofs: dict | None) -> RefuteResult:
    """The search's result with the proofs of its instance classes; a certified violation in a class that was proved
    would mean one of the two is wrong, and is raised, never reported."""
    res.proof = proofs
    if proofs is None or res.verdict != "certified violation" or res.candidate is None:
        return res
    from .shannon import Proof

    c = res.candidate
    for unit in proofs["classes"]:
        if isinstance(unit["result"], Proof) and unit["L"] == c.L and unit.get("N", c.N) == c.N \
                and unit.get("process", c.process) == c.process:
            raise AssertionError(f"claim {res.claim!r}: a certified violation at L = {c.L}, N = {c.N}, process "
                                 f"{c.process}, where it was proved: a bug in mdmt, please report it")
    return res


MAX_SHARDS = 10 ** 4


def shard_seeds(seed: int, shards: int) -> list[int]:
    """The seeds of ``shards`` independent searches (numpy's SeedSequence spawned from ``seed``; 63 bits each)."""
    return [int(s.generate_state(1, np.uint64)[0] >> np.uint64(1)) for s in np.random.SeedSequence(seed).spawn(shards)]


def _shard(part) -> RefuteResult:
    """One shard of :func:`search`: a whole search without the certificate (a Dask part: a pure function)."""
    claim, fam, lengths, steps, processes, budget, seed, refine = part
    return search(claim, fam, lengths, steps, processes, budget=budget, seed=seed, refine=refine, certify=False,
                  prove=False)


def _sharded(claim, fam, lengths, steps, processes, budget, seed, refine, certify, progress, shards, jobs, scheduler,
             settings):
    from mdmt.sweep import run_parts

    if shards > MAX_SHARDS:
        raise ValueError(f"shards = {shards} exceeds mdmt's limit of {MAX_SHARDS}")
    if budget.evaluations is not None:
        if budget.evaluations < shards:
            raise ValueError(f"a budget of {budget.evaluations} evaluations cannot be split into {shards} shards")
        q, r = divmod(budget.evaluations, shards)
        budgets = [q + (k < r) for k in range(shards)]
    else:  # run one after another in this process, the shards share the time; run in parallel, each has it all
        from mdmt.sweep import scheduler_address

        serial = jobs == 1 and scheduler_address(scheduler) is None
        budgets = [f"{(budget.seconds / shards if serial else budget.seconds):.9f}s"] * shards
    t0 = time.perf_counter()
    parts = [(claim.text, fam, lengths, steps, processes, b, s, refine)
             for b, s in zip(budgets, shard_seeds(seed, shards))]
    results = run_parts(_shard, parts, jobs=jobs, scheduler=scheduler, progress=progress,
                        desc="mdmt refute shards").results()
    violating = [(r.candidate.size(), k) for k, r in enumerate(results)
                 if r.candidate is not None and r.candidate.violates]
    tight = [((r.candidate.objective, r.candidate.margin), k) for k, r in enumerate(results)
             if r.candidate is not None and math.isfinite(r.candidate.margin)]
    chosen = min(violating)[1] if violating else (min(tight)[1] if tight else None)
    best = results[chosen].candidate if chosen is not None else None
    t_cert = time.perf_counter()
    verdict, best, cert = _verdict(claim, best, certify, fam.interval)
    firsts = [{**r.first_violation, "shard": k} for k, r in enumerate(results) if r.first_violation]
    phases = {p: sum(r.phases.get(p, 0) for r in results) for p in ("explore", "refine", "shrink")}
    settings = {**settings, "shards": shards}
    seconds = time.perf_counter() - t0
    return RefuteResult(claim.text, verdict, best, cert, sum(r.evaluations for r in results), seconds,
                        [m for r in results for m in r.history], fam.spec, phases, settings, fam.interval,
                        time.perf_counter() - t_cert,
                        min(firsts, key=lambda f: (f["evaluations"], f["shard"])) if firsts else None)
