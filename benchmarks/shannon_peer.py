"""mdmt's Shannon-type prover against psitip: both verdicts and times on every inequality of the peer catalogue.

    python benchmarks/shannon_peer.py

For each entry of :data:`mdmt.bounds.refutation.peer.INEQUALITIES` (29 inequalities at L = 3, 4, 5): whether it is
Shannon-type as the literature has it, mdmt's verdict (:func:`mdmt.bounds.refutation.shannon.prove`, its certificate
verified exactly) and psitip's (solver ``scipy``), and the seconds of each; then the time of mdmt's LP proof of
``DTC <= (L - 1) * TC`` for L = 3..9.  psitip is optional (``pip install psitip``; its pycddlib dependency needs the
cddlib headers, and ``pip install --no-deps psitip`` is enough for the scipy solver); without it, only mdmt's
column is printed.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from mdmt.bounds.refutation.peer import INEQUALITIES, ours, psitip_verdict  # noqa: E402


def main() -> int:
    try:
        import psitip  # noqa: F401

        have_psitip = True
    except ImportError:
        have_psitip = False
    ours(INEQUALITIES[0][2], INEQUALITIES[0][1])  # imports and the first LP, before anything is timed
    if have_psitip:
        psitip_verdict(INEQUALITIES[0][2], INEQUALITIES[0][1])
    print("| inequality | L | Shannon-type | mdmt | s | psitip | s |")
    print("| --- | ---: | --- | --- | ---: | --- | ---: |")
    agree = 0
    for name, L, terms, expected in INEQUALITIES:
        t0 = time.perf_counter()
        mine = ours(terms, L)
        t1 = time.perf_counter()
        theirs = psitip_verdict(terms, L) if have_psitip else None
        t2 = time.perf_counter()
        agree += mine == theirs == expected
        peer = ("proved" if theirs else "not proved", f"{t2 - t1:.3f}") if have_psitip else ("n/a", "")
        print(f"| {name} | {L} | {'yes' if expected else 'no'} | {'proved' if mine else 'not proved'} | "
              f"{t1 - t0:.3f} | {peer[0]} | {peer[1]} |")
    print(f"\nsame verdict (mdmt, psitip, literature): {agree} of {len(INEQUALITIES)}"
          if have_psitip else "\npsitip is not installed: mdmt's verdicts only")
    from mdmt.bounds.refutation.rules import prove_claim

    print("\n| L | joint entropies | elemental inequalities | DTC <= (L - 1) * TC | s |")
    print("| ---: | ---: | ---: | --- | ---: |")
    from mdmt.bounds.refutation.shannon import MAX_LP_LENGTH, elemental_count

    for L in range(3, MAX_LP_LENGTH + 1):
        t0 = time.perf_counter()
        r = prove_claim("DTC <= (L - 1) * TC", L)
        print(f"| {L} | {(1 << L) - 1:,} | {elemental_count(L):,} | {type(r).__name__} | "
              f"{time.perf_counter() - t0:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
