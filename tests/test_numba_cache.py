"""numba's cache keyed on the source of the whole package (mdmt.runtime.numba_cache).

numba invalidates a cached kernel only when the kernel's own file changes.  The end-to-end test builds a
two-file package -- a kernel in one file calling a compiled function of the other -- edits the callee's
file between two processes and checks that the keyed cache serves the new behaviour, while numba's own
keying (the control) serves the stale machine code.
"""

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mdmt.runtime import numba_cache

SETUP = """
    import os
    from pathlib import Path

    from numba.core import config

    from mdmt.runtime.numba_cache import configure_numba_cache


    def setup():
        if os.environ["KEYED"] == "1":
            configure_numba_cache([Path(__file__).parent])
        else:
            config.CACHE_DIR = os.environ["PLAIN_CACHE"]
"""
CALLEE = """
    import numba as nb

    from ._setup import setup

    setup()


    @nb.njit(cache=True)
    def value():
        return {value}
"""
KERNEL = """
    import numba as nb

    from ._setup import setup
    from .callee import value

    setup()


    @nb.njit(cache=True)
    def kernel():
        return 10 * value()
"""
RUN = "from tiny.kernel import kernel; print(kernel(), sum(kernel.stats.cache_hits.values()))"


def _package(root: Path) -> Path:
    """A package ``tiny`` under ``root``: a kernel (kernel.py) calling a compiled callee (callee.py) returning 1."""
    pkg = root / "tiny"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_setup.py").write_text(textwrap.dedent(SETUP))
    (pkg / "callee.py").write_text(textwrap.dedent(CALLEE.format(value=1)))
    (pkg / "kernel.py").write_text(textwrap.dedent(KERNEL))
    return pkg


def _run(root: Path, keyed: bool) -> tuple[int, int]:
    """(kernel(), cache hits) in a new process."""
    env = {**os.environ, "KEYED": "1" if keyed else "0", "NUMBA_CACHE_DIR": str(root / "keyed"),
           "PLAIN_CACHE": str(root / "plain"), "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", RUN], cwd=root, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    result, hits = out.stdout.split()
    return int(result), int(hits)


def _edit_callee(pkg: Path) -> None:
    """The callee returns 2; the kernel's own file is untouched."""
    (pkg / "callee.py").write_text(textwrap.dedent(CALLEE.format(value=2)))


@pytest.mark.integration
@pytest.mark.parametrize("keyed", [True, False], ids=["keyed", "numba-default"])
def test_an_edit_of_the_callee_reaches_the_cached_kernel(tmp_path, keyed):
    pkg = _package(tmp_path)
    assert _run(tmp_path, keyed) == (10, 0)  # compiled and cached
    assert _run(tmp_path, keyed) == (10, 1)  # loaded from the cache
    _edit_callee(pkg)
    if keyed:
        assert _run(tmp_path, keyed) == (20, 0)  # a new folder: compiled from the new source
        assert len(list((tmp_path / "keyed").glob(numba_cache.PREFIX + "*"))) == 2
    else:
        assert _run(tmp_path, keyed) == (10, 1)  # the control: numba alone serves the stale kernel


@pytest.mark.integration
def test_mdmt_kernels_are_cached_in_the_keyed_folder(tmp_path):
    code = ("import mdmt.constructions.reverse.policy_exact as m, mdmt.empirical.ngram_kernels as k, numba; "
            "print(numba.config.CACHE_DIR); print(m._chunk._cache.cache_path); print(k.ngram_forward._cache.cache_path)")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    folder, *paths = out.stdout.split()
    key = numba_cache.source_key(numba_cache.package_roots())
    assert folder == str(tmp_path / (numba_cache.PREFIX + key))
    assert all(p.startswith(folder + os.sep) for p in paths)


def test_the_key_covers_content_and_names(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "x.py").write_text("A = 1\n")
    (tmp_path / "a" / "notes.txt").write_text("not source\n")
    key = numba_cache.source_key([tmp_path])
    assert len(key) == 16 and key == numba_cache.source_key([tmp_path])
    (tmp_path / "a" / "notes.txt").write_text("changed\n")
    assert numba_cache.source_key([tmp_path]) == key
    (tmp_path / "a" / "x.py").write_text("A = 2\n")
    assert numba_cache.source_key([tmp_path]) != key
    (tmp_path / "a" / "x.py").write_text("A = 1\n")
    (tmp_path / "a" / "x.py").rename(tmp_path / "a" / "y.py")
    assert numba_cache.source_key([tmp_path]) != key


def test_prune_keeps_the_newest_and_touches_nothing_else(tmp_path):
    now = time.time()
    names = [f"{numba_cache.PREFIX}{i:016x}" for i in range(7)]  # last used 0, 2, 4, ... 12 hours ago
    for i, name in enumerate(names):
        (tmp_path / name).mkdir()
        stamped = tmp_path / name / numba_cache.MARKER if i < 6 else tmp_path / name  # the last: no marker
        stamped.touch()
        os.utime(stamped, (now - 7200 * i, now - 7200 * i))
    foreign = [tmp_path / "mdmt-src-notahash", tmp_path / "other", tmp_path / f"{numba_cache.PREFIX}{0:016x}.txt"]
    foreign[0].mkdir(), foreign[1].mkdir(), foreign[2].write_text("")
    for p in foreign:
        os.utime(p, (now - 86400, now - 86400))
    # the newest 2 are kept, and the third too: used within the grace period of 5 hours
    gone = numba_cache.prune(tmp_path, keep=2, grace_s=5 * 3600)
    assert sorted(p.name for p in gone) == names[3:]
    assert all((tmp_path / n).is_dir() for n in names[:3]) and not any((tmp_path / n).exists() for n in names[3:])
    assert all(p.exists() for p in foreign)


def test_an_unwritable_base_falls_back(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    src = tmp_path / "src"
    src.mkdir()
    (src / "m.py").write_text("")
    folder = numba_cache.keyed_folder([src], [blocker / "cache", tmp_path / "fallback"])
    assert folder is not None and folder.parent == tmp_path / "fallback"
    assert (folder / numba_cache.MARKER).exists()
    assert numba_cache.keyed_folder([src], [blocker / "cache"]) is None
