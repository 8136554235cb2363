"""Hostile inputs: every one gets a correct result or one clear line (exit 2) naming the flag, value or file.

1. damaged data-set manifests and language files (truncated JSON, wrong types, a key given twice);
2. options that do not apply to the request (refused, never ignored), and ``.NPZ`` in any case;
3. special files (FIFO, device, folder, symbolic link loop, unreadable file) given as any file option,
   internal names and wrapped integers in messages, negative and huge seeds and counts;
4. empty comma-separated lists;
5. token arrays of every integer dtype at its limits, floats and booleans: checked against the
   vocabulary without wrap-around, by ``token_array``, the languages' scoring functions and ``mdmt score``.

Commands run in the crash- and hang-proof worker of tests/fuzz_support.py (a FIFO that were opened
would block: the worker's time bound turns that into a failure, never a hung test run).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdmt.constructions.languages import interval_hmm, load_language, preset
from mdmt.runtime.validation import MASK, regular_file, token_array
from tests.fuzz_support import ERROR, OK, PLOTTING, outcome, shared_worker

AT_ONCE = 10.0  # seconds: a refusal comes at once (and a FIFO is never opened)
BOUND = 120.0  # seconds the worker waits for any run (a first run compiles numba kernels) before stopping it
I64_MAX = 2**63 - 1


@pytest.fixture(scope="module")
def worker(tmp_path_factory, pytestconfig):
    return shared_worker(pytestconfig, tmp_path_factory.mktemp("hostile-logs"), BOUND)


def _snapshot(folder: Path) -> dict:
    """Every path under ``folder``: a file with its size, modification time and mode, a folder with its mode
    (a lock taken and released in it changes a folder's time, not its content; links are not followed)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = Path(root) / name
            st_ = p.lstat()
            out[str(p.relative_to(folder))] = st_.st_mode if name in dirs else (st_.st_size, st_.st_mtime_ns,
                                                                                 st_.st_mode)
    return out


def refused(worker, folder: Path, *argv: str, says=()) -> str:
    """Run ``mdmt argv`` in ``folder``: exit 2 within :data:`AT_ONCE` seconds (the command's imports included),
    exactly one ``mdmt <command>: error:`` line holding every string of ``says``, no traceback, and nothing
    written or changed in ``folder``.  Returns the line."""
    before = _snapshot(folder)
    res = worker.run(list(argv), folder, heavy=False)
    kind = outcome(res, "--json" in argv)
    assert kind == ERROR, (kind, res)
    assert res["seconds"] < AT_ONCE, res
    line = res["err"].rstrip("\n")
    assert "\n" not in line and "Traceback" not in line
    assert line.startswith(f"mdmt {argv[0]}: error: ") or line.startswith(f"mdmt {argv[0]} {argv[1]}: error: "), line
    assert res["out"] == "", res["out"]
    for s in ([says] if isinstance(says, str) else says):
        assert s in line, (s, line)
    assert _snapshot(folder) == before, "a refused command wrote or changed a file"
    return line


def accepted(worker, folder: Path, *argv: str) -> dict:
    res = worker.run(list(argv), folder)
    assert outcome(res, "--json" in argv) == OK, res
    return res


# ============================================================================ 1. damaged manifests and files
def _data_set(folder: Path) -> Path:
    from mdmt.empirical.data import DataSpec, ensure

    ensure(folder / "d", DataSpec(language="preset:2gram", num_train=6, num_val=3, length=5))
    return folder / "d" / "manifest.json"


def _edit_json(path: Path, **changes) -> None:
    d = json.loads(path.read_text())
    d.update(changes)
    path.write_text(json.dumps(d))


DAMAGE = {
    "truncated": (lambda p: p.write_text(p.read_text()[:50]), "is damaged: it is not valid JSON"),
    "empty": (lambda p: p.write_text(""), "is damaged: it is not valid JSON"),
    "binary": (lambda p: p.write_bytes(b"\xff\xfe\x00\x81"), "is damaged: it is not UTF-8 text"),
    "a list": (lambda p: p.write_text("[1, 2]"), "is damaged: it holds a JSON list, not an object"),
    "num_train a string": (lambda p: _edit_json(p, num_train="ten"), "'num_train' is 'ten', not an integer >= 1"),
    "length a float": (lambda p: _edit_json(p, length=5.0), "'length' is 5.0, not an integer >= 1"),
    "seed negative": (lambda p: _edit_json(p, seed=-3), "'seed' is -3, not an integer >= 0"),
    "num_val a boolean": (lambda p: _edit_json(p, num_val=True), "'num_val' is True, not an integer >= 1"),
    "language a number": (lambda p: _edit_json(p, language=3), "'language' is 3, not a language SPEC"),
    "format a string": (lambda p: _edit_json(p, format="2"), "'format' is '2', not a format number"),
    "sha256 a list": (lambda p: _edit_json(p, sha256=[1]), "lacks the SHA-256 digests"),
    "sha256 not hex": (lambda p: _edit_json(p, sha256={"train": "x" * 64, "val": "0" * 64}),
                       "'sha256' of train is 'xxxx"),
    "complete a string": (lambda p: _edit_json(p, complete="no"), "'complete' is 'no', not true or false"),
    "missing field": (lambda p: p.write_text(json.dumps({k: v for k, v in json.loads(p.read_text()).items()
                                                         if k != "vocab_size"})), "it lacks 'vocab_size'"),
    "no format": (lambda p: p.write_text('{"a": 1}'), "is not an mdmt data set manifest (it has no 'format')"),
    "duplicate key": (lambda p: p.write_text(p.read_text().replace('"seed": 0,', '"seed": 0, "seed": 1,', 1)),
                      "is damaged: key 'seed' appears more than once in an object"),
}


@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_manifest_is_reported_as_damaged_naming_the_file(worker, tmp_path, damage):
    """A damaged manifest used to be reported as 'no data set manifest' (and a key given twice was read silently)."""
    manifest = _data_set(tmp_path)
    make, message = DAMAGE[damage]
    make(manifest)
    line = refused(worker, tmp_path, "data", "--verify", "d", says=["d/manifest.json", message])
    assert "no data set manifest" not in line
    # writing into it: refused, naming the damage, nothing replaced without --force
    refused(worker, tmp_path, "data", "--language", "preset:2gram", "-L", "5", "--num", "6", "--num-val", "3",
            "--out", "d", says=["d/manifest.json", message, "--force"])


def test_a_damaged_manifest_is_replaced_with_force_and_the_status_says_why(worker, tmp_path):
    manifest = _data_set(tmp_path)
    manifest.write_text("{")
    res = accepted(worker, tmp_path, "data", "--language", "preset:2gram", "-L", "5", "--num", "6", "--num-val", "3",
                   "--out", "d", "--force", "--json")
    assert "is damaged" in json.loads(res["out"])["status"]
    accepted(worker, tmp_path, "data", "--verify", "d")


def test_the_library_reports_the_damage_too(tmp_path):
    from mdmt.empirical.data import load, read_manifest

    manifest = _data_set(tmp_path)
    manifest.write_text(manifest.read_text().replace('"num_val": 3', '"num_val": 3, "num_val": 4'))
    assert read_manifest(tmp_path / "d") is None  # not a manifest mdmt reads
    with pytest.raises(ValueError, match=r"d/manifest.json is damaged: key 'num_val' appears more than once in an object"):
        load(tmp_path / "d")
    os.mkfifo(tmp_path / "f")
    with pytest.raises(ValueError, match=r"^--data .*/f is a FIFO, not a data set folder$"):
        load(tmp_path / "f", flag="--data")


@pytest.mark.parametrize("suffix, key", [(".json", "kind"), (".json", "initial"), (".json", "n"), (".json", "format"),
                                         (".npz", "kind"), (".npz", "n")])
def test_a_language_file_with_a_key_given_twice_is_refused_naming_the_key(worker, tmp_path, suffix, key):
    """JSON keeps the last of two values of a key without a word; a language file holding both is refused."""
    accepted(worker, tmp_path, "language", "--language", "preset:2gram", "--out", "l.json")
    text = (tmp_path / "l.json").read_text()
    if suffix == ".json":
        dup = text.replace(f'"{key}":', f'"{key}": 0, "{key}":', 1)
        assert dup != text
        (tmp_path / "bad.json").write_text(dup)
    else:  # the JSON metadata of an .npz
        d = json.loads(text)
        meta = json.dumps({k: v for k, v in d.items() if k not in ("initial", "transition")})
        meta = meta.replace(f'"{key}":', f'"{key}": 0, "{key}":', 1)
        with open(tmp_path / "bad.npz", "wb") as fh:
            np.savez(fh, meta=np.array(meta), initial=np.array(d["initial"]), transition=np.array(d["transition"]))
    (tmp_path / "s.txt").write_text("0 1\n")
    refused(worker, tmp_path, "score", "--language", f"bad{suffix}", "--sequences", "s.txt",
            says=[f"--language bad{suffix}", f"key {key!r} appears more than once"])


# ============================================================================ 2. options that do not apply
NOT_APPLYING = [
    (["language", "--language", "preset:2gram", "--vocab", "5", "--out", "x.json"],
     "--vocab 5 does not apply to --language preset:2gram"),
    (["language", "--language", "preset:2gram", "--n", "4", "--out", "x.json"], "--n 4 does not apply"),
    (["language", "--language", "preset:hmm", "--states", "4", "--out", "x.json"], "--states 4 does not apply"),
    (["language", "--language", "preset:2gram", "--temperature", "1", "--out", "x.json"], "--temperature 1.0"),
    (["language", "--language", "preset:2gram", "--threshold", "0", "--out", "x.json"], "--threshold 0.0"),
    (["language", "--language", "preset:2gram", "--seed", "0", "--out", "x.json"], "preset:NAME:SEED"),
    (["language", "--kind", "ngram", "--states", "5", "--out", "x.json"], "--states 5 does not apply to --kind ngram"),
    (["language", "--kind", "hmm", "--n", "2", "--out", "x.json"], "--n 2 does not apply to --kind hmm"),
    (["language", "--list", "--vocab", "3"], "--vocab 3 does not apply to --list"),
    (["language", "--list", "--out", "x.json"], "--out x.json does not apply to --list"),
    (["language", "--list", "--kind", "hmm"], "--kind hmm does not apply to --list"),
    (["data", "--verify", "d", "--num", "5"], "--num 5 does not apply"),
    (["data", "--verify", "d", "--length", "5"], "--length 5 does not apply"),
    (["data", "--verify", "d", "--seed", "0"], "--seed 0 does not apply"),
    (["data", "--verify", "d", "--num-val", "3"], "--num-val 3 does not apply"),
    (["data", "--verify", "d", "--force"], "--force does not apply"),
    (["data", "--verify", "d", "--out", "e"], "--out e does not apply"),
    (["sample", "--language", "preset:2gram", "-L", "3", "-N", "2", "--device", "cpu"],
     "--device cpu applies to a network (--checkpoint)"),
    (["sample", "--language", "preset:2gram", "-L", "3", "-N", "2", "--force"], "--force applies to --out"),
    (["curve", "ter", "--force"], "--force applies to --csv or --plot"),
    (["curve", "ser", "-L", "10", "--force"], "--force applies to --csv or --plot"),
]


@pytest.mark.parametrize("argv, says", NOT_APPLYING, ids=[" ".join(a)[:60] for a, _ in NOT_APPLYING])
def test_an_option_that_does_not_apply_is_refused_naming_it(worker, tmp_path, argv, says):
    """These options used to be ignored without a word (a preset drawn with --vocab 5 still had 8 symbols)."""
    if argv[:2] == ["data", "--verify"]:
        _data_set(tmp_path)
    refused(worker, tmp_path, *argv, says=says)


@pytest.mark.parametrize("command", [["language", "--kind", "ngram", "--n", "2", "--vocab", "3"],
                                     ["counterexample", "-l", "3"]])
@pytest.mark.parametrize("name", ["x.NPZ", "x.Npz", "x.npz"])
def test_the_npz_extension_is_read_in_any_case(worker, tmp_path, command, name):
    """``--out x.NPZ`` used to be written as JSON; it is NumPy's format, and read back as such."""
    accepted(worker, tmp_path, *command, "--out", name)
    assert zipfile.is_zipfile(tmp_path / name)
    lang = load_language(tmp_path / name)
    (tmp_path / "s.txt").write_text("0 1 2\n")
    res = accepted(worker, tmp_path, "score", "--language", name, "--sequences", "s.txt", "--json")
    want = lang.log_likelihood(np.array([[0, 1, 2]]))[0]
    got = json.loads(res["out"])["rows"][0]["log_likelihood"]
    assert (got is None and not np.isfinite(want)) or math.isclose(got, want)


def test_custom_languages_still_take_their_options(worker, tmp_path):
    accepted(worker, tmp_path, "language", "--kind", "hmm", "--states", "3", "--vocab", "4", "--seed", "2",
             "--temperature", "1.5", "--threshold", "0.01", "--out", "h.json")
    lang = load_language(tmp_path / "h.json")
    assert (lang.n_states, lang.n_symbols) == (3, 4)
    accepted(worker, tmp_path, "language", "--list", "--seed", "3")


# ============================================================================ 3. special files, names, numbers
KINDS = ("fifo", "/dev/null", "/dev/zero", "folder", "symlink loop", "unreadable")
KIND_SAYS = {"fifo": "is a FIFO, not", "/dev/null": "is a character device, not",
             "/dev/zero": "is a character device, not", "folder": "is a folder, not",
             "symlink loop": "too many levels of symbolic links", "unreadable": "Permission denied"}


def special_file(folder: Path, kind: str) -> str:
    """Make a special file of ``kind`` in ``folder``; its path as given on the command line."""
    if kind.startswith("/dev/"):
        return kind
    if kind == "fifo":
        if not (folder / "fifo").exists():
            os.mkfifo(folder / "fifo")
        return "fifo"
    if kind == "folder":
        (folder / "folder").mkdir(exist_ok=True)
        return "folder"
    if kind == "symlink loop":
        if not (folder / "loop").is_symlink():
            os.symlink("loop2", folder / "loop")
            os.symlink("loop", folder / "loop2")
        return "loop"
    if os.geteuid() == 0:
        pytest.skip("root reads a file without read permission")
    (folder / "unreadable").write_text("0 1\n")
    (folder / "unreadable").chmod(0)
    return "unreadable"


torch = pytest.mark.torch
INPUTS = [  # (argv with {} for the file, the flag, what a kind is refused as)
    (["score", "--language", "{}", "--sequences", "s.txt"], "--language", "a language file"),
    (["score", "--language", "preset:2gram", "--sequences", "{}"], "--sequences", "a regular file"),
    (["exact", "--language", "{}", "-L", "2", "-N", "2"], "--language", "a language file"),
    (["sample", "--language", "{}", "-L", "2", "-N", "2", "--num", "2"], "--language", "a language file"),
    (["adaptive", "sample", "--language", "{}", "-L", "2", "-N", "2", "--num", "2"], "--language", "a language file"),
    (["adaptive", "exact", "--language", "{}", "-L", "2", "-N", "2"], "--language", "a language file"),
    (["adaptive", "ter", "--language", "{}", "--lengths", "4", "--num", "2"], "--language", "a language file"),
    (["atlas", "--language", "{}", "-L", "2", "-N", "2"], "--language", "a language file"),
    (["language", "--language", "{}", "--out", "x.json"], "--language", "a language file"),
    (["data", "--language", "{}", "-L", "4", "--num", "2", "--num-val", "2", "--out", "d"], "--language",
     "a language file"),
    (["data", "--verify", "{}"], "--verify", "a data set folder"),
    pytest.param(["train", "--data", "{}", "--out", "t"], "", "a data set folder", marks=torch),
    pytest.param(["sample", "--checkpoint", "{}"], "checkpoint", "a regular file", marks=torch),
    pytest.param(["evaluate", "--checkpoint", "{}"], "checkpoint", "a regular file", marks=torch),
    pytest.param(["adaptive", "sample", "--language", "preset:2gram", "-L", "2", "-N", "2", "--checkpoint", "{}"],
                 "checkpoint", "a regular file", marks=torch),
]


def _argv(template, path):
    return [path if a == "{}" else a for a in template]


def every_case_and_every_kind(cases, category) -> list:
    """The cases times the KINDS of special file, as parameters (case..., kind).

    The default tier holds every case with a FIFO (the kind that once hung) and every kind with the first case of
    each ``category(case)`` (one refusal message each); the rest of the product is in the integration tier."""
    out, firsts = [], set()
    for i, case in enumerate(cases):
        values, marks = (case.values, list(case.marks)) if hasattr(case, "values") else (tuple(case), [])
        first = category(values) not in firsts
        firsts.add(category(values))
        for kind in KINDS:
            deep = [] if kind == "fifo" or first else [pytest.mark.integration]
            out.append(pytest.param(*values, kind, marks=marks + deep, id=f"{i}-{kind}"))
    return out


@pytest.mark.parametrize("template, flag, what, kind", every_case_and_every_kind(INPUTS, lambda c: c[2]))
def test_a_special_file_as_an_input_is_refused_by_its_kind(worker, tmp_path, template, flag, what, kind):
    """A FIFO used to block forever; /dev/zero ended in 'set MDMT_MAX_MEMORY'; a folder of a data set was
    'no data set manifest'.  The kind is read from the file's status; the file is never opened."""
    (tmp_path / "s.txt").write_text("0 1\n")
    path = special_file(tmp_path, kind)
    if what == "a data set folder" and kind == "folder":
        says = ["folder: no data set manifest in the folder"]  # the right kind: it holds no data set
    elif what == "a data set folder" and kind == "unreadable":
        says = [f"{path} is a regular file, not a data set folder"]
    elif kind in ("symlink loop", "unreadable"):
        says = [path, KIND_SAYS[kind]]
    else:
        says = [f"{path}{':' if what == 'a language file' else ''} {KIND_SAYS[kind]} {what}"]
    if flag and kind != "unreadable":
        says.append(flag)
    line = refused(worker, tmp_path, *_argv(template, path), says=says)
    assert "MDMT_MAX_MEMORY" not in line


OUTPUTS = [  # (argv with {} for the output, whether the output is a folder)
    (["language", "--language", "preset:2gram", "--out", "{}"], False),
    (["counterexample", "-l", "3", "--out", "{}"], False),
    (["sample", "--language", "preset:2gram", "-L", "2", "-N", "2", "--num", "2", "--out", "{}"], False),
    (["curve", "ser", "-L", "10", "--csv", "{}"], False),
    (["curve", "ser", "-L", "10", "--plot", "{}"], False),
    (["data", "--language", "preset:2gram", "-L", "4", "--num", "2", "--num-val", "2", "--out", "{}"], True),
    (["adaptive", "ter", "--lengths", "4", "--num", "2", "--policies", "confidence", "--out", "{}"], True),
]


@pytest.mark.parametrize("template, folder, kind", every_case_and_every_kind(OUTPUTS, lambda c: c[1]))
def test_a_special_file_as_an_output_is_refused_and_left_alone(worker, tmp_path, template, folder, kind):
    if folder and kind == "folder":
        pytest.skip("a folder is what a folder output is")
    path = special_file(tmp_path, kind)
    line = refused(worker, tmp_path, *_argv(template, path))
    assert path in line and "MDMT_MAX_MEMORY" not in line


NAMES_AND_NUMBERS = [
    # internal names: the user's flag and value instead
    (["adaptive", "ser", "--curve-length", "0"], "--curve-length must be an integer >= 1, got 0"),
    (["adaptive", "ser", "--curve-length", "-6"], "--curve-length must be an integer >= 1, got -6"),
    (["adaptive", "ser", "--num", "0"], "--num must be an integer >= 1, got 0"),
    (["adaptive", "ter", "--num", "0"], "--num must be an integer >= 1, got 0"),
    (["adaptive", "sample", "--language", "preset:2gram", "-L", "4", "-N", "2", "--num", "0"], "--num must be"),
    (["adaptive", "sample", "--language", "preset:2gram", "-L", "0"], "--length must be an integer >= 1, got 0"),
    (["adaptive", "exact", "--language", "preset:2gram", "-L", "4", "-N", "0"], "--steps must be an integer >= 1"),
    (["adaptive", "exact", "--language", "preset:2gram", "-L", "3", "-N", "4"], "--steps 4 > --length 3"),
    (["adaptive", "sample", "--language", "preset:2gram", "-L", "3", "-N", "5", "--num", "2"],
     "--steps 5 > --length 3: --policy confidence"),
    (["curve", "ser", "-L", "999999995"], "--length 999999995"),
    (["curve", "ser", "-l", "300", "-L", "300"], "--interval-length 300"),
    (["curve", "ser", "-l", "5", "-L", "7"], "--length 7: L=7 is not a multiple of the interval length l=5"),
    (["counterexample", "-l", "9", "--out", "c.json"], "--interval-length 9"),
    (["language", "--kind", "ngram", "--n", "100", "--out", "x.json"], "--n 100 is larger than"),
    (["language", "--kind", "ngram", "--temperature", "nan", "--out", "x.json"], "--temperature must be"),
    (["language", "--kind", "hmm", "--threshold", "1", "--out", "x.json"], "--threshold must be in [0, 1)"),
    (["data", "--language", "preset:2gram", "--length", "0", "--out", "d"], "--length must be an integer >= 1"),
    (["data", "--language", "preset:2gram", "--num-val", "0", "--out", "d"], "--num-val must be an integer >= 1"),
    (["score", "--language", "preset:nope", "--sequences", "s.txt"], "--language 'preset:nope': unknown preset"),
    (["exact", "--language", "missing.json", "-L", "2", "-N", "2"], "--language 'missing.json': no such file"),
    pytest.param(["speed", "--vocab", "50"], "--vocab 50 is too large for --model tiny", marks=torch),
    # huge numbers: reported as given, never wrapped
    (["sample", "--language", "preset:2gram", "-L", "4", "-N", "2", "--num", "1e20"],
     "argument --num/-M: must be an integer, got '1e20'"),
    (["sample", "--language", "preset:2gram", "-L", "100000000000000000000", "-N", "2"],
     "argument --length/-L: 100000000000000000000 is out of range"),
    (["exact", "--language", "preset:2gram", "-L", "2", "-N", str(2**64)], f"{2**64} is out of range"),
    (["sample", "--language", "preset:2gram", "-L", "4", "-N", str(I64_MAX)], f"--steps {I64_MAX}"),
    (["adaptive", "sample", "--language", "preset:2gram", "-L", "4", "-N", "2", "--num", str(I64_MAX)],
     f"--num {I64_MAX} samples"),
    (["adaptive", "sample", "--language", "preset:2gram", "-L", str(I64_MAX), "-N", "2"], f"--length {I64_MAX}"),
    (["dependencies", "--n", str(2**63), "-L", "4", "-N", "2"], f"argument --n: {2**63} is out of range"),
    (["curve", "ter", "--vocab", "100000000000000000000"], "argument --vocab: 100000000000000000000"),
    (["curve", "ter", "--lengths", f"4,{2**64}"], f"--lengths value {2**64} is out of range"),
    (["adaptive", "ser", "--curve-length", str(2**63)], f"argument --curve-length: {2**63} is out of range"),
    (["language", "--kind", "ngram", "--vocab", str(2**64), "--out", "x.json"], f"argument --vocab: {2**64}"),
    pytest.param(["speed", "--steps", str(I64_MAX)], f"--steps {I64_MAX}", marks=torch),
    pytest.param(["speed", "--batch", str(2**64)], f"argument --batch: {2**64}", marks=torch),
    # seeds: negative or beyond 64 bits, named
    (["speed", "--seed", "-1"], "argument --seed: must be an integer in 0..9223372036854775807, got -1"),
    (["speed", "--seed", str(2**64)], f"argument --seed: must be an integer in 0..{I64_MAX}, got {2**64}"),
    (["sample", "--language", "preset:2gram", "-L", "2", "-N", "2", "--seed", "-5"], "argument --seed"),
    (["data", "--language", "preset:2gram", "--out", "d", "--seed", str(2**63)], f"got {2**63}"),
    (["adaptive", "ser", "--seed", "-1"], "argument --seed"),
    (["language", "--kind", "ngram", "--seed", "-2", "--out", "x.json"], "argument --seed"),
]


@pytest.mark.parametrize("argv, says", NAMES_AND_NUMBERS, ids=[" ".join(getattr(p, "values", p)[0])[:70]
                                                              for p in NAMES_AND_NUMBERS])
def test_messages_name_the_flag_and_the_value_as_given(worker, tmp_path, argv, says):
    """'N must be >= 1' for --curve-length 0, 'sample_metrics needs at least one sample', a traceback for
    --steps 2**63-1, 'Overflow when unpacking long long' for a huge --seed: now the flag and the value."""
    (tmp_path / "s.txt").write_text("0 1\n")
    line = refused(worker, tmp_path, *argv, says=says)
    for internal in ("sample_metrics", "number of steps N", "ModelConfig", "-9223372036854775808", " num must be",
                     "Overflow", "Maximum allowed size"):
        assert internal not in line, line


# ============================================================================ 4. empty lists
EMPTY_LISTS = [
    (["adaptive", "ser", "--policies", "{}"], "--policies"),
    (["adaptive", "ter", "--policies", "{}"], "--policies"),
    (["adaptive", "ser", "--interval-lengths", "{}"], "--interval-lengths"),
    (["adaptive", "ser", "--intervals", "{}"], "--intervals"),
    (["adaptive", "ter", "--lengths", "{}"], "--lengths"),
    (["figure1", "--kinds", "{}", "--out", "f"], "--kinds"),
    (["figure1", "--lengths", "{}", "--out", "f"], "--lengths"),
    (["figure1", "--steps", "{}", "--out", "f"], "--steps"),
    (["curve", "ter", "--lengths", "{}"], "--lengths"),
    (["atlas", "--language", "preset:2gram", "-L", "3", "-N", "2", "--processes", "{}", "--out", "f"], "--processes"),
    pytest.param(["speed", "--lengths", "{}"], "--lengths", marks=torch),
    pytest.param(["speed", "--steps", "{}"], "--steps", marks=torch),
]


@pytest.mark.parametrize("empty", ["", ",", " , ,"])
@pytest.mark.parametrize("template, flag", EMPTY_LISTS)
def test_an_empty_list_is_refused_naming_the_flag(worker, tmp_path, template, flag, empty):
    refused(worker, tmp_path, *_argv(template, empty), says=[flag, "at least one"])


# ============================================================================ 5. tokens of every dtype
INT_DTYPES = [np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)]
INT_DTYPES += [np.dtype(">i8"), np.dtype(">u8"), np.dtype(">i2"), np.dtype(">u4")]  # other byte orders
LANGUAGES = {"2gram": preset("2gram"), "3gram": preset("3gram"), "hmm": preset("hmm"), "interval:3": interval_hmm(3)}


