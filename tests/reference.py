"""Brute-force references used by the tests, gathered in one place.

Each function computes a quantity from its definition by enumeration -- every hidden path,
every sequence, every reveal assignment -- sharing no recursion with mdmt's own algorithms, so
that a test comparing the two compares two independent code paths.
"""

import itertools

import numpy as np


def all_sequences(V: int, L: int) -> np.ndarray:
    """Every sequence of V^L in lexicographic order, int64 (V**L, L)."""
    return np.array(list(itertools.product(range(V), repeat=L)), dtype=np.int64).reshape(-1, L)


def hmm_joint(pi, A, B, L: int) -> np.ndarray:
    """q(x) for every x in V^L by summing over every hidden path (no recursion shared with mdmt)."""
    S, V = B.shape
    X = all_sequences(V, L)
    q = np.zeros(len(X))
    for hs in itertools.product(range(S), repeat=L):
        w = pi[hs[0]] * B[hs[0], X[:, 0]]
        for t in range(1, L):
            w = w * A[hs[t - 1], hs[t]] * B[hs[t], X[:, t]]
        q += w
    return q


def ngram_joint(ng, L: int) -> np.ndarray:
    """q(x) for every x in V^L of an n-gram straight from its tables (initial law times conditionals)."""
    V, k = ng.n_symbols, ng.n - 1
    X = all_sequences(V, L)
    init = ng.initial_.reshape((V,) * k)
    q = np.empty(len(X))
    for r, x in enumerate(X):
        if L <= k:
            q[r] = init[tuple(x)].sum()  # the marginal of the first L tokens
            continue
        p = init[tuple(x[:k])]
        for i in range(k, L):
            ctx = int(np.dot(x[i - k:i], V ** np.arange(k - 1, -1, -1)))
            p *= ng.transition_[ctx, x[i]]
        q[r] = p
    return q


def masked_marginal(X: np.ndarray, q: np.ndarray, partial: np.ndarray) -> float:
    """q(x_U) for a partial sequence (entries -1 are masked) by summing the joint table."""
    keep = partial >= 0
    match = np.all(X[:, keep] == partial[keep], axis=1)
    return float(q[match].sum())


def entropy(p: np.ndarray) -> float:
    """Shannon entropy in nats of a probability vector (0 log 0 = 0)."""
    p = np.asarray(p, dtype=np.float64)
    p = p[p > 0]
    return float(-(p * np.log(p)).sum())


def assignments(N: int, L: int):
    """Every reveal assignment tau in [N]^L, as int arrays (steps numbered from 1)."""
    for tau in itertools.product(range(1, N + 1), repeat=L):
        yield np.array(tau)


def sampler_law_by_assignments(q: np.ndarray, X: np.ndarray, pi: np.ndarray, denoise):
    """p_N and E_tau KL(q || p_tau) by enumerating every reveal assignment tau in [N]^L.

    ``denoise(partial)`` returns the (L, V) table p(. | x_U) for one partial sequence (MASK = -1).
    p_tau(x) = prod_j prod_{i in S_j} p(x_i | x_{U_j}), straight from Eq. 3.
    """
    L = X.shape[1]
    cache = {}

    def den(partial):
        key = partial.tobytes()
        if key not in cache:
            cache[key] = denoise(partial)
        return cache[key]

    pN = np.zeros(len(X))
    ekl = 0.0
    m = q > 0
    for tau in assignments(len(pi), L):
        w = float(np.prod(pi[tau - 1]))
        if w == 0:
            continue
        pt = np.ones(len(X))
        for r, x in enumerate(X):
            for j in np.unique(tau):
                partial = np.where(tau < j, x, -1)
                D = den(partial)
                for i in np.flatnonzero(tau == j):
                    pt[r] *= D[i, x[i]]
        pN += w * pt
        with np.errstate(divide="ignore"):
            ekl += w * float(np.sum(q[m] * (np.log(q[m]) - np.log(pt[m]))))
    return pN, ekl


