"""The network sampler (ddpm_cache, Eq. 3) by reveal rounds against the loop over steps it replaced.

    python benchmarks/bench_ddpm_cache.py

The `tiny` MDM architecture (L = 64, V = 8; random weights: the cost of a call does not depend on
training) draws 512 samples per N in batches of 64, as Figure 1's trained-MDM sweep of the `tiny`
model does (``mdmt figure1 --model tiny``: ``--num 512``, the training batch 64), once by reveal rounds
(the default: one call per round, at most min(N, L) calls per batch) and once by the literal
loop over steps (``by_step=True``: one call per step on the sequences revealing something),
timed side by side in one run (wall and CPU time), with the samples compared (identical for the
same seed wherever the network's outputs do not depend on the other rows of its batch).
"""

import time

import numpy as np
import torch

from mdmt.constructions.reverse.schedules import reveal_probabilities
from mdmt.empirical.model import ModelConfig, Transformer
from mdmt.empirical.sampling import MDMDenoiser, ddpm_cache


def timed_cpu(f):
    w, c = time.perf_counter(), time.process_time()
    out = f()
    return out, time.perf_counter() - w, time.process_time() - c


def main():
    torch.manual_seed(0)
    model = Transformer(ModelConfig.preset("tiny", 8)).eval()
    L, num, batch = model.cfg.seq_len, 512, 64
    den = MDMDenoiser(model, batch=batch)
    ddpm_cache(den, 8, L, reveal_probabilities("linear", 4), seed=0)  # warm-up
    print(f"tiny MDM, L = {L}, {num} samples, batch {batch}, {torch.get_num_threads()} torch threads")
    for N in (16, 256, 1024, 4096):
        pi = reveal_probabilities("linear", N)
        rounds, w_r, c_r = timed_cpu(lambda: ddpm_cache(den, num, L, pi, seed=N, batch=batch))
        steps, w_s, c_s = timed_cpu(lambda: ddpm_cache(den, num, L, pi, seed=N, batch=batch, by_step=True))
        same = np.mean(np.all(rounds.samples == steps.samples, axis=1))
        print(f"N = {N:5d} (mean NFE {rounds.nfe.mean():5.1f}, {num // batch} batches): by reveal rounds "
              f"{w_r:6.2f} s wall / {c_r:6.2f} s CPU, by steps {w_s:6.2f} s wall / {c_s:6.2f} s CPU; ratio "
              f"{w_s / w_r:5.1f}x wall, {c_s / c_r:5.1f}x CPU; identical samples: {same:.1%} of sequences",
              flush=True)


if __name__ == "__main__":
    main()
