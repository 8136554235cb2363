"""Figure 1's figures (Section 5.2): :func:`figure1_figure`, the TER gap and SER against N with the steps to the
targets, and :func:`figure1_paper_figure`, perplexity and SER against N in the paper's axes; both are
re-exported by :mod:`mdmt.plots`, whose conventions they follow."""

from __future__ import annotations

from typing import Any, Mapping

from mdmt.plot_style import (PAGE_WIDTH, _collect_legend, _figure, _finite, _line, _log2_axis, _not_reached,
                             _reads_result, _short, _style)


TER_TARGET_WORDS = "TER gap ≤ {target:g} nats/token"
SER_TARGET_WORDS = "SER ≤ {target:g}"


def _metric(role: str, targets) -> tuple[str, float]:
    """(row key, target) of a role: from the run's target records, else Figure 1's defaults."""
    for t in targets:
        if t["role"] == role:
            return t["metric"], t["target"]
    from mdmt.defaults import target_metric

    return target_metric(role)


def _errorbar(ax, rows, key, **kw):
    import numpy as np

    y = np.array([r[key] for r in rows], dtype=float)
    lo = np.array([r.get(key + "_lo", r[key]) for r in rows], dtype=float)
    hi = np.array([r.get(key + "_hi", r[key]) for r in rows], dtype=float)
    ax.errorbar([r["N"] for r in rows], y, yerr=np.maximum(np.vstack([y - lo, hi - y]), 0), capsize=1.5, **kw)


def _steps_panel(ax, role: str, ter_label: str, title: str, steps) -> None:
    """The axes of a Figure 1 panel against N: a TER panel's label, or SER in [0, 1]; the title; N on log2."""
    if role == "ter":
        ax.set_ylabel(ter_label)
    else:
        ax.set_ylabel("SER")
        ax.set_ylim(-0.03, 1.03)
    ax.set_title(title)
    _log2_axis(ax, steps)
    ax.set_xlabel("sampling steps N")


def _languages(rows, role):
    return list(dict.fromkeys(r["language"] for r in rows if r["role"] == role))


def _lengths_words(lengths) -> str:
    Ls = sorted(set(lengths))
    return ", ".join(str(L) for L in Ls) if len(Ls) <= 4 else f"{Ls[0]}, {Ls[1]}, …, {Ls[-1]}"


def _figure1_who(rows, model: str, lengths: bool = True) -> str:
    """The samplers that Figure 1 ``rows`` hold, in words for a title, with their lengths: e.g. "oracle MDM
    at L = 64, 128; tiny networks (MDM, AR) at L = 64" (never a sampler or a length the rows lack)."""
    parts = []
    oracle = [r["L"] for r in rows if r["kind"] == "oracle"]
    if oracle:
        parts.append("oracle MDM" + (f" at L = {_lengths_words(oracle)}" if lengths else ""))
    nets = tuple(k for k in ("mdm", "ar") if any(r["kind"] == k for r in rows))
    if nets:
        what = {("mdm",): f"{model} MDM", ("ar",): f"{model} AR model",
                ("mdm", "ar"): f"{model} networks (MDM, AR)"}[nets]
        Ls = [r["L"] for r in rows if r["kind"] != "oracle"]
        parts.append(what + (f" at L = {_lengths_words(Ls)}" if lengths else ""))
    return ("; " if lengths else " and ").join(parts[::-1] if not lengths else parts)


def _figure1_drawn(rows, key_of_role) -> list:
    """The rows of a Figure 1 result with a finite value to draw (``key_of_role[row["role"]]``)."""
    return [r for r in rows if r.get("role") in key_of_role and _finite(r.get(key_of_role[r["role"]]))]


