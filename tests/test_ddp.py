"""Training under torchrun (DistributedDataParallel, gloo on CPU) equals the single-process run."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import os
import subprocess
import sys
import textwrap


torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("torch.distributed is not available in this build", allow_module_level=True)

from mdmt.empirical.checkpoint import load_checkpoint  # noqa: E402


WORKER = textwrap.dedent("""
    import sys
    from mdmt.constructions.languages.random_languages import preset
    from mdmt.empirical.model import ModelConfig
    from mdmt.empirical.train import train

    from mdmt.empirical.train import TrainConfig

    kind, ckpt, stop = sys.argv[1], sys.argv[2], int(sys.argv[3])
    model = ModelConfig.preset("tiny", 8, seq_len=16, causal=kind == "ar")
    cfg = TrainConfig(model=model, language="preset:2gram-ter", train_steps=8, batch=8, seed=5)
    train(cfg, ckpt_path=ckpt, resume=True, device="cpu", stop_at=stop, progress=False)
""")


def _torchrun(tmp_path, kind, ckpt, stop):
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", str(script),
           kind, str(ckpt), str(stop)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]


@pytest.mark.integration
@pytest.mark.parametrize("kind", ["mdm", "ar"])
def test_torchrun_two_ranks_match_one_process_and_resume(tmp_path, kind):
    from mdmt.empirical.model import ModelConfig
    from mdmt.empirical.train import TrainConfig, train

    ckpt = tmp_path / "ddp.pt"
    _torchrun(tmp_path, kind, ckpt, 5)  # stopped after 5 of 8 steps ...
    assert load_checkpoint(ckpt)["step"] == 5
    _torchrun(tmp_path, kind, ckpt, 8)  # ... and resumed under torchrun
    ddp = load_checkpoint(ckpt)

    model = ModelConfig.preset("tiny", 8, seq_len=16, causal=kind == "ar")
    single = train(TrainConfig(model=model, language="preset:2gram-ter", train_steps=8, batch=8, seed=5), device="cpu",
                   progress=False)
    assert ddp["step"] == 8
    # The same full batches, split over two ranks and averaged: equal up to summation order.
    assert ddp["losses"] == pytest.approx(single.losses, rel=1e-4, abs=1e-6)
    for name, p in single.model.state_dict().items():
        torch.testing.assert_close(ddp["model"][name], p, rtol=1e-4, atol=1e-5, msg=name)


def test_batch_must_split_evenly_over_ranks(monkeypatch):
    from mdmt.empirical.model import ModelConfig
    from mdmt.empirical.train import TrainConfig, _Dist, train

    monkeypatch.setenv("WORLD_SIZE", "3")
    monkeypatch.setattr(_Dist, "__init__", lambda self, device: (setattr(self, "world", 3), setattr(self, "rank", 0),
                                                                  setattr(self, "on", True),
                                                                  setattr(self, "device", torch.device("cpu")))[0])
    cfg = TrainConfig(model=ModelConfig.preset("tiny", 8, seq_len=8), language="preset:2gram-ter", train_steps=2, batch=8)
    with pytest.raises(ValueError, match="batch = 8 is not a multiple of the world size 3"):
        train(cfg, device="cpu", progress=False)


@pytest.mark.integration
def test_cli_train_under_torchrun_reports_once(tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2", "-m", "mdmt", "train",
           "--language", "preset:2gram-ter", "--model", "tiny", "-L", "16", "--train-steps", "4", "--batch", "8",
           "--out", str(tmp_path / "run"), "--no-progress"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.count("4/4 steps") == 1  # rank 0 alone reports
    assert (tmp_path / "run" / "summary.json").exists()
    assert load_checkpoint(tmp_path / "run" / "ckpt.pt")["step"] == 4
