"""Machinery of the command-line fuzz tests (tests/test_fuzz_cli.py): a worker process and the contract.

Every case is one argument list for ``mdmt`` run by :func:`mdmt.cli.main` inside a persistent
worker process, so that a case that crashes the interpreter (a signal) or hangs (past the time
bound) is caught and reported instead of taking the test run with it; the worker is restarted
after either.  The worker runs under a memory limit for mdmt's resource guard
(``MDMT_MAX_MEMORY``, ``MDMT_MAX_WORK``) and a hard address-space limit behind it, so an input
the guard misses shows up as an out-of-memory outcome rather than a swapping machine.

The contract (docs/reliability.md) is checked by :func:`outcome`: exit status 0 with a
non-empty standard output holding no NaN (and no NumPy RuntimeWarning on standard error), or
exit status 2 with exactly one line on standard error, ``mdmt <command>: error: ...`` -- never
a traceback, a signal or a timeout.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import re
import select
import signal
import subprocess
import sys
import time
import traceback
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MARK = "@@mdmt-fuzz@@"
WORKER_ENV = {
    "MDMT_MAX_MEMORY": "2G",  # the resource guard's limit inside the worker
    "MDMT_MAX_WORK": "2e10",  # about ten seconds of work: accepted inputs stay fast
    "OMP_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "2",
    "CUDA_VISIBLE_DEVICES": "",
    "MPLBACKEND": "Agg",
}
WARM_UP = ("mdmt.commands.curve", "mdmt.bounds.studies.curves", "mdmt.bounds.verification.verify",
           "mdmt.constructions.reverse.exact", "mdmt.constructions.reverse.sampler")
# heavy imports of some commands, made before the case is timed, on first use only (torch alone is 2 s of a start)
NETWORK = ("mdmt.empirical.train", "mdmt.empirical.experiments", "mdmt.empirical.sampling")
PLOTTING = ("matplotlib.pyplot", "mdmt.plots")
STARTUP_TIMEOUT = 300.0  # seconds for a worker to import everything (not counted in any case's time bound)
ADDRESS_SPACE = 6 << 30  # hard limit behind the guard: a missed guard is a MemoryError, not a dead machine

OK = "exit 0, finite output"
ERROR = "exit 2, one-line error"
FAILURES = ("traceback", "malformed error output", "other exit status", "NaN in output", "empty output",
            "numeric warning", "out of memory", "timeout", "killed by a signal")
_NAN = re.compile(r"(?i)(?<![\w.])[-+]?nan(?![\w])")


# ----------------------------------------------------------------------------- the worker (child side)
def serve() -> None:
    """Read one JSON request per line on stdin, run ``main(argv)`` in its folder, answer on the reply fd."""
    import faulthandler

    from mdmt.cli import main

    faulthandler.enable()  # a crash prints the Python stack to the worker's log
    reply = os.fdopen(int(os.environ["MDMT_FUZZ_REPLY_FD"]), "w")
    for name in filter(None, os.environ["MDMT_FUZZ_WARM_UP"].split(",")):  # heavy imports, before any timed case
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    reply.write(MARK + json.dumps({"ready": True}) + "\n")
    reply.flush()
    for line in sys.stdin:
        req = json.loads(line)
        os.chdir(req["cwd"])
        for name in req.get("prepare", ()):  # the heavy imports of this case, not timed
            with contextlib.suppress(ImportError):
                importlib.import_module(name)
        out, err = io.StringIO(), io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if "python" in req:  # the tests of this machinery make the worker crash or hang on purpose
                    exec(req["python"], {})
                rc = main(req["argv"])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            except BaseException:  # noqa: BLE001 - the contract forbids any escaping exception
                traceback.print_exc()
                rc = "exception"
        reply.write(MARK + json.dumps({"rc": rc, "out": out.getvalue()[-20000:], "err": err.getvalue()[-20000:],
                                       "seconds": time.perf_counter() - t0}) + "\n")
        reply.flush()
    # end of input: the parent is closing; its log flushed, the worker ends without tearing its interpreter down
    # (numba, sympy and torch loaded: seconds the parent would wait for)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def _limit_address_space():  # pragma: no cover - runs in the child
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))


# ----------------------------------------------------------------------------- the worker (parent side)
class Worker:
    """A persistent ``mdmt`` worker process; :meth:`run` restarts it after a crash or a timeout."""

    def __init__(self, log_dir: Path, timeout: float, warm_up: tuple = WARM_UP):
        self.log_dir = Path(log_dir)
        self.timeout = timeout
        self.warm_up = warm_up
        self.proc = None
        self.starts = 0

    def _start(self):
        r, w = os.pipe()
        env = {**os.environ, **WORKER_ENV, "MDMT_FUZZ_REPLY_FD": str(w), "MDMT_FUZZ_WARM_UP": ",".join(self.warm_up),
               "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
        env.pop("MDMT_DEBUG", None)
        self.starts += 1
        self.log = open(self.log_dir / f"worker{self.starts}.log", "wb")
        self.proc = subprocess.Popen([sys.executable, "-c", "from tests.fuzz_support import serve; serve()"],
                                     stdin=subprocess.PIPE, stdout=self.log, stderr=self.log, env=env,
                                     pass_fds=(w,), cwd=str(ROOT), preexec_fn=_limit_address_space)
        os.close(w)
        self.reply = os.fdopen(r, "rb", buffering=0)
        self.buffer = b""
        ready = self._answer(STARTUP_TIMEOUT)
        if ready.get("ready") is not True:
            raise RuntimeError(f"the fuzz worker did not start: {ready}")

    def close(self):
        if self.proc is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            self.reply.close()
            self.log.close()
            self.proc = None

    def run(self, argv: list[str], cwd: Path, python: str | None = None, prepare: tuple = (),
            heavy: bool = True) -> dict:
        """{"rc", "out", "err", "seconds"}; rc is "timeout" or "signal NAME" when the worker did not answer.

        ``python`` is code the worker executes before ``main(argv)`` (for the tests of this machinery);
        ``prepare`` names modules it imports first, untimed, besides those :func:`heavy_imports` names
        (``heavy=False``: none of those, for a case that must be refused at once, imports included).
        """
        if self.proc is None or self.proc.poll() is not None:
            self.close()
            self._start()
        req = {"argv": argv, "cwd": str(cwd), "prepare": [*(heavy_imports(argv) if heavy else ()), *prepare],
               **({"python": python} if python else {})}
        try:
            self.proc.stdin.write((json.dumps(req) + "\n").encode())
            self.proc.stdin.flush()
        except BrokenPipeError:  # died between requests: start again
            self.close()
            return self.run(argv, cwd, python, prepare, heavy)
        return self._answer(self.timeout)

    def _answer(self, timeout: float) -> dict:
        """The worker's next reply, or {"rc": "timeout" | "signal NAME"} (the worker is then stopped)."""
        deadline = time.monotonic() + timeout
        while MARK.encode() not in self.buffer or not self.buffer.endswith(b"\n"):
            left = deadline - time.monotonic()
            ready = select.select([self.reply], [], [], max(0.0, left))[0] if left > 0 else []
            if not ready:
                self.proc.kill()
                self.proc.wait()
                self.close()
                return {"rc": "timeout", "out": "", "err": "", "seconds": timeout}
            chunk = self.reply.read(1 << 16)
            if not chunk:  # the worker died
                code = self.proc.wait()
                self.close()
                name = signal.Signals(-code).name if code < 0 else f"exit {code}"
                return {"rc": f"signal {name}", "out": "", "err": "", "seconds": 0.0}
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line.decode().split(MARK, 1)[1])


