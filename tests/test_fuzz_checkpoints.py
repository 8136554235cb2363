"""Crafted checkpoints cannot break mdmt.

A real tiny checkpoint is written once by ``mdmt train``; Hypothesis then mutates its content --
entries dropped, renamed or replaced by values of other types, weights of other shapes, dtypes or
with NaN/inf, absurd network sizes, unknown configuration keys, broken optimizer and random-generator
states -- and rewrites its digest so that it matches.  For every such file ``mdmt sample``,
``mdmt evaluate``, ``mdmt adaptive sample --checkpoint``, ``mdmt train --resume`` and
:func:`mdmt.empirical.train.load_model` either succeed or fail with exit status 2 (a ValueError
for the function) and one line naming the checkpoint: never a traceback, never a warning before the
error line, never a partial output, and a refused resume leaves its folder as it was.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')
pytestmark = [pytest.mark.torch, pytest.mark.integration]  # a fuzzer: the integration tier

import mdmt.empirical  # noqa: F401  (before torch: it sets OMP_WAIT_POLICY, see its docstring)

import copy
import dataclasses
import json
import math
import shutil
import tempfile
import warnings
from pathlib import Path

import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdmt.cli import main
from mdmt.empirical.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from mdmt.empirical.model import ModelConfig, Transformer
from mdmt.empirical.train import load_model

torch.set_num_threads(1)

# the smallest run of the tiny architecture, with every optional kind of weight switched on
TRAIN = ["--language", "preset:2gram-ter", "-L", "8", "--train-steps", "2", "--batch", "4", "--num-val", "4",
         "--neighbours", "1", "--window", "2", "--hmm-states", "2", "--no-progress"]
FUZZ = settings(max_examples=40, deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """(folder of a real tiny training run, its checkpoint state)."""
    out = tmp_path_factory.mktemp("tiny") / "run"
    assert main(["train", *TRAIN, "--out", str(out)]) == 0
    return out, load_checkpoint(out / "ckpt.pt")


# ----------------------------------------------------------------------------- mutations

def _get(obj, path):
    for key in path:
        obj = obj[key]
    return obj


def _paths(state: dict) -> dict:
    """Paths (tuples of keys) into the real checkpoint, by kind."""
    opt = state["optimizer"]
    return {
        "top": [(k,) for k in state],
        "config": [("config", k) for k in state["config"]],
        "model_config": [("config", "model", k) for k in state["config"]["model"]],
        "weights": [("model", k) for k in state["model"]],
        "optimizer": ([("optimizer", k) for k in opt]
                      + [("optimizer", "param_groups", i, k) for i, g in enumerate(opt["param_groups"]) for k in g]
                      + [("optimizer", "state", pid, k) for pid, e in opt["state"].items() for k in e]),
        "resume": ([("settings", k) for k in state["settings"]] + [("losses", i) for i in range(len(state["losses"]))]
                   + [("history", i, k) for i, r in enumerate(state["history"]) for k in r] + [("rng_torch",)]),
    }


def _tensor_paths(state: dict) -> list:
    out = []
    for kind in ("weights", "optimizer"):
        out += [p for p in _paths(state)[kind] if isinstance(_get(state, p), torch.Tensor)]
    return out + [("rng_torch",)]


SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 10), st.sampled_from([2**62 + 1, 2**70, -(2**70)]),
                    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=4))
TENSORS = st.builds(lambda shape, dtype: torch.zeros(shape, dtype=dtype),
                    st.lists(st.integers(0, 3), max_size=3).map(tuple),
                    st.sampled_from([torch.float32, torch.float64, torch.int64, torch.uint8, torch.bool]))
VALUES = st.recursive(st.one_of(SCALARS, TENSORS),
                      lambda inner: st.one_of(st.lists(inner, max_size=3), st.tuples(inner, inner),
                                              st.dictionaries(st.text(max_size=3), inner, max_size=2)),
                      max_leaves=4)
ABSURD = st.sampled_from([0, -1, 1, 3, 10**9, 10**12, 2**62, 2**70])  # sizes for the network's shape


def _mutation(paths: dict, tensors: list, model_ints: list):
    """One mutation; for drop and set the kind of entry is drawn first, so that each kind is reached as often."""
    somewhere = st.sampled_from(sorted(paths)).flatmap(lambda kind: st.sampled_from(paths[kind]))
    dicts = [(), ("config",), ("config", "model"), ("model",), ("optimizer",), ("settings",), ("history", 0)]
    return st.one_of(
        st.tuples(st.just("drop"), somewhere),
        st.tuples(st.just("rename"), st.sampled_from(paths["top"] + paths["config"] + paths["model_config"]
                                                     + paths["weights"]), st.text(min_size=1, max_size=4)),
        st.tuples(st.just("set"), somewhere, VALUES),
        # configuration changes written in both config and settings.config, as mdmt writes them
        st.tuples(st.just("config"), st.sampled_from(model_ints), ABSURD),
        st.tuples(st.just("config"), st.sampled_from(paths["config"] + paths["model_config"]), VALUES),
        st.tuples(st.just("add"), st.sampled_from(dicts), st.text(max_size=4), VALUES),
        st.tuples(st.just("reshape"), st.sampled_from(tensors), st.integers(0, 3), st.sampled_from([-1, 1, 7])),
        st.tuples(st.just("dtype"), st.sampled_from(tensors),
                  st.sampled_from([torch.float64, torch.float16, torch.int32, torch.uint8, torch.bool])),
        st.tuples(st.just("nonfinite"), st.sampled_from(tensors), st.integers(0, 10**6),
                  st.sampled_from([math.nan, math.inf, -math.inf])),
        st.tuples(st.just("whole"), VALUES),
    )


def _apply(state, op):
    """``state`` with the mutation ``op`` applied (in place where possible)."""
    kind = op[0]
    if kind == "whole":
        return op[1]
    if not isinstance(state, dict):
        return state
    try:
        if kind == "add":
            _get(state, op[1])[op[2]] = op[3]
            return state
        if kind == "config":
            for root in (state["config"], state["settings"]["config"]):
                _get(root, op[1][1:-1])[op[1][-1]] = op[2]
            return state
        parent, key = _get(state, op[1][:-1]), op[1][-1]
        if kind == "drop":
            del parent[key]
        elif kind == "rename":
            parent[op[2]] = parent.pop(key)
        elif kind == "set":
            parent[key] = op[2]
        else:
            t = parent[key]
            if kind == "reshape":
                shape = list(t.shape) or [1]
                dim = op[2] % len(shape)
                shape[dim] = max(0, shape[dim] + op[3])
                parent[key] = torch.zeros(shape, dtype=t.dtype)
            elif kind == "dtype":
                parent[key] = t.to(op[2])
            elif kind == "nonfinite" and t.is_floating_point() and t.numel():
                t = t.clone()
                t.view(-1)[op[2] % t.numel()] = op[3]
                parent[key] = t
    except (KeyError, IndexError, TypeError, AttributeError):
        pass  # an earlier mutation removed or replaced what this one would change
    return state


# ----------------------------------------------------------------------------- consumers

def _run(argv, capsys):
    """(exit status, stdout, stderr lines, warnings) of ``mdmt argv`` run in this process."""
    capsys.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rc = main(argv)
    out, err = capsys.readouterr()
    return rc, out, err.strip().splitlines(), caught


def _check_refusal(rc, err, caught, command: str, ckpt: Path):
    assert rc in (0, 2), (command, rc, err)
    if rc == 2:
        assert len(err) == 1 and err[0].startswith(f"mdmt {command}: error: "), err
        assert "Traceback" not in err[0]
        assert not [w for w in caught if "torch" in str(w.filename)], [str(w.message) for w in caught]


def _files(folder: Path) -> dict:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def check_every_consumer(ckpt: Path, work: Path, capsys) -> dict:
    """Run the five consumers of a checkpoint and check the contract; returns their exit statuses."""
    status = {}
    try:
        model = load_model(ckpt)
    except CheckpointError as exc:
        msg = str(exc)
        assert "\n" not in msg and str(ckpt) in msg, msg
        status["load_model"] = 2
    else:
        assert isinstance(model, Transformer)
        status["load_model"] = 0

    samples = work / "samples.txt"
    rc, out, err, caught = _run(["sample", "--checkpoint", str(ckpt), "-N", "2", "--num", "3", "--batch", "4",
                                 "--out", str(samples)], capsys)
    _check_refusal(rc, err, caught, "sample", ckpt)
    assert samples.exists() == (rc == 0)  # complete, or absent
    if rc == 0:
        assert samples.read_text().startswith("# mdmt sample")
        assert not [p for p in work.iterdir() if p.name.startswith(".")]  # no temporary or lock left
    status["sample"] = rc

    rc, out, err, caught = _run(["evaluate", "--checkpoint", str(ckpt), "--steps", "2", "--num", "3", "--num-val", "2",
                                 "--learning-error-num", "2", "--batch", "4", "--json"], capsys)
    _check_refusal(rc, err, caught, "evaluate", ckpt)
    if rc == 0:
        assert json.loads(out)["checkpoint"] == str(ckpt)
    status["evaluate"] = rc

    rc, out, err, caught = _run(["adaptive", "sample", "--checkpoint", str(ckpt), "--language", "preset:2gram-ter",
                                 "-L", "8", "--steps", "2", "--num", "3"], capsys)
    _check_refusal(rc, err, caught, "adaptive", ckpt)
    status["adaptive"] = rc

    res = work / "resume"
    res.mkdir()
    for name in ("ckpt.pt", "ckpt.pt.sha256"):
        shutil.copy(ckpt.parent / name, res / name)
    before = _files(res)
    rc, out, err, caught = _run(["train", "--resume", "--out", str(res), "--train-steps", "2", "--no-progress"], capsys)
    _check_refusal(rc, err, caught, "train", res / "ckpt.pt")
    if rc == 2:
        assert _files(res) == before  # nothing trained, written or left behind
    else:
        assert (res / "summary.json").exists()
    status["resume"] = rc
    return status


def _craft(state, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "ckpt.pt"
    save_checkpoint(path, state)  # a digest that matches the hostile content
    return path


# ----------------------------------------------------------------------------- tests

def test_the_real_checkpoint_passes_every_consumer(tiny, tmp_path, capsys):
    run, state = tiny
    status = check_every_consumer(_craft(copy.deepcopy(state), tmp_path / "c"), tmp_path, capsys)
    assert set(status.values()) == {0}, status


@pytest.mark.parametrize("name, mutate, words", [
    ("no config", lambda s: s.pop("config"), "lacks the entry 'config'"),
    ("no model", lambda s: s.pop("model"), "lacks the entry 'model'"),
    ("a list", lambda s: [1, 2, 3], "holds a list of 3 items"),
    ("a shape", lambda s: s["model"].__setitem__("tok.weight", torch.zeros(3, 64)), "has shape (3, 64)"),
    ("d_model 10^9", lambda s: s["config"]["model"].update(d_model=10**9, n_heads=1), "more than the limit"),
    ("vocabulary 10^12", lambda s: s["config"]["model"].update(vocab_size=10**12), "V = 1000000000000"),
    ("an unknown key", lambda s: s["config"]["model"].update(bogus=1), "unknown key 'bogus' (= 1)"),
    ("a wrong type", lambda s: s["config"]["model"].update(d_model="64"), "config.model.d_model = '64' is not an"),
    ("not a tensor", lambda s: s["model"].__setitem__("head.weight", [1.0]), "model['head.weight'] is a list"),
    ("NaN weights", lambda s: s["model"]["head.weight"].view(-1).__setitem__(3, math.nan), "NaN"),
    ("a missing weight", lambda s: s["model"].pop("ln_f.bias"), "lacks the weight 'ln_f.bias'"),
    ("an extra weight", lambda s: s["model"].__setitem__("extra", torch.zeros(1)), "holds the weight 'extra'"),
    ("a float64 weight", lambda s: s["model"].__setitem__("ln_f.bias", s["model"]["ln_f.bias"].double()), "float64"),
    ("another format", lambda s: s.__setitem__("format", 1), "has format 1"),
])
def test_hand_made_hostile_checkpoints_are_refused_by_every_consumer(tiny, tmp_path, capsys, name, mutate, words):
    state = copy.deepcopy(tiny[1])
    out = mutate(state)
    state = out if isinstance(out, list) else state
    ckpt = _craft(state, tmp_path / "c")
    status = check_every_consumer(ckpt, tmp_path, capsys)
    assert set(status.values()) == {2}, status
    with pytest.raises(CheckpointError) as exc:
        load_model(ckpt)
    assert words in str(exc.value) and str(ckpt) in str(exc.value)


@pytest.mark.parametrize("mutate, words", [
    (lambda s: s.__setitem__("rng_torch", torch.zeros(3)), "rng_torch is a torch.float32 tensor of shape (3,)"),
    (lambda s: s["rng_torch"].zero_(), "rng_torch is not a state of torch's random generator"),
    (lambda s: s.__setitem__("optimizer", 5), "optimizer is 5"),
    (lambda s: s["optimizer"]["state"][0].__setitem__("exp_avg", torch.zeros(2)), "exp_avg has shape (2,)"),
    (lambda s: s["optimizer"]["param_groups"][0].__setitem__("betas", "x"), "betas = 'x' is not a pair"),
    (lambda s: s["optimizer"]["param_groups"].pop(), "the config implies 2 group(s)"),
    (lambda s: s.__setitem__("step", "x"), "step = 'x' is not a step count"),
    (lambda s: s.pop("settings"), "lacks the entry 'settings' that resuming needs"),
    (lambda s: s["history"][0].pop("val_nll"), "history[0] lacks the key 'val_nll'"),
    (lambda s: s["losses"].append(1.0), "a list of 2 numbers"),
])
def test_a_broken_training_state_is_refused_by_resume_only(tiny, tmp_path, capsys, mutate, words):
    state = copy.deepcopy(tiny[1])
    mutate(state)
    ckpt = _craft(state, tmp_path / "c")
    status = check_every_consumer(ckpt, tmp_path, capsys)
    assert status == {"load_model": 0, "sample": 0, "evaluate": 0, "adaptive": 0, "resume": 2}, status
    rc, _, err, _ = _run(["train", "--resume", "--out", str(ckpt.parent), "--train-steps", "2", "--no-progress"],
                         capsys)
    assert rc == 2 and words in err[0] and str(ckpt) in err[0], err


@pytest.mark.integration
@FUZZ
@given(data=st.data())
def test_crafted_checkpoints_never_break_a_consumer(tiny, capsys, data):
    state = copy.deepcopy(tiny[1])
    paths = _paths(state)
    model_ints = [("config", "model", f.name) for f in dataclasses.fields(ModelConfig) if f.type == "int"]
    ops = data.draw(st.lists(_mutation(paths, _tensor_paths(state), model_ints), min_size=1, max_size=2), label="ops")
    for op in ops:
        state = _apply(state, op)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        check_every_consumer(_craft(state, work / "c"), work, capsys)


def test_an_archive_that_expands_beyond_the_memory_guard_is_refused_before_torch_reads_it(tiny, tmp_path, capsys,
                                                                                          monkeypatch):
    """A checkpoint whose digest matches but whose archive holds a member that inflates far beyond its file size
    (here 64 MB of zeros in a file of about 100 kB) is refused from the archive's directory, naming the checkpoint."""
    import zipfile

    from mdmt.empirical.checkpoint import file_digest

    run, _ = tiny
    path = tmp_path / "bomb" / "ckpt.pt"
    path.parent.mkdir()
    shutil.copy(run / "ckpt.pt", path)
    with zipfile.ZipFile(path, "a", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("run/extra", bytes(64 << 20))
    (path.parent / "ckpt.pt.sha256").write_text(file_digest(path) + "\n")
    assert path.stat().st_size < (4 << 20)
    monkeypatch.setenv("MDMT_MAX_MEMORY", "32M")  # above the file, below what the archive expands to
    with pytest.raises(CheckpointError, match=r"loading checkpoint .*ckpt.pt \(its archive expands to this size\)"):
        load_checkpoint(path)
    assert main(["sample", "--checkpoint", str(path), "--language", "preset:2gram-ter", "-L", "8", "-N", "2",
                 "--num", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "its archive expands" in err[0]
    monkeypatch.delenv("MDMT_MAX_MEMORY")
    load_checkpoint(run / "ckpt.pt")  # a real checkpoint expands to about its own size
