"""The documentation site builds strictly, and building it runs every tutorial end to end.

``mkdocs build --strict`` (mkdocs.yml) fails on a broken link, a missing page or an API reference
that cannot be collected; mkdocs-jupyter executes each tutorial (docs/tutorials/*.py, jupytext percent
scripts) with ``allow_errors: false``, so a cell that raises fails the build.  The rendered pages are
then checked for the outputs a reader must see: figures and tables from the tutorials, and the public
functions in the API reference.
"""

from __future__ import annotations

import os
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


@pytest.mark.integration
@pytest.mark.torch
def test_the_site_builds_strictly_and_runs_every_tutorial(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra is not installed: pip install -e '.[docs]'")
    pytest.importorskip("mkdocs_jupyter", reason="the docs extra is not installed")
    site = tmp_path / "site"
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "MPLBACKEND": "Agg", "NUMBA_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(ROOT / "mkdocs.yml"),
                           "--site-dir", str(site)], cwd=tmp_path, capture_output=True, text=True, env=env,
                          timeout=1500)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert not [ln for ln in proc.stderr.splitlines() if ln.startswith("WARNING")], proc.stderr[-4000:]
    printed = {"check_and_break": "certified violation", "bound_curves": "Theorem 4.2 step count:",
               "counterexample_hmm": "largest difference from hmmlearn:", "tiny_mdm_figure1": "points in"}
    for path in TUTORIALS:
        page = (site / "tutorials" / path.stem / "index.html").read_text(encoding="utf-8")
        assert "Traceback" not in page, path.name
        if path.stem != "check_and_break":
            assert "data:image/png;base64" in page, f"{path.name}: no figure rendered"
        if path.stem in printed:  # a printed output, not only the source, is on the page
            assert page.count(printed[path.stem]) >= 2 or printed[path.stem] not in path.read_text(encoding="utf-8")
    tiny = (site / "tutorials" / "tiny_mdm_figure1" / "index.html").read_text(encoding="utf-8")
    assert tiny.count("data:image/png;base64") >= 2  # both views of Figure 1
    api = (site / "api" / "bounds" / "index.html").read_text(encoding="utf-8")
    for name in ("ter_curve", "ser_curve", "atlas_sweep", "ser_study", "ter_study"):
        assert name in api
    plots = (site / "api" / "plots" / "index.html").read_text(encoding="utf-8")
    assert "figure1_paper_figure" in plots and "atlas_figure" in plots
