"""Folder outputs under the non-destructive rule, and one writer per --out (docs/reliability.md, "Outputs").

* Every command whose ``--out`` is a folder (atlas, adaptive ser|ter, figure1, train, data) refuses a
  file in that folder which mdmt did not write, among the names it writes, unless ``--force``; it
  replaces its own files when run again (figure1 resumes, train --resume extends, data loads).
* A lock file (``OUT/.mdmt.lock``, ``.NAME.mdmt.lock`` beside a file output) lets one run write an
  output at a time: a second run exits 2 naming the holder; a lock of a process that has ended is
  taken over; the lock is removed on success, on an error, on Ctrl-C and on SIGTERM.
"""

from __future__ import annotations

import contextlib
import io
import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mdmt.cli import main
from mdmt.runtime import locks
from mdmt.runtime import outputs

OUT = "@OUT@"  # replaced by the output path of a case

FOLDER_COMMANDS = {
    "atlas": (["atlas", "--language", "preset:2gram", "-L", "3", "-N", "2", "--out", OUT],
              ("atlas.csv", "atlas.json", "atlas.png"), []),
    "adaptive ser": (["adaptive", "ser", "--interval-lengths", "3", "--intervals", "2", "--curve-length", "6",
                      "--policies", "iid", "--num", "20", "--out", OUT],
                     ("adaptive_ser.csv", "adaptive_ser.json", "adaptive_ser.png"), []),
    "adaptive ter": (["adaptive", "ter", "--language", "preset:2gram-ter", "--lengths", "4", "--policies", "iid",
                      "--num", "8", "--out", OUT],
                     ("adaptive_ter.csv", "adaptive_ter.json", "adaptive_ter.png"), []),
    "samplers": (["samplers", "--language", "interval:2", "--lengths", "2", "--samplers", "uniform,verified",
                  "--no-progress", "--out", OUT], ("samplers.csv", "samplers.json", "samplers.png"), []),
    "figure1": (["figure1", "--out", OUT, "--kinds", "oracle", "--ter-languages", "preset:2gram-ter",
                 "--ser-languages", "", "--steps", "2", "--lengths", "4", "--num", "4", "--no-progress"],
                ("config.json", "figure1.csv", "figure1.json", "figure1.png", "figure1.md"), []),
    "train": (["train", "--language", "preset:2gram-ter", "--model", "tiny", "-L", "8", "--train-steps", "2",
               "--batch", "4", "--num-val", "4", "--out", OUT, "--no-progress"],
              ("summary.json", "ckpt.pt.sha256"), ["--resume"]),
    "data": (["data", "--language", "preset:2gram", "-L", "4", "--num", "5", "--num-val", "3", "--out", OUT],
             ("train.npy", "val.npy", "manifest.json"), []),
}
TORCH = {"train"}
SAMPLE = ["sample", "--language", "preset:2gram", "-L", "4", "-N", "2", "--num", "5", "--out", OUT]


def _param(name):
    return pytest.param(name, id=name.replace(" ", "-"), marks=[pytest.mark.torch] if name in TORCH else [])


def _run_param(name):
    """A command run to the end (twice or more): those that draw a figure or train a network are in the
    integration tier; the folder rule itself is checked for every command, before any work, in the default one."""
    heavy = name != "data"
    return pytest.param(name, id=name.replace(" ", "-"),
                        marks=[pytest.mark.torch] * (name in TORCH) + [pytest.mark.integration] * heavy)


def _needs(name):
    if name in TORCH:
        pytest.importorskip("torch", reason='needs PyTorch: pip install "mdmt[empirical]"')


def _argv(name, out, *extra):
    argv, _, _ = FOLDER_COMMANDS[name] if name in FOLDER_COMMANDS else (SAMPLE, (), [])
    return [str(out) if a == OUT else a for a in argv] + list(extra)