@_reads_result
def figure1_figure(result: Mapping[str, Any]):
    """Figure 1, gap view: the TER gap (top row, one panel per TER language) and the SER (middle row) of samples
    against the sampling steps N -- the oracle MDM at every length, the trained MDM at its training length,
    the AR model at N = L -- and the smallest N reaching the target against L (bottom row).

    ``result``: what :meth:`mdmt.empirical.experiments.Figure1.run` returns (``figure1.json``).
    """
    targets = result.get("targets", [])
    rows = _figure1_drawn(result["rows"], {role: _metric(role, targets)[0] for role in ("ter", "ser")})
    if not rows and not targets:
        raise ValueError("figure1_figure: the result holds no point to draw")
    ter, ser = _languages(rows, "ter"), _languages(rows, "ser")
    lengths = sorted({r["L"] for r in rows if r["kind"] == "oracle"})
    import matplotlib

    cmap = matplotlib.colormaps["viridis"]
    colour = {L: cmap(0.1 + 0.75 * i / max(1, len(lengths) - 1)) for i, L in enumerate(lengths)}
    bands = [(names, role) for names, role in ((ter, "ter"), (ser, "ser")) if names]
    roles_with_targets = [role for role in ("ter", "ser") if any(t["role"] == role and t["kind"] == "oracle"
                                                                  for t in targets)]
    cols = max([len(n) for n, _ in bands] + [1])
    with _style():
        fig = _figure(max(PAGE_WIDTH, 2.4 * cols), 2.6 * (len(bands) + bool(roles_with_targets)) + 0.4)
        subs = fig.subfigures(len(bands) + bool(roles_with_targets), 1, squeeze=False)[:, 0]
        for sub, (names, role) in zip(subs, bands):
            key, target = _metric(role, targets)
            axes = sub.subplots(1, len(names), squeeze=False)[0]
            for ax, name in zip(axes, names):
                rs = [r for r in rows if r["language"] == name]
                for L in lengths:
                    pts = sorted((r for r in rs if r["kind"] == "oracle" and r["L"] == L and _finite(r[key])),
                                 key=lambda r: r["N"])
                    if pts:
                        _errorbar(ax, pts, key, color=colour[L], marker="o", ms=2.5, lw=1.1,
                                  label=f"oracle MDM, L = {L}")
                        ex = [(r["N"], r["ser_exact_oracle"]) for r in pts if r.get("ser_exact_oracle") is not None]
                        if ex:
                            _line(ax, *zip(*ex), color=colour[L], ls=":", lw=2, alpha=0.9,
                                  label="exact oracle SER 1 − ρ^(L/l) (dotted)")
                mdm = sorted((r for r in rs if r["kind"] == "mdm" and _finite(r[key])), key=lambda r: r["N"])
                if mdm:
                    _errorbar(ax, mdm, key, color="k", marker="s", ms=3, lw=1.0, ls="--",
                              label=f"trained MDM, L = {mdm[0]['L']}")
                    lb = [(r["N"], r["ser_lower_bound"]) for r in mdm if r.get("ser_lower_bound") is not None]
                    if lb:
                        _line(ax, *zip(*lb), color="tab:red", ls="--", lw=1,
                              label="Theorem 4.4 at the trained MDM's measured ε (estimate)")
                for r in rs:
                    if r["kind"] == "ar" and _finite(r[key]):
                        _errorbar(ax, [r], key, color="tab:red", marker="*", ms=8, ls="none",
                                  label=f"AR (KV cache), N = L = {r['L']}")
                ax.axhline(target, color="0.4", lw=0.8, ls="-.",
                           label=("target " + (TER_TARGET_WORDS if role == "ter" else SER_TARGET_WORDS)
                                  ).format(target=target))
                if role == "ter":
                    ax.axhline(0.0, color="0.6", lw=0.6)
                elif all(r["ser"] == 0 for r in rs):
                    ax.text(0.5, 0.5, "SER = 0 at every point:\nevery sample lies in the support",
                            transform=ax.transAxes, ha="center", va="center", bbox=dict(facecolor="white", edgecolor="0.6"))
                _steps_panel(ax, role, "TER gap (nats/token)", f"{_short(name)}: "
                             + ("TER gap against N" if role == "ter" else "SER against N"), [r["N"] for r in rs])
            _collect_legend(sub, axes)
        if roles_with_targets:
            sub = subs[-1]
            axes = sub.subplots(1, len(roles_with_targets), squeeze=False)[0]
            for ax, role in zip(axes, roles_with_targets):
                _figure1_targets(ax, [t for t in targets if t["role"] == role and t["kind"] == "oracle"], role)
            _collect_legend(sub, axes, ncol=3)  # below the panels: their curves fill every corner
        what = " and ".join(w for w, names in (("TER gap", ter), ("SER", ser)) if names) or "Steps to the targets"
        fig.suptitle(f"{what} against sampling steps N\n"
                     f"{_figure1_who(rows, result.get('config', {}).get('model', 'tiny'))}")
    return fig


