"""Ahead-of-time compilation of mdmt's numba kernels (``mdmt compile``), from a registry of their signatures.

mdmt's inner loops are numba kernels compiled on first use and kept in numba's on-disk cache, in the folder keyed
on the package's source (:mod:`mdmt.runtime.numba_cache`).  Each kernel is compiled for exactly one tuple of
argument types (:mod:`mdmt.runtime.numba_cache`, "One signature per kernel"), so the whole set of compilations a
user will ever need is known in advance: it is the registry ``kernel_signatures.json`` shipped beside this module.
Each entry names

* ``kernel``: the kernel's dotted name, its module and qualified name (``mdmt.constructions.reverse.exact._chunk``);
* ``args``: its argument types as numba writes them (``"Array(float64, 2, 'C', True, aligned=True)"``,
  ``"int64"``, ``"bool"``), read back by :func:`parse_type`, which evaluates nothing but calls of numba's type
  constructors on literal values;
* ``seconds``: the seconds numba took to compile it (its own compilation, its callees' apart), measured when the
  registry was recorded and used only to balance the work;
* ``callees``: the kernels of mdmt it calls, which :func:`split` keeps in the same process where it can.

The entries come in the order numba finished compiling them, callees before their callers, so that a caller finds
its callees already loaded.  :func:`record` makes the entries, from a workload run in a fresh process on an empty
cache while numba's ``numba:compile`` events are listened to; ``benchmarks/record_kernels.py`` is the one command
that writes the registry.

:func:`compile_kernels` (``mdmt compile``) imports each kernel's module and calls ``dispatcher.compile(types)`` for
each entry: numba loads the machine code from its cache where it is there, else compiles it and saves it.  With
several jobs the entries are split into parts of about equal seconds, each compiled in a fresh process (numba's
threading layers and ``fork`` do not mix).  An entry whose kernel no longer exists, or no longer accepts its
types, is skipped with a warning naming it (the registry is stale: record it again); so is a compilation of a
kernel of mdmt that the registry does not list.

This module imports nothing from mdmt at import time, and numba only where it compiles or reads a type.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import queue
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Callable

REGISTRY = Path(__file__).with_name("kernel_signatures.json")
FORMAT = 1
RECORD_COMMAND = "python benchmarks/record_kernels.py"


# ----------------------------------------------------------------------------- numba types as text

def _namespace() -> dict:
    """numba's types and type constructors by name (``numba.core.types``), with ``bool`` for ``types.boolean``."""
    from numba.core import types

    ns = {name: value for name, value in vars(types).items() if not name.startswith("_")
          and (isinstance(value, types.Type) or (isinstance(value, type) and issubclass(value, types.Type)))}
    ns["bool"] = types.boolean
    return ns


_LITERALS = {"int": int, "bool": bool, "str": str, "float": float}


def parse_type(text: str):
    """The numba type whose ``repr`` is ``text`` (``"int64"``, ``"Array(float64, 2, 'C', True, aligned=True)"``).

    The text is read as an expression and evaluated node by node: names of ``numba.core.types`` (and ``bool``,
    ``types.boolean``), calls of those names, tuples, literal numbers and strings, and numba's literal types
    ``Literal[int](0)`` (a kernel called by another with a constant argument).  Nothing else is evaluated (no
    attribute, subscript, operator or builtin); the result must be a numba type.  Anything else is refused with a
    ``ValueError`` naming the text."""
    from numba.core import types

    bad = ValueError(f"{text!r} is not a numba type (expected the repr of a type of numba.core.types, "
                     "e.g. 'int64' or \"Array(float64, 2, 'C', True, aligned=True)\")")
    if not isinstance(text, str) or len(text) > 1000:
        raise bad
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError):
        raise bad from None
    ns = _namespace()

    def value(node):
        if isinstance(node, ast.Name) and node.id in ns:
            return ns[node.id]
        if isinstance(node, ast.Constant) and type(node.value) in (int, float, str, bool, type(None)):
            return node.value
        if isinstance(node, ast.Tuple):
            return tuple(value(e) for e in node.elts)
        if isinstance(node, ast.Call) and not any(isinstance(a, ast.Starred) for a in node.args) \
                and all(k.arg is not None for k in node.keywords):
            f = node.func
            if isinstance(f, ast.Name) and f.id in ns and isinstance(ns[f.id], type):
                return ns[f.id](*(value(a) for a in node.args), **{k.arg: value(k.value) for k in node.keywords})
            if (isinstance(f, ast.Subscript) and isinstance(f.value, ast.Name) and f.value.id == "Literal"
                    and isinstance(f.slice, ast.Name) and f.slice.id in _LITERALS and len(node.args) == 1
                    and not node.keywords and isinstance(node.args[0], ast.Constant)
                    and type(node.args[0].value) is _LITERALS[f.slice.id]):
                return types.literal(node.args[0].value)
        raise bad

    try:
        result = value(tree.body)
    except ValueError:
        raise bad from None
    except Exception:  # a constructor refusing its arguments
        raise bad from None
    if not isinstance(result, types.Type):
        raise bad
    return result


