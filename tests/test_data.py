"""Stored data sets (mdmt.empirical.data, `mdmt data`) and training on them (`train(..., data=...)`, `mdmt train --data`)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from mdmt.cli import main
from mdmt.constructions.languages import language_from_spec
from mdmt.empirical.data import DataSpec, generate, load, load_or_create, read_manifest, verify

SPEC = DataSpec(language="preset:3gram:1", seed=7, num_train=200, num_val=40, length=12)


def test_generation_is_a_function_of_the_spec_and_lies_in_the_support():
    train, val = generate(SPEC)
    train2, val2 = generate(SPEC)
    assert train.shape == (200, 12) and val.shape == (40, 12)
    assert np.array_equal(train, train2) and np.array_equal(val, val2)
    lang = language_from_spec("preset:3gram:1")
    assert lang.in_support(train).all() and lang.in_support(val).all()  # samples of the pruned language
    other, _ = generate(DataSpec(**{**SPEC.__dict__, "seed": 8}))
    assert not np.array_equal(train, other)
    # train and val come from independent child seeds: the first rows differ
    assert not np.array_equal(train[:40], val)


def test_folder_round_trip_regeneration_and_damage(tmp_path):
    folder = tmp_path / "d"
    train, val = load_or_create(folder, SPEC)
    manifest = read_manifest(folder)
    assert manifest["vocab_size"] == 8 and manifest["num_train"] == 200
    assert np.load(folder / "train.npy").dtype == np.uint8  # |V| = 8 fits a byte
    t2, v2, _ = load(folder)
    assert np.array_equal(t2, train) and np.array_equal(v2, val)
    assert verify(folder)["sha256"] == manifest["sha256"]
    # Deleted: regenerated bit for bit.
    (folder / "train.npy").unlink()
    t3, _ = load_or_create(folder, SPEC)
    assert np.array_equal(t3, train)
    # Damaged: load names the file, load_or_create regenerates the original.
    bad = train.astype(np.uint8).copy()
    bad[0, 0] = (bad[0, 0] + 1) % 8
    np.save(folder / "train.npy", bad)
    with pytest.raises(ValueError, match="train.npy does not match"):
        load(folder)
    t4, _ = load_or_create(folder, SPEC)
    assert np.array_equal(t4, train)
    # Another spec in the same folder: refused, then replaced with --force (force=True).
    spec2 = DataSpec(**{**SPEC.__dict__, "num_train": 50})
    with pytest.raises(ValueError, match="holds a data set of another spec"):
        load_or_create(folder, spec2)
    t5, _ = load_or_create(folder, spec2, force=True)
    assert t5.shape == (50, 12) and read_manifest(folder)["num_train"] == 50


def test_verify_catches_a_manifest_that_does_not_regenerate(tmp_path):
    folder = tmp_path / "d"
    load_or_create(folder, SPEC)
    m = json.loads((folder / "manifest.json").read_text())
    m["seed"] = 99  # the arrays still match their digests, but not the recorded seed
    (folder / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(ValueError, match="differs from the set regenerated"):
        verify(folder)


def test_bad_specs_name_the_value():
    for bad, match in ((dict(language="preset:5gram"), "5gram"), (dict(num_train=0), "num_train"),
                       (dict(length=-3), "length"),
                       (dict(language="interval:5", length=12), "multiple of the interval length l = 5")):
        with pytest.raises(ValueError, match=match):
            DataSpec(**{**SPEC.__dict__, **bad})
    assert DataSpec(language="interval:3", length=12).build_language().n_symbols == 4
    assert DataSpec(language="preset:3gram", length=12).language == "preset:3gram:0"  # stored in canonical form


torch = pytest.importorskip("torch")


def _tiny(L=12, causal=False, steps=8, batch=16, seed=2):
    from mdmt.empirical.model import ModelConfig
    from mdmt.empirical.train import TrainConfig

    model = ModelConfig(vocab_size=8, seq_len=L, d_model=16, n_layers=1, n_heads=2, causal=causal)
    return TrainConfig(model=model, language="preset:3gram:1", train_steps=steps, batch=batch, seed=seed)


def test_data_rows_visit_every_row_once_per_epoch():
    from mdmt.empirical.train import data_rows_at

    n, batch = 10, 4
    rows = np.concatenate([data_rows_at(n, 3, s, batch) for s in range(5)])  # 20 rows = 2 epochs
    assert sorted(rows[:10]) == list(range(10)) and sorted(rows[10:]) == list(range(10))
    assert not np.array_equal(rows[:10], rows[10:])  # each epoch has its own permutation
    assert np.array_equal(data_rows_at(n, 3, 2, batch), rows[8:12])  # a function of (n, seed, step)


def test_training_on_a_stored_set_is_deterministic_and_resumes(tmp_path):
    from mdmt.empirical.train import train

    lang = language_from_spec("preset:3gram:1")
    data = generate(SPEC)
    full = train(_tiny(), lang, device="cpu", progress=False, data=data)
    again = train(_tiny(), lang, device="cpu", progress=False, data=data)
    assert full.losses == again.losses
    ck = tmp_path / "c.pt"
    train(_tiny(), lang, ckpt_path=ck, device="cpu", progress=False, data=data, stop_at=5)
    resumed = train(_tiny(), lang, ckpt_path=ck, resume=True, device="cpu", progress=False, data=data)
    assert resumed.losses == full.losses
    # The stored set is part of the checkpoint's settings: other data is refused on resume.
    other = generate(DataSpec(**{**SPEC.__dict__, "seed": 8}))
    with pytest.raises(ValueError, match="data_sha256"):
        train(_tiny(), lang, ckpt_path=ck, resume=True, device="cpu", progress=False, data=other)
    # Fresh draws from the language give another run.
    assert train(_tiny(), lang, device="cpu", progress=False).losses != full.losses


def test_training_data_is_validated():
    from mdmt.empirical.train import train

    lang = language_from_spec("preset:3gram:1")
    train_set, val = generate(SPEC)
    bad = train_set.copy()
    bad[3, 5] = 8
    with pytest.raises(ValueError, match="training sequence 3 position 5"):
        train(_tiny(steps=2, batch=4), lang, device="cpu", progress=False, data=(bad, val))
    with pytest.raises(ValueError, match="length 12 but the model's seq_len is 16"):
        train(_tiny(L=16, steps=2, batch=4), lang, device="cpu", progress=False, data=(train_set, val))
    with pytest.raises(ValueError, match="validation set is empty"):
        train(_tiny(steps=2, batch=4), lang, device="cpu", progress=False, data=(train_set, val[:0]))


def test_cli_data_and_train_on_it(tmp_path, capsys):
    d = tmp_path / "d"
    args = ["data", "--language", "preset:2gram-ter", "-L", "16", "--num", "64", "--num-val", "16", "--out", str(d)]
    assert main(args) == 0 and "written" in capsys.readouterr().out
    assert main(args) == 0 and "loaded" in capsys.readouterr().out
    assert main(["data", "--verify", str(d), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["num_train"] == 64
    assert main(["train", "--data", str(d), "--train-steps", "3", "--batch", "8", "--out", str(tmp_path / "r"),
                 "--no-progress", "--json"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["step"] == 3 and s["language"] == "preset:2gram-ter:0" and s["data"] == str(d)
    assert main(["train", "--data", str(d), "-L", "32", "--train-steps", "3", "--out", str(tmp_path / "r2")]) == 2
    assert "L = 16" in capsys.readouterr().err
    assert main(["data", "--language", "preset:2gram-ter"]) == 2
    assert "--out" in capsys.readouterr().err
