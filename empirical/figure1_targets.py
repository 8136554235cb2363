"""What the points of a Figure 1 run say (:mod:`mdmt.empirical.experiments`): per language, sampler and length
the smallest N of the sweep reaching the target (TER gap <= 0.05 nats/token, SER <= 0.1) beside the exact one
where a closed form gives it (interval HMM: the oracle SER; n-grams: the Theorem 4.2 chain bound), and the run as
Markdown tables."""

from __future__ import annotations

import math

from mdmt.constructions.languages.spec import interval_length_of, language_from_spec
from mdmt.defaults import SER_TARGET, TER_TARGET, target_metric  # Figure 1's targets, defined once


# ---------------------------------------------------------------------- smallest N reaching a target

def smallest_steps(points: list[tuple[int, float]], target: float) -> int | None:
    """The smallest N of a sweep from which on every value is <= target (None if the last one is above)."""
    best = None
    for N, v in sorted(points, reverse=True):
        if not (math.isfinite(v) and v <= target):
            break
        best = N
    return best


def _bisect_steps(ok, hi: int = 1 << 22) -> int | None:
    """The smallest N in 1..hi with ok(N), for a predicate monotone in N (None if ok(hi) fails).

    Doubling first, so the cost is that of evaluating near the answer, not near ``hi``.
    """
    top = 1
    while not ok(top):
        if top >= hi:
            return None
        top = min(2 * top, hi)
    lo = top // 2 + 1 if top > 1 else 1
    while lo < top:
        mid = (lo + top) // 2
        if ok(mid):
            top = mid
        else:
            lo = mid + 1
    return top


def exact_smallest_steps(language: str, role: str, L: int, schedule: str) -> tuple[int | None, str | None]:
    """(N, what) where a closed form gives the smallest N reaching the target exactly at length L.

    Interval HMM (SER): the exact oracle SER 1 - rho^(L/l).  n-gram (TER): the Theorem 4.2 chain
    bound on KL(q || p_N)/L at learning error 0 -- exact, but a bound (a sufficient N).
    """
    from mdmt.constructions.reverse.schedules import reveal_probabilities

    pi = lambda N: reveal_probabilities(schedule, N)  # noqa: E731
    l = interval_length_of(language)
    if role == "ser" and l is not None:
        from mdmt.constructions.reverse.interval_closed_forms import oracle_ser

        return _bisect_steps(lambda N: oracle_ser(l, L, pi(N)) <= SER_TARGET), "exact oracle SER"
    lang = language_from_spec(language)
    if role == "ter" and getattr(lang, "kind", None) == "ngram":
        from mdmt.bounds.theorems.dependencies import chain_bound

        return (_bisect_steps(lambda N: chain_bound(lang.n, L, pi(N), lang.n_symbols, 0.0) <= TER_TARGET, hi=1 << 16),
                "Theorem 4.2 chain bound")
    return None, None


def steps_to_target(rows: list[dict], schedule: str) -> list[dict]:
    """Per (language, kind, L): the smallest N of the sweep reaching the target, and the exact one where it exists."""
    out = []
    keys = sorted({(r["language"], r["role"], r["kind"], r["L"]) for r in rows if r["kind"] != "ar"},
                  key=lambda k: (k[1] != "ter", k[0], k[2], k[3]))
    for language, role, kind, L in keys:
        key, target = target_metric(role)
        pts = [(r["N"], r[key]) for r in rows if (r["language"], r["kind"], r["L"]) == (language, kind, L)]
        rec = {"language": language, "role": role, "kind": kind, "L": L, "metric": key, "target": target,
               "smallest_N": smallest_steps(pts, target), "largest_N_swept": max(N for N, _ in pts)}
        if kind == "oracle":
            rec["exact_N"], rec["exact_what"] = exact_smallest_steps(language, role, L, schedule)
        out.append(rec)
    return out


# ---------------------------------------------------------------------- tables

def _f(v, digits=4):
    return "" if v is None else ("∞" if isinstance(v, float) and math.isinf(v) else f"{v:.{digits}f}")


