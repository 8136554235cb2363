"""The documentation site builds strictly, and building it runs every tutorial end to end.

``mkdocs build --strict`` (mkdocs.yml) fails on a broken link, a missing page or an API reference
that cannot be collected; mkdocs-jupyter executes each tutorial (docs/tutorials/*.py, jupytext percent
scripts) with ``allow_errors: false``, so a cell that raises fails the build.  The rendered pages are
then checked for the outputs a reader must see: figures and tables from the tutorials, the set-up on the
home page, every block of the API reference rendered and its cross-references as links, not Sphinx roles.

The fast tests here need no build: the API reference (docs/api/*.md) covers every public name, the Griffe
extension (docs/_ext/crossrefs.py) leaves no Sphinx role in a docstring, and the build hooks
(docs/_ext/hooks.py) keep the tutorials' outputs cache per version of the source and build without torch.
"""

from __future__ import annotations

import html
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TUTORIALS = sorted((ROOT / "docs" / "tutorials").glob("*.py"))


def test_there_are_at_least_four_tutorials_each_a_jupytext_percent_script_in_the_nav():
    assert len(TUTORIALS) >= 4
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for path in TUTORIALS:
        text = path.read_text(encoding="utf-8")
        assert "formats: py:percent" in text and "# %% [markdown]" in text, path.name
        assert f"tutorials/{path.name}" in nav, f"{path.name} is not in the site's nav"
        assert "arXiv 2502.09622" in text  # each cites the paper it works through


def _api_directives() -> list[tuple[str, str, dict]]:
    """(page, identifier, options) of every ``::: identifier`` block of docs/api/*.md, the options read from
    the indented YAML below it (only ``members`` matters here)."""
    yaml = pytest.importorskip("yaml")
    found = []
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^:::\s+(\S+)\s*$", line)
            if not m:
                continue
            block = []
            for nxt in lines[i + 1:]:
                if nxt.strip() and not nxt.startswith("    "):
                    break
                block.append(nxt[4:])
            options = (yaml.safe_load("\n".join(block)) or {}).get("options", {}) if block else {}
            found.append((page.name, m.group(1), options))
    return found


def _installed(identifier: str) -> str:
    """The import path of a rendered identifier: mkdocstrings reads the source tree (bounds/studies/curves.py is
    ``bounds.studies.curves``), which is installed under ``mdmt`` (``mdmt.bounds.studies.curves``)."""
    head = identifier.split(".")[0]
    return f"mdmt.{identifier}" if head in ("bounds", "constructions", "empirical") else identifier


def _resolve(path: str):
    """The object at a dotted import path, or raise the error importing it raised (MissingExtra without torch)."""
    parts = path.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError as exc:
            if exc.name is not None and path.startswith(exc.name):
                continue  # not a module at this depth: an attribute of a shorter one
            raise
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def test_the_api_reference_documents_every_public_name():
    """Every name of ``mdmt.__all__``, ``mdmt.bounds.__all__`` and ``mdmt.empirical.__all__`` is rendered by a
    ``::: identifier`` block of docs/api/ (an object, or a member listed under a module's ``members``) that
    is the very object the name gives; and every block names something that exists.  Without torch the
    networks' names cannot be imported, and their blocks are matched by name and checked in the source."""
    from mdmt.extras import MissingExtra

    documented = []  # (identifier, object or None when it needs torch here)
    for page, ident, options in _api_directives():
        members = options.get("members")
        idents = [ident] if not isinstance(members, list) else [ident, *(f"{ident}.{m}" for m in members)]
        for one in idents:
            try:
                documented.append((one, _resolve(_installed(one))))
            except MissingExtra:
                source = ROOT / (one.rsplit(".", 1)[0].replace(".", "/") + ".py")
                assert re.search(rf"^(def|class) {one.rsplit('.', 1)[1]}\b", source.read_text(encoding="utf-8"),
                                 re.M), f"{page}: {one} is not defined in {source.name}"
                documented.append((one, None))
            except (ImportError, AttributeError) as exc:
                pytest.fail(f"{page}: ::: {one} names nothing ({exc})")
    missing = []
    for package in ("mdmt", "mdmt.bounds", "mdmt.empirical"):
        module = importlib.import_module(package)
        for name in module.__all__:
            try:
                obj = getattr(module, name)
            except MissingExtra:  # a network, where torch is not installed: matched by its name
                if not any(ident.rsplit(".", 1)[-1] == name and value is None for ident, value in documented):
                    missing.append(f"{package}.{name}")
                continue
            if not any(value is obj for _, value in documented):
                missing.append(f"{package}.{name}")
    assert not missing, f"not in the API reference (docs/api/*.md): {', '.join(missing)}"


ROLE = re.compile(r":(?:py:)?(?:func|class|meth|mod|attr|data|exc|obj):`")


