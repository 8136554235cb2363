"""MkDocs hooks of the documentation site (mkdocs.yml, ``hooks``): how the tutorials are executed.

* **No stale outputs.**  mkdocs-jupyter caches each executed tutorial under a key made of the tutorial's text
  alone, so after a change to mdmt's code a build would show the outputs of the old code.  The cache folder
  is therefore one per version of mdmt's source: ``.cache/mkdocs-jupyter/<digest of the source>`` (under the
  folder the build runs in; git ignores ``.cache/``), and the folders of other versions are removed after a
  build.
* **A site without torch.**  A tutorial that imports ``mdmt.empirical`` (or torch) needs the ``empirical``
  extra.  Where torch is not installed, ``pip install -e ".[docs]" && mkdocs serve`` still builds the site:
  such a tutorial is shown with its code and without outputs, and the build says so in one line.
"""

from __future__ import annotations

import hashlib
import logging
import re
import shutil
from pathlib import Path

PLUGIN = "mkdocs-jupyter"
SOURCES = ("mdmt", "bounds", "constructions", "empirical")  # the folders installed as mdmt (pyproject.toml)
NEEDS_TORCH = re.compile(r"^\s*(?:from|import)\s+(?:torch\b|mdmt\.empirical\b|mdmt\s+import\s+train\b)", re.M)
DIGEST = re.compile(r"^[0-9a-f]{16}$")

log = logging.getLogger("mkdocs.hooks.mdmt")


def source_digest(root: Path) -> str:
    """16 hex digits of the SHA-256 of every Python file of mdmt's source under ``root`` (paths and bytes)."""
    h = hashlib.sha256()
    for folder in SOURCES:
        for path in sorted((root / folder).rglob("*.py")):
            h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def needs_torch(tutorial: Path) -> bool:
    """Whether a tutorial's code imports torch or ``mdmt.empirical``."""
    return bool(NEEDS_TORCH.search(tutorial.read_text(encoding="utf-8")))


def has_torch() -> bool:
    from mdmt.extras import has_torch as installed

    return installed()


def on_config(config, **kwargs):
    plugin = config.plugins.get(PLUGIN)
    if plugin is None:
        return config
    root = Path(config.config_file_path).resolve().parent
    base = Path(plugin.config["cache_dir"])
    plugin.config["cache_dir"] = str(base / source_digest(root))
    if plugin.config["execute"] and not has_torch():
        docs = Path(config.docs_dir)
        for tutorial in sorted((docs / "tutorials").glob("*.py")):
            if needs_torch(tutorial):
                name = tutorial.relative_to(docs).as_posix()
                plugin.config["execute_ignore"] = [*plugin.config["execute_ignore"], name]
                log.info("%s needs torch, which is not installed: shown without running it "
                         "(pip install -e '.[empirical]'; README, 'Set-up')", name)
    return config


def on_post_build(config, **kwargs):
    """Remove the cache folders of other versions of the source (their outputs can no longer be shown)."""
    plugin = config.plugins.get(PLUGIN)
    if plugin is None:
        return
    current = Path(plugin.config["cache_dir"])
    if not current.parent.is_dir():
        return
    for other in current.parent.iterdir():
        if other.is_dir() and DIGEST.match(other.name) and other.name != current.name:
            shutil.rmtree(other, ignore_errors=True)