# ----------------------------------------------------------------------------- the registry

def load_registry(path: str | os.PathLike | None = None) -> list[dict]:
    """The entries of the registry at ``path`` (default: the one shipped with mdmt), checked for their shape and
    their type strings (:func:`parse_type`); a malformed file is a ``ValueError`` naming it and the entry."""
    path = Path(path) if path is not None else REGISTRY
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a registry of kernel signatures ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{path}: not a registry of kernel signatures of format {FORMAT}")
    entries = data.get("signatures")
    if not isinstance(entries, list):
        raise ValueError(f"{path}: no list of 'signatures'")
    for i, e in enumerate(entries):
        ok = (isinstance(e, dict) and isinstance(e.get("kernel"), str) and "." in e["kernel"]
              and isinstance(e.get("args"), list) and all(isinstance(a, str) for a in e["args"])
              and isinstance(e.get("seconds"), (int, float)) and not isinstance(e["seconds"], bool)
              and e["seconds"] >= 0 and isinstance(e.get("callees", []), list)
              and all(isinstance(c, str) for c in e.get("callees", [])))
        if not ok:
            raise ValueError(f"{path}: signature {i} is not {{kernel, args, seconds, callees}}: {json.dumps(e)[:200]}")
        for a in e["args"]:
            try:
                parse_type(a)
            except ValueError as exc:
                raise ValueError(f"{path}: {e['kernel']}: {exc}") from None
    return entries


def write_registry(entries: list[dict], path: str | os.PathLike | None = None) -> Path:
    """Write ``entries`` as the registry at ``path`` (default: the one shipped with mdmt), atomically."""
    import numba

    path = Path(path) if path is not None else REGISTRY
    data = {"format": FORMAT, "written_by": RECORD_COMMAND, "numba": numba.__version__,
            "signatures": [{k: e[k] for k in ("kernel", "args", "seconds", "callees")} for e in entries]}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


# ----------------------------------------------------------------------------- recording

_RECORDER = r'''
import json, sys, time
from numba.core import event, types

out_path, workload_path = sys.argv[1], sys.argv[2]
compiled, stack = [], []

def _name(d):
    return d.py_func.__module__ + "." + d.py_func.__qualname__

class _Recorder(event.Listener):
    def on_start(self, ev):
        stack.append([time.perf_counter(), 0.0])

    def on_end(self, ev):
        start, inner = stack.pop()
        took = time.perf_counter() - start
        if stack:
            stack[-1][1] += took
        d = ev.data["dispatcher"]
        if _name(d).startswith("mdmt."):
            compiled.append((d, tuple(ev.data["args"]), took - inner))

event.register("numba:compile", _Recorder())
sys.argv = [workload_path]
with open(workload_path) as f:
    exec(compile(f.read(), workload_path, "exec"), {"__name__": "__main__"})
entries = []
for d, args, own in compiled:  # the kernels each one calls: the dispatchers its typing saw
    typemap = d.overloads[args].type_annotation.typemap
    callees = {_name(t.dispatcher) for t in typemap.values() if isinstance(t, types.Dispatcher)}
    entries.append({"kernel": _name(d), "args": [repr(a) for a in args], "seconds": round(own, 3),
                    "callees": sorted(c for c in callees if c.startswith("mdmt.") and c != _name(d))})
with open(out_path, "w") as f:
    json.dump(entries, f)
'''


