"""PyTorch for the networks of :mod:`mdmt.empirical`, or an ``ImportError`` that says how to install it.

torch is the ``empirical`` extra (``pip install "mdmt[empirical]"``); the theory never imports it.
Every module here that needs torch takes it from this one, so that importing any of them without
torch raises :class:`mdmt.extras.MissingExtra` with an actionable one-line message.
"""

from mdmt.extras import MissingExtra, is_torch_missing, torch_message

try:
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
except ModuleNotFoundError as exc:  # only torch's own absence is translated
    if not is_torch_missing(exc):
        raise
    raise MissingExtra(torch_message("mdmt.empirical's networks"), name="torch") from None

__all__ = ["F", "nn", "torch"]
