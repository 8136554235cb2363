"""Provenance of a result: the command, the code's commit, the machine and the library versions.

Every JSON document ``mdmt`` prints carries this record under ``"provenance"``, and every
experiment writes it beside its numbers (``summary.json`` of ``mdmt train``, ``figure1.json``),
so a table or plot in docs/results can be traced to ``mdmt <command>``, a commit (``+dirty``
when the working tree had changes) and a machine (CPU model and core count, memory, GPU).
Collecting it imports nothing heavy: library versions come from the installed metadata.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import shlex
import subprocess
import sys
from pathlib import Path


def _git(*args: str) -> str | None:
    root = Path(__file__).resolve().parent
    try:
        out = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def commit() -> str:
    """The commit of the mdmt source tree, ``+dirty`` if tracked files differ from it.

    A copy of the tree without git metadata reports the environment variable ``MDMT_COMMIT``
    (set it when shipping a checkout to another machine), else 'unknown'.
    """
    head = _git("rev-parse", "--short=12", "HEAD")
    if head is None:
        return os.environ.get("MDMT_COMMIT", "unknown")
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return head + ("+dirty" if dirty else "")


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _memory_gib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return round(int(line.split()[1]) / 2**20, 1)
    except (OSError, ValueError):
        pass
    return None


def versions() -> dict:
    """Versions of Python, mdmt and the libraries its numbers depend on (from the installed metadata)."""
    from importlib import metadata

    out = {"python": platform.python_version()}
    for name in ("mdmt", "numpy", "scipy", "numba", "torch", "sympy"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


def machine() -> dict:
    """CPU, cores, memory, platform and GPU (only if torch is already imported; it is not imported for this)."""
    info = {"cpu": _cpu_model(), "cores": os.cpu_count(), "memory_gib": _memory_gib(), "platform": platform.platform(),
            "gpu": None}
    torch = sys.modules.get("torch")
    if torch is not None:
        info["torch_threads"] = torch.get_num_threads()
        try:
            info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
        except Exception:  # a broken CUDA set-up must not break a result  # noqa: BLE001
            info["gpu"] = None
    return info


def record(argv: list[str] | None = None) -> dict:
    """{'command', 'commit', 'machine', 'versions', 'started'} for the running command."""
    argv = sys.argv if argv is None else argv
    prog = "mdmt" if argv and Path(argv[0]).name in ("mdmt", "__main__.py", "cli.py") else (argv[0] if argv else "")
    return {"command": " ".join([prog, *map(shlex.quote, argv[1:])]) if argv else "",
            "commit": commit(), "machine": machine(), "versions": versions(),
            "started": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}


def describe(rec: dict) -> str:
    """One paragraph for a results page."""
    m, v = rec["machine"], rec.get("versions") or rec["machine"]
    gpu = f", GPU {m['gpu']}" if m.get("gpu") else ", no GPU"
    return (f"Command: `{rec['command']}`; commit `{rec['commit']}`; machine: {m['cpu']}, {m['cores']} cores, "
            f"{m.get('memory_gib')} GiB{gpu}; Python {v.get('python')}, numpy {v.get('numpy')}, torch {v.get('torch')}; "
            f"started {rec['started']}.")