def limits(dtype: np.dtype, V: int) -> list[int]:
    """The values of a dtype worth trying: its limits, the mask, the vocabulary's edges (those it can hold)."""
    info = np.iinfo(dtype)
    return sorted({v for v in (info.min, info.min + 1, info.max, info.max - 1, MASK, 0, V - 1, V, V + 1)
                   if info.min <= v <= info.max})


@st.composite
def int_token_arrays(draw, V: int):
    dtype = draw(st.sampled_from(INT_DTYPES))
    n, L = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    values = st.one_of(st.sampled_from(limits(dtype, V)), st.integers(0, min(V - 1, int(np.iinfo(dtype).max))))
    flat = draw(st.lists(values, min_size=n * L, max_size=n * L))
    return np.array(flat, dtype=dtype).reshape(n, L)


def expected_error(X, V: int, allow_mask: bool) -> str | None:
    """The message ``token_array`` must give (first a non-integer, then a token outside the vocabulary), or None."""
    arr = np.asarray(X)
    rows = arr.reshape(arr.shape[0] if arr.ndim == 2 else 1, -1)
    for (i, t), v in np.ndenumerate(rows):
        if arr.dtype.kind == "b" or (arr.dtype.kind == "f" and not (np.isfinite(v) and float(v).is_integer())):
            return f"sequence {i} position {t}: token {v.item()!r}"
    for (i, t), v in np.ndenumerate(rows):
        token = int(v)
        if not (0 <= token < V or (allow_mask and token == MASK)):
            return f"sequence {i} position {t}: token {token} is outside the vocabulary"
    return None