def heavy_imports(argv: list[str]) -> tuple[str, ...]:
    """The heavy modules ``mdmt argv`` is likely to import: torch for a command that trains or reads a network,
    matplotlib for one that draws (the worker imports them before it starts the clock)."""
    args = set(argv)
    network = bool(argv) and argv[0] in ("train", "evaluate") or "--checkpoint" in args
    draws = bool(argv) and argv[0] in ("atlas", "adaptive", "samplers", "figure1") and "--out" in args
    plotting = draws or "--plot" in args
    return (NETWORK if network else ()) + (PLOTTING if plotting else ())


_SHARED: dict = {}


def shared_worker(config, log_dir: Path, timeout: float) -> Worker:
    """The one worker of this test process, shared by the modules that run commands in a worker.

    Starting one (Python, numpy, mdmt and the warm-up imports) costs seconds of CPU; the modules' cases need no
    fresh process (a crash or a timeout starts a new one anyway).  Each module sets its own ``timeout`` when its
    fixture is set up; the worker is stopped when pytest ends.
    """
    w = _SHARED.get("worker")
    if w is None:
        w = _SHARED["worker"] = Worker(log_dir, timeout)
        config.add_cleanup(lambda: _SHARED.pop("worker").close())
    w.timeout = timeout
    return w


# ----------------------------------------------------------------------------- the contract
def outcome(res: dict, as_json: bool) -> str:
    """The outcome class of one run: :data:`OK`, :data:`ERROR` or one of :data:`FAILURES`."""
    rc, out, err = res["rc"], res["out"], res["err"]
    if rc == "timeout":
        return "timeout"
    if isinstance(rc, str) and rc.startswith("signal"):
        return "killed by a signal"
    if "Traceback (most recent call last)" in err or rc == "exception":
        return "traceback"
    if rc == 2:
        lines = err.splitlines()
        if len(lines) != 1 or not lines[0].startswith("mdmt") or "error" not in lines[0]:
            return "malformed error output"
        return "out of memory" if "out of memory" in lines[0] else ERROR
    if rc != 0:
        return "other exit status"
    if "RuntimeWarning" in err:  # overflow, invalid value, division by zero: a NaN or inf in the making
        return "numeric warning"
    if not out.strip():
        return "empty output"
    if as_json:
        try:
            json.loads(out)
        except ValueError:
            return "NaN in output" if _NAN.search(out) else "malformed error output"
    if _NAN.search(out):
        return "NaN in output"
    return OK


class Tally:
    """Counts of outcomes per command, written as JSON to ``$MDMT_FUZZ_COUNTS`` at the end of the run."""

    def __init__(self):
        self.counts: dict[str, Counter] = {}

    def add(self, command: str, result: str) -> None:
        self.counts.setdefault(command, Counter())[result] += 1

    def as_dict(self) -> dict:
        total = Counter()
        for c in self.counts.values():
            total.update(c)
        return {"total": dict(total), "inputs": sum(total.values()),
                "per_command": {k: dict(v) for k, v in sorted(self.counts.items())}}

    def write(self) -> None:
        path = os.environ.get("MDMT_FUZZ_COUNTS")
        if not path or not self.counts:
            return
        previous = {}
        if Path(path).exists():
            with contextlib.suppress(ValueError):
                previous = json.loads(Path(path).read_text())
        merged = Tally()
        for cmd, c in previous.get("per_command", {}).items():
            merged.counts[cmd] = Counter(c)
        for cmd, c in self.counts.items():
            merged.counts.setdefault(cmd, Counter()).update(c)
        Path(path).write_text(json.dumps(merged.as_dict(), indent=1) + "\n")
