"""The conjecture table of docs/refute.md and the speed of ``mdmt refute``, measured in one run.

    python benchmarks/refute.py [--seeds 5] [--out docs/results/refute.md] [--docs docs/refute.md]

1. Every conjecture of :data:`mdmt.bounds.refutation.conjectures.CONJECTURES` is first proved where it can be
   (docs/claims.md, "Proofs"), else searched with its stated budget and seed: verdict, how it is settled (the
   proof, the certificate, or why it stays open), the certified margin or the tightest instance, evaluations,
   time, evaluations per second, and the command that reproduces it.
2. Rediscovery: each known failure (Li & Cai under top-k confidence, ParallelBench for random
   partitions, the halved chain bound) is searched with ``--seeds`` seeds; the report gives the
   median evaluations and seconds to the first violation and to the certificate and the size of
   the counterexample, beside a plain random search with the same budget (languages of
   Algorithms 1/2 with a random temperature and pruning threshold; no steering, refinement or
   shrinking).
3. Tightness: for each conjecture no search refutes (proved ones included: searched with ``prove=False``), the
   smallest relative margin found (0 = attained), beside the plain random search's with the same budget.

Every search is run once before the timed runs (numba compiles each process's kernels once per
machine; the first search of a process pays for it).

The report (Markdown, with the command, commit and machine) goes to standard output and, with
``--out``, to that file (written atomically); with ``--docs``, the conjecture table also replaces
the lines between ``<!-- conjecture-table:start -->`` and ``<!-- conjecture-table:end -->`` there.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mdmt.bounds.refutation.conjectures import CONJECTURES, conjecture  # noqa: E402
from mdmt.bounds.refutation.refute import NUMERIC_TOL, search  # noqa: E402

KNOWN_FAILURES = ("li-cai-confidence", "parallelbench-iid", "parallelbench-confidence", "chain-bound-halved",
                  "chain-bound-0.9")


def _margin_cell(res) -> str:
    c = res.candidate
    if c is None:
        return "n/a"
    cert = res.certificate or {}
    if res.verdict == "certified violation":
        lo, hi = cert["margin"]
        return f"[{lo:.6g}, {hi:.6g}] (exact, 2^-{cert['bits']} tables)"
    return f"{c.margin:.3g} (relative {c.relative:.3g})"


def _instance_cell(res) -> str:
    from mdmt.bounds.refutation.refute import describe_language

    c = res.candidate
    return "n/a" if c is None else f"L = {c.L}, N = {c.N}, {c.process}; {describe_language(c.language)}"


def _how_cell(res) -> str:
    """How a row is settled: the proof (its kind, its steps or lemmas per class), the certificate, or why it is open."""
    from mdmt.bounds.refutation.shannon import Proof

    proof = res.proof
    if res.verdict.startswith("proved"):
        classes = proof["classes"]
        if proof["shannon_type"]:
            counts = ", ".join(f"{len([s for s in c['result'].steps if not s[2]])} at L = {c['L']}" for c in classes)
            return f"LP over the elemental inequalities, exact certificate: {counts} inequalities combined"
        lemmas = sorted({s[2] for c in classes for s in c["result"].steps if s[2]})
        return (f"lemmas {', '.join(lemmas)} (+ elemental inequalities where used), exact certificate, at all "
                f"{len(classes)} (L, N, process)")
    if res.verdict == "certified violation":
        return "certified counterexample (the claim is not proved at its class: " + _open_reason(proof) + ")"
    if proof is not None and any(isinstance(c["result"], Proof) for c in proof["classes"]):
        done = [c for c in proof["classes"] if isinstance(c["result"], Proof)]
        return f"open: proved at {len(done)} of {len(proof['classes'])} classes; elsewhere {_open_reason(proof)}"
    return "open: " + _open_reason(proof)


def _open_reason(proof) -> str:
    from mdmt.bounds.refutation.shannon import Proof

    if proof is None:
        return "no proof attempted"
    reasons = [c["result"].reason for c in proof["classes"] if not isinstance(c["result"], Proof)]
    first = reasons[0].split(":")[0] if reasons else "?"
    return first + (" -- " + reasons[0].split(":", 1)[1].strip().split(" (")[0] if ":" in reasons[0] else "")


def table() -> tuple[list[str], list]:
    lines = ["| conjecture | claim | source | verdict | how | margin | instance | evaluations | seconds | eval/s |",
             "| --- | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: |"]
    results = []
    for c in CONJECTURES:
        res = search(c.claim, **c.search_arguments())
        results.append((c, res))
        lines.append(f"| `{c.name}` | `{c.claim}` | {c.source} | **{res.verdict}** | {_how_cell(res)} | "
                     f"{_margin_cell(res)} | {_instance_cell(res)} | {res.evaluations} | {res.seconds:.2f} | "
                     f"{res.evaluations_per_second:.0f} |")
        print(f"{c.name}: {res.verdict} ({res.seconds:.1f} s)", file=sys.stderr)
    lines += ["", "Commands (each reproduces its row; add `--out FOLDER` for the language file and the JSON "
              "certificate):", ""]
    lines += [f"* `{c.name}` — {c.question}<br>`{c.command()}`" for c in CONJECTURES]
    return lines, results


def _random_search(c, seed: int, budget: int) -> dict:
    """A plain random search with ``budget`` evaluations: languages of Algorithms 1/2 with a random temperature
    and pruning threshold, a random length, number of steps and process; no steering, refinement or shrinking.
    Returns the evaluations to its first violation (None if none), the first violating instance's size and its
    best relative margin."""
    import numpy as np

    from mdmt.bounds.refutation.claims import parse_claim
    from mdmt.bounds.refutation.families import THRESHOLDS, instance_size, parse_family
    from mdmt.bounds.refutation.quantities import instance_quantities
    from mdmt.constructions.languages.random_languages import random_hmm, random_ngram

    claim = parse_claim(c.claim)
    kind, params = parse_family(c.family)
    rng = np.random.default_rng(seed)
    out = {"first": None, "size": None, "relative": math.inf}
    for k in range(1, budget + 1):
        temperature = float(math.exp(rng.uniform(math.log(0.3), math.log(4.0))))
        threshold = float(rng.choice(THRESHOLDS))
        draw = int(rng.integers(0, 2 ** 31))
        lang = (random_ngram(params["n"], params["V"], temperature, threshold, seed=draw) if kind == "ngram"
                else random_hmm(params["S"], params["V"], temperature, threshold, seed=draw))
        L, N, process = int(rng.choice(c.lengths)), int(rng.choice(c.steps)), str(rng.choice(c.processes))
        try:
            values = instance_quantities(lang, L, process, N)
        except ValueError:
            continue
        m, r = claim.margin(values), claim.relative_margin(values)
        if math.isfinite(r):
            out["relative"] = min(out["relative"], r)
        if m < -NUMERIC_TOL and out["first"] is None:
            out["first"], out["size"] = k, instance_size(L, N, lang)
    return out


def _size(size) -> str:
    return "n/a" if size is None else f"L = {size[0]}, N = {size[1]}, {size[2]} entries"


def rediscovery(seeds: int) -> list[str]:
    lines = ["| known failure | budget | seeds | certified | evaluations to first violation, median (max) | "
             "seconds to first violation, median | seconds with certificate, median | counterexample (seed 0) | "
             "plain random search: evaluations to first violation, median | its first counterexample (seed 0) |",
             "| --- | ---: | ---: | ---: | --- | ---: | ---: | --- | --- | --- |"]
    for name in KNOWN_FAILURES:
        c = conjecture(name)
        first_evals, first_seconds, total_seconds, certified, random_evals, sizes, random_sizes = ([], [], [], 0,
                                                                                                   [], [], [])
        for seed in range(seeds):
            t0 = time.perf_counter()
            res = search(c.claim, **{**c.search_arguments(), "seed": seed})
            total_seconds.append(time.perf_counter() - t0)
            certified += res.verdict == "certified violation"
            if res.first_violation:
                first_evals.append(res.first_violation["evaluations"])
                first_seconds.append(res.first_violation["seconds"])
            sizes.append(res.candidate.size() if res.candidate is not None else None)
            r = _random_search(c, seed, c.budget)
            random_evals.append(r["first"] if r["first"] is not None else math.inf)
            random_sizes.append(r["size"])
        med = statistics.median(first_evals) if first_evals else math.inf
        rmed = statistics.median(random_evals)
        rtext = f"{rmed:g}" if math.isfinite(rmed) else f"none within {c.budget}"
        lines.append(f"| `{name}` | {c.budget} | {seeds} | {certified}/{seeds} | {med:g} "
                     f"({max(first_evals, default=math.inf):g}) | "
                     f"{statistics.median(first_seconds) if first_seconds else math.inf:.3f} | "
                     f"{statistics.median(total_seconds):.2f} | {_size(sizes[0])} | {rtext} | "
                     f"{_size(random_sizes[0])} |")
        print(f"rediscovery {name}: {certified}/{seeds}", file=sys.stderr)
    return lines


def tightness(seeds: int) -> list[str]:
    """For the bounds no search refutes: the tightest relative margin found, against a plain random search."""
    lines = ["| bound | budget | relative margin found, median over seeds | plain random search, same budget |",
             "| --- | ---: | ---: | ---: |"]
    for c in CONJECTURES:
        ours, theirs = [], []
        for seed in range(seeds):
            res = search(c.claim, **{**c.search_arguments(), "seed": seed}, certify=False, prove=False)
            if res.verdict != "no violation found" or res.candidate is None:
                break
            ours.append(res.candidate.relative)
            if c.family.partition(":")[0] in ("ngram", "hmm"):
                theirs.append(_random_search(c, seed, c.budget)["relative"])
        if len(ours) == seeds:
            other = f"{statistics.median(theirs):.3g}" if theirs else "n/a (a language family)"
            lines.append(f"| `{c.name}` | {c.budget} | {statistics.median(ours):.3g} | {other} |")
    return lines


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5, help="seeds per known failure (default 5)")
    parser.add_argument("--out", help="also write the report (Markdown) to this file")
    parser.add_argument("--docs", help="replace the conjecture table between its markers in this Markdown file")
    args = parser.parse_args(argv)
    from mdmt.runtime.provenance import record

    prov = record()
    lines = ["# `mdmt refute`: the conjecture table and the search's speed", "",
             f"Produced by `python benchmarks/refute.py --seeds {args.seeds}` at commit `{prov['commit']}` on "
             f"{prov['machine'].get('cpu', '?')} ({prov['machine'].get('cores', '?')} cores), {prov['started']}.", "",
             "## Conjectures", ""]
    for c in CONJECTURES:  # compile the kernels each process uses before anything is timed
        search(c.claim, **{**c.search_arguments(), "budget": 2}, certify=False, prove=False)
    rows, _ = table()
    lines += rows
    produced = lines[2]
    lines += ["", "## Rediscovery of the known failures", ""] + rediscovery(args.seeds)
    lines += ["", "## Tightest instances of the bounds that hold", ""] + tightness(args.seeds)
    text = "\n".join(lines) + "\n"
    print(text)
    from mdmt.runtime.outputs import write_text

    if args.out:
        write_text(Path(args.out), text)
    if args.docs:
        doc = Path(args.docs).read_text()
        start, end = "<!-- conjecture-table:start -->", "<!-- conjecture-table:end -->"
        if doc.count(start) != 1 or doc.count(end) != 1 or doc.index(start) > doc.index(end):
            raise SystemExit(f"{args.docs}: expected one {start} ... {end} region")
        head, rest = doc.split(start)
        tail = rest.split(end)[1]
        write_text(Path(args.docs), head + start + "\n" + produced + "\n\n" + "\n".join(rows) + "\n" + end + tail)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
