"""Reverse processes and information quantities by brute-force enumeration, from their definitions.

A second code path for ``mdmt verify`` and the tests, sharing nothing with the library's
algorithms (the numba chain of :mod:`mdmt.constructions.reverse.policy_exact`, the windowed
information recursion of :mod:`mdmt.constructions.reverse.information`):

* :func:`policy_law_by_trajectories` follows every trajectory (reveal set, tokens) of a reveal
  rule written from the definitions of :mod:`mdmt.constructions.reverse.policies` -- the scores,
  the top-k cut with its ties, the threshold and entropy-sum counts, fixed orders given as
  literal vectors, uniformly random subsets of given sizes -- with the tokens of each step drawn
  independently from the denoiser (Eq. 3 of Feng et al., Section 3.2);
* :func:`oracle_from_joint` is the oracle denoiser q(x_i | x_U) of a joint table, by summing
  the table over the completions of the revealed tokens (uniform off the support);
* :func:`random_size_law` enumerates every draw of the N - 1 step boundaries of random sizes;
* :func:`subset_entropy_profile` and :func:`information_by_enumeration` sum the joint table.

Small instances only (V^L sequences, every revealed state): L <= 6 or so.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np


def all_sequences(V: int, L: int) -> np.ndarray:
    """Every sequence of V^L in lexicographic order, int64 (V**L, L)."""
    return np.array(list(itertools.product(range(V), repeat=L)), dtype=np.int64).reshape(-1, L)


def entropy(p: np.ndarray) -> float:
    """Shannon entropy in nats of a probability vector (0 log 0 = 0)."""
    p = np.asarray(p, dtype=np.float64)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def posterior_by_enumeration(X: np.ndarray, q: np.ndarray, partial: np.ndarray) -> np.ndarray:
    """q(x_i = v | x_U) as an (L, V) table by summing the joint table over the completions of ``partial``.

    Revealed positions get their one-hot vector; ``partial`` must have q(x_U) > 0.
    """
    keep = partial >= 0
    match = np.all(X[:, keep] == partial[keep], axis=1)
    w = q * match
    V = int(X.max()) + 1
    out = np.zeros((X.shape[1], V))
    for i in range(X.shape[1]):
        out[i] = np.bincount(X[:, i], weights=w, minlength=V)
    return out / w.sum()


def oracle_from_joint(X: np.ndarray, q: np.ndarray):
    """The oracle denoiser of the joint table q on the rows of X: partial -> (L, V) table of q(. | x_U).

    Off the support (q(x_U) = 0) every row is uniform, as the library's oracle is continued there.
    """
    V = int(X.max()) + 1
    L = X.shape[1]

    def denoise(partial):
        partial = np.asarray(partial)
        keep = partial >= 0
        if not np.any(np.all(X[:, keep] == partial[keep], axis=1) & (q > 0)):
            return np.full((L, V), 1.0 / V)
        return posterior_by_enumeration(X, q, partial)

    return denoise


# ----------------------------------------------------------------------------- policies (constructions/reverse/policies.py)

def marginal_scores(P, kind: str) -> list:
    """Per-position scores of probability rows P (list of lists): confidence, margin or minus the entropy."""
    out = []
    for row in P:
        r = sorted(float(v) for v in row)
        if kind == "confidence":
            out.append(r[-1])
        elif kind == "margin":
            out.append(r[-1] - r[-2])
        else:
            out.append(sum(float(v) * np.log(float(v)) for v in row if v > 0))
    return out


def cut_subsets(masked: list, scores: dict, count: int, tol: float = 1e-9) -> list:
    """[(subset, weight)]: the `count` highest-scoring masked positions, ties at the cut drawn uniformly."""
    order = sorted(masked, key=lambda i: -scores[i])
    t = scores[order[count - 1]]
    sure = [i for i in masked if scores[i] > t + tol]
    tied = [i for i in masked if abs(scores[i] - t) <= tol]
    combos = list(itertools.combinations(tied, count - len(sure)))
    return [(tuple(sorted(sure + list(c))), Fraction(1, len(combos))) for c in combos]


def reference_rule(kind: str, **kw):
    """A reveal rule rule(j, masked, P) -> [(subset, weight)] written from the definitions of policies.py."""

    def rule(j, masked, P):
        if not masked:
            return [((), 1)]
        if kind == "rate":
            r = kw["rates"][j]
            return [(S, r ** len(S) * (1 - r) ** (len(masked) - len(S)))
                    for k in range(len(masked) + 1) for S in itertools.combinations(masked, k)]
        if kind == "fixed":
            return [(tuple(i for i in masked if kw["order"][i] == j + 1), 1)]
        if kind == "sizes":
            s = min(kw["sizes"][j], len(masked))
            combos = list(itertools.combinations(masked, s))
            return [(c, Fraction(1, len(combos))) for c in combos]
        if kind == "topk":
            sc = dict(zip(range(len(P)), marginal_scores(P, kw["score"])))
            return cut_subsets(masked, sc, min(kw["sizes"][j], len(masked)))
        if kind == "threshold":
            if j == kw.get("cap", 10 ** 9) - 1:
                return [(tuple(masked), 1)]
            sc = dict(zip(range(len(P)), marginal_scores(P, "confidence")))
            return cut_subsets(masked, sc, max(1, sum(sc[i] > kw["tau"] for i in masked)))
        if kind == "entropy-sum":
            sc = dict(zip(range(len(P)), marginal_scores(P, "entropy")))
            h = sorted(-sc[i] for i in masked)
            cum, count = 0.0, len(masked)
            for t, v in enumerate(h):
                cum += v
                if cum > kw["gamma"]:
                    count = t + 1
                    break
            return cut_subsets(masked, sc, count)
        raise ValueError(kind)

    return rule


def policy_law_by_trajectories(X: np.ndarray, denoise, rule, max_steps: int):
    """Output law on the rows of X and E[NFE], by enumerating every trajectory of (reveal set, tokens).

    ``denoise(partial)`` returns the (L, V) table p(. | x_U) of a partial sequence (MASK = -1).  With
    a denoiser of exact rationals (:func:`exact_oracle`) and exact rates, the law and E[NFE] are exact
    (Fractions); the rules' subset weights are exact rationals either way.
    """
    L = X.shape[1]
    nfe = 0
    frontier = {tuple([-1] * L): 1}
    for j in range(max_steps):
        nxt = {}
        for partial, w in frontier.items():
            masked = [i for i in range(L) if partial[i] < 0]
            if not masked:
                nxt[partial] = nxt.get(partial, 0) + w
                continue
            P = denoise(np.array(partial))
            for S, ws in rule(j, masked, P):
                if ws == 0:
                    continue
                if not S:
                    nxt[partial] = nxt.get(partial, 0) + w * ws
                    continue
                nfe += w * ws
                for vals in itertools.product(range(P.shape[1]), repeat=len(S)):
                    pr = w * ws * _product(P[i, v] for i, v in zip(S, vals))
                    if pr == 0:
                        continue
                    y = list(partial)
                    for i, v in zip(S, vals):
                        y[i] = v
                    nxt[tuple(y)] = nxt.get(tuple(y), 0) + pr
        frontier = nxt
    index = {tuple(int(v) for v in x): r for r, x in enumerate(X)}
    mass = [0] * len(X)
    for x, w in frontier.items():
        assert min(x) >= 0, "a trajectory left positions masked"
        mass[index[x]] += w
    if not any(isinstance(w, float) for w in mass) and isinstance(nfe, (int, Fraction)):
        return np.array([Fraction(w) for w in mass], dtype=object), Fraction(nfe)
    return np.array(mass, dtype=np.float64), float(nfe)


def teacher_forced_by_trajectories(X: np.ndarray, q, denoise, rule, max_steps: int, n: int | None = None) -> dict:
    """E sum_j TC(X_{S_j} | x_{U_j}) and, for an n-gram of order ``n``, E sum_j D_j, along x ~ q with the rule's
    own choices (teacher forcing: the revealed tokens are drawn from q's joint conditional, not the product of
    its marginals), by enumerating every reachable (U_j, x_{U_j}) and every subset S_j the rule takes there.

    With rational q and an exact denoiser (:func:`exact_oracle`) everything is exact: ``E_TC`` a
    :class:`~.intervals.LogSum` (a rational combination of logarithms of rationals), ``E_D`` a Fraction.
    These are the float chain's ``total_correlation`` and the pattern law's dependencies of
    :func:`mdmt.constructions.reverse.policy_exact.teacher_forced`, by another road.
    """
    from ..theorems.dependencies import dependencies_for_assignment
    from ..theorems.intervals import LogSum

    L = X.shape[1]
    q = [Fraction(v) for v in q]
    rows = [r for r in range(len(X)) if q[r] > 0]
    total_tc, total_d = LogSum(), Fraction(0)

    def entropy_of(groups: dict, mass: Fraction) -> LogSum:
        h = LogSum()
        for m in groups.values():
            h = h - LogSum.log(m / mass) * (m / mass)
        return h

    frontier = {tuple([-1] * L): (Fraction(1), rows)}  # state -> (probability of reaching it, rows of q it allows)
    for j in range(max_steps):
        nxt = {}
        for partial, (w, allowed) in frontier.items():
            masked = [i for i in range(L) if partial[i] < 0]
            if not masked:
                prev = nxt.get(partial, (Fraction(0), allowed))
                nxt[partial] = (prev[0] + w, allowed)
                continue
            mass = sum((q[r] for r in allowed), Fraction(0))
            P = denoise(np.array(partial))
            for S, ws in rule(j, masked, P):
                ws = Fraction(ws)
                if ws == 0:
                    continue
                if not S:
                    prev = nxt.get(partial, (Fraction(0), allowed))
                    nxt[partial] = (prev[0] + w * ws, allowed)
                    continue
                joint: dict = {}
                for r in allowed:
                    key = tuple(int(X[r, i]) for i in S)
                    joint[key] = joint.get(key, Fraction(0)) + q[r]
                tc = -entropy_of(joint, mass)
                for k, i in enumerate(S):
                    marginal: dict = {}
                    for key, m in joint.items():
                        marginal[key[k]] = marginal.get(key[k], Fraction(0)) + m
                    tc = tc + entropy_of(marginal, mass)
                total_tc = total_tc + tc * (w * ws)
                if n is not None:
                    tau = np.array([1 if partial[i] >= 0 else (2 if i in S else 3) for i in range(L)])
                    total_d += w * ws * int(dependencies_for_assignment(n, tau)[1])
                for key, m in joint.items():
                    y = list(partial)
                    for i, v in zip(S, key):
                        y[i] = v
                    child = [r for r in allowed if all(int(X[r, i]) == v for i, v in zip(S, key))]
                    prev = nxt.get(tuple(y), (Fraction(0), child))
                    nxt[tuple(y)] = (prev[0] + w * ws * m / mass, child)
        frontier = nxt
    if any(min(partial) < 0 for partial in frontier):
        raise ValueError(f"the rule left positions masked after {max_steps} steps")
    return {"E_TC": total_tc, "E_D": total_d if n is not None else None}


def _product(values):
    out = 1
    for v in values:
        out = out * v
    return out


def exact_oracle(X: np.ndarray, q):
    """The oracle denoiser of an exact law q (Fractions on the rows of X): partial -> (L, V) object table of
    q(x_i = v | x_U) as Fractions; uniform off the support, as :func:`oracle_from_joint`."""
    V = int(X.max()) + 1
    L = X.shape[1]
    q = [Fraction(v) for v in q]

    def denoise(partial):
        partial = np.asarray(partial)
        keep = partial >= 0
        match = np.all(X[:, keep] == partial[keep], axis=1)
        total = sum((q[r] for r in np.flatnonzero(match)), Fraction(0))
        out = np.empty((L, V), dtype=object)
        for i in range(L):
            for v in range(V):
                if total == 0:
                    out[i, v] = Fraction(1, V)
                else:
                    out[i, v] = sum((q[r] for r in np.flatnonzero(match & (X[:, i] == v))), Fraction(0)) / total
        return out

    return denoise


def boundary_weights(L: int, law: str) -> list[Fraction]:
    """P(c = u), u = 1..L-1, of one step boundary of random sizes, exactly: w(u) = 1/(L - u) (tc), 1/u (dtc) or 1
    (uniform), normalised (the definition in policies.py's module docstring)."""
    w = [{"tc": Fraction(1, L - u), "dtc": Fraction(1, u), "uniform": Fraction(1)}[law] for u in range(1, L)]
    total = sum(w)
    return [x / total for x in w]


def random_size_law(L: int, N: int, weights) -> dict:
    """Law of the step sizes of N - 1 i.i.d. boundaries with P(c = u) = weights[u - 1], by enumerating every draw
    (exact for exact weights)."""
    out = {}
    for draw in itertools.product(range(1, L), repeat=N - 1):
        w = _product(weights[c - 1] for c in draw)
        cuts = sorted(set(draw))
        sizes = tuple(np.diff([0] + cuts + [L]).tolist())
        out[sizes] = out.get(sizes, 0) + w
    return out


# ----------------------------------------------------------------------------- information quantities

def information_by_enumeration(X: np.ndarray, q: np.ndarray) -> dict:
    """H(X), H(X_i), H(X_i | X_-i) in nats by summing the joint table q over the rows of X (dictionaries)."""
    L = X.shape[1]
    H = entropy(q)
    Hi, Hc = [], []
    for i in range(L):
        marg, rest = {}, {}
        for x, w in zip(map(tuple, X), q):
            marg[x[i]] = marg.get(x[i], 0.0) + w
            key = x[:i] + x[i + 1:]
            rest[key] = rest.get(key, 0.0) + w
        Hi.append(entropy(np.array(list(marg.values()))))
        Hc.append(H - entropy(np.array(list(rest.values()))))
    return {"entropy": H, "marginal_entropy": np.array(Hi), "conditional_entropy": np.array(Hc)}


def subset_entropy_profile(X: np.ndarray, q: np.ndarray) -> np.ndarray:
    """f(u) = the average of H(X_W) over the subsets W of size u, u = 0..L, by summing the joint table."""
    L = X.shape[1]
    out = np.zeros(L + 1)
    for u in range(1, L + 1):
        hs = []
        for W in itertools.combinations(range(L), u):
            marg: dict = {}
            for x, w in zip(map(tuple, X[:, list(W)]), q):
                marg[x] = marg.get(x, 0.0) + w
            hs.append(entropy(np.array(list(marg.values()))))
        out[u] = float(np.mean(hs))
    return out