def _as_python_ints(X) -> np.ndarray:
    return np.array([[int(v) for v in row] for row in np.atleast_2d(X)], dtype=np.int64)


@settings(max_examples=100)  # each dtype's limits are checked one by one below; these are random arrays around them
@given(data=st.data(), allow_mask=st.booleans())
def test_token_array_checks_every_integer_dtype_at_its_limits(data, allow_mask):
    V = data.draw(st.sampled_from([2, 4, 8, 127, 255, 256]))
    X = data.draw(int_token_arrays(V))
    _check_token_array(X, V, allow_mask)


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize("allow_mask", [True, False])
def test_token_array_checks_each_limit_of_each_dtype(dtype, allow_mask):
    for V in (2, 8, 255, 256):
        for v in limits(dtype, V):
            _check_token_array(np.array([[0, 1], [1, v]], dtype=dtype), V, allow_mask)


def _check_token_array(X, V: int, allow_mask: bool) -> None:
    want = expected_error(X, V, allow_mask)
    if want is None:
        out = token_array(X, V, allow_mask=allow_mask)
        assert out.dtype == np.int64 and np.array_equal(out, _as_python_ints(X))
    else:
        with pytest.raises(ValueError) as exc:
            token_array(X, V, allow_mask=allow_mask)
        assert str(exc.value).startswith(want), (str(exc.value), want)


