"""Every example in README.md and docs/*.md runs: the newcomer's path is tested.

Fenced blocks whose info string is ``bash`` or ``python`` are executed: the blocks of one file in
order, in one fresh temporary directory (so a block may use what an earlier block of the same file
wrote).  They run in this process, as a reader's shell would run them but without a new interpreter
and numba start-up per line: a ``bash`` block made of plain ``mdmt ...`` lines runs each line through
:func:`mdmt.cli.main` (each must exit 0, as under ``bash -e``), a ``python`` block is executed as a
``__main__`` script; a ``bash`` block with anything else (pipes, redirections, variables, other
programs) runs with ``bash -e`` in a subprocess.  The console script itself is tested in test_cli.py.
An HTML comment on the line just above the fence controls a block (shlex syntax):

* ``<!-- example: replace="OLD=>NEW" -->``: text substituted before running (small sizes for CI);
* ``<!-- example: keys=a,b -->``: the block's last command prints JSON holding these keys;
* ``<!-- example: skip="reason" -->``: not run (a GPU-only command, say).

``text`` and ``console`` blocks are output and are not run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
RUN = ("bash", "python")
TIMEOUT = 120  # seconds for one block after its replacements (a generous ceiling; blocks aim at seconds)

_FENCE = re.compile(r"^```([\w+-]*)\s*$")
_DIRECTIVE = re.compile(r"^<!--\s*example:(.*?)-->\s*$")


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    replace: list = field(default_factory=list)
    keys: list = field(default_factory=list)
    skip: str | None = None

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"

    def script(self) -> str:
        code = self.code
        for old, new in self.replace:
            if old not in code:
                raise AssertionError(f"{self.id}: replace target {old!r} is not in the block")
            code = code.replace(old, new)
        return code


def parse_directive(text: str, where: str) -> dict:
    out = {"replace": [], "keys": [], "skip": None}
    for token in shlex.split(text):
        name, sep, value = token.partition("=")
        if name == "replace" and "=>" in value:
            out["replace"].append(tuple(value.split("=>", 1)))
        elif name == "keys" and value:
            out["keys"] = [k for k in value.split(",") if k]
        elif name == "skip" and value:
            out["skip"] = value
        else:
            raise AssertionError(f"{where}: unknown example directive {token!r}")
    return out


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text().splitlines()
    out, i = [], 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or not m.group(1):
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        d = _DIRECTIVE.match(lines[start - 1]) if start > 0 else None
        opts = parse_directive(d.group(1), f"{path.name}:{start}") if d else {"replace": [], "keys": [], "skip": None}
        if lang in RUN:
            out.append(Block(path, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n", **opts))
        elif d:
            raise AssertionError(f"{path.name}:{start + 1}: an example directive above a {lang!r} block, which is not run")
        i = j + 1
    return out


def _env() -> dict:
    bindir = str(Path(sys.executable).parent)
    return {**os.environ, "PATH": bindir + os.pathsep + os.environ.get("PATH", ""), "MPLBACKEND": "Agg",
            "PYTHONUNBUFFERED": "1", "OMP_NUM_THREADS": "1"}


_PLAIN = re.compile(r"^mdmt(\s+[\w@%+=:,./'\"-]+)*$")  # an mdmt command with literal words only


def mdmt_lines(script: str) -> list[list[str]] | None:
    """The argv of each line of a bash block made only of plain ``mdmt ...`` lines (comments and blank
    lines aside), or None when the block needs a shell."""
    out = []
    for line in script.replace("\\\n", " ").splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if not _PLAIN.match(line):
            return None
        out.append(shlex.split(line)[1:])
    return out


def _in_process(work, cwd: Path) -> subprocess.CompletedProcess:
    """Run ``work() -> int`` in ``cwd`` with standard output and error captured, as a separate process would:
    what an example changes in the environment, the working directory, sys.path, the warning filters or
    mdmt's kernel thread count is put back afterwards, so that it cannot reach the tests that run later here."""
    from mdmt.runtime import parallel

    out, err, old, env, path = io.StringIO(), io.StringIO(), os.getcwd(), dict(os.environ), list(sys.path)
    nthreads = parallel.set_threads(None)
    parallel.set_threads(nthreads)
    os.environ["MPLBACKEND"] = "Agg"
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), warnings.catch_warnings():
            rc = work()
    finally:
        os.chdir(old)
        os.environ.clear()
        os.environ.update(env)
        sys.path[:] = path
        parallel.set_threads(nthreads)
    return subprocess.CompletedProcess("in-process", rc, out.getvalue(), err.getvalue())


def _run_mdmt_lines(argvs) -> int:
    from mdmt.cli import main

    for argv in argvs:
        rc = main(argv)
        if rc:  # bash -e: the block stops at the first failing command
            return rc
    return 0


def _run_python(code: str, name: str) -> int:
    try:
        exec(compile(code, name, "exec"), {"__name__": "__main__"})
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


