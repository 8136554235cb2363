"""Proofs of claims by mechanical steps: a claim linear in its quantities, the elemental Shannon inequalities and a
small base of documented lemmas about the reverse process, combined by one linear program (:func:`.shannon.prove`).

A claim (:mod:`.claims`) is read at one instance *class* -- a length L, a number of steps N, a reverse process and
the family's vocabulary size V (and order n, interval length l) -- with those numbers substituted and ``eps = 0``
(the oracle denoiser, the only one :func:`~.refute.search` searches).  What is left must be linear in the remaining
quantities (:func:`linear_form`); the entropic ones (H, TC, DTC, sum_MI) become forms over the 2^L - 1 joint
entropies (:func:`.shannon.entropic_form`), the others (KL, E_TC, E_D, SER, ...) stay variables.  The claim is then
proved when it is a non-negative combination of

* the elemental inequalities of L variables (:func:`.shannon.elemental`), and
* the facts of the lemmas in :data:`LEMMAS` whose conditions hold at the instance class,

checked exactly (:func:`.shannon.verify`).  A proof that uses only elemental inequalities and a claim over
H, TC, DTC, sum_MI and L alone is ``proved (Shannon-type)``: it holds for every distribution of L random variables
on any alphabet, not only for the family searched.  A proof of any other claim (one that uses a lemma, or reads N, V,
n, l or eps) is ``proved (lemmas)``: it holds for every language of the family at that L, N and process, with the
oracle denoiser.  The steps are listed, each with its
multiplier, inequality and lemma.

One claim shape is not linear but monotone: ``SER <= 1 - exp(-E)`` (Lemma ``ser-kl``) reduces to ``KL <= E``.

The lemmas (each: its statement, where it comes from, its conditions) are listed in docs/claims.md; they are
the identities mdmt's own evaluators compute and ``mdmt verify`` checks:

``kl-nonnegative``  KL >= 0 (Gibbs' inequality).
``trajectory-dpi``  KL <= E_TC: the output law p is the final marginal of the trajectory law P, and q the final
    marginal of the teacher-forced law Q (the same reveal rule, each step's tokens drawn jointly from q); data
    processing gives KL(q || p) <= KL(Q || P), and the chain rule over the steps makes KL(Q || P) =
    E sum_j TC(X_{S_j} | x_{U_j}) = E_TC (for i.i.d. steps, by convexity of the KL over the mixture of partitions).
    Conditions: the oracle denoiser (both laws use the same reveal decisions).
``fixed-partition``  E_TC <= KL (so KL = E_TC): where the partition (U_j, S_j) is one fixed sequence (``stride``,
    ``blocks``), the chain rule gives KL(q || p) = sum_j E TC(X_{S_j} | X_{U_j}) exactly.
``chain-rule``  E_TC <= TC: sum_j TC(X_{S_j} | x_{U_j}) = sum_i H(X_i | revealed before i) - H(X) term by term, and
    conditioning does not increase entropy.
``lemma-B.8``  E_TC <= log(V) * E_D: Feng et al., Lemma B.8 (TC_j <= D_j log|V| for an n-gram, pointwise in the
    revealed tokens), averaged along the same teacher-forced law as E_TC and E_D.  Condition: an n-gram family.
``tc-nonnegative``  E_TC >= 0, E_D >= 0 (a total correlation and a count).
``alphabet``  H(X_i) <= log V for each position (a token takes at most V values).  Condition: V fixed by the family.
``ser-range``  0 <= SER <= 1, 0 <= P_distinct <= 1 (probabilities).
``ser-kl``  SER <= 1 - exp(-KL): -KL = sum q log(p/q) <= log p(support of q) = log(1 - SER) (Jensen).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .claim_arithmetic import Node
from .claims import Claim, parse_claim
from .shannon import ENTROPIC, Fact, NotProved, Proof, ProofSizeError, check_size, entropic_form, prove

MAX_POWER = 64  # an integer power of a claim's part is expanded up to this exponent; beyond it the claim is not linear
MAX_HARMONIC = 10 ** 4
PROVABLE = ENTROPIC + ("KL", "KL_per_token", "TER_gap", "E_TC", "E_D", "SER", "P_distinct", "eps", "L", "N", "V",
                       "n", "l")  # the quantities a proof can read (s_max and NFE: no lemma is about them)
FIXED_PARTITION = ("stride", "blocks")  # processes whose (U_j, S_j) is one fixed sequence


class NotLinear(ValueError):
    """The claim, at the numbers substituted, is not linear in its quantities (the message says where)."""


@dataclass(frozen=True)
class Lemma:
    name: str
    statement: str
    source: str
    condition: str = "every process and family mdmt searches (oracle denoiser)"


LEMMAS = {lemma.name: lemma for lemma in (
    Lemma("kl-nonnegative", "KL >= 0", "Gibbs' inequality"),
    Lemma("trajectory-dpi", "KL <= E_TC", "data processing over trajectories and the chain rule (docs/claims.md)"),
    Lemma("fixed-partition", "E_TC <= KL", "the chain rule for one fixed partition (docs/claims.md)",
          "a process whose partition is one fixed sequence: stride, blocks"),
    Lemma("chain-rule", "E_TC <= TC", "the chain rule of entropy; conditioning does not increase entropy"),
    Lemma("lemma-B.8", "E_TC <= log(V) * E_D", "Feng et al., Lemma B.8, averaged over the teacher-forced law",
          "an n-gram family (E_D defined)"),
    Lemma("tc-nonnegative", "E_TC >= 0, E_D >= 0", "a total correlation and a count are non-negative"),
    Lemma("alphabet", "H(X_i) <= log(V)", "a token takes at most V values", "V fixed by the family"),
    Lemma("ser-range", "0 <= SER <= 1, 0 <= P_distinct <= 1", "probabilities"),
    Lemma("ser-kl", "SER <= 1 - exp(-KL)", "Jensen: -KL <= log p(support of q) = log(1 - SER)"),
)}


# ----------------------------------------------------------------------------- the claim as a linear form

def _sympy(node: Node, constants: dict):
    """The claim's part as an evaluated sympy expression, with ``constants`` substituted (NotLinear where it grows
    beyond what a linear form can be: a huge power, a function of a quantity)."""
    import sympy as sp

    from .claim_arithmetic import _decimal

    k = node.kind
    if k == "num":
        v = node.value
        return sp.Integer(v) if isinstance(v, int) else sp.Rational(*_decimal(v))
    if k == "name":
        return sp.Integer(constants[node.value]) if node.value in constants else sp.Symbol(node.value, real=True)
    if k == "neg":
        return -_sympy(node.args[0], constants)
    if k == "op":
        a, b = _sympy(node.args[0], constants), _sympy(node.args[1], constants)
        if node.value == "+":
            return a + b
        if node.value == "-":
            return a - b
        if node.value == "*":
            return a * b
        if node.value == "/":
            if b.free_symbols:
                raise NotLinear(f"{node.text} divides by a quantity")
            if b == 0:
                raise NotLinear(f"{node.text} divides by 0")
            return a / b
        if b.free_symbols or not b.is_Integer or abs(int(b)) > MAX_POWER:
            if not (a.free_symbols or b.free_symbols) and b.is_Rational and abs(b) <= MAX_POWER:
                return a ** b  # a constant root (2 ** (1/2))
            raise NotLinear(f"{node.text} is a power the proof does not expand")
        if a == 0 and b < 0:
            raise NotLinear(f"{node.text} is undefined (0 to a negative power)")
        return a ** b
    args = [_sympy(a, constants) for a in node.args]
    name = node.value
    if name == "exp":
        return sp.exp(args[0])  # exp of a quantity: the shape of Lemma ser-kl, or not linear (linear_form says)
    if any(a.free_symbols for a in args):
        raise NotLinear(f"{node.text} applies {name} to a quantity")
    if name == "harmonic":
        if not (args[0].is_Integer and 0 <= int(args[0]) <= MAX_HARMONIC):
            raise NotLinear(f"{node.text}: harmonic of a large or non-integer number is not expanded")
        return sp.harmonic(int(args[0]))
    f = {"log": sp.log, "log2": lambda x: sp.log(x) / sp.log(2), "sqrt": sp.sqrt, "abs": sp.Abs, "ceil": sp.ceiling,
         "floor": sp.floor, "min": sp.Min, "max": sp.Max}[name]
    if name in ("log", "log2") and not args[0].is_positive:
        raise NotLinear(f"{node.text} is undefined (the logarithm of a number <= 0)")
    out = f(*args)
    if not out.is_real:
        raise NotLinear(f"{node.text} has no real value")
    return out


def linear_form(claim: Claim, constants: dict) -> tuple[dict, object]:
    """(coefficients {quantity: exact number}, constant) with ``claim`` <=> ``sum coeffs[q] q + constant >= 0``
    (``> 0`` for a strict claim), at ``constants`` (name -> int) substituted; KL_per_token and TER_gap become KL / L.
    :class:`NotLinear` where it is not linear."""
    import sympy as sp

    constants = {k: v for k, v in constants.items() if v is not None}
    lhs, rhs = _sympy(claim.lhs, constants), _sympy(claim.rhs, constants)
    g = rhs - lhs if claim.relation in ("<=", "<") else lhs - rhs
    if "L" in constants:
        for per_token in ("KL_per_token", "TER_gap"):
            g = g.subs(sp.Symbol(per_token, real=True), sp.Symbol("KL", real=True) / constants["L"])
    return _linear(g)


def _linear(g) -> tuple[dict, object]:
    import sympy as sp

    g = sp.expand(g)
    symbols = sorted(g.free_symbols, key=lambda s: s.name)
    coeffs = {}
    for s in symbols:
        c = sp.diff(g, s)
        if c.free_symbols:
            raise NotLinear(f"the claim is not linear in {s.name} (its coefficient is {c})")
        coeffs[s.name] = c
    constant = g.subs({s: 0 for s in symbols})
    if sp.expand(g - sum((c * s for s, c in zip(symbols, coeffs.values())), sp.Integer(0)) - constant) != 0:
        raise NotLinear("the claim is not linear in its quantities")
    if not (constant.is_real and all(c.is_real for c in coeffs.values())):
        raise NotLinear("the claim has a coefficient that is not a real number")
    return {k: v for k, v in coeffs.items() if v != 0}, constant


def _ser_kl(claim: Claim, constants: dict):
    """``SER <= 1 - exp(X)`` (or ``<``; either side order) as the linear target ``-X - KL >= 0``, else None."""
    import sympy as sp

    constants = {k: v for k, v in constants.items() if v is not None}
    lhs, rhs = _sympy(claim.lhs, constants), _sympy(claim.rhs, constants)
    small, large = (lhs, rhs) if claim.relation in ("<=", "<") else (rhs, lhs)
    if small != sp.Symbol("SER", real=True):
        return None
    exps = [e for e in sp.expand(large).atoms(sp.exp) if e.free_symbols]
    if len(exps) != 1:
        return None
    X = exps[0].args[0]
    if sp.simplify(sp.expand(large - (1 - exps[0]))) != 0:
        return None
    return _linear(-X - sp.Symbol("KL", real=True))


# ----------------------------------------------------------------------------- the lemmas' facts at an instance class

def _facts(L: int, process: str | None, V: int | None, ngram: bool, names: set) -> tuple:
    """The facts of the lemmas whose conditions hold (module docstring), over the quantities ``names`` need."""
    import sympy as sp

    TC = entropic_form("TC", L)
    out = [Fact("KL >= 0", {"KL": 1}, 0, "kl-nonnegative"),
           Fact("E_TC >= KL", {"E_TC": 1, "KL": -1}, 0, "trajectory-dpi"),
           Fact("TC >= E_TC", {**TC, "E_TC": -1}, 0, "chain-rule"),
           Fact("E_TC >= 0", {"E_TC": 1}, 0, "tc-nonnegative"),
           Fact("SER >= 0", {"SER": 1}, 0, "ser-range"), Fact("1 - SER >= 0", {"SER": -1}, 1, "ser-range"),
           Fact("P_distinct >= 0", {"P_distinct": 1}, 0, "ser-range"),
           Fact("1 - P_distinct >= 0", {"P_distinct": -1}, 1, "ser-range")]
    if process is not None and process.partition(":")[0] in FIXED_PARTITION:
        out.append(Fact("KL >= E_TC", {"KL": 1, "E_TC": -1}, 0, "fixed-partition"))
    if V is not None:
        logV = sp.log(V)
        out += [Fact(f"log({V}) - H(X{i + 1}) >= 0", {1 << i: -1}, logV, "alphabet") for i in range(L)]
        if ngram:
            out += [Fact(f"log({V}) * E_D - E_TC >= 0", {"E_D": logV, "E_TC": -1}, 0, "lemma-B.8"),
                    Fact("E_D >= 0", {"E_D": 1}, 0, "tc-nonnegative")]
    needed = set(names)
    return tuple(f for f in out if all(isinstance(v, int) or v in needed or v in ("KL", "E_TC", "E_D")
                                       for v in f.coeffs))


def shannon_type(claim: Claim) -> bool:
    """Whether the claim names only H, TC, DTC, sum_MI and L: a statement about every distribution of L variables."""
    return bool(set(claim.quantities) & set(ENTROPIC)) and set(claim.quantities) <= set(ENTROPIC) | {"L"}


def prove_claim(claim: str | Claim, L: int, N: int | None = None, process: str | None = None, V: int | None = None,
                n: int | None = None, l: int | None = None, ngram: bool = False) -> Proof | NotProved:
    """Prove ``claim`` at one instance class (module docstring): a verified :class:`~.shannon.Proof`, or
    :class:`~.shannon.NotProved` naming why not.  A Shannon-type claim (:func:`shannon_type`) reads L alone."""
    import time

    t0 = time.perf_counter()
    claim = claim if isinstance(claim, Claim) else parse_claim(claim)
    try:
        check_size(L)
    except ProofSizeError as exc:
        return NotProved(L, f"not attempted: {exc}")
    pure = shannon_type(claim)
    outside = [q for q in claim.quantities if q not in PROVABLE]
    if outside:
        return NotProved(L, f"not covered by the rules: no lemma is about {', '.join(outside)}")
    constants = {"L": L} if pure else {"L": L, "N": N, "V": V, "n": n, "l": l, "eps": 0}
    missing = [q for q in ("N", "V", "n", "l") if q in claim.quantities and constants.get(q) is None]
    if missing:
        return NotProved(L, f"not covered by the rules: {', '.join(missing)} is not fixed by the family")
    if "E_D" in claim.quantities and not ngram:  # a quantity the instances do not have is never proved about
        return NotProved(L, "not covered by the rules: E_D applies to n-gram languages only")
    if "P_distinct" in claim.quantities and (l is None or str(process).partition(":")[0] != "iid"):
        return NotProved(L, "not covered by the rules: P_distinct applies to i.i.d. steps on the interval HMM only")
    first = []
    try:
        reduced = None if pure else _ser_kl(claim, constants)
        if reduced is not None:
            coeffs, constant = reduced
            first = [(1, "SER <= 1 - exp(-KL), and 1 - exp(-t) increases in t: it suffices that KL <= E", "ser-kl")]
        else:
            coeffs, constant = linear_form(claim, constants)
    except NotLinear as exc:
        return NotProved(L, f"not linear: {exc}", time.perf_counter() - t0)
    target: dict = {}
    for name, c in coeffs.items():
        if name in ENTROPIC:
            for mask, k in entropic_form(name, L).items():
                target[mask] = target.get(mask, 0) + c * k
        else:
            target[name] = target.get(name, 0) + c
    target = {k: v for k, v in target.items() if v != 0}
    facts = () if pure else _facts(L, process, V, ngram, {k for k in target if isinstance(k, str)})
    result = prove(target, L, constant, claim.strict, facts)
    if isinstance(result, Proof):
        result.steps = first + result.steps
        if not pure:  # read at an instance class (L, N, V, ... substituted): never a statement about every distribution
            result.kind = "lemmas"
    elif not pure and not any(isinstance(k, str) for k in target):
        result.reason = result.reason.replace(" and the lemmas", "")
    return result


def describe(result) -> str:
    """One line: ``proved (Shannon-type) at L = 4: 9 elemental inequalities, verified exactly`` or the reason."""
    if isinstance(result, Proof):
        lemmas = sorted({lemma for _, _, lemma in result.steps if lemma})
        used = len([1 for _, _, lemma in result.steps if not lemma])
        parts = [f"{used} of the {result.inequalities:,} elemental inequalities"] if used or not lemmas else []
        parts += [f"lemma{'s' if len(lemmas) > 1 else ''} {', '.join(lemmas)}"] if lemmas else []
        return f"proved ({result.kind}) at L = {result.L}: {' and '.join(parts)}, verified exactly ({result.exact})"
    return f"not proved at L = {result.L}: {result.reason}"




def prove_search(claim: Claim, fam, lengths, steps, processes) -> dict:
    """The proofs of a search's instance classes (:func:`~.refute.search`): per L for a Shannon-type claim, else per
    (L, N, process) with the family's V (and n, l).  Returns ``proved`` (every class), ``kind`` (``Shannon-type`` or
    ``lemmas``, the weaker over the classes), ``classes`` (each with its :class:`~.shannon.Proof` or the reason), and
    ``seconds``."""
    import time

    from mdmt.constructions.languages.ngram import NGram

    t0 = time.perf_counter()
    pure = shannon_type(claim)
    ngram = fam.kind == "ngram" or isinstance(fam.base, NGram)
    n = fam.order if fam.kind == "ngram" else (fam.base.n if isinstance(fam.base, NGram) else None)
    units = ([(L, None, None) for L in sorted(set(lengths))] if pure else
             [(L, N, p) for L in sorted(set(lengths)) for N in sorted(set(steps)) for p in processes])
    classes = []
    fixed = {p for p in processes if p.partition(":")[0] in FIXED_PARTITION}
    seen: dict = {}  # the same LP is solved once: N matters only where the claim names it, the process only by its facts
    for L, N, process in units:
        key = (L, N if "N" in claim.quantities else None, process in fixed)
        if key not in seen:
            seen[key] = prove_claim(claim, L, N, process, fam.n_symbols, n, fam.interval, ngram)
        result = seen[key]
        classes.append({"L": L, **({} if pure else {"N": N, "process": process}), "result": result})
    proofs = [c["result"] for c in classes if isinstance(c["result"], Proof)]
    kind = ("lemmas" if any(p.kind == "lemmas" for p in proofs) else "Shannon-type") if proofs else None
    return {"proved": bool(classes) and len(proofs) == len(classes), "kind": kind, "classes": classes,
            "seconds": time.perf_counter() - t0, "shannon_type": pure}


def proof_report(proofs: dict) -> dict:
    """The JSON form of :func:`prove_search`'s answer."""
    out = {k: v for k, v in proofs.items() if k != "classes"}
    out["classes"] = [{**{k: v for k, v in c.items() if k != "result"},
                       "verdict": f"proved ({c['result'].kind})" if isinstance(c["result"], Proof) else "not proved",
                       **c["result"].to_dict()} for c in proofs["classes"]]
    out["meaning"] = (("for every joint distribution of L random variables on any alphabets, at each L listed (not "
                       "for every L)") if proofs["shannon_type"] else
                      ("for every language of the family at each (L, N, process) listed, with the oracle denoiser "
                       "(eps = 0)"))
    return out
