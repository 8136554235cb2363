"""The n-gram layer's MDM posterior on the CPU: compiled kernels against the batched tensor recursion, and the
row-at-a-time kernels the layer runs against the previous ones that kept every row's arrays.

    python benchmarks/bench_ngram_layer.py [--repeats 5]

The layer of the ``tiny`` preset (order 4, V = 8: 729 windows of 3 symbols over tokens and the
start symbol) on a training batch of the ``tiny`` recipe (64 sequences of L = 64, masks of the
``harmonic`` estimator: m masked positions with P(m) proportional to 1/m), forward and backward
of the loss sum over masked positions of -log q_theta(x_i | x_U), one torch thread.  Both paths
are timed in one run (median of the repeats after a warm-up, CPU seconds), and their outputs and
gradients are compared (the compiled path keeps float64 inside, the tensor path float32).

Second table, the kernels alone (the same batch): the previous algorithm, ``ngram_forward`` keeping
(B, T, R, V) arrays for ``ngram_backward``, against ``ngram_posterior`` (forward alone: sampling,
evaluation) and ``ngram_backward_recompute`` (the gradient recomputing each row on scratch arrays),
for a training step (forward + backward) and for a sampling call (forward alone); the outputs and
gradients must be equal bit for bit.
"""

import argparse
import statistics
import time

import mdmt.empirical  # noqa: F401  (first: it sets OMP_WAIT_POLICY before torch loads OpenMP)
import numpy as np
import torch

from mdmt.constructions.languages.spec import language_from_spec
from mdmt.empirical.model import harmonic_noise
from mdmt.empirical.ngram_layer import NgramLayer


def step(layer, run, ids, x, mask):
    """One forward and backward pass; returns the loss and the table's gradient."""
    layer.logits.grad = None
    logp = run(ids)
    loss = -logp.gather(-1, x[..., None]).squeeze(-1)[mask].sum()
    loss.backward()
    return loss.item(), layer.logits.grad.clone()


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args()
    torch.set_num_threads(1)
    lang = language_from_spec("preset:4gram-ter")
    layer = NgramLayer(4, lang.n_symbols, causal=False)
    with torch.no_grad():
        layer.logits.copy_(torch.randn(layer.logits.shape, generator=torch.Generator().manual_seed(0)))
    x = torch.as_tensor(lang.sample_sequences(64, 64, seed=1))
    _, mask = harmonic_noise(64, 64, torch.Generator().manual_seed(2))
    ids = torch.where(mask, torch.full_like(x, lang.n_symbols), x)
    paths = {"compiled": layer.forward, "tensor": layer._mdm_torch}
    times, results = {}, {}
    for name, run in paths.items():
        results[name] = step(layer, run, ids, x, mask)  # warm-up (and compilation)
        cpu = []
        for _ in range(a.repeats):
            c = time.process_time()
            step(layer, run, ids, x, mask)
            cpu.append(time.process_time() - c)
        times[name] = cpu
    (lc, gc), (lt, gt) = results["compiled"], results["tensor"]
    print(f"n-gram layer, order 4, V = {lang.n_symbols}, batch 64 x L = 64, {int(mask.sum())} masked positions, "
          f"forward + backward, {a.repeats} repeats, 1 torch thread")
    for name, cpu in times.items():
        print(f"  {name:9s} median {1e3 * statistics.median(cpu):7.1f} ms CPU  (min {1e3 * min(cpu):.1f}, "
              f"max {1e3 * max(cpu):.1f})")
    ratio = statistics.median(times["tensor"]) / statistics.median(times["compiled"])
    print(f"  tensor / compiled = {ratio:.1f}x;  loss {lc:.6f} vs {lt:.6f};  "
          f"max |gradient difference| {float((gc - gt).abs().max()):.2e} (max |gradient| {float(gt.abs().max()):.2e})")
    np.testing.assert_allclose(lc, lt, rtol=1e-5)
    kernels(layer, ids, a.repeats)


def _median_cpu(fn, repeats):
    fn()  # warm-up (and compilation)
    cpu = []
    for _ in range(repeats):
        c = time.process_time()
        fn()
        cpu.append(time.process_time() - c)
    return statistics.median(cpu)


def kernels(layer, ids, repeats):
    from mdmt.empirical.ngram_kernels import ngram_backward, ngram_backward_recompute, ngram_forward, ngram_posterior

    P = layer.conditional().detach().double().numpy()
    idn = ids.numpy().astype(np.int64)
    V, k = layer.V, layer.n - 1
    G = np.random.default_rng(3).normal(size=(*idn.shape, V))
    old = ngram_forward(P, idn, V, k)
    assert np.array_equal(ngram_posterior(P, idn, V, k), old[0], equal_nan=True)
    assert np.array_equal(ngram_backward_recompute(G, P, idn, V, k), ngram_backward(G, P, idn, V, k, *old[1:]))
    rows = {"training step (forward + backward)": (
                lambda: ngram_backward(G, P, idn, V, k, *ngram_forward(P, idn, V, k)[1:]),
                lambda: (ngram_posterior(P, idn, V, k), ngram_backward_recompute(G, P, idn, V, k))),
            "sampling call (forward alone)": (lambda: ngram_forward(P, idn, V, k),
                                              lambda: ngram_posterior(P, idn, V, k))}
    print(f"kernels alone, same batch, {repeats} repeats (median CPU ms); outputs and gradients equal bit for bit")
    for what, (before, now) in rows.items():
        t0, t1 = _median_cpu(before, repeats), _median_cpu(now, repeats)
        print(f"  {what:36s} stored arrays {1e3 * t0:7.1f}   row at a time {1e3 * t1:7.1f}   ratio {t0 / t1:.2f}x")


if __name__ == "__main__":
    main()