def dependencies_by_definition(n: int, tau: np.ndarray) -> np.ndarray:
    """D_j = |S_j| - #segments holding a position of S_j (Definitions B.4/B.5), by listing the segments.

    A separator is a maximal run of >= n-1 consecutive positions revealed before step j; cutting
    the sequence at every separator leaves the segments.
    """
    tau = np.asarray(tau)
    L, N = len(tau), int(tau.max())
    out = np.zeros(N, dtype=np.int64)
    for j in range(1, N + 1):
        revealed = tau < j
        runs = []  # maximal runs of revealed positions: (start, end)
        i = 0
        while i < L:
            if revealed[i]:
                k = i
                while k < L and revealed[k]:
                    k += 1
                runs.append((i, k))
                i = k
            else:
                i += 1
        cut = np.zeros(L, dtype=bool)
        for a, b in runs:
            if b - a >= max(n - 1, 1):
                cut[a:b] = True
        segment_id, seg, inside = np.full(L, -1), -1, False
        for i in range(L):
            if cut[i]:
                inside = False
                continue
            if not inside:
                seg += 1
                inside = True
            segment_id[i] = seg
        new = np.flatnonzero(tau == j)
        out[j - 1] = len(new) - len({int(segment_id[i]) for i in new})
    return out


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
    return [(tuple(sorted(sure + list(c))), 1.0 / len(combos)) for c in combos]


def reference_rule(kind: str, **kw):
    """A reveal rule rule(j, masked, P) -> [(subset, weight)] written from the definitions of policies.py."""

    def rule(j, masked, P):
        if not masked:
            return [((), 1.0)]
        if kind == "rate":
            r = kw["rates"][j]
            return [(S, r ** len(S) * (1 - r) ** (len(masked) - len(S)))
                    for k in range(len(masked) + 1) for S in itertools.combinations(masked, k)]
        if kind == "fixed":
            return [(tuple(i for i in masked if kw["order"][i] == j + 1), 1.0)]
        if kind == "sizes":
            s = min(kw["sizes"][j], len(masked))
            combos = list(itertools.combinations(masked, s))
            return [(c, 1.0 / len(combos)) for c in combos]
        if kind == "topk":
            sc = dict(zip(range(len(P)), marginal_scores(P, kw["score"])))
            return cut_subsets(masked, sc, min(kw["sizes"][j], len(masked)))
        if kind == "threshold":
            if j == kw.get("cap", 10 ** 9) - 1:
                return [(tuple(masked), 1.0)]
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

    ``denoise(partial)`` returns the (L, V) table p(. | x_U) of a partial sequence (MASK = -1).
    """
    L = X.shape[1]
    nfe = 0.0
    frontier = {tuple([-1] * L): 1.0}
    for j in range(max_steps):
        nxt = {}
        for partial, w in frontier.items():
            masked = [i for i in range(L) if partial[i] < 0]
            if not masked:
                nxt[partial] = nxt.get(partial, 0.0) + w
                continue
            P = denoise(np.array(partial))
            for S, ws in rule(j, masked, P):
                if ws == 0:
                    continue
                if not S:
                    nxt[partial] = nxt.get(partial, 0.0) + w * ws
                    continue
                nfe += w * ws
                for vals in itertools.product(range(P.shape[1]), repeat=len(S)):
                    pr = w * ws * float(np.prod([P[i, v] for i, v in zip(S, vals)]))
                    if pr == 0:
                        continue
                    y = list(partial)
                    for i, v in zip(S, vals):
                        y[i] = v
                    nxt[tuple(y)] = nxt.get(tuple(y), 0.0) + pr
        frontier = nxt
    index = {tuple(int(v) for v in x): r for r, x in enumerate(X)}
    p = np.zeros(len(X))
    for x, w in frontier.items():
        assert min(x) >= 0, "a trajectory left positions masked"
        p[index[x]] += w
    return p, nfe


def random_size_law(L: int, N: int, weights) -> dict:
    """Law of the step sizes of N - 1 i.i.d. boundaries with P(c = u) = weights[u - 1], by enumerating every draw."""
    out = {}
    for draw in itertools.product(range(1, L), repeat=N - 1):
        w = float(np.prod([weights[c - 1] for c in draw]))
        cuts = sorted(set(draw))
        sizes = tuple(np.diff([0] + cuts + [L]).tolist())
        out[sizes] = out.get(sizes, 0.0) + w
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


def leave_one_out_by_enumeration(X: np.ndarray, q: np.ndarray, x) -> np.ndarray:
    """log q(x_i | x_-i) for one sequence x, from the joint table."""
    x = np.asarray(x)
    out = []
    for i in range(len(x)):
        others = np.all(np.delete(X, i, axis=1) == np.delete(x, i), axis=1)
        out.append(np.log(q[others & (X[:, i] == x[i])].sum() / q[others].sum()))
    return np.array(out)


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
