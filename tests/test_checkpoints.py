"""Checkpoints and training runs you can trust: digests, weights-only loading, refusal of another language,
periodic and signal-time checkpoints, early --out checks, divergence stops, extension to more steps."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import mdmt.empirical  # noqa: F401  (before torch: it sets OMP_WAIT_POLICY, see its docstring)

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import torch

from mdmt.cli import main
from mdmt.empirical.checkpoint import check_writable, load_checkpoint, save_checkpoint
from mdmt.empirical.train import TrainConfig, TrainingDiverged, load_model, lr_factor, train
from tests.helpers_empirical import _bigram, _cfg

torch.set_num_threads(1)
KW = dict(progress=False, device="cpu")


def _cfg_small(steps=6, **kw):
    return TrainConfig(model=_cfg(3), train_steps=steps, batch=8, lr=1e-3, seed=1, val_size=16, val_draws=2, **kw)


def _flip_a_byte_inside(path, frac=0.6):
    data = bytearray(path.read_bytes())
    data[int(len(data) * frac)] ^= 0x5A
    path.write_bytes(bytes(data))


def test_a_damaged_checkpoint_is_refused_never_laundered(tmp_path):
    ck = tmp_path / "ckpt.pt"
    train(_cfg_small(), _bigram(), ckpt_path=ck, **KW)
    good = ck.read_bytes()
    _flip_a_byte_inside(ck)
    for attempt in (lambda: load_model(ck), lambda: train(_cfg_small(), _bigram(), ckpt_path=ck, resume=True, **KW)):
        with pytest.raises(ValueError, match="does not match its SHA-256"):
            attempt()
    assert ck.read_bytes() != good  # nothing re-saved the damage under a fresh digest
    (tmp_path / "ckpt.pt.sha256").unlink()
    with pytest.raises(ValueError, match="no digest beside it"):
        load_checkpoint(ck)


def test_checkpoints_hold_plain_tensors_and_a_pickled_object_is_refused(tmp_path):
    class Payload:
        def __reduce__(self):
            return (os.system, ("true",))

    path = tmp_path / "evil.pt"
    save_checkpoint(path, {"format": 2, "model": {}, "x": Payload()})  # a valid digest does not make it safe
    with pytest.raises(ValueError, match="cannot be read safely"):
        load_checkpoint(path)


def test_an_interrupted_digest_rename_is_completed(tmp_path):
    path = tmp_path / "c.pt"
    save_checkpoint(path, {"a": torch.ones(2)})
    old = (tmp_path / "c.pt.sha256").read_text()
    save_checkpoint(tmp_path / "other.pt", {"a": torch.zeros(3)})
    # simulate a crash after the checkpoint rename and before the digest rename
    os.replace(tmp_path / "other.pt", path)
    (tmp_path / "c.pt.sha256.tmp").write_text((tmp_path / "other.pt.sha256").read_text())
    assert torch.equal(load_checkpoint(path)["a"], torch.zeros(3))
    assert (tmp_path / "c.pt.sha256").read_text() != old and not (tmp_path / "c.pt.sha256.tmp").exists()


def test_resume_refuses_another_language(tmp_path):
    from mdmt.empirical.model import ModelConfig

    ck = tmp_path / "ckpt.pt"
    model = ModelConfig(vocab_size=8, seq_len=8, d_model=16, n_layers=1, n_heads=2)
    cfg = TrainConfig(model=model, language="preset:2gram-ter:0", train_steps=2, batch=4, val_size=8, val_draws=1)
    train(cfg, ckpt_path=ck, **KW)
    with pytest.raises(ValueError, match=r"config.language, language_digest differ"):
        train(cfg.with_(train_steps=2, language="preset:2gram-ter:1"), ckpt_path=ck, resume=True, **KW)
    with pytest.raises(ValueError, match="language_digest"):  # the same SPEC cannot hide another language either
        train(cfg, language=_other_2gram(), ckpt_path=ck, resume=True, **KW)
    with pytest.raises(ValueError, match="already holds a checkpoint"):
        train(cfg, ckpt_path=ck, **KW)


def _other_2gram():
    from mdmt.constructions.languages import preset

    return preset("2gram-ter", 5)


def test_divergence_stops_training_and_keeps_the_last_good_checkpoint(tmp_path):
    ck = tmp_path / "ckpt.pt"
    with pytest.raises(TrainingDiverged, match=r"is (nan|inf) at step \d+ \(lr 1e\+10\): training stopped"):
        train(_cfg_small(steps=40, ckpt_every=1).with_(lr=1e10), _bigram(), ckpt_path=ck, **KW)
    state = load_checkpoint(ck)
    assert all(torch.isfinite(v).all() for v in state["model"].values())
    assert all(np.isfinite(state["losses"]))


def test_cli_lr_1e10_exits_2_with_one_line_and_no_nan_checkpoint(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["train", "--language", "preset:2gram-ter", "-L", "8", "--train-steps", "30", "--batch", "8",
               "--lr", "1e10", "--ckpt-every", "1", "--out", str(out), "--no-progress"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "training stopped" in err[0] and "last good checkpoint" in err[0]
    assert all(torch.isfinite(v).all() for v in load_checkpoint(out / "ckpt.pt")["model"].values())
    assert not (out / "summary.json").exists()


def test_bad_out_is_found_before_training(tmp_path, capsys):
    f = tmp_path / "file"
    f.write_text("x")
    t = time.perf_counter()
    for bad in (f, f / "sub"):
        assert main(["train", "--language", "preset:2gram-ter", "-L", "8", "--train-steps", "100000",
                     "--out", str(bad), "--no-progress"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(f) in err[0]
    assert time.perf_counter() - t < 30
    with pytest.raises(ValueError, match="existing file"):
        check_writable(f)
    if os.geteuid() != 0:  # root writes into read-only folders
        ro = tmp_path / "ro"
        ro.mkdir(mode=0o555)
        with pytest.raises(ValueError, match="cannot be written"):
            check_writable(ro)


def test_extending_a_finished_run_adds_a_learning_rate_cycle(tmp_path, capsys):
    out = tmp_path / "run"
    common = ["--language", "preset:2gram-ter", "-L", "8", "--batch", "8", "--out", str(out), "--no-progress", "--json"]
    assert main(["train", "--train-steps", "6", *common]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["provenance"]["commit"] and first["config"]["restarts"] == []
    assert main(["train", "--train-steps", "6", *common]) == 2  # an existing run needs --resume
    assert "--resume" in capsys.readouterr().err
    assert main(["train", "--resume", "--train-steps", "10", "--out", str(out), "--no-progress", "--json"]) == 0
    ext = json.loads(capsys.readouterr().out)
    assert ext["step"] == 10 and ext["config"]["restarts"] == [6]
    assert ext["history"][-1]["step"] == 10 and ext["config"]["language"] == "preset:2gram-ter:0"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["step"] == 10 and summary["provenance"]["versions"]["torch"]
    # the learning rate restarts with a warm-up at step 6 and decays to 0 again at 10
    assert lr_factor(5, 10, 0.1, (6,)) < lr_factor(6, 10, 0.1, (6,)) <= 1 and lr_factor(9, 10, 0.1, (6,)) < 0.2
    # a run stopped early must be finished before it is extended
    cfg = _cfg_small(steps=8)
    train(cfg, _bigram(), ckpt_path=tmp_path / "s.pt", stop_at=4, **KW)
    with pytest.raises(ValueError, match="stopped at step 4 of 8"):
        train(cfg.with_(train_steps=12), _bigram(), ckpt_path=tmp_path / "s.pt", resume=True, **KW)


def test_extension_equals_training_the_cycles_in_one_go(tmp_path):
    lang = _bigram()
    a = train(_cfg_small(steps=5), lang, ckpt_path=tmp_path / "a.pt", **KW)
    a = train(_cfg_small(steps=9), lang, ckpt_path=tmp_path / "a.pt", resume=True, **KW)
    b = train(_cfg_small(steps=9).with_(restarts=(5,)), lang, **KW)
    assert a.config == b.config and a.losses == b.losses


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_writes_the_checkpoint_of_the_last_step(tmp_path, sig):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "mdmt", "train", "--language", "preset:2gram-ter", "-L", "8", "--train-steps", "3000",
           "--batch", "4", "--ckpt-every", "20", "--val-size", "8", "--out", str(out), "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 240
    while not (out / "ckpt.pt.sha256").exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)  # the first periodic checkpoint (step 20) shows training is under way
    assert proc.poll() is None, proc.communicate()[1]
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "checkpoint" in err and "written" in err, err
    step = load_checkpoint(out / "ckpt.pt")["step"]
    assert 20 <= step < 3000


def test_a_resume_that_disagrees_with_the_checkpoint_is_refused_naming_both_values(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", "--language", "preset:2gram-ter", "-L", "8", "--train-steps", "2", "--batch", "4",
                 "--val-size", "4", "--out", str(out), "--no-progress", "--json"]) == 0
    capsys.readouterr()
    before = (out / "ckpt.pt").read_bytes()
    resume = ["train", "--resume", "--out", str(out), "--no-progress"]
    for extra, words in ((["--length", "16"], ("--length 16", "L = 8")),
                         (["--language", "preset:2gram-ter", "--length", "16"], ("--length 16", "L = 8")),
                         (["--model", "paper"], ("--model paper", "d_model 512", "--model tiny", "d_model 64")),
                         (["--ar"], ("--ar", "AR", "MDM")),
                         (["--language", "preset:2gram-ter:3"], ("preset:2gram-ter:3", "preset:2gram-ter:0"))):
        assert main(resume + extra) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("mdmt train: error: "), err
        assert all(w in err[0] for w in words), (extra, err[0])
    assert (out / "ckpt.pt").read_bytes() == before  # nothing was trained or written
    assert main(resume + ["--model", "tiny", "--length", "8", "--json"]) == 0  # the same settings resume
    capsys.readouterr()


def test_mdm_denoiser_refuses_non_finite_weights_naming_the_parameter():
    from mdmt.empirical.model import Transformer
    from mdmt.empirical.sampling import MDMDenoiser

    model = Transformer(_cfg(3))
    x = np.full((1, 8), -1)
    assert np.isfinite(MDMDenoiser(model)(x)).all()
    name, param = next(iter(model.named_parameters()))
    for bad in (float("nan"), float("inf")):
        with torch.no_grad():
            param.view(-1)[0] = bad
        with pytest.raises(ValueError, match=rf"parameter '{name}' holds 1 non-finite value"):
            MDMDenoiser(model)
    with torch.no_grad():
        param.view(-1)[0] = 0.0
    den = MDMDenoiser(model)
    with torch.no_grad():  # weights damaged after construction: refused at the call, not NaN probabilities
        param.fill_(float("nan"))
    with pytest.raises(ValueError, match=rf"'{name}'"):
        den(x)
