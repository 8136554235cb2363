"""mdmt as on a machine without PyTorch: an import hook under which ``import torch`` fails.

``MDMT_BLOCK_TORCH=1 python -m pytest`` installs it before any test module is imported (tests/conftest.py),
so the theory tests run as they would where only the core is installed, and those that need torch
(marked ``torch``, or importing it at module level through ``pytest.importorskip``) are skipped.
:data:`PRELUDE` is the same hook as source, for ``python -c`` subprocesses.
"""

from __future__ import annotations

import sys

PRELUDE = """
import sys

class _NoTorch:
    '''A meta path finder that refuses torch and its submodules, as if torch were not installed.'''

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

if "torch" in sys.modules:
    raise RuntimeError("torch was imported before it could be blocked")
sys.meta_path.insert(0, _NoTorch())
"""


def block_torch() -> None:
    """Install the hook in this process (idempotent)."""
    if not any(type(f).__name__ == "_NoTorch" for f in sys.meta_path):
        exec(compile(PRELUDE, "torchless-prelude", "exec"), {"__name__": "torchless"})