def record(workload: str, env: dict | None = None, timeout: float | None = None) -> list[dict]:
    """The registry entries of every kernel of mdmt that ``workload`` (Python source) compiles.

    The workload runs in a fresh process (``env``: its environment, default this one's) with an empty temporary
    ``NUMBA_CACHE_DIR``, so that every kernel it uses is compiled; numba's ``numba:compile`` events give each
    compilation of a kernel whose module starts with ``mdmt.``, in the order they end (callees first), with its own
    seconds and the kernels of mdmt its typing calls.  A type that :func:`parse_type` would not read back as the
    same type is a ``ValueError`` naming the kernel (mdmt's kernels take no literal or function arguments)."""
    with tempfile.TemporaryDirectory(prefix="mdmt-record-") as tmp:
        script, out = Path(tmp) / "workload.py", Path(tmp) / "entries.json"
        script.write_text(workload)
        run_env = {**(os.environ if env is None else env), "NUMBA_CACHE_DIR": str(Path(tmp) / "numba")}
        proc = subprocess.run([sys.executable, "-c", _RECORDER, str(out), str(script)], cwd=tmp, env=run_env,
                              capture_output=True, text=True, timeout=timeout)
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"the recording workload failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")
        entries = json.loads(out.read_text())
    names = {e["kernel"] for e in entries}
    for e in entries:
        e["callees"] = [c for c in e["callees"] if c in names]  # not those inlined (inline="always": no compilation)
        for a in e["args"]:
            try:
                same = repr(parse_type(a)) == a
            except ValueError:
                same = False
            if not same:
                raise ValueError(f"{e['kernel']}: its argument type {a} cannot be registered (not the repr of a type "
                                 "of numba.core.types that reads back as itself)")
    return entries


# ----------------------------------------------------------------------------- balancing

def split(entries: list[dict], jobs: int) -> list[list[int]]:
    """The indices of ``entries`` in at most ``jobs`` parts of about equal seconds, each in registry order.

    Kernels linked by calls (``callees``, either way) form one group, kept in one part so that a kernel's callees
    are loaded, not compiled twice; the groups go, costliest first, to the part with the fewest seconds so far
    (longest processing time first).  A group costlier than an even share is split by module first."""
    if jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs}")
    parent: dict[str, str] = {}

    def find(k: str) -> str:
        parent.setdefault(k, k)
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    for e in entries:
        for c in e.get("callees", []):
            parent[find(c)] = find(e["kernel"])
    groups: dict[str, list[int]] = {}
    for i, e in enumerate(entries):
        groups.setdefault(find(e["kernel"]), []).append(i)
    cost = lambda g: sum(entries[i]["seconds"] for i in g)  # noqa: E731
    share = sum(e["seconds"] for e in entries) / jobs
    units: list[list[int]] = []
    for g in groups.values():
        if cost(g) <= share or jobs == 1:
            units.append(g)
            continue
        by_module: dict[str, list[int]] = {}
        for i in g:
            by_module.setdefault(entries[i]["kernel"].rsplit(".", 1)[0], []).append(i)
        units.extend(by_module.values())
    parts: list[list[int]] = [[] for _ in range(min(jobs, len(units)))]
    loads = [0.0] * len(parts)
    for u in sorted(units, key=lambda u: (-cost(u), u[0])):
        k = loads.index(min(loads))
        parts[k].extend(u)
        loads[k] += cost(u)
    return [sorted(p) for p in parts if p]


def default_jobs() -> int:
    """The usable cores (:func:`mdmt.runtime.parallel.usable_cores`)."""
    from mdmt.runtime.parallel import usable_cores

    return usable_cores()


# ----------------------------------------------------------------------------- compiling

def _resolve(kernel: str):
    """The object named by the dotted name ``kernel`` (module, then attributes), or a reason it is not there."""
    parts = kernel.split(".")
    for i in range(len(parts) - 1, 0, -1):
        module_name = ".".join(parts[:i])
        try:
            obj = importlib.import_module(module_name)
        except ImportError as exc:  # not a module: try the name one dot to the left
            if isinstance(exc, ModuleNotFoundError) and exc.name and (
                    module_name == exc.name or module_name.startswith(exc.name + ".")):
                continue
            return None, f"{module_name} cannot be imported ({exc})"
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return None, f"{module_name} has no {'.'.join(parts[i:])}"
            obj = getattr(obj, attr)
        return obj, None
    return None, f"no module of {kernel} can be imported"


