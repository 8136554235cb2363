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
import signal
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mdmt.constructions.languages import interval_hmm, load_language, preset
from mdmt.constructions.validation import MASK, regular_file, token_array
from tests.fuzz_support import ERROR, OK, Worker, outcome

AT_ONCE = 10.0  # seconds: a refusal comes at once (and a FIFO is never opened)
BOUND = 120.0  # seconds the worker waits for any run (a first run compiles numba kernels) before stopping it
I64_MAX = 2**63 - 1


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    w = Worker(tmp_path_factory.mktemp("hostile-logs"), BOUND)
    yield w
    w.close()


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
    """Run ``mdmt argv`` in ``folder``: exit 2, exactly one ``mdmt <command>: error:`` line holding every string
    of ``says``, no traceback, and nothing written or changed in ``folder``.  Returns the line."""
    before = _snapshot(folder)
    res = worker.run(list(argv), folder)
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


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("template, flag, what", INPUTS)
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


@pytest.mark.parametrize("kind", [k for k in KINDS])
@pytest.mark.parametrize("template, folder", OUTPUTS)
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


@settings(max_examples=400)  # a call takes microseconds: cover every dtype's limits
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