def _run(argv) -> tuple[int, str, str]:
    """``mdmt.cli.main(argv)`` in this process: (status, standard output, standard error)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def _snapshot(folder: Path) -> dict:
    """Every file under ``folder`` (relative name -> bytes), folders as None."""
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in sorted(folder.rglob("*"))}


def _holder_line(command: str, out, pid: int, host: str) -> str:
    return (f"mdmt {command}: error: --out {out} is being written by another mdmt run (pid {pid} on host {host}, "
            f"started ")


def _lock_record(pid: int, host_tag: str | None = None, host: str = "elsewhere") -> str:
    return json.dumps({"mdmt": "mdmt output lock", "host": host, "host_tag": host_tag or outputs._host_tag(),
                       "pid": pid, "command": "mdmt data --out x", "started": "2026-01-02T03:04:05+00:00",
                       "token": "0123456789abcdef"}) + "\n"


@contextlib.contextmanager
def _live_process():
    """A process that stays alive while the block runs (its pid stands for a run holding a lock)."""
    proc = subprocess.Popen(["sleep", "300"])
    try:
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()


def _dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


# ----------------------------------------------------------------------------- the folder rule
@pytest.mark.parametrize("name, file", [
    pytest.param(n, f, id=f"{n.replace(' ', '-')}:{f}", marks=[pytest.mark.torch] if n in TORCH else [])
    for n, (_, files, _) in FOLDER_COMMANDS.items() for f in files])
def test_a_file_mdmt_did_not_write_is_refused_before_any_work(tmp_path, monkeypatch, name, file):
    _needs(name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / file).write_bytes(b"mine\n")
    (tmp_path / "o" / "notes.txt").write_text("other files are left alone\n")
    before = _snapshot(tmp_path)
    rc, out, err = _run(_argv(name, "o"))
    assert rc == 2 and out == "" and err.count("\n") == 1, err
    command = name.split()[0]
    if name == "data":  # mdmt data says what is wrong with the file in words of its own (tests/test_data.py)
        assert err.startswith(f"mdmt data: error: o/{file} ") and "pass --force" in err
    else:
        assert err == (f"mdmt {command}: error: --out o/{file} already exists and was not written by mdmt; "
                       "pass --force to overwrite it\n")
    assert _snapshot(tmp_path) == before  # nothing written, no lock left


@pytest.mark.parametrize("name", [_run_param(n) for n in FOLDER_COMMANDS])
def test_force_replaces_foreign_files_and_a_rerun_replaces_mdmts_own(tmp_path, monkeypatch, name):
    _needs(name)
    monkeypatch.chdir(tmp_path)
    _, files, again = FOLDER_COMMANDS[name]
    (tmp_path / "o").mkdir()
    for f in files:
        (tmp_path / "o" / f).write_bytes(b"mine\n")
    (tmp_path / "o" / "notes.txt").write_text("kept\n")
    assert _run(_argv(name, "o"))[0] == 2
    rc, _, err = _run(_argv(name, "o", "--force"))
    assert rc == 0, err
    written = {f: (tmp_path / "o" / f).read_bytes() for f in files}
    assert all(b != b"mine\n" and b for b in written.values())
    assert (tmp_path / "o" / "notes.txt").read_text() == "kept\n"
    assert not (tmp_path / "o" / ".mdmt.lock").exists()
    rc, _, err = _run(_argv(name, "o", *again))  # the same command again, without --force: mdmt's own files
    assert rc == 0, err
    assert all((tmp_path / "o" / f).stat().st_size > 0 for f in files)
    assert not (tmp_path / "o" / ".mdmt.lock").exists()


def test_a_rerun_with_other_arguments_replaces_mdmts_own_atlas(tmp_path):
    assert _run(_argv("atlas", tmp_path / "o"))[0] == 0
    first = (tmp_path / "o" / "atlas.json").read_bytes()
    rc, _, err = _run(["atlas", "--language", "preset:2gram", "-L", "2", "-N", "2", "--out", str(tmp_path / "o")])
    assert rc == 0, err
    assert (tmp_path / "o" / "atlas.json").read_bytes() != first


def test_a_folder_or_a_link_in_place_of_an_output_is_refused_even_with_force(tmp_path):
    (tmp_path / "o" / "atlas.png").mkdir(parents=True)
    for extra in ([], ["--force"]):
        rc, _, err = _run(_argv("atlas", tmp_path / "o", *extra))
        assert rc == 2 and "atlas.png exists and is not a regular file" in err
    (tmp_path / "o" / "atlas.png").rmdir()
    (tmp_path / "o" / "atlas.csv").symlink_to(tmp_path / "nowhere")
    rc, _, err = _run(_argv("atlas", tmp_path / "o", "--force"))
    assert rc == 2 and "atlas.csv exists and is not a regular file" in err


def test_check_output_folder_and_the_recognisers(tmp_path):
    folder = tmp_path / "o"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps({"x": 1, "provenance": {"command": "mdmt atlas", "commit": "abc",
                                                                      "started": "2026"}}))
    (folder / "b.json").write_text(json.dumps({"x": 1, "provenance": {"command": "someone"}}))
    (folder / "c.csv").write_text("process,expected_nfe,kl,more\n1,2,3,4\n")
    (folder / "figure.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"tEXtSoftware\x00mdmt atlas" + b"\x00" * 8)
    assert outputs.json_with_provenance(folder / "a.json")
    assert not outputs.json_with_provenance(folder / "b.json")
    assert outputs.csv_header_starts(folder / "c.csv", ["process", "expected_nfe", "kl"])
    assert not outputs.csv_header_starts(folder / "c.csv", ["process", "kl"])
    assert outputs.png_written_by(folder / "figure.png", "atlas")
    same = {"a.json": outputs.json_with_provenance, "b.json": outputs.json_with_provenance}
    assert outputs.check_output_folder(folder, files=["a.json", "missing.txt"], same=same) == folder
    with pytest.raises(outputs.OutputError, match=r"^--out .*b\.json already exists and was not written by mdmt; "
                                                  r"pass --force to overwrite it$"):
        outputs.check_output_folder(folder, files=["a.json", "b.json"], same=same)
    with pytest.raises(outputs.OutputError, match="c.csv already exists"):  # a name without a test is never mdmt's
        outputs.check_output_folder(folder, files=["c.csv"], same=same)
    assert outputs.check_output_folder(folder, files=["b.json", "c.csv"], same=same, force=True) == folder
    assert outputs.check_output_folder(folder, files=["c.csv"], same=lambda p: p.suffix == ".csv") == folder
    (folder / "deep.json").write_text("[" * 100000 + "]" * 100000)  # a test that cannot decide says: not mdmt's
    with pytest.raises(outputs.OutputError, match="deep.json already exists"):
        outputs.check_output_folder(folder, files=["deep.json"], same=outputs.json_with_provenance)


# ----------------------------------------------------------------------------- one writer per --out
@pytest.mark.parametrize("name", [_param(n) for n in FOLDER_COMMANDS] + [pytest.param("sample", id="sample")])
@pytest.mark.integration
def test_a_held_lock_refuses_a_second_run_naming_the_holder(tmp_path, monkeypatch, name):
    _needs(name)
    monkeypatch.chdir(tmp_path)
    out = "s.txt" if name == "sample" else "o"
    lock = locks.lock_path(out, folder=name != "sample")
    lock.parent.mkdir(exist_ok=True)
    with _live_process() as pid:
        lock.write_text(_lock_record(pid, host="h"))
        before = _snapshot(tmp_path)
        rc, stdout, err = _run(_argv(name, out))
        assert rc == 2 and stdout == "" and err.count("\n") == 1, err
        assert err.startswith(_holder_line(name.split()[0], out, pid, "h"))
        assert err.endswith(f"2026-01-02T03:04:05+00:00); wait for it or remove {lock} if that run is gone\n")
        assert _snapshot(tmp_path) == before  # nothing written, the holder's lock untouched


@pytest.mark.parametrize("name", ["atlas", "data", "sample"])
@pytest.mark.integration
def test_a_lock_left_by_a_process_that_ended_is_taken_over(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    out = "s.txt" if name == "sample" else "o"
    lock = locks.lock_path(out, folder=name != "sample")
    lock.parent.mkdir(exist_ok=True)
    lock.write_text(_lock_record(_dead_pid()))
    rc, _, err = _run(_argv(name, out))
    assert rc == 0, err
    assert not lock.exists() and not list(tmp_path.rglob("*.takeover"))
    lock.write_text(_lock_record(os.getpid()))  # this very process, which does not hold it: a stale lock too
    rc, _, err = _run(_argv(name, out))
    assert rc == 0, err
    assert not lock.exists()


@pytest.mark.integration
def test_a_lock_of_another_machine_or_unreadable_is_never_taken_over(tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    lock = out / ".mdmt.lock"
    lock.write_text(_lock_record(_dead_pid(), host_tag="00000000", host="far"))
    rc, _, err = _run(_argv("atlas", out))
    assert rc == 2 and "(pid " in err and "on host far" in err and f"remove {lock} if that run is gone" in err
    lock.write_text("not a lock\n")
    rc, _, err = _run(_argv("atlas", out))
    assert rc == 2 and err == (f"mdmt atlas: error: --out {out} is being written by another mdmt run (its lock {lock} "
                               f"is not one mdmt can read); wait for it or remove {lock} if that run is gone\n")
    assert lock.read_text() == "not a lock\n" and sorted(p.name for p in out.iterdir()) == [".mdmt.lock"]


def test_the_lock_is_removed_after_an_error_and_after_ctrl_c(tmp_path, monkeypatch):
    out = tmp_path / "new" / "o"
    rc, _, err = _run(["atlas", "--language", "preset:nope", "-L", "3", "-N", "2", "--out", str(out)])
    assert rc == 2 and "preset:nope" in err
    assert not (tmp_path / "new").exists()  # the folders the lock created are removed again
    (tmp_path / "d").mkdir()
    from mdmt.empirical import data

    def interrupted(*args, **kwargs):
        assert (tmp_path / "d" / ".mdmt.lock").exists()  # held while the work runs
        raise KeyboardInterrupt

    monkeypatch.setattr(data, "ensure", interrupted)
    rc, _, err = _run(_argv("data", tmp_path / "d"))
    assert rc == 130 and err == "mdmt data: interrupted\n"
    assert list((tmp_path / "d").iterdir()) == []


def test_the_lock_is_reentrant_in_one_process_and_released_once(tmp_path):
    with locks.output_lock(tmp_path / "o") as lock:
        record = json.loads(lock.read_text())
        assert record["pid"] == os.getpid() and record["host"] and record["started"] and "command" in record
        with locks.output_lock(tmp_path / "o"):
            pass
        assert lock.exists()
    assert not lock.exists()


# ----------------------------------------------------------------------------- real processes
def _mdmt(argv, cwd) -> subprocess.Popen:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    return subprocess.Popen([sys.executable, "-m", "mdmt", *argv], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _wait_for_lock(lock: Path, proc: subprocess.Popen, timeout: float = 120.0) -> None:
    """Until ``proc`` holds ``lock`` (the file exists and holds its record)."""
    t0 = time.monotonic()
    while True:
        with contextlib.suppress(OSError, ValueError):
            if json.loads(lock.read_text())["pid"] == proc.pid:
                return
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() - t0 < timeout, f"{lock} did not appear"
        time.sleep(0.01)


BIG_DATA = ["data", "--language", "preset:2gram", "-L", "64", "--num", "100000", "--num-val", "50", "--out", "d"]


@pytest.mark.integration
def test_two_concurrent_data_runs_one_writes_the_other_is_refused(tmp_path):
    """The first run is frozen (SIGSTOP) while it holds the lock, so the second surely meets it."""
    first = _mdmt(BIG_DATA, tmp_path)
    try:
        _wait_for_lock(tmp_path / "d" / ".mdmt.lock", first)
        first.send_signal(signal.SIGSTOP)
        second = _mdmt(BIG_DATA, tmp_path)
        out, err = second.communicate(timeout=300)
        assert second.returncode == 2 and out == "", err
        assert err.count("\n") == 1 and err.startswith(_holder_line("data", "d", first.pid, os.uname().nodename))
        assert "wait for it or remove d/.mdmt.lock if that run is gone" in err
    finally:
        first.send_signal(signal.SIGCONT)
    out, err = first.communicate(timeout=300)
    assert first.returncode == 0 and "written" in out, err
    assert sorted(p.name for p in (tmp_path / "d").iterdir()) == ["manifest.json", "train.npy", "val.npy"]
    rc, out, err = _run(["data", "--verify", str(tmp_path / "d")])  # one complete data set, reproduced bit for bit
    assert rc == 0 and "verified" in out, err


@pytest.mark.integration
def test_sigterm_removes_the_lock(tmp_path):
    (tmp_path / "d").mkdir()  # (a folder the lock had to create would be removed as well)
    proc = _mdmt(BIG_DATA, tmp_path)
    _wait_for_lock(tmp_path / "d" / ".mdmt.lock", proc)
    proc.send_signal(signal.SIGSTOP)  # in the middle of its work
    proc.send_signal(signal.SIGTERM)
    proc.send_signal(signal.SIGCONT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert err == "mdmt data: interrupted: stopped by SIGTERM\n"
    assert not (tmp_path / "d" / ".mdmt.lock").exists()
    assert not [p for p in (tmp_path / "d").iterdir() if p.name.endswith(".tmp")]


def _contend(folder: str, barrier, done, results) -> None:  # pragma: no cover - runs in the children
    """Take the lock together with the others; the one that gets it holds it until every answer is in."""
    barrier.wait()
    try:
        with locks.output_lock(folder):
            results.put("held")
            done.wait(60)
    except locks.OutputBusy:
        results.put("busy")


@pytest.mark.integration
@pytest.mark.parametrize("stale", [False, True], ids=["free", "stale"])
def test_of_many_processes_starting_together_exactly_one_holds_the_lock(tmp_path, stale):
    ctx = mp.get_context("fork")
    folder = tmp_path / "o"
    folder.mkdir()
    if stale:  # all of them find the same dead run's lock, and exactly one takes it over
        (folder / ".mdmt.lock").write_text(_lock_record(_dead_pid()))
    n = 6
    barrier, done, results = ctx.Barrier(n), ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=_contend, args=(str(folder), barrier, done, results)) for _ in range(n)]
    for p in procs:
        p.start()
    try:
        got = sorted(results.get(timeout=60) for _ in procs)
    finally:
        done.set()
        for p in procs:
            p.join(30)
    assert got == ["busy"] * (n - 1) + ["held"]
    assert list(folder.iterdir()) == []


# ----------------------------------------------------------------------------- Hypothesis
NEAR_MISSES = [b"", b"mine\n", b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, b"{}", b'{"provenance": {}}',
               b'{"provenance": [{"command": 1}]}', b"process,kl\n", b"l,L,policy\n", b"[" * 5000,
               b"\xff\xfe\x00junk", b"Command: mdmt\n", b'{"result_settings": 1', b"language,role\n"]
RESERVED = ("rows",)  # a folder figure1 writes into: a file of that name is an error of its own


@st.composite
def foreign_folders(draw, outputs_of: tuple):
    """Files to put in a folder output before a run: some of mdmt's output names, some other names (left
    alone in any case), with contents that are random bytes or near misses of mdmt's own formats."""
    content = st.one_of(st.binary(max_size=300), st.sampled_from(NEAR_MISSES))
    names = draw(st.lists(st.sampled_from(outputs_of), unique=True, max_size=len(outputs_of)))
    others = draw(st.lists(st.text("abcdefghijklmnopqrstuvwxyz_.0123456789", min_size=1, max_size=12)
                           .filter(lambda s: s not in outputs_of + RESERVED and not s.startswith(".")),
                           unique=True, max_size=3))
    return {n: draw(content) for n in names + others}, set(names)