def _same(f, X, Y):
    """f(X) and f(Y): equal results, or the same ValueError."""
    try:
        a = f(X)
    except ValueError as exc:
        with pytest.raises(ValueError, match=None) as again:
            f(Y)
        assert str(again.value) == str(exc)
        return
    b = f(Y)
    np.testing.assert_array_equal(a, b)


@settings(max_examples=100)
@given(data=st.data())
def test_the_languages_score_every_integer_dtype_or_refuse_it_naming_value_and_position(data):
    """uint64 2**64-1 used to wrap to the mask; int8 -128 and uint16 65535 must be refused as themselves."""
    name = data.draw(st.sampled_from(sorted(LANGUAGES)))
    lang = LANGUAGES[name]
    X = data.draw(int_token_arrays(lang.n_symbols))
    want = expected_error(X, lang.n_symbols, allow_mask=True)
    functions = {"log_likelihood": lang.log_likelihood, "in_support": lang.in_support,
                 "posterior_marginals": lambda x: lang.posterior_marginals(x, off_support="uniform")}
    for fname, f in functions.items():
        if want is None:  # valid: scored exactly as the same tokens in int64
            _same(f, X, _as_python_ints(X))
        else:
            with pytest.raises(ValueError) as exc:
                f(X)
            assert str(exc.value).startswith(want), (fname, str(exc.value), want)


@pytest.mark.parametrize("name", sorted(LANGUAGES))
def test_the_languages_check_each_limit_of_each_dtype(name):
    lang = LANGUAGES[name]
    V = lang.n_symbols
    functions = (lang.log_likelihood, lang.in_support, lambda x: lang.posterior_marginals(x, off_support="uniform"))
    for dtype in INT_DTYPES:
        for v in limits(dtype, V):
            X = np.array([[0, 1, 0], [1, 0, v]], dtype=dtype)
            want = expected_error(X, V, allow_mask=True)
            for f in functions:
                if want is None:
                    _same(f, X, _as_python_ints(X))
                else:
                    with pytest.raises(ValueError) as exc:
                        f(X)
                    assert str(exc.value).startswith(want), (dtype, v, str(exc.value), want)


@st.composite
def float_token_arrays(draw):
    n, L = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    kind = draw(st.sampled_from(["float64", "float32", "float16", "bool"]))
    if kind == "bool":
        return np.array(draw(st.lists(st.booleans(), min_size=n * L, max_size=n * L))).reshape(n, L)
    values = st.one_of(st.sampled_from([0.0, 1.0, 7.0, 8.0, -1.0, -2.0, 0.5, 1.5, float("nan"), float("inf"),
                                        -float("inf"), 2.0**63, 2.0**64, -2.0**63, 1e300]),
                       st.floats(allow_nan=True, allow_infinity=True, width=16 if kind == "float16" else 64))
    flat = draw(st.lists(values, min_size=n * L, max_size=n * L))
    with np.errstate(over="ignore"):
        return np.array(flat, dtype=kind).reshape(n, L)


@given(X=float_token_arrays(), name=st.sampled_from(sorted(LANGUAGES)))
def test_floats_and_booleans_are_tokens_only_when_they_are_integers_in_the_vocabulary(X, name):
    lang = LANGUAGES[name]
    want = expected_error(X, lang.n_symbols, allow_mask=True)
    if want is None:
        _same(lang.log_likelihood, X, _as_python_ints(X))
        _same(lang.in_support, X, _as_python_ints(X))
    else:
        for f in (lang.log_likelihood, lang.in_support, lang.posterior_marginals):
            with pytest.raises(ValueError) as exc:
                f(X)
            assert str(exc.value).startswith(want), (str(exc.value), want)


def _score_cases():
    V = 8
    for dtype in INT_DTYPES:
        for v in limits(dtype, V):
            if not 0 <= v < V:
                yield pytest.param(dtype.str, v, id=f"{dtype.str}-{v}")
    for bad in (True, 1.5, float("nan"), float("inf"), 8.0, -1.0):
        yield pytest.param("|b1" if bad is True else "<f8", bad, id=f"{type(bad).__name__}-{bad}")


