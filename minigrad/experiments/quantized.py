"""The quantized frozen base, measured: bytes against the planner, error per layer, losses.

* :func:`base_bytes`: the resident bytes of a model whose Linear weights are
  stored in int8, NF4 or NF4 with double quantization, counted from its
  arrays (:func:`minigrad.memory.bytes_of`), beside what the planner
  (:func:`minigrad.memory.plan`) predicts for the same parameter counts.
* :func:`layer_errors`: the relative Frobenius error ‖W - Ŵ‖_F / ‖W‖_F of
  every Linear weight of the trained GPT in int8, uniform int4 and NF4.
* :func:`quantized_losses`: the validation loss of the fine-tuning task
  (chapter 13) on the float base and on each quantized base.
"""
from __future__ import annotations

import numpy as np

from minigrad import memory, nn
from minigrad import quantization as Q
from minigrad.memory_planner import plan, quantized_bytes_per

SCHEMES = ("float32", "int8", "nf4", "nf4-dq")
#: The planner's name of each stored format (constants included).
PLANNER_NAMES = {"int8": "int8-rowwise", "nf4": "nf4", "nf4-dq": "nf4-dq"}


def _counts(model):
    """(all parameters, the quantized layers' weights, their rows) as numbers of weights."""
    layers = [m for _, m in nn.quantized_layers(model)]
    quantized = sum(m.in_features * m.out_features for m in layers)
    rows = sum(m.out_features for m in layers)
    stored = {id(p) for m in layers for n, p in m.named_parameters() if n != "bias"}
    rest = sum(p.numel() for p in model.parameters() if id(p) not in stored)
    return rest + quantized, quantized, rows


def base_bytes(model, scheme: str) -> dict:
    """Measured and planned bytes of ``model`` (its parameters and stored codes).

    Args:
        model: a model, float or after :func:`minigrad.experiments.finetune.quantize_base`.
        scheme: how its Linear weights are stored: one of :data:`SCHEMES`.

    Returns a dict: ``parameters`` (the logical count), ``quantized`` (weights
    stored quantized), ``measured`` (:func:`minigrad.memory.bytes_of`),
    ``planned`` (the planner's ``parameters`` part: the float rest in its
    dtype + the quantized weights at :func:`quantized_bytes_per`), and the
    bytes per quantized weight ``measured_per_weight``, ``planned_per_weight``
    (4 for float32).  For int8 the planner is given the mean row length
    (weights / rows) of the quantized layers.
    """
    if scheme not in SCHEMES:
        raise ValueError(f"base_bytes: scheme must be one of {', '.join(SCHEMES)}, got "
                         f"{scheme!r}")
    params, quantized, rows = _counts(model)
    measured = memory.bytes_of(model)
    dtype = next(p.dtype for p in model.parameters() if p.dtype.kind == "f")
    if scheme == "float32":
        planned = plan(params, param_dtype=dtype.name, activation_bytes_per_item=0).parameters
        return dict(scheme=scheme, parameters=params, quantized=0, measured=measured,
                    planned=planned, measured_per_weight=float(dtype.itemsize),
                    planned_per_weight=float(dtype.itemsize))
    row_length = quantized / rows
    planned = plan(params, trainable=params - quantized, param_dtype=dtype.name,
                   frozen_dtype=PLANNER_NAMES[scheme], row_length=row_length,
                   activation_bytes_per_item=0).parameters
    stored = sum(m.quantized_bytes() for _, m in nn.quantized_layers(model))
    return dict(scheme=scheme, parameters=params, quantized=quantized, measured=measured,
                planned=planned, measured_per_weight=stored / quantized,
                planned_per_weight=quantized_bytes_per(PLANNER_NAMES[scheme], row_length))


def bytes_table(checkpoint=None) -> list[dict]:
    """:func:`base_bytes` of the shipped GPT (or ``checkpoint``) in every scheme."""
    from .finetune import quantize_base  # noqa: PLC0415
    from .pretrain import load_gpt  # noqa: PLC0415
    rows = []
    for scheme in SCHEMES:
        model, _, _ = load_gpt(checkpoint)
        if scheme != "float32":
            quantize_base(model, scheme)
        rows.append(base_bytes(model, scheme))
    return rows


def format_bytes_table(rows) -> str:
    """The table of :func:`bytes_table`, measured beside planned."""
    lines = [f"{'base':<8}{'measured B':>12}{'planned B':>12}{'diff':>8}"
             f"{'B/weight measured':>19}{'planned':>9}"]
    for r in rows:
        lines.append(f"{r['scheme']:<8}{r['measured']:>12,}{r['planned']:>12,.0f}"
                     f"{100 * (r['planned'] / r['measured'] - 1):>7.2f}%"
                     f"{r['measured_per_weight']:>19.4f}{r['planned_per_weight']:>9.4f}")
    return "\n".join(lines)


def layer_errors(model, schemes=("int8", "int4", "nf4", "nf4-dq")) -> list[dict]:
    """``{"layer": name, "shape": (out, in), scheme: relative Frobenius error, ...}``
    for every untied ``nn.Linear`` of ``model`` (float, not changed)."""
    tied = nn.quantized._tied_weights(model)
    rows = []
    for name, m in model.named_modules():
        if type(m) is not nn.Linear or id(m.weight) in tied:
            continue
        w = m.weight.data
        row = {"layer": name, "shape": tuple(w.shape)}
        for scheme in schemes:
            if scheme == "int8":
                approx = Q.dequantize_int8_rowwise(*Q.quantize_int8_rowwise(w), np.float64)
            else:
                layer = nn.Linear4bit.from_linear(m, scheme.removesuffix("-dq"),
                                                  compress_statistics=scheme.endswith("-dq"))
                approx = layer.dequantize(np.float64)
            row[scheme] = Q.relative_error(w, approx)
        rows.append(row)
    return rows


def quantized_losses(checkpoint=None, schemes=SCHEMES, val_pairs=256) -> dict:
    """Validation loss per completion token (chapter 13's task) of the shipped GPT
    with its base stored in each scheme: ``{scheme: loss}``."""
    from .finetune import evaluate_pairs, quantize_base, sft_pairs  # noqa: PLC0415
    from .pretrain import load_gpt  # noqa: PLC0415
    losses = {}
    for scheme in schemes:
        model, tokenizer, _ = load_gpt(checkpoint)
        if scheme != "float32":
            quantize_base(model, scheme)
        _, _, val = sft_pairs(tokenizer)
        losses[scheme] = evaluate_pairs(model, val[:val_pairs])
    return losses


__all__ = ["SCHEMES", "base_bytes", "bytes_table", "format_bytes_table", "layer_errors",
           "quantized_losses"]