def _compile_entry(entry: dict) -> str | None:
    """Load or compile one registered signature; None, or why the registry entry is stale."""
    from numba.core import errors
    from numba.core.caching import NullCache
    from numba.core.dispatcher import Dispatcher

    name = entry["kernel"]
    obj, why = _resolve(name)
    if why:
        return why
    if not isinstance(obj, Dispatcher):
        return f"{name} is not a numba kernel"
    if isinstance(obj._cache, NullCache):
        return f"{name} is not compiled with cache=True"
    params = inspect.signature(obj.py_func).parameters.values()
    fixed = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(entry["args"]) != len(fixed) or any(p.kind == p.VAR_POSITIONAL for p in params):
        return f"{name} takes {len(fixed)} arguments, the registry lists {len(entry['args'])}"
    try:
        obj.compile(tuple(parse_type(a) for a in entry["args"]))
    except errors.NumbaError as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"{name} does not compile for ({', '.join(entry['args'])}): {first}"
    return None


def _label(entry: dict) -> str:
    return f"{entry['kernel']}({', '.join(entry['args'])})"


def _compile_entries(entries: list[dict], report: Callable[[dict], object]) -> dict:
    """Compile (or load) ``entries`` in this process, calling ``report`` with each one's outcome; the signatures of
    mdmt's kernels compiled, and the cache folder."""
    from numba.core import event

    from mdmt.runtime.numba_cache import configure_numba_cache

    compiled: set[tuple[str, tuple[str, ...]]] = set()

    class Listener(event.Listener):
        def on_start(self, ev):
            pass

        def on_end(self, ev):
            d = ev.data["dispatcher"]
            compiled.add((d.py_func.__module__ + "." + d.py_func.__qualname__,
                          tuple(repr(a) for a in ev.data["args"])))

    listener = Listener()
    event.register("numba:compile", listener)
    try:
        for e in entries:
            why = _compile_entry(e)
            key = (e["kernel"], tuple(e["args"]))
            report({"kernel": e["kernel"], "args": e["args"],
                    "status": "stale" if why else "compiled" if key in compiled else "loaded", "why": why})
    finally:
        event.unregister("numba:compile", listener)
    return {"done": True, "cache": configure_numba_cache(),
            "compiled": [[k, list(a)] for k, a in sorted(compiled) if k.startswith("mdmt.")]}


def _worker() -> None:
    """A part compiled in a child process: entries on standard input, one JSON line per outcome on standard output."""
    data = json.loads(sys.stdin.read())
    out, sys.stdout = sys.stdout, sys.stderr  # nothing but the protocol on the pipe

    def emit(message: dict) -> None:
        out.write(json.dumps(message) + "\n")
        out.flush()

    try:
        emit(_compile_entries(data["entries"], emit))
    except Exception as exc:  # reported to the parent, which raises it as one error
        from mdmt.runtime.numba_cache import cache_write_error

        emit({"error": cache_write_error(exc) or f"{type(exc).__name__}: {exc}", "oserror": isinstance(exc, OSError)})
        raise SystemExit(1) from None


_CHILD = ("import json, sys\npath = json.loads(sys.stdin.readline())\nsys.path[:] = path\n"
          "from mdmt.runtime.precompile import _worker\n_worker()\n")


def _run_parts(parts: list[list[dict]], on_message: Callable[[dict], object]) -> list[dict]:
    """Compile each part in a fresh process (this one's ``sys.path`` and environment); their final reports.  A
    process that fails is a ``ChildProcessError`` (an ``OSError``: one error line of ``mdmt compile``) with its
    last line, after the others are stopped."""
    messages: queue.Queue = queue.Queue()
    procs, logs, finals = [], [], [None] * len(parts)

    def pump(k: int, stream) -> None:
        with stream:
            for line in stream:
                messages.put((k, line))
        messages.put((k, None))

    try:
        for k, part in enumerate(parts):
            log = tempfile.TemporaryFile(mode="w+")
            proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=log, text=True)
            procs.append(proc)
            logs.append(log)
            proc.stdin.write(json.dumps(sys.path) + "\n" + json.dumps({"entries": part}))
            proc.stdin.close()
            threading.Thread(target=pump, args=(k, proc.stdout), daemon=True).start()
        open_parts = len(parts)
        while open_parts:
            k, line = messages.get()
            if line is None:
                open_parts -= 1
                continue
            msg = json.loads(line)
            if "error" in msg:
                raise (OSError if msg.get("oserror") else ChildProcessError)(msg["error"])
            if msg.get("done"):
                finals[k] = msg
            else:
                on_message(msg)
        for k, proc in enumerate(procs):
            if proc.wait() != 0 or finals[k] is None:
                logs[k].seek(0)
                tail = logs[k].read().strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
                raise ChildProcessError(f"a compiling process failed: {tail[0]}")
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for log in logs:
            log.close()
    return finals  # type: ignore[return-value]