@pytest.mark.parametrize("dtype, value", list(_score_cases()))
def test_mdmt_score_refuses_a_token_of_any_dtype_outside_the_vocabulary(worker, tmp_path, dtype, value):
    X = np.array([[0, 1, 2], [3, 4, 5]], dtype=np.int64).astype(dtype)
    X[1, 2] = value
    np.save(tmp_path / "x.npy", X)
    if np.dtype(dtype).kind == "b":  # every boolean is refused: the first one is named
        says = ["sequence 0 position 0", "token False (a boolean) is not an integer"]
    elif np.dtype(dtype).kind == "f" and not (math.isfinite(value) and float(value).is_integer()):
        says = ["sequence 1 position 2", f"token {value!r} is not an integer"]
    else:
        says = ["sequence 1 position 2", f"token {int(value)} is outside the vocabulary (allowed 0..7)"]
    refused(worker, tmp_path, "score", "--language", "preset:2gram", "--sequences", "x.npy",
            says=["--sequences x.npy", *says])


@pytest.mark.parametrize("dtype", [d.str for d in INT_DTYPES] + ["<f8"])
def test_mdmt_score_scores_valid_tokens_of_any_dtype_exactly(worker, tmp_path, dtype):
    lang = preset("2gram")
    X = np.array([[0, 1, 2], [7, 6, 5], [3, 3, 3]]).astype(dtype)
    np.save(tmp_path / "x.npy", X)
    res = accepted(worker, tmp_path, "score", "--language", "preset:2gram", "--sequences", "x.npy", "--json")
    rows = json.loads(res["out"])["rows"]
    want = lang.log_likelihood(X.astype(np.int64))
    for r, w, s in zip(rows, want, lang.in_support(X.astype(np.int64))):
        assert r["in_support"] == bool(s)
        assert (r["log_likelihood"] is None) if not s else math.isclose(r["log_likelihood"], w)


@pytest.mark.parametrize("tokens, says", [
    ("0 1 18446744073709551615", "token 18446744073709551615 is outside the vocabulary"),
    ("0 -9223372036854775809 1", "token -9223372036854775809 is outside the vocabulary"),
    ("0 -1", "token -1 is outside the vocabulary"),
    ("0 8", "token 8 is outside the vocabulary"),
    ("0 1.0", "token '1.0' is not an integer"),
])
def test_mdmt_score_refuses_a_text_token_outside_the_vocabulary_as_written(worker, tmp_path, tokens, says):
    (tmp_path / "s.txt").write_text(f"0 1 2\n{tokens}\n")
    refused(worker, tmp_path, "score", "--language", "preset:2gram", "--sequences", "s.txt",
            says=["s.txt line 2", says])


# ============================================================================ special files, drawn by Hypothesis
@contextlib.contextmanager
def never_blocks(seconds: int = 5):
    """Fail (instead of hanging the test run) if the body blocks, e.g. on opening a FIFO."""
    def alarm(signum, frame):
        raise AssertionError(f"blocked for {seconds} s: a special file was opened")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def specials(tmp_path_factory):
    folder = tmp_path_factory.mktemp("specials")
    paths = {}
    for kind in KINDS:
        if kind == "unreadable" and os.geteuid() == 0:
            continue
        paths[kind] = folder / special_file(folder, kind)
    return paths


def _readers():
    from mdmt.commands.score import read_sequences
    from mdmt.constructions.languages.io import read_document
    from mdmt.empirical.data import load

    return {
        "regular_file": lambda p: regular_file(p, str(p)),
        "load_language": load_language,
        "read_document": read_document,
        "read_sequences": lambda p: read_sequences(p, 8),
        "data.load": load,
    }


@given(kind=st.sampled_from(KINDS), reader=st.sampled_from(sorted(_readers())))
def test_no_reader_opens_a_special_file(specials, kind, reader):
    if kind not in specials:
        return  # unreadable files are readable by root
    path = specials[kind]
    with never_blocks():
        with pytest.raises((ValueError, OSError)) as exc:
            _readers()[reader](path)
    message = str(exc.value) if isinstance(exc.value, ValueError) else (exc.value.strerror or "")
    if reader == "data.load" and kind == "folder":
        assert "folder: no data set manifest in the folder" in message
    elif reader == "data.load" and kind == "unreadable":
        assert "not a data set folder" in message
    else:
        assert KIND_SAYS[kind].split(",")[0].lower() in message.lower(), message


