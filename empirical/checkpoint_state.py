"""The structure of a loaded checkpoint, checked before torch builds anything from it.

A training run's checkpoint (the networks of Section 5 of the paper; written and loaded by
:mod:`.checkpoint`) is a dict of entries.  :func:`_check_state` (called by
:func:`mdmt.empirical.checkpoint.check_state`, which turns each of its errors into a one-line
:class:`~mdmt.empirical.checkpoint.CheckpointError` naming the checkpoint) checks the entries a
training run writes and their types, the configuration against the fields of
:class:`~mdmt.empirical.train.TrainConfig` and :class:`~mdmt.empirical.model.ModelConfig`
(:func:`check_fields`, :data:`FIELD_KINDS`), the memory the network would need (the resource
guard, ``MDMT_MAX_MEMORY``), every weight's name, dtype and shape against those the configuration
implies (taken from the network built on torch's ``meta`` device, which allocates nothing), finite
weights and, to resume, the optimizer and random-generator states.  Every problem is a
``ValueError`` with one line naming the offending entry; :func:`describe` quotes a loaded value in
it without a huge repr.
"""

from __future__ import annotations

import dataclasses
import math
import re

from mdmt.runtime.resources import check_memory

from ._torch import torch


def _first_line_of_torch_error(exc: BaseException) -> str:
    """The informative part of a torch.load error (torch's weights-only errors are paragraphs of advice)."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", str(exc))
    m = re.search(r"WeightsUnpickler error:\s*(.+?)(?:\. |\n|$)", text, re.S)
    if m:
        text = m.group(1)
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "") or type(exc).__name__
    return line if len(line) <= 200 else line[:197] + "..."


_INT_BITS = 62  # integers in a configuration beyond 2^62 are refused before any arithmetic on them
_DESCRIBE = 60  # characters of a value quoted in an error


def describe(value) -> str:
    """A short one-line description of a loaded value for an error message (never a huge repr)."""
    if isinstance(value, torch.Tensor):
        return f"a {value.dtype} tensor of shape {tuple(value.shape)}"
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return repr(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (str, bytes)):
        text = repr(value[:_DESCRIBE + 1])
        return text if len(value) <= _DESCRIBE else text[:_DESCRIBE] + "..."
    if isinstance(value, (list, tuple, dict, set, frozenset)):
        return f"a {type(value).__name__} of {len(value)} item{'s' * (len(value) != 1)}"
    return f"a {type(value).__name__}"


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _plain(v, depth: int = 0) -> bool:
    """Whether ``v`` is JSON-like: None, bool, int, float, str, and lists, tuples and str-keyed dicts of them."""
    if depth > 8:
        return False
    if v is None or isinstance(v, (bool, int, float, str)):
        return True
    if isinstance(v, (list, tuple)):
        return all(_plain(x, depth + 1) for x in v)
    if isinstance(v, dict):
        return all(isinstance(k, str) and _plain(x, depth + 1) for k, x in v.items())
    return False


# what a configuration field's annotation accepts: (test, words for the error)
FIELD_KINDS = {
    "int": (_is_int, "an integer"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "float": (_is_number, "a number"),
    "int | None": (lambda v: v is None or _is_int(v), "an integer or null"),
    "str | None": (lambda v: v is None or isinstance(v, str), "a string or null"),
    "tuple": (lambda v: isinstance(v, (list, tuple)) and all(_is_int(x) for x in v), "a list of integers"),
}


def check_fields(cls, d, where: str, nested: dict | None = None) -> None:
    """Check a dict ``d`` against the fields of dataclass ``cls``: unknown keys, missing keys without a
    default and values of the wrong type are refused (``ValueError`` naming ``where.key`` and the value).

    ``nested`` maps a field name to a check of its own (the ``model`` of a training configuration).
    """
    nested = nested or {}
    if not isinstance(d, dict):
        raise ValueError(f"{where} is {describe(d)}, not a dict of settings")
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for key, value in d.items():
        if key not in fields:
            raise ValueError(f"{where} has an unknown key {describe(key)} (= {describe(value)}); "
                             f"{cls.__name__} has {', '.join(fields)}")
    for name, f in fields.items():
        if name not in d:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise ValueError(f"{where} lacks the key {name!r}")
            continue
        value = d[name]
        if name in nested:
            nested[name](value, f"{where}.{name}")
            continue
        test, words = FIELD_KINDS[f.type]
        if not test(value):
            raise ValueError(f"{where}.{name} = {describe(value)} is not {words}")
        items = value if isinstance(value, (list, tuple)) else [value]
        if any(_is_int(x) and x.bit_length() > _INT_BITS for x in items):
            raise ValueError(f"{where}.{name} = {describe(value)} is out of range (at most 2^{_INT_BITS})")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{where}.{name} = {value!r} is not finite")


def _config_of(state: dict):
    """The TrainConfig of a checkpoint's ``config`` entry (its keys and types checked first)."""
    from .model import ModelConfig
    from .run_config import TrainConfig

    d = state["config"]
    check_fields(TrainConfig, d, "config", {"model": lambda v, w: check_fields(ModelConfig, v, w)})
    try:
        return TrainConfig.from_dict(d)
    except (ValueError, TypeError, OverflowError) as exc:
        raise ValueError(f"config: {' '.join(str(exc).split())}") from None


