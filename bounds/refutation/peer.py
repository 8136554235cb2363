"""Information inequalities for checking :mod:`.shannon` against an independent prover (psitip, an optional extra).

Each entry of :data:`INEQUALITIES` is ``sum_k c_k T_k >= 0`` over L random variables X1..XL, a term being
``H(X_A | X_C)`` or ``I(X_A; X_B | X_C)`` (sets of 1-based positions), with whether it is Shannon-type as the
literature has it: the non-negativity of (conditional) mutual information, submodularity, Han's inequality and its
dual-total-correlation forms (Han 1978), and, not Shannon-type, a conditioning that may raise a mutual information
(X3 = X1 xor X2), Ingleton's inequality (false for some entropic vectors) and Zhang and Yeung's (1998) non-Shannon
inequality (true, but not a combination of Shannon inequalities).  :func:`ours` decides an entry with
:func:`.shannon.prove`; :func:`psitip_verdict` with psitip (Ho, Ling, Tan and Yeung's PSITIP, solver ``scipy``),
which ``tests/test_shannon_peer.py`` and ``benchmarks/shannon_peer.py`` compare.
"""

from __future__ import annotations

from .shannon import Proof, add_forms, conditional_entropy, entropic_form, mutual_information, prove


def _h(A, C=()):
    return (1, A, None, C)


def _i(A, B, C=(), c=1):
    return (c, A, B, C)


def _form(name: str, L: int, scale=1) -> list:
    """TC, DTC as raw subset terms (for the Han-type entries): each (coefficient, bitmask)."""
    return [(scale * c, m) for m, c in entropic_form(name, L).items()]


INEQUALITIES = (  # (name, L, terms, Shannon-type)
    ("I(1;2|3) >= 0", 3, [_i({1}, {2}, {3})], True),
    ("H(12) >= H(1)", 3, [_h({2}, {1})], True),
    ("I(1;2) <= H(1)", 3, [(1, {1}, None, ()), _i({1}, {2}, (), -1)], True),
    ("H(123) <= H(1)+H(2)+H(3)", 3, [("TC", 1)], True),
    ("I(1;2) >= I(1;2|3)", 3, [_i({1}, {2}), _i({1}, {2}, {3}, -1)], False),
    ("I(1;2|3) >= I(1;2)", 3, [_i({1}, {2}, {3}), _i({1}, {2}, (), -1)], False),
    ("DTC <= 2 TC", 3, [("TC", 2), ("DTC", -1)], True),
    ("TC <= 2 DTC", 3, [("DTC", 2), ("TC", -1)], True),
    ("DTC <= TC", 3, [("TC", 1), ("DTC", -1)], False),
    ("H(12)+H(23) >= H(123)+H(2)", 3, [_i({1}, {3}, {2})], True),
    ("H(1)+H(2) >= H(3)", 3, [(1, {1}, None, ()), (1, {2}, None, ()), (-1, {3}, None, ())], False),
    ("H(12) >= H(3)", 3, [(1, {1, 2}, None, ()), (-1, {3}, None, ())], False),
    ("I(1;23) >= I(1;2)", 3, [_i({1}, {2, 3}), _i({1}, {2}, (), -1)], True),
    ("Han: H(12)+H(13)+H(23) >= 2 H(123)", 3,
     [(1, {1, 2}, None, ()), (1, {1, 3}, None, ()), (1, {2, 3}, None, ()), (-2, {1, 2, 3}, None, ())], True),
    ("Zhang-Yeung", 4, [_i({1}, {2}), _i({1}, {3, 4}), _i({3}, {4}, {1}, 3), _i({3}, {4}, {2}), _i({3}, {4}, (), -2)],
     False),
    ("Ingleton", 4, [_i({1}, {2}, {3}), _i({1}, {2}, {4}), _i({3}, {4}), _i({1}, {2}, (), -1)], False),
    ("DTC <= 3 TC", 4, [("TC", 3), ("DTC", -1)], True),
    ("TC <= 3 DTC", 4, [("DTC", 3), ("TC", -1)], True),
    ("I(1;2|34) >= 0", 4, [_i({1}, {2}, {3, 4})], True),
    ("H(1234) >= H(12)", 4, [_h({3, 4}, {1, 2})], True),
    ("chain rule: I(1;234) >= I(1;2) + I(1;3|2) + I(1;4|23)", 4,
     [_i({1}, {2, 3, 4}), _i({1}, {2}, (), -1), _i({1}, {3}, {2}, -1), _i({1}, {4}, {2, 3}, -1)], True),
    ("I(1;2) <= I(1;2|3)+I(1;2|4)", 4, [_i({1}, {2}, {3}), _i({1}, {2}, {4}), _i({1}, {2}, (), -1)], False),
    ("DTC <= 4 TC", 5, [("TC", 4), ("DTC", -1)], True),
    ("TC <= 4 DTC", 5, [("DTC", 4), ("TC", -1)], True),
    ("H(12345) <= sum H(i)", 5, [("TC", 1)], True),
    ("I(1;5) <= I(1;2)", 5, [_i({1}, {2}), _i({1}, {5}, (), -1)], False),
    ("I(1;2|3) <= I(1;2|34)", 5, [_i({1}, {2}, {3, 4}), _i({1}, {2}, {3}, -1)], False),
    ("Han: sum_i H(X_-i) >= 4 H(X)", 5, [("DTC", 1)], True),
    ("TC + DTC >= I(1;2345)", 5, [("TC", 1), ("DTC", 1), _i({1}, {2, 3, 4, 5}, (), -1)], True),
)


def form(terms, L: int) -> dict:
    """The entry's left side ``sum_k c_k T_k`` as {bitmask: coefficient} over the joint entropies."""
    out: dict = {}
    for term in terms:
        if isinstance(term[0], str):  # ("TC", c): c times a named quantity
            out = add_forms(out, entropic_form(term[0], L), term[1])
            continue
        c, A, B, C = term
        out = add_forms(out, conditional_entropy(A, C) if B is None else mutual_information(A, B, C), c)
    return out


def ours(terms, L: int) -> bool:
    """Whether :func:`.shannon.prove` proves the entry (a certificate verified exactly)."""
    return isinstance(prove(form(terms, L), L), Proof)


def psitip_verdict(terms, L: int) -> bool:
    """Whether psitip proves the entry (its LP over the elemental inequalities, solver ``scipy``)."""
    import psitip as ps

    ps.PsiOpts.setting(solver="scipy")
    X = [ps.rv(f"X{i + 1}") for i in range(L)]

    def joint(S):
        out = None
        for i in sorted(S):
            out = X[i - 1] if out is None else out + X[i - 1]
        return out

    expr = 0
    for term in terms:
        if isinstance(term[0], str):
            name, c = term
            tc = sum((ps.H(x) for x in X), 0) - ps.H(joint(range(1, L + 1)))
            dtc = sum((ps.H(joint(set(range(1, L + 1)) - {i})) for i in range(1, L + 1)), 0) \
                - (L - 1) * ps.H(joint(range(1, L + 1)))
            expr = expr + c * (tc if name == "TC" else dtc)
            continue
        c, A, B, C = term
        if B is None:
            t = ps.H(joint(A) | joint(C)) if C else ps.H(joint(A))
        else:
            t = ps.I(joint(A) & joint(B) | joint(C)) if C else ps.I(joint(A) & joint(B))
        expr = expr + c * t
    return bool(expr >= 0)
