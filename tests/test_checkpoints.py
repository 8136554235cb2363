"""Checkpoints and training runs you can trust: digests (mdmt's and sha256sum's formats), weights-only loading,
refusal of non-regular files, atomic writes through atomic_file, refusal of another language, periodic and
signal-time checkpoints, early --out checks, divergence stops, extension to more steps, the contract of
mdmt evaluate.  tests/test_fuzz_checkpoints.py crafts hostile checkpoint contents."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = pytest.mark.torch

import mdmt.empirical  # noqa: F401  (before torch: it sets OMP_WAIT_POLICY, see its docstring)

import contextlib
import dataclasses
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import time
import warnings

import numpy as np
import torch

from mdmt.cli import main
from mdmt.empirical.checkpoint import (FIELD_KINDS, CheckpointError, check_state, check_writable, load_checkpoint,
                                       parse_digest, read_checkpoint, save_checkpoint)
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


@pytest.mark.integration
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_writes_the_checkpoint_of_the_last_step(tmp_path, sig):
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "mdmt", "train", "--language", "preset:2gram-ter", "-L", "8", "--train-steps", "3000",
           "--batch", "4", "--ckpt-every", "20", "--num-val", "8", "--out", str(out), "--no-progress"]
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
                 "--num-val", "4", "--out", str(out), "--no-progress", "--json"]) == 0
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


# ----------------------------------------------------------------------------- a real tiny run, made once

TINY = ["--language", "preset:2gram-ter", "-L", "8", "--train-steps", "2", "--batch", "4", "--num-val", "4",
        "--no-progress"]


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """The folder of a real tiny MDM training run (``mdmt train``, two steps)."""
    out = tmp_path_factory.mktemp("tiny") / "run"
    assert main(["train", *TINY, "--out", str(out)]) == 0
    return out


def _copy_run(run, dest):
    dest.mkdir(parents=True)
    for name in ("ckpt.pt", "ckpt.pt.sha256"):
        shutil.copy(run / name, dest / name)
    return dest / "ckpt.pt"


def _one_error_line(capsys, command):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"mdmt {command}: error: "), err
    return err[0]


def test_the_real_checkpoint_passes_the_structural_check_and_resumes(tiny_run):
    state, cfg = read_checkpoint(tiny_run / "ckpt.pt", resume=True)
    assert cfg.model.seq_len == 8 and state["step"] == 2
    assert check_state(state, "x", resume=True) == cfg


def test_every_configuration_field_has_a_known_type():
    """A new field of TrainConfig or ModelConfig needs a type that the checkpoint check knows."""
    from mdmt.empirical.model import ModelConfig

    for cls in (TrainConfig, ModelConfig):
        for f in dataclasses.fields(cls):
            assert f.type in FIELD_KINDS or (cls, f.name) == (TrainConfig, "model"), (cls.__name__, f.name, f.type)


@pytest.mark.parametrize("text", ["{h}\n", "{H}\n", "{h}  ckpt.pt\n", "{h} *ckpt.pt\n", "{H}  run/ckpt.pt",
                                  "SHA256 (ckpt.pt) = {h}\n", "\n{h}\n\n"])
def test_a_digest_in_sha256sum_format_or_upper_case_is_accepted(tiny_run, tmp_path, capsys, text):
    ckpt = _copy_run(tiny_run, tmp_path / "c")
    h = (tmp_path / "c" / "ckpt.pt.sha256").read_text().strip()
    (tmp_path / "c" / "ckpt.pt.sha256").write_text(text.format(h=h, H=h.upper()))
    assert load_checkpoint(ckpt)["step"] == 2
    assert main(["sample", "--checkpoint", str(ckpt), "-N", "2", "--num", "2"]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("text", [b"garbage\n", b"\xff\xfe\x00", b"", b"{h}\n{h}\n", b"{h}0\n", b"{h}  a\nb\n",
                                  b"x" * 5000])
def test_a_damaged_digest_file_is_reported_naming_it(tiny_run, tmp_path, capsys, text):
    ckpt = _copy_run(tiny_run, tmp_path / "c")
    dpath = tmp_path / "c" / "ckpt.pt.sha256"
    dpath.write_bytes(text.replace(b"{h}", dpath.read_bytes().strip()))
    with pytest.raises(CheckpointError, match=f"the digest file {dpath} is damaged"):
        load_checkpoint(ckpt)
    assert main(["evaluate", "--checkpoint", str(ckpt)]) == 2
    assert f"the digest file {dpath} is damaged" in _one_error_line(capsys, "evaluate")
    assert parse_digest(b"0" * 64 + b"  name with  spaces\n") == "0" * 64


@contextlib.contextmanager
def _deadline(seconds):
    """Fail instead of hanging (a FIFO opened for reading waits for a writer)."""
    def expired(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_fifo_a_device_or_a_folder_is_refused_by_its_kind(tiny_run, tmp_path, capsys):
    fifo = tmp_path / "fifo.pt"
    os.mkfifo(fifo)
    cases = [(fifo, "is a FIFO, not a regular file"), ("/dev/zero", "is a character device, not a regular file"),
             (tmp_path, "is a folder, not a regular file")]
    commands = [("sample", ["-N", "2", "--num", "2"]), ("evaluate", []),
                ("adaptive", ["--language", "preset:2gram-ter", "-L", "8", "--steps", "2", "--num", "2"])]
    for path, words in cases:
        if not os.path.exists(path):
            continue
        for command, extra in commands:
            head = [command] if command != "adaptive" else ["adaptive", "sample"]
            argv = head + ["--checkpoint", str(path), *extra]
            with _deadline(30):
                assert main(argv) == 2
            line = _one_error_line(capsys, command)
            assert f"checkpoint {path} {words}" in line and "does not exist" not in line, line
        with _deadline(30), pytest.raises(CheckpointError, match=words):
            load_model(path)
    # the checkpoint of a --resume, and a digest file, that are FIFOs
    out = tmp_path / "resume"
    out.mkdir()
    os.mkfifo(out / "ckpt.pt")
    with _deadline(30):
        assert main(["train", "--resume", "--out", str(out), "--no-progress"]) == 2
    assert "is a FIFO, not a regular file" in _one_error_line(capsys, "train")
    ckpt = _copy_run(tiny_run, tmp_path / "d")
    (tmp_path / "d" / "ckpt.pt.sha256").unlink()
    os.mkfifo(tmp_path / "d" / "ckpt.pt.sha256")
    with _deadline(30), pytest.raises(CheckpointError, match=r"digest file .* is a FIFO"):
        load_checkpoint(ckpt)
    assert not main(["sample", "--checkpoint", str(tmp_path / "nothing.pt"), "-N", "2"]) == 0
    assert "does not exist" in _one_error_line(capsys, "sample")


def test_a_pickle_that_is_not_weights_only_gives_one_line_and_no_torch_warning(tmp_path, capsys):
    from mdmt.empirical.checkpoint import file_digest

    path = tmp_path / "ckpt.pt"
    path.write_bytes(pickle.dumps({"format": 2}, protocol=4))  # torch.load warns about the protocol
    (tmp_path / "ckpt.pt.sha256").write_text(file_digest(path) + "\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["sample", "--checkpoint", str(path), "-N", "2"]) == 2
    assert "cannot be read safely" in _one_error_line(capsys, "sample") and not caught, [str(w.message) for w in caught]


@pytest.mark.integration
def test_a_pickle_that_is_not_weights_only_gives_one_line_in_a_fresh_process(tmp_path):
    """The same in a fresh ``python -m mdmt`` (its own warning filters): no warning printed before the error."""
    from mdmt.empirical.checkpoint import file_digest

    path = tmp_path / "ckpt.pt"
    path.write_bytes(pickle.dumps({"format": 2}, protocol=4))
    (tmp_path / "ckpt.pt.sha256").write_text(file_digest(path) + "\n")
    proc = subprocess.run([sys.executable, "-m", "mdmt", "sample", "--checkpoint", str(path), "-N", "2"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1  # no warning printed before the error
    assert proc.stderr.startswith("mdmt sample: error: ") and "cannot be read safely" in proc.stderr


def _temporaries(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_checkpoint_writes_use_atomic_file_temporaries(tmp_path, monkeypatch):
    from mdmt.runtime import outputs

    path = tmp_path / "c.pt"
    stale = tmp_path / f".c.pt.mdmt-{outputs._host_tag()}-999999999.abcdefgh.tmp"  # left by a killed run
    stale.write_bytes(b"partial")
    save_checkpoint(path, {"a": torch.ones(2)})
    assert not stale.exists() and _temporaries(tmp_path) == []
    assert (path.stat().st_mode & 0o777) == 0o666 & ~outputs._umask()  # not mkstemp's private 0600
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}

    def full_disk(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(ValueError, match="No space left on device"):
        save_checkpoint(path, {"a": torch.zeros(3)})
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # old checkpoint, digest, no temporaries
    if signal.getsignal(signal.SIGTERM) != signal.SIG_DFL:
        pytest.skip("SIGTERM is handled by the test runner")
    def killed_while_writing(fd):  # SIGTERM while the checkpoint's own temporary is being flushed
        if any(name.startswith(".c.pt.mdmt-") for name in os.listdir(tmp_path)):
            os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(os, "fsync", killed_while_writing)
    with pytest.raises(outputs.Terminated):
        save_checkpoint(path, {"a": torch.zeros(3)})
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert torch.equal(load_checkpoint(path)["a"], torch.ones(2))


def test_ar_with_learning_error_num_is_refused_naming_both_flags_before_any_work(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["train", *TINY, "--ar", "--learning-error-num", "8", "--out", str(out)]) == 2
    line = _one_error_line(capsys, "train")
    assert "--ar" in line and "--learning-error-num" in line
    assert not out.exists()


def test_evaluate_prints_the_documented_fields(tiny_run, tmp_path, capsys):
    ckpt = tiny_run / "ckpt.pt"
    common = ["evaluate", "--checkpoint", str(ckpt), "--steps", "2,4", "--num", "8", "--num-val", "4",
              "--learning-error-num", "4", "--batch", "8"]
    assert main(common + ["--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["checkpoint"] == str(ckpt) and res["language"] == "preset:2gram-ter:0"
    assert res["kind"] == "mdm" and res["L"] == 8 and res["parameters"] == load_model(ckpt).num_parameters()
    g = res["val_gap"]
    assert g["num"] == 4 and g["ci"][0] <= g["gap"] <= g["ci"][1]
    assert g["gap"] == pytest.approx(g["model_nll"] - g["exact_nll"]) and g["exact_nll"] > 0
    le = res["learning_error"]
    assert le["num_sequences"] == 4 and 0 <= le["q90"] <= le["q99"] <= le["max"] and le["ci"][0] <= le["mean"]
    assert [p["N"] for p in res["points"]] == [2, 4]
    for p in res["points"]:
        assert 1 <= p["nfe_mean"] <= p["N"] and 0 <= p["ser_ci"][0] <= p["ser"] <= p["ser_ci"][1] <= 1
        assert p["gen_perplexity"] >= 1 and p["gen_nll_per_token"] == pytest.approx(np.log(p["gen_perplexity"]))
        assert p["gen_perplexity_ci"][0] <= p["gen_perplexity"] <= p["gen_perplexity_ci"][1] and p["seconds"] >= 0
    assert main(common) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[0] == f"MDM network, {res['parameters']} parameters, language preset:2gram-ter:0, L = 8"
    assert text[1].startswith("paired validation gap") and text[2].startswith("learning error")
    assert text[3].split() == ["N", "NFE", "SER", "SER", "95%", "CI", "gen.", "perplexity", "95%", "CI"]
    assert [row.split()[0] for row in text[5:]] == ["2", "4"]
    # below the network's length an MDM has no validation gap (its NELBO is over its whole length)
    assert main(["evaluate", "--checkpoint", str(ckpt), "-L", "4", "--steps", "2", "--num", "4",
                 "--learning-error-num", "0", "--json"]) == 0
    short = json.loads(capsys.readouterr().out)
    assert short["L"] == 4 and short["val_gap"] is None and "learning_error" not in short
    # an AR network: one point at N = L, no learning error
    ar = tmp_path / "ar"
    assert main(["train", *TINY, "--ar", "--out", str(ar)]) == 0
    capsys.readouterr()
    assert main(["evaluate", "--checkpoint", str(ar / "ckpt.pt"), "--num", "4", "--num-val", "4", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["kind"] == "ar" and "learning_error" not in res and [p["N"] for p in res["points"]] == [8]
    assert res["points"][0]["nfe_mean"] == 8 and res["val_gap"]["num"] == 4
    # the learning error is an MDM's: asked for on an AR checkpoint, it is refused naming the flag
    assert main(["evaluate", "--checkpoint", str(ar / "ckpt.pt"), "--num", "4", "--num-val", "4",
                 "--learning-error-num", "8"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--learning-error-num 8" in err[0] and "AR checkpoint" in err[0]