def _load_ext(name: str):
    spec = importlib.util.spec_from_file_location(f"mdmt_docs_{name}", ROOT / "docs" / "_ext" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.integration
def test_docstring_cross_references_become_links_of_the_api_reference():
    """mkdocstrings prints Sphinx roles (``:func:`x```) as they are; the site's Griffe extension
    (docs/_ext/crossrefs.py) turns each into a Markdown cross-reference to a rendered object, or into plain
    code: no docstring the site reads keeps a role."""
    griffe = pytest.importorskip("griffe", reason="the docs extra is not installed")
    extensions = griffe.load_extensions(str(ROOT / "docs" / "_ext" / "crossrefs.py") + ":SphinxRoles")
    links, docstrings = {}, {}

    def walk(obj):
        if obj.docstring is not None:
            docstrings[obj.path] = obj.docstring.value
            for target in re.findall(r"\[`[^`]+`\]\[([\w.]+)\]", obj.docstring.value):
                links[target] = obj.path
        for member in obj.members.values():
            if not member.is_alias:
                walk(member)

    for package in ("mdmt", "bounds", "constructions", "empirical"):
        walk(griffe.load(package, search_paths=[str(ROOT)], extensions=extensions, allow_inspection=False))
    kept = {path: ROLE.search(text).group(0) for path, text in docstrings.items() if ROLE.search(text)}
    assert not kept, f"Sphinx roles left in {sorted(kept)[:10]}"
    assert "[`curve_ter_figure`][mdmt.plots.curve_ter_figure]" in docstrings["mdmt.plots"]  # :func:`curve_ter_figure`
    # a lazily exported name becomes the object it stands for: :func:`mdmt.refute` is bounds.refutation.refute.search
    assert links.get("bounds.refutation.refute.search") and links.get("mdmt.results.Result") and len(links) >= 40
    rendered = {ident for _, ident, _ in _api_directives()}
    assert all(t in rendered or t.rpartition(".")[0] in rendered for t in links), \
        sorted(t for t in links if t not in rendered and t.rpartition(".")[0] not in rendered)


def test_the_tutorials_outputs_cache_is_ignored_by_git_and_follows_mdmt_source(tmp_path):
    """The outputs cache of mkdocs-jupyter (``.cache/``, under the folder a build runs in) is not committed,
    and its folder is named by a digest of mdmt's source (docs/_ext/hooks.py), so a change to the code is
    never shown with the outputs of the old code."""
    if (ROOT / ".git").exists():
        proc = subprocess.run(["git", "check-ignore", "-q", ".cache/mkdocs-jupyter/0123456789abcdef/x.json"],
                              cwd=ROOT, capture_output=True)
        assert proc.returncode == 0, ".cache/ is not ignored by git (.gitignore)"
    hooks = _load_ext("hooks")
    for folder in hooks.SOURCES:
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.py").write_text("x = 1\n", encoding="utf-8")
    before = hooks.source_digest(tmp_path)
    assert before == hooks.source_digest(tmp_path) and re.fullmatch(r"[0-9a-f]{16}", before)
    (tmp_path / "bounds" / "a.py").write_text("x = 2\n", encoding="utf-8")
    assert hooks.source_digest(tmp_path) != before
    (tmp_path / "bounds" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "constructions" / "b.py").write_text("", encoding="utf-8")  # a new module counts too
    assert hooks.source_digest(tmp_path) != before


def test_without_torch_the_site_shows_the_torch_tutorial_without_running_it(monkeypatch):
    """``pip install -e ".[docs]" && mkdocs serve`` works on its own: where torch is not installed, the
    tutorials importing ``mdmt.empirical`` are not executed (docs/_ext/hooks.py); the others are."""
    from types import SimpleNamespace

    hooks = _load_ext("hooks")
    needing = [p.name for p in TUTORIALS if hooks.needs_torch(p)]
    assert needing == ["tiny_mdm_figure1.py"]

    def config():
        plugin = SimpleNamespace(config={"cache_dir": ".cache/mkdocs-jupyter", "execute": True, "execute_ignore": []})
        return SimpleNamespace(plugins={"mkdocs-jupyter": plugin}, config_file_path=str(ROOT / "mkdocs.yml"),
                               docs_dir=str(ROOT / "docs")), plugin

    cfg, plugin = config()
    monkeypatch.setattr(hooks, "has_torch", lambda: False)
    hooks.on_config(cfg)
    assert plugin.config["execute_ignore"] == ["tutorials/tiny_mdm_figure1.py"]
    assert plugin.config["cache_dir"] == f".cache/mkdocs-jupyter/{hooks.source_digest(ROOT)}"
    cfg, plugin = config()
    monkeypatch.setattr(hooks, "has_torch", lambda: True)
    hooks.on_config(cfg)
    assert plugin.config["execute_ignore"] == []
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "docs/_ext/hooks.py" in nav and "docs/_ext/crossrefs.py" in nav
    extra = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    docs = re.search(r"^docs = \[(.*?)\]\s*$", extra, re.M | re.S).group(1)
    for tutorial in TUTORIALS:  # every package a tutorial imports is the core's, the docs extra's or torch
        for module in re.findall(r"^\s*(?:from|import)\s+(\w+)", tutorial.read_text(encoding="utf-8"), re.M):
            assert module in ("mdmt", "numpy", "tempfile", "pathlib", "torch", "json", "math") or \
                module in docs, f"{tutorial.name} imports {module}, which the docs extra does not install"
        if "to_hmmlearn" in tutorial.read_text(encoding="utf-8"):
            assert "hmmlearn" in docs, f"{tutorial.name} needs hmmlearn, which the docs extra does not install"


@pytest.mark.integration
@pytest.mark.torch
def test_the_site_builds_strictly_and_runs_every_tutorial(tmp_path):
    """The strict build, from a folder with no outputs cache (every tutorial runs), checked page by page."""
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    pytest.importorskip("mkdocs_jupyter", reason="the docs extra is not installed")
    site = tmp_path / "site"
    assert not (tmp_path / ".cache").exists()  # mkdocs-jupyter's cache is relative to the folder a build runs in
    # the tutorials' kernel runs `python` from PATH: this interpreter's, so that it imports this mdmt
    path = os.pathsep.join([os.path.dirname(sys.executable), os.environ.get("PATH", "")])
    env = {**os.environ, "PATH": path, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg", "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(site)], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert not [ln for ln in proc.stderr.splitlines() if ln.startswith("WARNING")], proc.stderr[-4000:]
    # every tutorial was executed into a fresh cache of this source (docs/_ext/hooks.py), none read from one
    cached = list((tmp_path / ".cache" / "mkdocs-jupyter").glob("*/*.json"))
    assert len(cached) == len(TUTORIALS) and len({p.parent for p in cached}) == 1, cached
    printed = {"check_and_break": "certified violation", "bound_curves": "Theorem 4.2 step count:",
               "counterexample_hmm": "largest difference from hmmlearn:", "tiny_mdm_figure1": "points in"}
    # figures drawn by mdmt (the template's own CSS holds data:image/png too, so count <img> outputs)
    figures = {"check_and_break": 0, "bound_curves": 2, "counterexample_hmm": 0, "tiny_mdm_figure1": 2}
    for path in TUTORIALS:
        page = (site / "tutorials" / path.stem / "index.html").read_text(encoding="utf-8")
        assert "Traceback" not in page, path.name
        images = re.findall(r'<img[^>]*src="data:image/png;base64,', page)
        assert len(images) >= figures.get(path.stem, 0), f"{path.name}: {len(images)} figures rendered"
        assert "&lt;Figure size" not in page, f"{path.name}: a figure shown as text"
        if path.stem in printed:  # a printed output, not only the source, is on the page
            assert page.count(printed[path.stem]) >= 2 or printed[path.stem] not in path.read_text(encoding="utf-8")
    # the home page says what mdmt is and how to install it (README.md's sections)
    home = re.sub(r"<!--.*?-->", "", (site / "index.html").read_text(encoding="utf-8"), flags=re.S)
    home = html.unescape(re.sub(r"<[^>]+>", "", home))  # the text a reader sees (code is highlighted in spans)
    for text in ("masked diffusion", "pip install -e . && mdmt compile && mdmt verify", "download.pytorch.org/whl/cpu",
                 "Which torch you get", 'pip install -e ".[docs]" && mkdocs serve'):
        assert text in home, f"the home page lacks {text!r}"
    # the API reference: every block rendered, no Sphinx role printed as text, cross-references as links
    for page, ident, _ in _api_directives():
        text = (site / "api" / page.removesuffix(".md") / "index.html").read_text(encoding="utf-8")
        assert f'id="{ident}"' in text, f"{page}: ::: {ident} rendered nothing"
    for page in site.rglob("*.html"):
        raw = re.search(r":(?:func|class|meth|mod|attr|data|exc|obj):(?:<code>|`)", page.read_text(encoding="utf-8"))
        assert raw is None, f"{page.relative_to(site)}: a raw Sphinx role {raw.group(0)!r}"
    plots = (site / "api" / "plots" / "index.html").read_text(encoding="utf-8")
    assert 'href="#mdmt.plots.curve_ter_figure"' in plots  # :func:`curve_ter_figure` in the module docstring
    bounds = (site / "api" / "bounds" / "index.html").read_text(encoding="utf-8")
    assert 'href="../mdmt/#mdmt.results.Result"' in bounds  # :class:`mdmt.results.Result`, on another page
