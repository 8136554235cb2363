"""Fuzzing every ``mdmt`` subcommand with hostile arguments and input files (docs/reliability.md).

Hypothesis builds a valid argument list for each subcommand and makes 0-3 of its options
hostile -- zero, negative, huge (10^9, 10^30), NaN, infinite, empty and wrong-type numbers; malformed
language files (strings, booleans, null, NaN, wrong shapes, absurd orders, deep nesting,
binary junk, forged .npz headers); malformed sequence files; malformed schedules; output paths that
are folders, missing folders or other users' files -- and checks the contract on each run:
exit 0 with finite output, or exit 2 with exactly one line on standard error; never a
traceback, a signal or a run past the time bound (tests/fuzz_support.py).

The fuzz runs in the integration tier (``-m integration``): a quick run of 8 cases per command (the `mdmt`
Hypothesis profile is derandomized, so CI runs the same cases every time) and a thorough one; the default run
checks the contract checker itself.
``MDMT_FUZZ_COUNTS=counts.json`` records how many inputs gave each outcome.

Values that are valid but ask for a long computation on purpose (``--train-steps 10^9``, the
full ``mdmt verify``) are not drawn: they are requests, not bad input.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.fuzz_support import ERROR, OK, Tally, Worker, outcome

TIMEOUT = 60.0  # seconds per case: generous on a shared CI machine; accepted inputs take a few seconds
QUICK = 8  # cases per command in the quick fuzz
THOROUGH = 150  # cases per command in the integration tier (-m integration)

TALLY = Tally()

# ----------------------------------------------------------------------------- value pools
HUGE = ["1000000000", "1000000000000000000000000000000"]
BAD_INTS = ["0", "-1", "-7", "nan", "inf", "", " ", "x", "1e3", "1.5", "0x10", "1,2", *HUGE]
BAD_FLOATS = ["nan", "inf", "-inf", "-1", "0", "1e308", "-1e-320", "", "x", "1,2", "2", "1e400"]
SPECS = ["preset:2gram", "preset:3gram-ter", "preset:hmm", "interval:3", "lang.json", "lang.json", "lang.npz"]
BAD_SPECS = ["preset:nope", "interval:99", "interval:", "interval:-3", "", " ", "preset:2gram:-1", "missing.json", ".",
             "folder", "unrelated.txt", "seqs.txt", "interval:1000000000000000000000000000000", "preset:", ":"]
SCHEDULES = ["linear", "cosine", "loglinear", "loglinear:0.1", "warmstart", "warmstart:0.5", "0.5,0.5", "1"]
BAD_SCHEDULES = ["loglinear:nan", "loglinear:-1", "warmstart:2", "warmstart:nan", "nan,1", "-1,2", "", ",", "1e309,0",
                 "x", "0.25,0.25,0.25,0.25", "0.3,0.3", "linear:3", "1e-320,1"]
OUT_FILES = ["out.json", "out.npz", "out.txt"]
BAD_OUT_FILES = ["missing/out.json", ".", "folder", "unrelated.txt", "", "lang.json", "folder/"]
OUT_FOLDERS = ["d", "d2"]
BAD_OUT_FOLDERS = ["folder", "unrelated.txt", "", "dataset", "."]


def opt(flag, valid, hostile=BAD_INTS, required=False):
    """An option: (its valid argument lists, its hostile ones); leaving it out is valid unless ``required``."""
    valid_args = [[flag, str(v)] for v in valid] + ([] if required else [[]])
    return valid_args, [[flag, str(v)] for v in hostile] + ([[]] if required else [])


def switch(flag):
    return [[], [flag]], []


def either(*groups, hostile=()):
    """Exactly one of several argument lists (e.g. --language or --kind); hostile: both, or none."""
    return [list(g) for g in groups], [list(h) for h in hostile]


JUNK = [["--bogus"], ["extra"], ["--json", "--json"], ["-h"], ["--lang", "x"], ["--out"], ["--", "x"]]


COMMAND_OF = {"sample network": "sample"}  # strategies that run a command under another name (sample --checkpoint)


@st.composite
def cases(draw, name: str, options: list) -> list[str]:
    """A valid argument list of ``name`` in which 0-3 options are made hostile (or one stray argument added)."""
    k = draw(st.sampled_from([0, 1, 1, 1, 2, 3]))
    hostile = set(draw(st.lists(st.sampled_from(range(len(options))), max_size=k, unique=True)))
    argv = COMMAND_OF.get(name, name).split()
    for i in draw(st.permutations(range(len(options)))):
        valid, bad = options[i]
        argv += draw(st.sampled_from(bad if i in hostile and bad else valid))
    if draw(st.integers(0, 9)) == 0:
        argv += draw(st.sampled_from(JUNK))
    return argv


# ----------------------------------------------------------------------------- input files
GOOD_HMM = {"kind": "hmm", "initial": [0.5, 0.5], "transition": [[0.9, 0.1], [0.2, 0.8]],
            "emission": [[0.7, 0.3], [0.1, 0.9]]}
GOOD_NGRAM = {"kind": "ngram", "n": 3, "initial": [0.25, 0.25, 0.25, 0.25],
              "transition": [[0.5, 0.5], [1.0, 0.0], [0.0, 1.0], [0.3, 0.7]]}
HOSTILE_VALUES = ["0.5", True, None, float("nan"), -1, 10**30, [], [[]], {}, "x", [[0.5, "0.5"], [1.0, 0.0]],
                  [[True, False], [False, True]], [0.5], [[1e308, 1e308], [0.5, 0.5]], 1.5, [[-0.5, 1.5], [0.5, 0.5]]]


@st.composite
def language_documents(draw):
    """Raw bytes of a language file: a valid document with 0-3 hostile changes, or junk."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([b"", b"\xff\xfe\x00", b"{", b"null", b"123", b"[" * 100000 + b"]" * 100000,
                                     b'{"kind": "hmm"}', b"NaN"]))
    doc = json.loads(json.dumps(draw(st.sampled_from([GOOD_HMM, GOOD_NGRAM]))))
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(["kind", "n", "initial", "transition", "emission", "format", "version"]))
        if draw(st.booleans()):
            doc.pop(key, None)
        else:
            doc[key] = draw(st.sampled_from(HOSTILE_VALUES + [10**30, 0, 1, 2, 64, 65, "3", "ngram", "hmm"]))
    return json.dumps(doc).encode()


