"""docs/architecture.md names only modules, tests and commands that exist."""

import re
from pathlib import Path

from mdmt.cli import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
TABLE = (ROOT / "docs" / "architecture.md").read_text()


def _rows():
    for line in TABLE.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) == 4 and not set(cells[0]) <= set("- ") and cells[0] != "paper object":
            yield cells


def test_every_row_names_existing_files_and_commands():
    rows = list(_rows())
    assert len(rows) >= 20
    for obj, modules, tests, command in rows:
        for path in re.findall(r"`([^`]+\.py)`", modules + " " + tests):
            assert (ROOT / path).is_file(), f"{obj}: {path} does not exist"
        for cmd in re.findall(r"`mdmt (\w+)", command):
            assert cmd in COMMANDS, f"{obj}: no command mdmt {cmd}"
        assert re.search(r"`tests/test_\w+\.py`", tests), f"{obj}: no test file"