def run_block(block: Block, cwd: Path) -> subprocess.CompletedProcess:
    script = block.script()
    if block.lang == "python":
        return _in_process(lambda: _run_python(script, block.id), cwd)
    argvs = mdmt_lines(script)
    if argvs is not None:
        return _in_process(lambda: _run_mdmt_lines(argvs), cwd)
    return subprocess.run(["bash", "-e", "-c", script], cwd=cwd, env=_env(), capture_output=True, text=True,
                          timeout=TIMEOUT)


def last_json(stdout: str):
    """The last JSON document printed (a command's --json output ends the block)."""
    text = stdout.strip()
    for start in [m.start() for m in re.finditer(r"^[\[{]", text, flags=re.M)]:
        try:
            return json.loads(text[start:])
        except json.JSONDecodeError:
            continue
    raise AssertionError(f"no JSON document at the end of the output:\n{stdout[-2000:]}")


FILES = [p for p in DOCS if blocks_of(p)]


@pytest.mark.integration
@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_examples_of_a_page_run(path, tmp_path):
    """Every block of the page, in order.  Where torch is not installed (MDMT_BLOCK_TORCH=1), the page runs
    up to its first block that needs it, which must say so in mdmt's one line; the rest is skipped."""
    from mdmt.extras import MissingExtra, has_torch

    for block in blocks_of(path):
        if block.skip:
            continue
        try:
            res = run_block(block, tmp_path)
        except MissingExtra:
            res = subprocess.CompletedProcess("in-process", 2, "", "needs PyTorch")
        if res.returncode and not has_torch() and "needs PyTorch" in res.stderr:
            pytest.skip(f"{block.id} and the blocks after it need PyTorch, which is not installed here")
        assert res.returncode == 0, f"{block.id} exited {res.returncode}:\n{block.script()}\n{res.stderr[-3000:]}"
        if block.keys:
            doc = last_json(res.stdout)
            rows = doc if isinstance(doc, list) else [doc]
            for row in rows:
                missing = [k for k in block.keys if k not in row]
                assert not missing, f"{block.id}: JSON output lacks {missing}"


def test_the_convention_is_used_sparingly_and_correctly():
    """Skips are for what cannot run on a CPU; every page with commands has runnable examples."""
    skips = [(b.id, b.skip) for p in DOCS for b in blocks_of(p) if b.skip]
    assert len(skips) <= 6, skips
    readme = blocks_of(ROOT / "README.md")
    assert any("mdmt verify" in b.code for b in readme) and any("pytest" in b.code for b in readme)


def test_directives_are_parsed(tmp_path):
    page = tmp_path / "p.md"
    page.write_text('text\n<!-- example: replace="a b=>c" keys=x,y -->\n```bash\necho a b\n```\n'
                    '```text\nnot run\n```\n<!-- example: skip="needs a GPU" -->\n```python\nimport torch\n```\n')
    b1, b2 = blocks_of(page)
    assert (b1.lang, b1.replace, b1.keys, b1.script()) == ("bash", [("a b", "c")], ["x", "y"], "echo c\n")
    assert b2.skip == "needs a GPU" and b2.lang == "python"
    page.write_text('<!-- example: bogus -->\n```bash\ntrue\n```\n')
    with pytest.raises(AssertionError, match="unknown example directive"):
        blocks_of(page)


def _mdmt_commands(code: str):
    """Every `mdmt ...` invocation in a shell block (also after `python -m` or `torchrun ... -m`), as argv lists."""
    for line in code.splitlines():
        line = line.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        for part in re.split(r"&&|;|\|", line):
            words = shlex.split(part)
            if "mdmt" in words:
                k = words.index("mdmt")
                if k == 0 or words[k - 1] == "-m":
                    yield words[k + 1:]


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
@pytest.mark.integration
def test_documented_commands_parse_as_written(path):
    """The commands as a reader sees them -- before any replacement, skipped blocks included -- are valid."""
    from mdmt.cli import build_parser

    for block in blocks_of(path):
        if block.lang != "bash":
            continue
        for argv in _mdmt_commands(block.code):
            if not argv or argv[0].startswith("-"):
                continue
            try:
                build_parser(argv[0]).parse_args(argv)
            except SystemExit as exc:
                pytest.fail(f"{block.id}: `mdmt {' '.join(argv)}` does not parse (exit {exc.code})")


def test_an_in_process_example_leaves_no_trace(tmp_path):
    """What a block sets in os.environ or sys.path is undone (it once leaked a memory limit into later tests)."""
    block = Block(ROOT / "README.md", 1, "python", "import os, sys\nos.environ['MDMT_MAX_MEMORY'] = '4G'\n"
                  "sys.path.append('nowhere')\nprint('ran')\n")
    before_env, before_path = dict(os.environ), list(sys.path)
    res = run_block(block, tmp_path)
    assert res.returncode == 0 and res.stdout == "ran\n"
    assert dict(os.environ) == before_env and sys.path == before_path and os.getcwd() != str(tmp_path)