def _figure1_targets(ax, recs, role) -> None:
    """The smallest swept N reaching the target against L per language; arrows: not reached within the sweep."""
    from matplotlib.ticker import FuncFormatter

    names = list(dict.fromkeys(t["language"] for t in recs))
    markers = "osD^v<>"
    for k, name in enumerate(names):
        rs = sorted((t for t in recs if t["language"] == name), key=lambda t: t["L"])
        got = [(t["L"], t["smallest_N"]) for t in rs if t["smallest_N"] is not None]
        if got:
            ax.plot(*zip(*got), marker=markers[k % len(markers)], ms=3, color=f"C{k}",
                    label=f"{_short(name)}: Monte Carlo (swept N)")
        miss = [t for t in rs if t["smallest_N"] is None]
        _not_reached(ax, [t["L"] for t in miss],
                     f"{_short(name)}: not reached by N = {miss[0]['largest_N_swept']}" if miss else "", f"C{k}")
        ex = [(t["L"], t["exact_N"]) for t in rs if t.get("exact_N") is not None]
        if ex:
            _line(ax, *zip(*ex), ls=":" if role == "ser" else "--", lw=1.6, color=f"C{k}",
                  label=f"{_short(name)}: {rs[0]['exact_what']}")
    _log2_axis(ax, [t["L"] for t in recs] or [64])
    ax.set_yscale("log", base=2)
    values = [v for t in recs for v in (t["smallest_N"], t.get("exact_N"), t["largest_N_swept"]) if v]
    ax.set_ylim(max(0.7, min(values or [1]) / 2), 1.6 * max(values or [2]))  # set: a panel reaching no target has one
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_xlabel("sequence length L")
    ax.set_ylabel("smallest N reaching the target")
    key, target = _metric(role, recs)
    ax.set_title("oracle MDM: steps to " + (TER_TARGET_WORDS if role == "ter" else SER_TARGET_WORDS).format(
        target=target), pad=9)  # above the arrows on the upper edge



@_reads_result
def figure1_paper_figure(result: Mapping[str, Any]):
    """Figure 1 in the paper's axes (Section 5): generative perplexity against N for each TER language and
    SER against N for each SER language, at the networks' training length: the trained MDM and the oracle
    MDM as curves with 95% intervals, the AR model (KV cache, N = L) as a horizontal line with its band,
    and the language's true perplexity exp(H/L) dotted.  ``result``: ``figure1.json``.

    The figure draws what the result holds: the length is the networks' training length where networks
    were run, else the configured training length if the oracle ran at it, else the smallest length the
    oracle ran at; a panel per language with a point at that length; the title names the samplers drawn.
    """
    keys = {"ter": "gen_perplexity", "ser": "ser"}
    rows = _figure1_drawn(result["rows"], keys)
    if not rows:
        raise ValueError("figure1_paper_figure: the result holds no point to draw")
    config = result.get("config", {})
    nets = sorted({r["L"] for r in rows if r["kind"] != "oracle"})
    Ls = nets or sorted({r["L"] for r in rows})
    L0 = config.get("length") if config.get("length") in Ls else Ls[0]
    rows = [r for r in rows if r["L"] == L0]
    ter, ser = _languages(rows, "ter"), _languages(rows, "ser")
    panels = [(n, "ter") for n in ter] + [(n, "ser") for n in ser]
    cols = min(3, len(panels))
    nrows = -(-len(panels) // cols)
    true_perplexity = {r["language"]: r["true_perplexity"] for r in result["rows"]
                       if r.get("L") == L0 and _finite(r.get("true_perplexity"))}
    with _style():
        fig = _figure(max(PAGE_WIDTH, 2.4 * cols), 2.3 * nrows + 0.8)
        axes = fig.subplots(nrows, cols, squeeze=False).ravel()
        for ax in axes[len(panels):]:
            fig.delaxes(ax)
        for ax, (name, role) in zip(axes, panels):
            key = keys[role]
            rs = [r for r in rows if r["language"] == name]
            for kind, style in (("oracle", dict(color="tab:blue", marker="o", ms=2.5, label="oracle MDM")),
                                ("mdm", dict(color="k", marker="s", ms=3, ls="--", label="trained MDM"))):
                pts = sorted((r for r in rs if r["kind"] == kind), key=lambda r: r["N"])
                if pts:
                    _errorbar(ax, pts, key, lw=1.1, **style)
            for r in rs:
                if r["kind"] == "ar":
                    ax.axhline(r[key], color="tab:red", lw=1.2, label="AR model (N = L)")
                    if _finite(r.get(key + "_lo")) and _finite(r.get(key + "_hi")):
                        ax.axhspan(r[key + "_lo"], r[key + "_hi"], color="tab:red", alpha=0.12, lw=0)
            if role == "ter" and name in true_perplexity:
                ax.axhline(true_perplexity[name], color="0.3", ls=":", lw=1, label="true perplexity exp(H/L)")
            _steps_panel(ax, role, "generative perplexity", f"{_short(name)}: "
                         + ("perplexity" if role == "ter" else "SER") + f", L = {L0}", [r["N"] for r in rs])
        _collect_legend(fig, axes[:len(panels)])
        fig.suptitle(f"Figure 1 (paper's axes), L = {L0}: "
                     f"{_figure1_who(rows, config.get('model', 'tiny'), lengths=False)}")
    return fig