def _check_weights(sd, expected: dict, what: str = "model") -> None:
    """``sd`` holds exactly the tensors of ``expected`` (name -> (shape, dtype)), each finite."""
    if not isinstance(sd, dict):
        raise ValueError(f"{what} is {describe(sd)}, not a dict of tensors")
    for key in sd:
        if not isinstance(key, str):
            raise ValueError(f"{what} has a key {describe(key)} that is not a weight's name")
    missing = [k for k in expected if k not in sd]
    if missing:
        raise ValueError(f"{what} lacks the weight {missing[0]!r} that its config implies"
                         + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    extra = [k for k in sd if k not in expected]
    if extra:
        raise ValueError(f"{what} holds the weight {describe(extra[0])} that its config does not have"
                         + (f" (and {len(extra) - 1} more)" if len(extra) > 1 else ""))
    for key, (shape, dtype) in expected.items():
        _check_tensor(sd[key], f"{what}[{key!r}]", shape, dtype)


def _check_tensor(t, where: str, shape: tuple | None, dtype=None) -> None:
    if not isinstance(t, torch.Tensor):
        raise ValueError(f"{where} is {describe(t)}, not a tensor")
    if t.layout != torch.strided:
        raise ValueError(f"{where} is a {t.layout} tensor, not a dense one")
    if dtype is not None and t.dtype != dtype:
        raise ValueError(f"{where} has dtype {t.dtype}; mdmt writes {dtype}")
    if dtype is None and not t.is_floating_point():
        raise ValueError(f"{where} has dtype {t.dtype}, not a floating-point one")
    if shape is not None and tuple(t.shape) != tuple(shape):
        raise ValueError(f"{where} has shape {tuple(t.shape)}; its config implies {tuple(shape)}")
    if t.is_floating_point() and t.numel() and not _all_finite(t):
        bad = int((~torch.isfinite(t)).sum())
        if bad:
            kind = "NaN" if bool(torch.isnan(t).any()) else "inf"
            raise ValueError(f"{where} holds {bad} non-finite value{'s' * (bad > 1)} ({kind} among {t.numel()})")


def _all_finite(t) -> bool:
    """Whether a non-empty floating-point tensor is finite (its minimum and maximum are: one fast pass)."""
    try:
        lo, hi = torch.aminmax(t)
    except RuntimeError:  # a dtype without aminmax on this device
        return bool(torch.isfinite(t).all())
    return bool(torch.isfinite(lo)) and bool(torch.isfinite(hi))


def _network_shapes(cfg, sd) -> tuple[dict, list]:
    """(name -> (shape, dtype) of every weight, [shapes of the optimizer's parameters in group order]) of the
    network of ``cfg``, built on the meta device after the resource guard (nothing is allocated)."""
    from .model import Transformer, estimated_bytes
    from .run_config import parameter_groups

    m = cfg.model
    check_memory(f"the network of its config (L = {m.seq_len}, V = {m.vocab_size}, "
                 f"d = {m.d_model}, {m.n_layers} layers) with one sequence", estimated_bytes(m, 1),
                 "a checkpoint of this machine's runs does not need so much")
    if isinstance(sd, dict):  # the layers the weights hold bound the (Python) work of building the network
        layers = {k.split(".")[1] for k in sd if isinstance(k, str) and k.startswith("blocks.") and k.count(".") >= 2}
        if layers != {str(i) for i in range(m.n_layers)}:
            raise ValueError(f"config.model.n_layers = {m.n_layers}, but the weights hold {len(layers)} "
                             f"layer{'s' * (len(layers) != 1)} (blocks.0 .. blocks.{len(layers) - 1})")
    with torch.random.fork_rng(devices=[]), torch.device("meta"):
        net = Transformer(m)
    shapes = {k: (tuple(v.shape), v.dtype) for k, v in net.state_dict().items()}
    groups = [[tuple(p.shape) for p in g["params"]] for g in parameter_groups(net, cfg.table_lr)]
    return shapes, groups


TOP_KEYS = ("format", "model", "config")
RESUME_KEYS = ("optimizer", "step", "losses", "history", "settings", "rng_torch")
OPTIONAL_KEYS = ("cpu_seconds",)
HISTORY_KEYS = {"step": _is_int, "train_loss": lambda v: v is None or _is_number(v), "val_nll": _is_number,
                "val_exact_nll": _is_number, "val_gap": _is_number,
                "val_gap_ci": lambda v: isinstance(v, (list, tuple)) and len(v) == 2 and all(map(_is_number, v)),
                "cpu_seconds": _is_number}
HISTORY_OPTIONAL = {"val_num": _is_int, "val_draws": _is_int, "entropy_rate": _is_number, "lr": _is_number}
ADAM_FLAGS = ("amsgrad", "maximize", "capturable", "differentiable")  # mdmt's AdamW leaves them off
ADAM_STATE = ("step", "exp_avg", "exp_avg_sq")


def _check_state(state, resume: bool):
    from .run_config import FORMAT

    if not isinstance(state, dict):
        raise ValueError(f"holds {describe(state)}, not the dict of a training run")
    for key in state:
        if key not in TOP_KEYS + RESUME_KEYS + OPTIONAL_KEYS:
            raise ValueError(f"holds an unknown entry {describe(key)}")
    fmt = state.get("format")
    if not (_is_int(fmt) and fmt == FORMAT):
        raise ValueError(f"has format {describe(fmt)}; this mdmt reads format {FORMAT}")
    for key in TOP_KEYS + (RESUME_KEYS if resume else ()):
        if key not in state:
            raise ValueError(f"lacks the entry {key!r}" + (" that resuming needs" if key in RESUME_KEYS else ""))
    cfg = _config_of(state)
    shapes, groups = _network_shapes(cfg, state["model"])
    _check_weights(state["model"], shapes)
    if resume:
        _check_resume(state, cfg, groups)
    return cfg


def _check_resume(state: dict, cfg, groups: list) -> None:
    step = state["step"]
    if not _is_int(step) or not 0 <= step <= cfg.train_steps:
        raise ValueError(f"step = {describe(step)} is not a step count in 0..train_steps = {cfg.train_steps}")
    losses = state["losses"]
    if not isinstance(losses, list) or len(losses) != step or not all(map(_is_number, losses)):
        raise ValueError(f"losses is {describe(losses)}; a run at step {step} has a list of {step} numbers")
    history = state["history"]
    if not isinstance(history, list):
        raise ValueError(f"history is {describe(history)}, not a list of validation records")
    for i, rec in enumerate(history):
        _check_record(rec, f"history[{i}]", step)
    settings = state["settings"]
    if not isinstance(settings, dict) or not _plain(settings):
        raise ValueError(f"settings is {describe(settings)}, not a dict of plain values")
    unknown = sorted(set(settings) - {"config", "language_digest", "data_sha256"})
    if unknown:
        raise ValueError(f"settings has an unknown key {unknown[0]!r}")
    if settings.get("config") != state["config"]:
        raise ValueError("settings.config differs from config (mdmt writes the same configuration in both)")
    if not isinstance(settings.get("language_digest"), str):
        raise ValueError(f"settings.language_digest is {describe(settings.get('language_digest'))}, not a string")
    data = settings.get("data_sha256", [])
    if not (isinstance(data, list) and len(data) in (0, 2) and all(isinstance(x, str) for x in data)):
        raise ValueError(f"settings.data_sha256 is {describe(data)}, not a pair of digests")
    cpu = state.get("cpu_seconds", 0.0)
    if not _is_number(cpu) or not math.isfinite(cpu) or cpu < 0:
        raise ValueError(f"cpu_seconds = {describe(cpu)} is not a non-negative number")
    _check_optimizer(state["optimizer"], groups)
    rng = state["rng_torch"]
    _check_rng(rng)


def _check_record(rec, where: str, step: int) -> None:
    if not isinstance(rec, dict):
        raise ValueError(f"{where} is {describe(rec)}, not a validation record")
    for key, value in rec.items():
        test = HISTORY_KEYS.get(key) or HISTORY_OPTIONAL.get(key)
        if test is None:
            raise ValueError(f"{where} has an unknown key {describe(key)}")
        if not test(value):
            raise ValueError(f"{where}.{key} = {describe(value)} is not of the right type")
    missing = [k for k in HISTORY_KEYS if k not in rec]
    if missing:
        raise ValueError(f"{where} lacks the key {missing[0]!r}")
    if not 0 <= rec["step"] <= step:
        raise ValueError(f"{where}.step = {rec['step']} is not in 0..{step} (the run's step)")


def _check_optimizer(opt, groups: list) -> None:
    if not isinstance(opt, dict) or set(opt) != {"state", "param_groups"}:
        raise ValueError(f"optimizer is {describe(opt)}"
                         + (f" with keys {', '.join(map(describe, opt))}" if isinstance(opt, dict) else "")
                         + "; an optimizer state has 'state' and 'param_groups'")
    saved = opt["param_groups"]
    if not isinstance(saved, list) or len(saved) != len(groups):
        raise ValueError(f"optimizer.param_groups is {describe(saved)}; the config implies {len(groups)} group(s)")
    shape_of = {}
    for i, (group, shapes) in enumerate(zip(saved, groups)):
        where = f"optimizer.param_groups[{i}]"
        if not isinstance(group, dict) or not all(isinstance(k, str) for k in group):
            raise ValueError(f"{where} is {describe(group)}, not a dict of settings")
        ids = group.get("params")
        if not (isinstance(ids, list) and len(ids) == len(shapes) and all(map(_is_int, ids))):
            raise ValueError(f"{where}.params is {describe(ids)}; the config implies {len(shapes)} parameter ids")
        for pid, shape in zip(ids, shapes):
            if pid in shape_of:
                raise ValueError(f"{where}.params repeats the parameter id {pid}")
            shape_of[pid] = shape
        _check_group(group, where)
    state = opt["state"]
    if not isinstance(state, dict):
        raise ValueError(f"optimizer.state is {describe(state)}, not a dict")
    for pid, entry in state.items():
        where = f"optimizer.state[{describe(pid)}]"
        if not _is_int(pid) or pid not in shape_of:
            raise ValueError(f"{where} is the state of no parameter of the groups")
        if not isinstance(entry, dict) or set(entry) != set(ADAM_STATE):
            keys = ", ".join(map(describe, entry)) if isinstance(entry, dict) else describe(entry)
            raise ValueError(f"{where} holds {keys}; AdamW's state is {', '.join(ADAM_STATE)}")
        s = entry["step"]
        if isinstance(s, torch.Tensor):
            _check_tensor(s, f"{where}.step", None)
            if s.numel() != 1 or float(s) < 0:
                raise ValueError(f"{where}.step is {describe(s)}, not one step count")
        elif not _is_number(s) or not math.isfinite(s) or s < 0:
            raise ValueError(f"{where}.step = {describe(s)} is not a step count")
        for key in ("exp_avg", "exp_avg_sq"):
            _check_tensor(entry[key], f"{where}.{key}", shape_of[pid])


def _check_group(group: dict, where: str) -> None:
    """AdamW's settings of one parameter group, as mdmt's training creates them."""
    def finite(v, low, high=math.inf):
        return _is_number(v) and math.isfinite(v) and low <= v < high

    checks = {"lr": (lambda v: finite(v, 0), "a learning rate"),
              "betas": (lambda v: isinstance(v, (list, tuple)) and len(v) == 2 and all(finite(b, 0, 1) for b in v),
                        "a pair of numbers in [0, 1)"),
              "eps": (lambda v: finite(v, 0) and v > 0, "a positive number"),
              "weight_decay": (lambda v: finite(v, 0), "a non-negative number")}
    for key, (test, words) in checks.items():
        if key not in group:
            raise ValueError(f"{where} lacks AdamW's setting {key!r}")
        if not test(group[key]):
            raise ValueError(f"{where}.{key} = {describe(group[key])} is not {words}")
    optional = {"lr_scale": (lambda v: finite(v, 0) and v > 0, "a positive number"),
                "foreach": (lambda v: v is None or isinstance(v, bool), "true, false or null"),
                "fused": (lambda v: v is None or v is False, "off (mdmt's AdamW does not fuse)"),
                "decoupled_weight_decay": (lambda v: isinstance(v, bool), "true or false"),
                **{flag: (lambda v: v is False, "false (mdmt's AdamW leaves it off)") for flag in ADAM_FLAGS}}
    for key, value in group.items():
        if key in checks or key == "params":
            continue
        plain = (lambda v: v is None or isinstance(v, (bool, int, float, str)), "a plain value")
        test, words = optional.get(key, plain)
        if not test(value):
            raise ValueError(f"{where}.{key} = {describe(value)} is not {words}")


def _check_rng(rng) -> None:
    reference = torch.get_rng_state()
    if not (isinstance(rng, torch.Tensor) and rng.layout == torch.strided and rng.dtype == torch.uint8
            and rng.dim() == 1 and rng.numel() == reference.numel()):
        raise ValueError(f"rng_torch is {describe(rng)}; torch's generator state is a torch.uint8 tensor of shape "
                         f"{tuple(reference.shape)}")
    try:
        torch.Generator().set_state(rng.contiguous())
    except (RuntimeError, ValueError, TypeError) as exc:
        raise ValueError(f"rng_torch is not a state of torch's random generator ({_first_line_of_torch_error(exc)})") \
            from None