def uncached_kernels(registry: str | os.PathLike | None = None) -> list[str]:
    """The kernels of the registry with no index file in the cache folder of the current source: those a process
    would compile (or, where another signature is missing, partly compile) on first use.

    Reads file names only (numba names a kernel's index ``<module>.<qualified name>-<line>.py<version>.nbi``),
    imports neither numba nor the kernels, and creates nothing: an empty or new cache (a fresh install, an edited
    source, an empty ``NUMBA_CACHE_DIR``) has every kernel uncached; a warm one none."""
    from mdmt.runtime.numba_cache import PREFIX, default_base, fallback_base, package_roots, source_key

    name = PREFIX + source_key(package_roots())
    found: set[str] = set()
    for base in (default_base(), fallback_base()):
        folder = base / name
        if folder.is_dir():
            found |= {p.name.rsplit("-", 1)[0] for p in folder.rglob("*.nbi")}
    path = Path(registry) if registry is not None else REGISTRY
    try:  # the names only: checking the types (load_registry) would import numba
        kernels = dict.fromkeys(e["kernel"] for e in json.loads(path.read_text())["signatures"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a registry of kernel signatures ({exc})") from None
    return [k for k in kernels if ".".join(k.split(".")[-2:]) not in found]


def compile_kernels(jobs: int | None = None, progress: Callable[[int, int, str], object] | None = None,
                    registry: str | os.PathLike | None = None) -> dict:
    """Load or compile every signature of the registry into numba's cache (``mdmt compile``).

    ``jobs``: processes that compile at once (default :func:`default_jobs`); with more than one, the entries are
    split by :func:`split` and each part is compiled in a fresh process; with one, in this process.  ``progress``
    is called as ``progress(done, total, label)`` after each signature.  Returns a summary: ``signatures``,
    ``kernels``, how many were ``compiled`` and ``loaded`` from the cache, the ``stale`` entries (each also a
    warning), the kernels of mdmt compiled that the registry does not list (``unlisted``, each a warning), the
    ``jobs`` used, the wall ``seconds`` and the ``cache`` folder."""
    t0 = time.perf_counter()
    jobs = default_jobs() if jobs is None else jobs
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ValueError(f"jobs must be an integer >= 1, got {jobs!r}")
    entries = load_registry(registry)
    parts = split(entries, jobs) if entries else []
    outcomes: list[dict] = []

    def note(msg: dict) -> None:
        outcomes.append(msg)
        if progress is not None:
            progress(len(outcomes), len(entries), _label(msg))

    if len(parts) <= 1:
        finals = [_compile_entries(entries, note)]
    else:
        finals = _run_parts([[entries[i] for i in p] for p in parts], note)
    stale = [f"{_label(m)}: {m['why']}" for m in outcomes if m["status"] == "stale"]
    listed = {(e["kernel"], tuple(e["args"])) for e in entries}
    unlisted = sorted({f"{k}({', '.join(a)})" for f in finals for k, a in f["compiled"] if (k, tuple(a)) not in listed})
    for line in stale:
        warnings.warn(f"the registry of kernel signatures is stale ({RECORD_COMMAND} records it again): {line}",
                      RuntimeWarning, stacklevel=2)
    for line in unlisted:
        warnings.warn(f"compiled {line}, which the registry of kernel signatures does not list ({RECORD_COMMAND} "
                      "records it again)", RuntimeWarning, stacklevel=2)
    return {"signatures": len(entries), "kernels": len({e["kernel"] for e in entries}),
            "compiled": sum(m["status"] == "compiled" for m in outcomes),
            "loaded": sum(m["status"] == "loaded" for m in outcomes), "stale": stale, "unlisted": unlisted,
            "jobs": max(1, len(parts)), "seconds": time.perf_counter() - t0,
            "cache": next((f["cache"] for f in finals if f.get("cache")), None)}
