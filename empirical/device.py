"""The torch device of a run: named by the user or chosen (CUDA when present, else the CPU), always checked."""

from __future__ import annotations

from ._torch import torch


def torch_device(name=None) -> torch.device:
    """``name`` (``cpu``, ``cuda``, ``cuda:K``, ``mps``, or a ``torch.device``) as a checked device; None: the default.

    An unknown name, or a CUDA/MPS device this machine does not have, is a ValueError naming it --
    not a torch error at the first tensor.
    """
    if name is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError, ValueError):
        raise ValueError(f"unknown torch device {name!r}; use cpu, cuda or cuda:K") from None
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device {name!r}: this machine has no CUDA device (torch {torch.__version__})")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device {name!r}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif dev.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"device {name!r}: MPS is not available on this machine")
    elif dev.type != "cpu":
        raise ValueError(f"device {name!r}: mdmt runs on cpu, cuda or mps")
    return dev