def forged_npz(shape=(10**11,)) -> bytes:
    """An .npz of a few hundred bytes whose initial law claims ``shape`` float64 entries (800 GB by default)."""
    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": "<f8", "fortran_order": False, "shape": shape})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("meta.npy", _npy(np.array('{"kind": "hmm"}')))
        zf.writestr("initial.npy", b"\x93NUMPY\x01\x00" + head.getvalue()[8:] + b"\x00" * 64)
    return buf.getvalue()


def _npy(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


@st.composite
def npz_documents(draw):
    """An .npz language file with hostile arrays (wrong dtypes, shapes, values) or a zip bomb."""
    choice = draw(st.integers(0, 4))
    buf = io.BytesIO()
    if choice == 0:
        return forged_npz()
    if choice == 1:
        np.savez(buf, meta=np.array('{"kind": "hmm"}'), initial=np.array([True, False]),
                 transition=np.eye(2), emission=np.eye(2))
    elif choice == 2:
        np.savez(buf, meta=np.array('{"kind": "ngram", "n": 1000000000000}'), initial=np.ones(2) / 2,
                 transition=np.ones((2, 2)) / 2)
    elif choice == 3:
        np.savez(buf, meta=np.array("[1, 2]"), initial=np.ones(2) / 2)
    else:
        np.savez(buf, meta=np.array('{"kind": "hmm"}'), initial=np.array(["0.5", "0.5"]), transition=np.eye(2),
                 emission=np.eye(2))
    return buf.getvalue()


@st.composite
def sequence_files(draw):
    """A sequence file: lines of valid tokens (0-1 for the smallest languages), sometimes one hostile token, or junk."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from([b"", b"\n\n", b"\xff\xfe", b"0 " * 100000 + b"\n", b"# only a comment\n"]))
    lines = draw(st.lists(st.lists(st.sampled_from(["0", "1"]), min_size=1, max_size=8), min_size=1, max_size=5))
    if draw(st.booleans()):
        bad = draw(st.sampled_from(["7", "8", "15", "-1", "x", "1.5", "99999999999999999999", "1_0", "\u0663", "+1",
                                    "nan", "# comment", ""]))
        lines[draw(st.integers(0, len(lines) - 1))].append(bad)
    return "".join(" ".join(line) + "\n" for line in lines).encode()


@st.composite
def workspaces(draw):
    """The files a case finds in its folder."""
    return {"lang.json": draw(language_documents()), "lang.npz": draw(npz_documents()),
            "seqs.txt": draw(sequence_files())}


RUNS: dict = {}  # kind ("mdm", "ar") -> the folder of a real tiny training run (the checkpoint commands' fixture)


def prepare(folder, files: dict) -> None:
    (folder / "folder").mkdir()
    (folder / "unrelated.txt").write_text("a file that mdmt did not write\n")
    (folder / "dataset").mkdir()
    (folder / "dataset" / "train.npy").write_text("not mdmt's\n")
    for name, data in files.items():
        (folder / name).write_bytes(data)
    for kind, run in RUNS.items():  # real checkpoints, and one whose digest does not match
        (folder / kind).mkdir()
        for name in ("ckpt.pt", "ckpt.pt.sha256"):
            shutil.copy(run / name, folder / kind / name)
    if RUNS:
        (folder / "bad").mkdir()
        shutil.copy(RUNS["mdm"] / "ckpt.pt", folder / "bad" / "ckpt.pt")
        (folder / "bad" / "ckpt.pt.sha256").write_text("0" * 64 + "\n")


# ----------------------------------------------------------------------------- commands
LANGUAGE = opt("--language", SPECS, BAD_SPECS, required=True)
SCHEDULE = opt("--schedule", SCHEDULES, BAD_SCHEDULES)
JSON = switch("--json")
FORCE = switch("--force")
CHECKPOINT = opt("--checkpoint", ["mdm/ckpt.pt", "ar/ckpt.pt"],
                 ["bad/ckpt.pt", "missing.pt", "folder", "lang.json", "unrelated.txt", "seqs.txt", ""], required=True)


def POLICIES_OPT(flag):  # noqa: N802 (an option like the constants above)
    return opt(flag, ["iid", "stride", "confidence", "threshold:0.5", "entropy-sum:1", "bisect", "verified:2",
                      "remdm:cap:0.1", "optimal"],
               ["x", "", "threshold:2", "iid:bogus", "entropy-sum:-1", "threshold:nan", "random:x", "bisect:0",
                "verified", "remdm:x", "remdm:cap:5"])


def commands() -> dict:
    """Every subcommand's options: the valid values keep a run to a few seconds."""
    return {
        "verify": [([["--quick"]], []), ([["--bogus"], ["--quick=1"], ["now"], ["-N", "2"]], []), JSON],
        "counterexample": [opt("-l", [2, 3, 4, 5]), opt("--out", OUT_FILES, BAD_OUT_FILES, required=True), FORCE, JSON],
        "language": [either(["--language", "preset:2gram"], ["--language", "interval:3"], ["--language", "lang.json"],
                            ["--kind", "ngram"], ["--kind", "hmm"], ["--list"],
                            hostile=[["--language", "preset:hmm", "--kind", "hmm"], [], ["--kind", "tree"],
                                     ["--language", "preset:nope"], ["--language", "lang.npz"]]),
                     opt("--n", [2, 3, 4]), opt("--states", [1, 4, 32]), opt("--vocab", [1, 2, 8]),
                     opt("--temperature", [0.5, 2], BAD_FLOATS), opt("--threshold", [0, 0.01, 0.3], BAD_FLOATS),
                     opt("--seed", [0, 1]), opt("--out", OUT_FILES, BAD_OUT_FILES, required=True), FORCE, JSON],
        "score": [LANGUAGE, opt("--sequences", ["seqs.txt"], ["missing.txt", "folder", "lang.npz", ""], required=True),
                  JSON],
        "exact": [LANGUAGE, opt("-L", [1, 2, 3, 6], required=True), opt("-N", [1, 2, 3], required=True), SCHEDULE,
                  JSON],
        "sample": [LANGUAGE, opt("-L", [1, 3, 8, 64], required=True), opt("-N", [1, 2, 8], required=True),
                   opt("--num", [1, 2, 50]), opt("--seed", [0, 3]), switch("--kl"), opt("--out", OUT_FILES, BAD_OUT_FILES),
                   FORCE, SCHEDULE, JSON],
        "dependencies": [opt("--n", [2, 3, 4], required=True), opt("-L", [1, 8, 64], required=True),
                         opt("-N", [1, 2, 8], required=True), SCHEDULE, JSON],
        "curve ter": [opt("--n", [2, 3]), opt("--eps", [0.05, 0.2], BAD_FLOATS), opt("--vocab", [2, 8]),
                      opt("--lengths", ["64", "64,128"], ["", ",", "0,64", "x", "-64", "1000000000", "64,,128", "1e3"]),
                      opt("--schedule", ["warmstart", "linear"], ["x", "", "warmstart:2"]),
                      opt("--eps-learning", [0, 0.01], BAD_FLOATS), opt("--csv", OUT_FILES, BAD_OUT_FILES),
                      opt("--plot", ["p.png"], BAD_OUT_FILES), JSON],
        "curve ser": [opt("-l", [2, 3, 4]), opt("-L", [12, 60, 120]), opt("--eps-learning", [0.01, 1 / 128], BAD_FLOATS),
                      opt("--csv", OUT_FILES, BAD_OUT_FILES), opt("--plot", ["p.png"], BAD_OUT_FILES), JSON],
        "data": [either(["--language", "preset:2gram"], ["--language", "interval:3"], ["--language", "lang.json"],
                        hostile=[["--language", s] for s in BAD_SPECS[:6]] + [["--verify", "dataset"], []]),
                 opt("-L", [3, 6, 12]), opt("--num", [1, 8, 40]), opt("--num-val", [1, 4]), opt("--seed", [0, 2]),
                 opt("--out", OUT_FOLDERS, BAD_OUT_FOLDERS, required=True), FORCE, JSON],
        "train": [either(["--language", "preset:2gram"], ["--language", "interval:2"], ["--language", "lang.json"],
                         hostile=[["--data", "dataset"], ["--data", "missing"], ["--data", "folder"],
                                  ["--language", "preset:nope"], []]),
                  opt("--model", ["tiny"], ["huge", ""]), switch("--ar"), opt("--positions", ["rotary", "learned"], ["x", ""]),
                  opt("-L", [4, 8], required=True), opt("--train-steps", [1, 2], BAD_INTS[:-2], required=True),
                  opt("--batch", [1, 2, 4], required=True), opt("--lr", [1e-3, 3e-4], BAD_FLOATS),
                  opt("--seed", [0, 1]), opt("--device", ["cpu"], ["cuda:7", "x", ""]),
                  opt("--out", OUT_FOLDERS, BAD_OUT_FOLDERS, required=True), switch("--resume"),
                  opt("--learning-error-num", [0, 2], BAD_INTS[:-2]), ([["--no-progress"]], []), JSON],
        "figure1": [opt("--out", OUT_FOLDERS, BAD_OUT_FOLDERS, required=True),
                    opt("--ter-languages", ["preset:2gram-ter"], ["", "preset:nope", ",", "lang.npz"], required=True),
                    opt("--ser-languages", ["", "interval:2"], ["x", "preset:nope"], required=True),
                    opt("--steps", ["2", "2,4"], ["0", "", "x", "-2", "1e3"], required=True),
                    opt("--kinds", ["oracle"], ["x", "", "oracle,x"], required=True),
                    opt("-L", [4, 6], BAD_INTS[:-2], required=True), opt("--num", [2, 4], BAD_INTS[:-2], required=True),
                    opt("--train-steps", [1], BAD_INTS[:-2], required=True), opt("--batch", [2], required=True),
                    opt("--learning-error-num", [2], required=True), SCHEDULE, opt("--seed", [0]),
                    ([["--no-progress"]], []), JSON],
        "speed": [opt("--lengths", ["8"], ["", "0", "x", "1000000000", "-8"], required=True),
                  opt("--steps", ["2"], ["0", "", "x", "-1"], required=True),
                  opt("--batch", [1, 2], required=True), opt("--vocab", [2, 8], required=True),
                  opt("--repeats", [1], BAD_INTS[:-2], required=True), opt("--device", ["cpu"], ["x", ""]), JSON],
        "atlas": [LANGUAGE, opt("-L", [1, 2, 3], required=True), opt("-N", [1, 2], required=True), POLICIES_OPT("--processes"),
                  opt("--out", OUT_FOLDERS, BAD_OUT_FOLDERS), JSON],
        "refute": [opt("--claim", ["KL <= TC", "E_TC <= KL", "SER <= 1 - exp(-KL)"],
                       ["", "KL", "KL <= foo", "KL == TC", "__import__('os')", "KL <= open(1)", "KL <= TC <= H"],
                       required=True),
                   opt("--family", ["ngram:n=2,V=2", "hmm:S=2,V=2", "interval:2", "lang.json"],
                       ["", "x", "ngram:n=1,V=2", "hmm:S=0,V=2", "ngram:n=2", "missing.json", "folder", "unrelated.txt"]),
                   opt("--lengths", ["2", "2,3"], ["0", "", "x", "-2", "1e3", "40"]), opt("-N", ["1", "1,2"], ["0", "", "x"]),
                   POLICIES_OPT("--processes"), opt("--budget", ["3", "1s"], ["0", "", "x", "-1", "1.5", "0s", "9d", "1e3"]),
                   opt("--seed", [0, 3]), opt("--shards", [1, 2]), opt("--jobs", [1]),
                   opt("--scheduler", [], ["", "x", "8786", "tcp://"]), ([["--no-progress"]], []),
                   opt("--out", OUT_FOLDERS, BAD_OUT_FOLDERS), FORCE, JSON],
        "schedule": [LANGUAGE, opt("-L", ["4", "6", "4,6"], ["0", "", "x", "-2", "1e3", "1000000000"], required=True),
                     opt("-N", [1, 2, 3], BAD_INTS[:-2]), opt("--target", [0.1, 1], BAD_FLOATS), switch("--per-token"),
                     opt("--profile", ["auto", "exact", "markov", "monte_carlo"], ["x", ""]),
                     opt("--num", [2, 50], BAD_INTS[:-2]), JSON],
        "samplers": [LANGUAGE, opt("--lengths", ["3", "6", "3,6"], ["0", "", "x", "-3", "1000000000"]),
                     opt("--samplers", ["uniform,ar", "bisect,verified", "stride"], ["x", "", "remdm:cap:5"]),
                     opt("--target", [0.1, 0.5], BAD_FLOATS), opt("--num", [2, 20], BAD_INTS[:-2]),
                     ([["--no-progress"]], []), JSON],
        "adaptive sample": [LANGUAGE, opt("-L", [1, 3, 8], required=True), opt("-N", [1, 2, 4]), POLICIES_OPT("--policy"),
                            opt("--num", [1, 8], BAD_INTS[:-2]), opt("--seed", [0, 2]), switch("--kl"), JSON],
        "adaptive exact": [LANGUAGE, opt("-L", [1, 2, 3], required=True), opt("-N", [1, 2]), POLICIES_OPT("--policy"),
                           JSON],
        # the commands that read a checkpoint, on real tiny ones (an MDM and an AR network of L = 8)
        "evaluate": [CHECKPOINT, opt("-L", [4, 8], BAD_INTS[:-2]), opt("--steps", ["2", "2,4"], ["0", "", "x", "-2"]),
                     opt("--num", [1, 4], BAD_INTS[:-2]), opt("--num-val", [2, 4], BAD_INTS[:-2]),
                     opt("--learning-error-num", [0, 2], BAD_INTS[:-2]), opt("--batch", [1, 4], BAD_INTS[:-2]),
                     opt("--language", ["preset:2gram-ter"], ["preset:2gram", "interval:3", "preset:nope"]),
                     SCHEDULE, opt("--seed", [0, 1]), opt("--device", ["cpu"], ["cuda:7", "x"]), JSON],
        "sample network": [CHECKPOINT, opt("-L", [8], ["0", "9", "x"], required=True),
                                opt("-N", [2, 8], BAD_INTS[:-2], required=True), opt("--num", [1, 4], BAD_INTS[:-2]),
                                opt("--language", ["preset:2gram-ter"], ["preset:2gram", "preset:nope"], required=True),
                                opt("--out", OUT_FILES, BAD_OUT_FILES), FORCE, JSON],
    }


COMMANDS = commands()


def strategies() -> dict:
    return {name: cases(name, options) for name, options in COMMANDS.items()}


STRATEGIES = strategies()


@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    w = Worker(tmp_path_factory.mktemp("fuzz-logs"), TIMEOUT)
    yield w
    w.close()
    TALLY.write()


def _check(worker, tmp_path_factory, name: str, argv: list[str], files: dict) -> None:
    folder = tmp_path_factory.mktemp("case")
    try:
        prepare(folder, files)
        res = worker.run(argv, folder)
        result = outcome(res, "--json" in argv and not {"-h", "--help"} & set(argv))
        TALLY.add(name, result)
        assert result in (OK, ERROR), (
            f"mdmt {' '.join(argv)!r}: {result} after {res['seconds']:.1f} s\n"
            f"stdout: {res['out'][-2000:]}\nstderr: {res['err'][-4000:]}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _params():  # a fuzzer, quick or thorough, is in the integration tier
    return [pytest.param(name, id=name, marks=[pytest.mark.integration]) for name in STRATEGIES]


def _fuzz(name, worker, tmp_path_factory, examples: int, shrink: bool) -> None:
    phases = [Phase.explicit, Phase.reuse, Phase.generate] + ([Phase.shrink] if shrink else [])
    @settings(max_examples=examples, deadline=None, database=None, phases=phases, report_multiple_bugs=False,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example])
    @given(argv=STRATEGIES[name], files=workspaces())
    def case(argv, files):
        _check(worker, tmp_path_factory, name, argv, files)

    case()


@pytest.fixture(scope="module")
def checkpoint_runs(tmp_path_factory):
    """Real tiny training runs (an MDM and an AR network, two steps each) for the commands that read a checkpoint;
    none where torch is missing (those commands then answer with one line, which the contract accepts)."""
    from mdmt.cli import main
    from mdmt.extras import has_torch

    if has_torch():
        tiny = ["--language", "preset:2gram-ter", "-L", "8", "--train-steps", "2", "--batch", "4", "--num-val", "4",
                "--no-progress"]
        for kind, extra in (("mdm", []), ("ar", ["--ar"])):
            out = tmp_path_factory.mktemp("runs") / kind
            assert main(["train", *tiny, *extra, "--out", str(out)]) == 0
            RUNS[kind] = out
    yield RUNS
    RUNS.clear()


def _runs_for(name, request) -> None:
    if name in ("evaluate", "sample network"):
        request.getfixturevalue("checkpoint_runs")


@pytest.mark.parametrize("name", _params())
def test_every_command_keeps_the_contract(name, worker, tmp_path_factory, request):
    _runs_for(name, request)
    _fuzz(name, worker, tmp_path_factory, QUICK, shrink=False)  # the first failing case, as drawn


@pytest.mark.parametrize("name", _params())
def test_every_command_keeps_the_contract_thoroughly(name, worker, tmp_path_factory, request):
    _runs_for(name, request)
    _fuzz(name, worker, tmp_path_factory, THOROUGH, shrink=True)


def test_the_contract_checker_has_teeth(tmp_path):
    """Each failure class is recognised: a traceback, two lines, NaN output, a numeric warning, out of memory."""
    assert outcome({"rc": 0, "out": "value 1.5\n", "err": ""}, False) == OK
    assert outcome({"rc": 2, "out": "", "err": "mdmt x: error: bad\n"}, False) == ERROR
    assert outcome({"rc": 1, "out": "", "err": "Traceback (most recent call last):\n  ...\n"}, False) == "traceback"
    assert outcome({"rc": 2, "out": "", "err": "mdmt x: error: a\nb\n"}, False) == "malformed error output"
    assert outcome({"rc": 0, "out": "ser  nan\n", "err": ""}, False) == "NaN in output"
    assert outcome({"rc": 0, "out": '{"a": NaN}', "err": ""}, True) == "NaN in output"
    assert outcome({"rc": 0, "out": "nanoseconds 3\n", "err": ""}, False) == OK
    assert outcome({"rc": 0, "out": "x 1\n", "err": "a.py:3: RuntimeWarning: overflow\n"}, False) == "numeric warning"
    assert outcome({"rc": 2, "out": "", "err": "mdmt x: error: out of memory\n"}, False) == "out of memory"


@pytest.mark.integration
def test_the_worker_catches_a_real_crash_and_a_real_hang(tmp_path):
    """A crash (SIGSEGV), a hang (the timeout) and a traceback inside the worker process are told apart."""
    w = Worker(tmp_path, timeout=6, warm_up=("mdmt.commands.score",))
    (tmp_path / "s.txt").write_text("0 1\n")
    argv = ["score", "--language", "preset:2gram", "--sequences", "s.txt"]
    try:  # a real crash and a real hang inside the worker are caught, and the worker comes back after each
        assert outcome(w.run(argv, tmp_path), False) == OK
        crash = w.run(argv, tmp_path, python="import os, signal; os.kill(os.getpid(), signal.SIGSEGV)")
        assert outcome(crash, False) == "killed by a signal" and crash["rc"] == "signal SIGSEGV"
        assert outcome(w.run(argv, tmp_path, python="import time; time.sleep(60)"), False) == "timeout"
        assert outcome(w.run(argv, tmp_path, python="raise KeyError('boom')"), False) == "traceback"
        assert outcome(w.run(argv, tmp_path), False) == OK and w.starts == 3
    finally:
        w.close()