def markdown_tables(result: dict) -> str:
    """The run as Markdown (for docs/results): oracle curves by length, trained models, steps to target."""
    rows, lines = result["rows"], []
    langs = list(dict.fromkeys(r["language"] for r in rows))
    for name in langs:
        rs = [r for r in rows if r["language"] == name]
        role = rs[0]["role"]
        key = "ter_gap" if role == "ter" else "ser"
        Ls = sorted({r["L"] for r in rs if r["kind"] == "oracle"})
        Ns = sorted({r["N"] for r in rs if r["kind"] != "ar"})
        lines.append(f"#### {name}: oracle MDM, {'TER gap ln(gen. perplexity) − H/L (nats/token)' if role == 'ter' else 'SER'}"
                     + (" — Monte Carlo (exact)" if any(r.get("ser_exact_oracle") is not None for r in rs) else ""))
        lines.append("")
        lines.append("| N | " + " | ".join(f"L = {L}" for L in Ls) + " |")
        lines.append("| ---: |" + " ---: |" * len(Ls))
        by = {(r["L"], r["N"]): r for r in rs if r["kind"] == "oracle"}
        for N in Ns:
            cells = []
            for L in Ls:
                r = by.get((L, N))
                if r is None:
                    cells.append("")
                    continue
                c = _f(r[key])
                if r.get("ser_exact_oracle") is not None:
                    c += f" ({r['ser_exact_oracle']:.4f})"
                cells.append(c)
            lines.append(f"| {N} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += ["#### Trained networks (training length L)", "",
              "The last column evaluates the theorems at the *measured* learning error: the (C4) chain bound on "
              "KL(q‖p_N)/L at the mean ε (KL(q‖p_N) is not the generative TER gap of the row, which scores the "
              "samples under q), and the Theorem 4.4 lower bound at the largest per-token KL seen. The theorems "
              "assume ε for every x_U; ε is estimated over random masks, so these are estimates, not guarantees.",
              "",
              "| language | kind | N | NFE | TER gap (95% CI) | gen. perplexity | true perplexity | SER (95% CI) | "
              "theorems at measured ε |",
              "| --- | --- | ---: | ---: | --- | ---: | ---: | --- | --- |"]
    for r in rows:
        if r["kind"] == "oracle":
            continue
        b = []
        if r["kl_bound_per_token"] is not None:
            b.append(f"chain KL/L: {r['kl_bound_per_token']:.4f}")
        if r.get("ser_lower_bound") is not None:
            b.append(f"Thm 4.4 SER: {r['ser_lower_bound']:.4f}")
        lines.append(f"| {r['language']} | {r['kind']} | {r['N']} | {r['nfe_mean']:.1f} | {_f(r['ter_gap'])} "
                     f"({_f(r['ter_gap_lo'])}–{_f(r['ter_gap_hi'])}) | {_f(r['gen_perplexity'], 3)} | "
                     f"{r['true_perplexity']:.3f} | {r['ser']:.4f} ({r['ser_lo']:.4f}–{r['ser_hi']:.4f}) | {'; '.join(b)} |")
    lines += ["", "| language | H/L | MDM val gap (95% CI) | MDM train CPU s | ε_learning mean (95% CI) | q99 | max | "
              "AR val gap (95% CI) | AR train CPU s |", "| --- | ---: | --- | ---: | --- | ---: | ---: | --- | ---: |"]
    for name, s in result["summaries"].items():
        le, tm, ta = s.get("learning_error"), s.get("train_mdm"), s.get("train_ar")

        def gap(t):
            return "" if not t else f"{t['val_gap']:+.4f} ({t['val_gap_ci'][0]:+.4f}–{t['val_gap_ci'][1]:+.4f})"

        lines.append(f"| {name} | {s['entropy_rate']:.4f} | {gap(tm)} | {_f(tm and tm.get('cpu_seconds'), 0)} | "
                     + (f"{le['mean']:.4f} ({le['ci'][0]:.4f}–{le['ci'][1]:.4f}) | {le['q99']:.4f} | {le['max']:.4f}"
                        if le else " | | ")
                     + f" | {gap(ta)} | {_f(ta and ta.get('cpu_seconds'), 0)} |")
    lines += ["", "#### Smallest N reaching the target (oracle MDM)", "",
              "| language | metric ≤ target | " + " | ".join(f"L = {L}" for L in sorted({t['L'] for t in result['targets']
                                                                                      if t['kind'] == 'oracle'})) + " |"]
    Ls = sorted({t["L"] for t in result["targets"] if t["kind"] == "oracle"})
    lines.append("| --- | --- |" + " ---: |" * len(Ls))
    for name in langs:
        recs = {t["L"]: t for t in result["targets"] if t["language"] == name and t["kind"] == "oracle"}
        if not recs:
            continue
        t0 = next(iter(recs.values()))
        cells = []
        for L in Ls:
            t = recs.get(L)
            if t is None:
                cells.append("")
                continue
            c = str(t["smallest_N"]) if t["smallest_N"] is not None else f"> {t['largest_N_swept']}"
            if t.get("exact_N") is not None:
                c += f" ({t['exact_N']})"
            cells.append(c)
        what = f"{t0['metric']} ≤ {t0['target']:g}" + (f"; in parentheses: {t0['exact_what']}" if t0.get("exact_what") else "")
        lines.append(f"| {name} | {what} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