def _foreign_case(name: str, files: dict, ours: set, force: bool) -> None:
    _, outputs_of, _ = FOLDER_COMMANDS[name]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "o"
        folder.mkdir()
        for n, data in files.items():
            (folder / n).write_bytes(data)
        rc, _, err = _run(_argv(name, folder, *(["--force"] if force else [])))
        others = {n: d for n, d in files.items() if n not in ours}
        assert all((folder / n).read_bytes() == d for n, d in others.items())  # never touched
        assert not (folder / ".mdmt.lock").exists()
        if ours and not force:
            assert rc == 2 and "already exists and was not written by mdmt; pass --force to overwrite it" in err
            assert _snapshot(folder) == {n: d for n, d in files.items()}  # the foreign bytes unchanged, nothing new
        else:
            assert rc == 0, err
            assert all((folder / n).read_bytes() != files[n] for n in ours)  # replaced by mdmt's own
            assert all((folder / n).stat().st_size > 0 for n in outputs_of)


@pytest.mark.integration
@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=foreign_folders(FOLDER_COMMANDS["atlas"][1]), force=st.booleans())
def test_atlas_never_writes_over_foreign_files_without_force(case, force):
    _foreign_case("atlas", *case, force)


@pytest.mark.integration
@settings(deadline=None, max_examples=8, suppress_health_check=[HealthCheck.too_slow])
@given(case=foreign_folders(FOLDER_COMMANDS["adaptive ser"][1]), force=st.booleans())
def test_adaptive_ser_never_writes_over_foreign_files_without_force(case, force):
    _foreign_case("adaptive ser", *case, force)


@pytest.mark.integration
@settings(deadline=None, max_examples=8, suppress_health_check=[HealthCheck.too_slow])
@given(case=foreign_folders(FOLDER_COMMANDS["figure1"][1]), force=st.booleans())
def test_figure1_never_writes_over_foreign_files_without_force(case, force):
    _foreign_case("figure1", *case, force)
