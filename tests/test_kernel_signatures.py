"""One signature per kernel (mdmt.runtime.numba_cache, "One signature per kernel").

numba compiles a kernel once per tuple of argument types, and a read-only array, a writable one and a literal
integer constant are three types.  The integration test runs a workload touching every family of kernels (HMM and
n-gram inference with the HMM kernels' dense and sparse paths, the sampler, the exact laws of the paper's process and of
the policies, the support-scaled law and its rationals, teacher forcing and mixtures on the support, explicit laws, the
n-gram layer of the networks) in a fresh process with an empty numba cache, records every compilation
with numba's event API, and fails if a kernel of mdmt was compiled for more than one signature.  Seeding a literal
``m = 0`` back into the policies' exact chain (policy_exact._chunk) makes it fail.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from mdmt.runtime.numba_cache import read_only

WORKLOAD = """
    import json, sys, time
    from collections import defaultdict
    from numba.core import event

    seen = defaultdict(set)  # mdmt's kernels: their signatures
    extra = defaultdict(float)  # seconds of compilation (own, callees apart) of a kernel's second and later signatures
    stack, total = [], [0.0, 0]  # open compilations [start, callees' seconds]; [outermost seconds, compilations]

    class Listener(event.Listener):
        def on_start(self, ev):
            stack.append([time.perf_counter(), 0.0])

        def on_end(self, ev):
            start, inner = stack.pop()
            took = time.perf_counter() - start
            if stack:
                stack[-1][1] += took
            else:
                total[0] += took
            total[1] += 1
            d = ev.data["dispatcher"]
            name = d.py_func.__module__ + "." + d.py_func.__qualname__
            if name.startswith("mdmt."):
                if seen[name]:
                    extra[name] += took - inner
                seen[name].add(str(ev.data["args"]))

    event.register("numba:compile", Listener())

    import contextlib, io
    import numpy as np
    from mdmt.cli import main
    from mdmt.constructions.languages.spec import language_from_spec

    def run(*argv):
        with contextlib.redirect_stdout(io.StringIO()):
            assert main(list(argv)) == 0, argv

    for spec in ("interval:2", "preset:2gram", "preset:3gram", "preset:hmm"):
        lang = language_from_spec(spec)
        X = lang.sample_sequences(40, 6, seed=0)
        M = X.copy()
        M[:, ::2] = -1
        lang.log_likelihood(X)
        lang.posterior_marginals(M)
        run("exact", "--language", spec, "-L", "4", "-N", "2")
        for policy in ("uniform", "confidence", "threshold:0.9", "entropy-sum:1", "iid"):
            run("adaptive", "exact", "--language", spec, "-L", "4", "-N", "2", "--policy", policy)
        run("sample", "--language", spec, "-L", "6", "-N", "3", "--num", "64")
        run("adaptive", "sample", "--language", spec, "-L", "6", "-N", "3", "--policy", "confidence", "--num", "64")
    for spec, L in (("task:shuffle:n=3", "3"), ("task:parity:n=4", "4")):
        lang = language_from_spec(spec)
        X = lang.sample_sequences(20, int(L), seed=0)
        M = X.copy()
        M[:, 0] = -1
        lang.log_likelihood(X)
        lang.posterior_marginals(M)
        for policy in ("uniform", "confidence"):
            run("adaptive", "exact", "--language", spec, "-L", L, "-N", "2", "--policy", policy)
    from mdmt.constructions.languages.ngram import as_hmm
    for spec in ("preset:3gram", "preset:4gram"):  # the HMM kernels' sparse paths: 64 and 512 hidden states
        h = as_hmm(language_from_spec(spec))
        X = h.sample_sequences(20, 6, seed=0)
        M = X.copy()
        M[:, ::2] = -1
        h.log_likelihood(X)
        h.posterior_marginals(M)
        h.in_support(M)
    run("atlas", "--language", "task:shuffle:n=3", "-L", "3", "-N", "2")  # teacher forcing, mixtures on the support
    from mdmt.empirical.ngram_kernels import ngram_backward, ngram_forward
    rng = np.random.default_rng(0)  # the n-gram layer's reference kernels, as its tests and benchmark call them
    P, ids = rng.dirichlet(np.ones(2), size=9), rng.integers(0, 3, (2, 5))
    stored = ngram_forward(P, ids, 2, 2)
    ngram_backward(rng.normal(size=stored[0].shape), P, ids, 2, 2, *stored[1:])
    try:
        import torch
    except ImportError:  # the core alone: the n-gram layer (mdmt.empirical) needs torch
        torch = None
    if torch is not None:  # the kernels the layer runs, forward and backward, with the arrays it passes
        from mdmt.empirical.ngram_layer import NgramLayer
        layer = NgramLayer(3, 2, causal=False)
        out = layer(torch.tensor([[0, 2, 1, 2, 0], [2, 2, 1, 0, 1]]))
        torch.where(torch.isfinite(out), out, 0.0).sum().backward()
    json.dump({"signatures": {k: sorted(v) for k, v in seen.items()}, "extra_seconds": extra,
               "compile_seconds": total[0], "compilations": total[1]}, sys.stdout)
"""


def test_read_only_is_a_view_that_refuses_writes():
    a = np.arange(4.0)
    v = read_only(a)
    assert not v.flags.writeable and a.flags.writeable
    assert np.shares_memory(a, v)
    with pytest.raises(ValueError):
        v[0] = 1.0


@pytest.mark.integration
def test_every_kernel_is_compiled_for_one_signature(tmp_path):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(WORKLOAD)], capture_output=True, text=True,
                          env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)["signatures"]
    assert len(seen) >= 20, sorted(seen)  # the workload reaches the kernel families it is meant to
    several = {name: sigs for name, sigs in seen.items() if len(sigs) > 1}
    assert not several, json.dumps(several, indent=1)