def test_links_that_lead_nowhere_are_named(tmp_path, capsys):
    """A dangling link as --language, a link loop as a folder --out: one line naming the flag (no traceback)."""
    from mdmt.cli import main

    (tmp_path / "dangling.json").symlink_to(tmp_path / "missing.json")
    assert main(["exact", "--language", str(tmp_path / "dangling.json"), "-L", "3", "-N", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--language" in err[0] and "symbolic link to a missing target" in err[0]
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert main(["atlas", "--language", "preset:2gram", "-L", "3", "-N", "2", "--out", str(tmp_path / "loop")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mdmt atlas: error: --out") and "leads nowhere" in err[0]


# ============================================================================ 6. refute: verdicts and work
REFUTE = ("refute", "--family", "ngram:n=2,V=2", "--lengths", "2", "--steps", "1", "--budget", "3", "--no-progress")


@pytest.mark.parametrize("claim", ["KL >= 10**400", "KL >= exp(1000)", "KL <= -10**400", "L < L", "KL < KL",
                                   "KL > KL", "KL_per_token >= 10**300 * 10**300"])
def test_refute_certifies_a_claim_false_on_every_instance(worker, tmp_path, claim):
    """Each side is huge, beyond float64, or the two are equal under a strict relation: false at every instance.
    The verdict is a certified violation (an infinite margin is one; a margin of 0 violates < and >), never "no
    violation found"."""
    res = accepted(worker, tmp_path, *REFUTE, "--claim", claim, "--json")
    r = json.loads(res["out"])
    assert r["verdict"] == "certified violation", (claim, r)
    lo, hi = r["certificate"]["margin"]
    assert (hi <= 0 if claim.count("<") + claim.count(">") and "=" not in claim else hi < 0), r["certificate"]


@pytest.mark.parametrize("claim, says", [
    ("KL <= log(-1)", "log(-1) is undefined (the logarithm of a number <= 0)"),
    ("KL <= 1/0", "1/0 is undefined (a division by 0)"),
    ("KL <= 0 ** -1", "0 ** -1 is undefined (0 to a negative power)"),
    ("KL >= 9**9**9**9", "9**9**9**9 is too large to evaluate"),
    ("KL <= " + "7" * 1900, "(1900 characters)' is outside"),
])
def test_refute_refuses_a_claim_part_without_a_value_naming_it(worker, tmp_path, claim, says):
    refused(worker, tmp_path, *REFUTE, "--claim", claim, says=["mdmt refute: error: claim", says])


def test_refute_names_the_part_of_a_claim_undefined_on_every_instance(worker, tmp_path):
    """log(KL - 10) has no value where KL < 10 (every instance): the error names it and the instance, instead of
    "no instance could be evaluated (every process refused ...)"."""
    res = worker.run([*REFUTE, "--claim", "KL <= log(KL - 10)"], tmp_path)
    assert outcome(res, False) == ERROR, res
    assert "log(KL - 10) is undefined (the logarithm of a number <= 0) at L = 2, N = 1, process iid" in res["err"]
    assert "every process refused" not in res["err"] + res["out"]


@pytest.mark.parametrize("k", ["10**12", "10**8", "exp(40)"])
def test_refute_evaluates_harmonic_numbers_of_any_size_at_once(worker, tmp_path, k):
    """harmonic(k) summed k terms: 10**12 never ended.  Now digamma in balls, its expansion in floats."""
    res = accepted(worker, tmp_path, *REFUTE, "--claim", f"KL <= harmonic({k})", "--json")
    assert json.loads(res["out"])["verdict"] == "no violation found" and res["seconds"] < AT_ONCE, res


@pytest.mark.parametrize("argv, says", [
    (["--steps", "1000000000"], ["--steps: one exact evaluation at L = 4, N = 1000000000", "MDMT_MAX_WORK"]),
    (["--lengths", "14", "--budget", "3"], ["--lengths: one exact evaluation at L = 14", "MDMT_MAX_WORK"]),
    (["--budget", "100000000"], ["--budget 100000000: ", "MDMT_MAX_WORK"]),
])
def test_refute_refuses_a_search_that_will_not_finish_naming_the_flag(worker, tmp_path, argv, says):
    """The worker's MDMT_MAX_WORK is 2e10 (about ten seconds): an evaluation at 10^9 steps (was out of memory after
    50 s), at L = 14 (minutes each), or 10^8 evaluations are refused before anything is built."""
    refused(worker, tmp_path, "refute", "--claim", "KL <= TC", "--no-progress", *argv, says=says)


def test_refute_does_not_certify_past_the_work_limit(worker, tmp_path):
    """interval:3 at L = 6, N = 3: the violation of KL <= 0 is found at once; its rational certificate would take
    minutes (about 8e10 operations, over the worker's 2e10), so it stays a numeric violation that says why."""
    res = accepted(worker, tmp_path, "refute", "--family", "interval:3", "--lengths", "6", "--steps", "3", "--claim",
                   "KL <= 0", "--budget", "20", "--no-progress", "--json")
    r = json.loads(res["out"])
    assert r["verdict"] == "numeric violation" and "MDMT_MAX_WORK" in r["certificate"]["reason"], r
    assert res["seconds"] < 60


def test_a_work_limit_that_is_not_a_number_is_refused_by_refute(worker, tmp_path):
    """MDMT_MAX_WORK=nan was accepted by refute (and refused by exact): one parser refuses it in both."""
    try:
        for argv in ([*REFUTE, "--claim", "KL <= TC"], ["exact", "--language", "preset:2gram", "-L", "3", "-N", "2"]):
            res = worker.run(argv, tmp_path, python="import os; os.environ['MDMT_MAX_WORK'] = 'nan'")
            assert outcome(res, False) == ERROR, res
            assert "MDMT_MAX_WORK='nan' must be a positive finite size" in res["err"], res
    finally:
        worker.run(["--version"], tmp_path, python="import os; os.environ['MDMT_MAX_WORK'] = '2e10'")


@pytest.mark.parametrize("argv, says", [
    (["adaptive", "ser", "--curve-length", "300000", "--policies", "iid", "--no-progress"],
     ["--curve-length 300000: the SER curves", "MDMT_MAX_WORK"]),
    (["dependencies", "--n", "3", "-L", "16", "-N", "1000000"], ["--steps 1000000", "MDMT_MAX_WORK"]),
])
def test_long_work_is_refused_before_it_starts_naming_the_flag(worker, tmp_path, argv, says):
    """Estimates that were too low by an order of magnitude let these run for minutes under the worker's limit of
    2e10 operations (about ten seconds): the closed-form SER at N up to 64 L (about 130 ns per step and interval
    position, measured), and E[D_j] with its table of a million rows (about 25 microseconds a row, measured)."""
    refused(worker, tmp_path, *argv, says=says)


def test_a_ter_study_at_a_huge_length_is_refused_before_it_starts(worker, tmp_path):
    """adaptive ter --lengths 100000000: where MDMT_MAX_MEMORY allows 1 TiB, the sampler's own check let 191 GiB
    through (out of memory, or a hang on a machine that has it); the study's searches are now estimated first."""
    try:
        res = worker.run(["adaptive", "ter", "--lengths", "100000000", "--no-progress"], tmp_path,
                         python="import os; os.environ['MDMT_MAX_MEMORY'] = '1T'")
        assert outcome(res, False) == ERROR, res
        assert "--lengths 100000000: the TER searches" in res["err"] and res["seconds"] < AT_ONCE, res
    finally:
        worker.run(["--version"], tmp_path, python="import os; os.environ['MDMT_MAX_MEMORY'] = '2G'")

# ============================================================================ 7. data lost, plots, library
ATLAS_RESULT = Path(__file__).resolve().parent.parent / "docs" / "results" / "atlas" / "2gram-ter_L5_N2" / "atlas.json"
PLOTS = "python -m mdmt.plots"
# python -m mdmt.plots run in the worker, as the shell runs it (its __main__), optionally with a file system that
# refuses every new file (EROFS: root writes into read-only folders, so a read-only folder is emulated)
_RUN_PLOTS = """
import runpy, sys, tempfile, warnings
argv, read_only = {argv!r}, {read_only!r}
def refuse(*args, **kwargs):
    raise OSError(30, "Read-only file system", kwargs.get("dir") or ".")
make = tempfile.mkstemp
if read_only:
    tempfile.mkstemp = refuse
sys.argv = ["{prog}", *argv]
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # runpy: mdmt.plots is already imported
        runpy.run_module("mdmt.plots", run_name="__main__", alter_sys=True)
finally:
    tempfile.mkstemp = make
"""


@pytest.fixture(scope="module")
def plots_worker(tmp_path_factory, pytestconfig):  # a FIFO opened would block: the worker stops at 60 s
    return shared_worker(pytestconfig, tmp_path_factory.mktemp("plots-logs"), 60.0)


def run_plots(worker, folder: Path, *argv: str, read_only: bool = False) -> dict:
    code = _RUN_PLOTS.format(argv=list(argv), read_only=read_only, prog=PLOTS)
    return worker.run([], folder, python=code, prepare=PLOTTING)


def plots_refused(worker, folder: Path, *argv: str, says=(), read_only: bool = False) -> str:
    """``python -m mdmt.plots argv`` in ``folder``: exit 2, one line ``python -m mdmt.plots: error: ...`` holding
    every string of ``says``, no traceback, nothing written or changed."""
    before = _snapshot(folder)
    res = run_plots(worker, folder, *argv, read_only=read_only)
    assert res["rc"] == 2, res
    assert res["seconds"] < AT_ONCE, res
    line = res["err"].rstrip("\n")
    assert "\n" not in line and "Traceback" not in line, res["err"]
    assert line.startswith(f"{PLOTS}: error: "), line
    assert res["out"] == ""
    for s in ([says] if isinstance(says, str) else says):
        assert s in line, (s, line)
    assert _snapshot(folder) == before, "a refused redraw wrote or changed a file"
    return line


def _hostile_result(folder: Path, case: str) -> str:
    """Make the hostile input ``case`` in ``folder``; the path to give to python -m mdmt.plots."""
    target = folder / "atlas.json"
    data = {"truncated": ATLAS_RESULT.read_bytes()[:200], "empty": b"", "binary": bytes(range(256)) * 4,
            "latin-1": '{"instance": "caf\u00e9"}'.encode("latin-1"), "a list": b"[1, 2, 3]", "{}": b"{}",
            "deep nesting": b"[" * 100_000 + b"]" * 100_000,
            "wrong schema": json.dumps({"rows": [{"L": 4}], "target": 0.1}).encode(),
            "key twice": b'{"rows": [], "rows": []}'}
    if case in data:
        target.write_bytes(data[case])
    elif case == "symlink loop":
        os.symlink("loop2", folder / "atlas.json")
        os.symlink("atlas.json", folder / "loop2")
    elif case == "/dev/zero":
        os.symlink("/dev/zero", target)
    elif case == "fifo":
        os.mkfifo(target)
    elif case == "folder":
        target.mkdir()
    elif case == "missing":
        pass
    elif case == "not a result name":
        target = folder / "notes.json"
        target.write_text("{}")
    return target.name


PLOT_CASES = {  # case: what the one line says
    "truncated": "damaged or truncated JSON", "empty": "damaged or truncated JSON", "binary": "not UTF-8",
    "latin-1": "not UTF-8", "a list": "holds a JSON list", "{}": "holds an empty object",
    "deep nesting": "nested too deeply", "wrong schema": "the result has no", "key twice": "'rows' appears more than once",
    "symlink loop": "too many levels of symbolic links", "/dev/zero": "is a character device, not a result file",
    "fifo": "is a FIFO, not a result file", "folder": "is a folder, not a result file", "missing": "no such file",
    "not a result name": "mdmt redraws atlas.json",
}


@pytest.mark.parametrize("case", list(PLOT_CASES))
def test_python_m_mdmt_plots_refuses_a_hostile_result_in_one_line(plots_worker, tmp_path, case):
    """Before: 15 raw tracebacks (and a hang on a FIFO) -> one line naming the file and the problem, exit 2."""
    name = _hostile_result(tmp_path, case)
    line = plots_refused(plots_worker, tmp_path, name, says=PLOT_CASES[case])
    assert name in line


def test_python_m_mdmt_plots_in_a_read_only_folder_is_one_line(plots_worker, tmp_path):
    shutil.copy(ATLAS_RESULT, tmp_path / "atlas.json")
    plots_refused(plots_worker, tmp_path, "atlas.json", says=["cannot write", "Read-only file system"], read_only=True)


def test_python_m_mdmt_plots_never_overwrites_a_figure_mdmt_did_not_write(plots_worker, tmp_path):
    """Data lost before: redrawing DIR/atlas.json replaced the user's own DIR/atlas.png.  Now that file is
    refused (nothing written) unless --force; mdmt's own figure is replaced as before."""
    shutil.copy(ATLAS_RESULT, tmp_path / "atlas.json")
    (tmp_path / "atlas.png").write_bytes(b"my own picture")
    plots_refused(plots_worker, tmp_path, "atlas.json", says=["atlas.png", "was not written by mdmt", "--force"])
    assert (tmp_path / "atlas.png").read_bytes() == b"my own picture"
    res = run_plots(plots_worker, tmp_path, "--force", "atlas.json")
    assert res["rc"] == 0 and res["out"].strip() == "atlas.png", res
    assert (tmp_path / "atlas.png").read_bytes().startswith(b"\x89PNG")
    res = run_plots(plots_worker, tmp_path, "atlas.json")  # mdmt's own figure now: redrawn without --force
    assert res["rc"] == 0 and res["out"].strip() == "atlas.png", res


MALFORMED_RESULTS = [  # (figure function, result, what the ValueError names)
    ("curve_ter_figure", {}, "'rows'"),
    ("curve_ter_figure", {"rows": [{"L": 4, "N": 2, "chain_bound": 0.1}]}, "'target'"),
    ("curve_ser_figure", {"critical_c": {"10": 0.5}, "rows": [{"L": 10, "C": 1.0}]}, "'theorem43_upper'"),
    ("atlas_figure", {"rows": []}, "'instance'"),
    ("atlas_figure", [{"instance": {}, "rows": [{"process": "iid"}]}], "'length'"),
    ("adaptive_ser_figure", {"curves": []}, "'min_steps'"),
    ("adaptive_ter_figure", {"rows": [{"policy": "iid"}]}, "'L'"),
    ("figure1_figure", {"config": {}}, "'rows'"),
    ("figure1_paper_figure", {"rows": "x"}, "malformed result"),
]


@pytest.mark.parametrize("name, result, says", MALFORMED_RESULTS, ids=[f"{n}-{s}" for n, _, s in MALFORMED_RESULTS])
def test_the_figure_functions_name_what_a_malformed_result_lacks(name, result, says):
    import mdmt.plots

    with pytest.raises(ValueError) as exc:
        getattr(mdmt.plots, name)(result)
    assert says in str(exc.value) and name in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("result", [None, 3, "atlas.json"])
def test_the_figure_functions_refuse_what_is_not_a_result(result):
    from mdmt.plots import atlas_figure, curve_ter_figure

    for draw in (atlas_figure, curve_ter_figure):
        with pytest.raises(TypeError, match=f"{draw.__name__}: expected a result"):
            draw(result)


REFUTE_OUT = ["refute", "--family", "ngram:n=2,V=2", "--lengths", "3", "--steps", "2", "--budget", "2", "--no-progress"]


def test_refute_of_another_claim_into_the_same_out_needs_force(worker, tmp_path):
    """Data lost before: the files of a search for another claim were replaced without --force (its help
    says it needs it).  The same claim and family is the same request: replaced, as before."""
    accepted(worker, tmp_path, *REFUTE_OUT, "--claim", "KL <= 100", "--out", "r")
    first = (tmp_path / "r" / "refute.json").read_bytes()
    refused(worker, tmp_path, *REFUTE_OUT, "--claim", "KL <= 200", "--out", "r",
            says=["--out r/", ".json already exists", "was not written by mdmt", "--force"])
    refused(worker, tmp_path, *REFUTE_OUT[:2], "ngram:n=3,V=2", *REFUTE_OUT[3:], "--claim", "KL <= 100", "--out", "r",
            says=["--force"])
    assert (tmp_path / "r" / "refute.json").read_bytes() == first
    accepted(worker, tmp_path, *REFUTE_OUT, "--claim", "KL  <=  100", "--out", "r")  # the same claim, spaces aside
    accepted(worker, tmp_path, *REFUTE_OUT, "--claim", "KL <= 200", "--out", "r", "--force")
    assert json.loads((tmp_path / "r" / "refute.json").read_text())["claim"] == "KL <= 200"


FIGURE1 = ["figure1", "--kinds", "oracle", "--lengths", "8", "--steps", "2", "--ser-languages", "interval:2",
           "--ter-languages", "", "--num", "8", "--jobs", "1", "--no-progress", "--out", "f"]
POINT = "f/rows/interval_2__oracle__L8__N2.json"


def _figure1_settings() -> dict:
    from mdmt.commands.figure1 import add_arguments
    import argparse

    p = argparse.ArgumentParser()
    add_arguments(p)
    a = p.parse_args(FIGURE1[1:])
    from mdmt.empirical.experiments import Figure1Config

    return Figure1Config(model=a.model, ter_languages=(), ser_languages=("interval:2",), steps=(2,), lengths=(8,),
                         kinds=("oracle",), length=a.length, train_steps=a.train_steps, batch=a.batch, lr=a.lr,
                         estimator=a.estimator, num=a.num, learning_error_num=a.learning_error_num, seed=a.seed,
                         schedule=a.schedule).result_settings()


def _a_point() -> dict:
    """A point of the committed Figure 1 run (docs/results), renamed to the point the FIGURE1 command computes."""
    doc = json.loads((ATLAS_RESULT.parents[2] / "figure1_tiny" / "figure1.json").read_text())
    row = dict(next(r for r in doc["rows"] if r["kind"] == "oracle"))
    row.update(language="interval:2", role="ser", L=8, N=2, num=8)
    return row


@pytest.mark.parametrize("damage, says", [
    ("truncated", "is truncated or damaged"),
    ("a folder", "is a folder, not a point file"),
    ("foreign", "was not written by mdmt for this run"),
    ("edited by hand", "was not written by mdmt for this run"),
    ("renamed", "holds another point"),
])
def test_figure1_refuses_a_stored_point_it_cannot_use_or_did_not_compute(worker, tmp_path, damage, says):
    """Data lost before: a stored point truncated or replaced by a folder was skipped and then dropped (exit 0);
    a hand-edited or foreign one was kept as the run's own.  Each point carries a stamp (SHA-256 of its content
    and the run's settings): anything else is refused before any work, naming the file."""
    from mdmt.empirical.experiments import POINT_STAMP, point_stamp

    (tmp_path / "f" / "rows").mkdir(parents=True)
    path = tmp_path / POINT
    row = _a_point()
    stamped = {**row, POINT_STAMP: point_stamp(row, _figure1_settings())}
    if damage == "truncated":
        path.write_text(json.dumps(stamped)[:150])
    elif damage == "a folder":
        path.mkdir()
    elif damage == "foreign":
        path.write_text(json.dumps(row))
    elif damage == "edited by hand":
        path.write_text(json.dumps({**stamped, "ser": stamped["ser"] + 0.125}))
    else:
        path.write_text(json.dumps(stamped))
        path.rename(path.with_name("interval_2__oracle__L8__N4.json"))
        path = path.with_name("interval_2__oracle__L8__N4.json")
    line = refused(worker, tmp_path, *FIGURE1, says=[says, path.name])
    assert "remove it" in line
    path.unlink() if path.is_file() else path.rmdir()
    assert not (tmp_path / "f" / "figure1.json").exists()


def test_a_stamped_point_is_resumed_as_the_runs_own(tmp_path):
    """The stamp's other side: a point written with this run's settings is read back as it was written."""
    from mdmt.empirical.experiments import POINT_STAMP, point_stamp, read_point

    settings, row = _figure1_settings(), _a_point()
    (tmp_path / "f" / "rows").mkdir(parents=True)
    (tmp_path / POINT).write_text(json.dumps({**row, POINT_STAMP: point_stamp(row, settings)}, indent=1))
    assert read_point(tmp_path / POINT, settings) == row
    with pytest.raises(ValueError, match="other settings"):
        read_point(tmp_path / POINT, {**settings, "seed": settings["seed"] + 1})


def _library_cases():
    import mdmt.plots  # noqa: F401
    from mdmt.bounds.studies.adaptive import ser_study, ter_study
    from mdmt.bounds.studies.atlas import atlas
    from mdmt.bounds.studies.curves import ser_curve, ter_curve
    from mdmt.bounds.refutation.quantities import instance_quantities
    from mdmt.constructions.languages.hmm import HMM
    from mdmt.constructions.reverse.exact import exact_output_law
    from mdmt.constructions.reverse.schedules import reveal_probabilities
    from mdmt.runtime.validation import seed_of
    from mdmt.sweep import run_parts, scheduler_address

    q = preset("2gram")
    one = ([1.0], [[1.0]], [[0.5, 0.5]])
    return {  # name: (call, exception, what the message names)
        "scheduler=123": (lambda: scheduler_address(123), TypeError, "scheduler must be an address"),
        "run_parts scheduler=123": (lambda: run_parts(str, [1, 2], jobs=2, scheduler=123), TypeError, "got int 123"),
        "atlas(None)": (lambda: atlas(None, 4, 2), TypeError, "language must be an mdmt language (an HMM or an NGram"),
        "exact_output_law(None)": (lambda: exact_output_law(None, 4, [0.5, 0.5]), TypeError, "got NoneType"),
        "instance_quantities N=10**10": (lambda: instance_quantities(q, 4, "iid", 10**10), ValueError,
                                         "N = 10000000000 steps needs"),
        "reveal_probabilities N=10**10": (lambda: reveal_probabilities("linear", 10**10), ValueError,
                                          "MDMT_MAX_MEMORY"),
        "seed=1.5": (lambda: seed_of(1.5, 2), ValueError, "seed must be a non-negative integer, got 1.5"),
        "ter_curve steps=[]": (lambda: ter_curve(2, 0.1, [8], steps=[]), ValueError, "empty list"),
        "ser_curve steps=[]": (lambda: ser_curve(2, 8, steps=[]), ValueError, "empty list"),
        "ser_study target=nan": (lambda: ser_study([3], [1], ["iid"], target=math.nan, curve_length=3, num=2), ValueError,
                                 "target must be an SER in (0, 1], got nan"),
        "ter_study target=inf": (lambda: ter_study("preset:2gram", [4], ["iid"], target=math.inf), ValueError,
                                 "target must be a KL/L"),
        "HMM atol=nan": (lambda: HMM(*one, atol=math.nan), ValueError, "atol must be a finite number in [0, 1), got nan"),
        "HMM atol=-1": (lambda: HMM(*one, atol=-1), ValueError, "atol must be a finite number in [0, 1), got -1"),
    }


@pytest.mark.parametrize("case", list(_library_cases()))
def test_library_arguments_are_refused_naming_the_argument(case):
    """Library arguments before: AttributeError, a 74.5 GiB MemoryError, a truncated seed, a default grid for
    steps=[], a NaN target or tolerance accepted, atol=-1 blamed on startprob -> one exception naming the argument."""
    call, kind, says = _library_cases()[case]
    with pytest.raises(kind) as exc:
        call()
    assert says in str(exc.value) and "\n" not in str(exc.value), str(exc.value)
    assert "startprob" not in str(exc.value)


def test_certify_claim_takes_the_claim_as_text():
    """Its annotation accepts a string: 'KL <= 1' failed with "'str' object has no attribute 'relation'".  KL of the
    2-gram at L = 3 with two i.i.d. steps is the same whether the claim is given as text or parsed."""
    from mdmt.bounds.refutation.certificate import certify_claim
    from mdmt.bounds.refutation.claims import parse_claim

    q = preset("2gram")
    text = certify_claim("KL <= 1", q, 3, "iid", 2)
    parsed = certify_claim(parse_claim("KL <= 1"), q, 3, "iid", 2)
    assert text == parsed and text["verdict"] in ("certified", "certified violation")
    with pytest.raises(TypeError, match="claim must be a claim's text"):
        certify_claim(1, q, 4, "iid", 2)


# ============================================================================ 8. messages that name the right thing
def test_an_explicit_reveal_vector_in_processes_is_one_process(worker, tmp_path):
    """--processes iid:0.5,0.5 was split at the comma ('--processes iid:0.5: reveal probabilities sum to 0.5')."""
    from mdmt.constructions.reverse.policies import split_policies

    assert split_policies("iid:0.5,0.5,confidence, iid:0.25,0.75") == ["iid:0.5,0.5", "confidence", "iid:0.25,0.75"]
    assert split_policies("iid,0.5") == ["iid", "0.5"]  # a number after a named schedule is not a probability
    res = accepted(worker, tmp_path, *REFUTE_OUT, "--claim", "KL <= 100", "--processes", "iid:0.5,0.5", "--json")
    assert json.loads(res["out"])["search"]["processes"] == ["iid:0.5,0.5"]
    refused(worker, tmp_path, *REFUTE_OUT[:6], "3", *REFUTE_OUT[7:], "--claim", "KL <= 100", "--processes", "iid:0.5,0.5",
            says=["--processes iid:0.5,0.5", "N = 3"])


@pytest.mark.parametrize("address", ["tcp://[::1]:8786", "tcp://[fe80::1]:8786", "tls://[2001:db8::1]"])
def test_ipv6_scheduler_addresses_are_addresses(address):
    from mdmt.sweep import scheduler_address

    assert scheduler_address(address) == address


def test_a_bad_memory_limit_names_the_variable_not_the_language(worker, tmp_path):
    """A bad MDMT_MAX_MEMORY was blamed on --language ('--language preset:2gram: MDMT_MAX_MEMORY=...')."""
    argv = ["exact", "--language", "preset:2gram", "-L", "2", "-N", "2"]
    code = ("import os\nfrom mdmt.cli import main\nold = os.environ['MDMT_MAX_MEMORY']\n"
            "os.environ['MDMT_MAX_MEMORY'] = 'lots'\ntry:\n    rc = main(%r)\nfinally:\n"
            "    os.environ['MDMT_MAX_MEMORY'] = old\nraise SystemExit(rc)\n" % argv)
    res = worker.run([], tmp_path, python=code)
    assert outcome(res, False) == ERROR, res
    line = res["err"].strip()
    assert line == "mdmt exact: error: MDMT_MAX_MEMORY='lots' is not a size (examples: 8G, 512M, 1e9)", line


def test_interval_lengths_beyond_the_memory_of_their_scores_are_refused_naming_the_flag(worker, tmp_path):
    """adaptive ser --interval-lengths 100 ended in numpy's 'Maximum allowed dimension exceeded'."""
    line = refused(worker, tmp_path, "adaptive", "ser", "--interval-lengths", "100", "--curve-length", "100",
                   "--intervals", "1", "--num", "10", says=["--interval-lengths 100", "bytes", "MDMT_MAX_MEMORY"])
    assert "Maximum allowed dimension" not in line


@pytest.mark.parametrize("argv", [["atlas", "--language", "preset:2gram", "-L", "2", "-N", "2"],
                                  ["refute", "--claim", "KL <= 1", "--budget", "1"],
                                  ["adaptive", "ter", "--lengths", "2", "--num", "2"],
                                  ["language", "--kind", "ngram", "--n", "2", "--vocab", "2"]])
def test_an_empty_out_is_refused(worker, tmp_path, argv):
    """--out '' ran the command and wrote nothing, with exit 0."""
    refused(worker, tmp_path, *argv, "--out", "", says="--out: expected a file or folder name, got ''")


@pytest.mark.integration
def test_a_full_numba_cache_names_the_folder_and_the_variable(tmp_path):
    """numba's cache write failing with ENOSPC ('No space left on device', no path) names the cache folder and
    NUMBA_CACHE_DIR.  The full disk is emulated where numba writes its cache files."""
    import subprocess
    import sys

    code = ("import errno, os, sys, numba.core.caching as c\n"
            "def full(self, name, data):\n"
            "    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
            "c.IndexDataCacheFile._save_data = full\n"
            "from mdmt.cli import main\n"
            "sys.exit(main(['exact', '--language', 'preset:2gram', '-L', '2', '-N', '2']))\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "MDMT_DEBUG": ""}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert "No space left on device" in lines[0] and str(tmp_path / "cache") in lines[0]
    assert "NUMBA_CACHE_DIR" in lines[0]


@pytest.mark.integration
def test_an_embedded_cluster_that_fails_to_start_is_retried_then_one_line(monkeypatch, capsys):
    """A Dask worker killed while the embedded cluster starts raised 'RuntimeError: Nanny failed to start'.  The
    start is tried again; one that never succeeds is one line naming the cluster and --jobs 1."""
    import dask.distributed

    from mdmt import sweep
    from mdmt.cli import main

    starts = []

    def failing(**kwargs):
        starts.append(kwargs["n_workers"])
        raise RuntimeError("Nanny failed to start.")

    monkeypatch.setattr(dask.distributed, "LocalCluster", failing)
    with pytest.raises(OSError, match="did not start in 3 tries .Nanny failed to start.*--jobs 1"):
        sweep.run_parts(str, [1, 2], jobs=2).results()
    assert starts == [2, 2, 2]
    assert main(["refute", "--claim", "KL <= 100", "--family", "ngram:n=2,V=2", "--lengths", "3", "--budget", "2",
                 "--shards", "2", "--jobs", "2", "--no-progress", "--no-proof"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("mdmt refute: error: the embedded Dask cluster")
    # a start that fails once is retried: the cluster it then gets runs the parts
    calls = []

    def once(**kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("Nanny failed to start.")
        return "a cluster"

    assert sweep.start_cluster(once, 2) == "a cluster" and len(calls) == 2
