"""LoRA: fine-tune a frozen Linear through a trainable low-rank update.

Hu et al., "LoRA: Low-Rank Adaptation of Large Language Models" (2021), eq. 3:
a frozen weight W (out, in) gets an update of rank r << min(in, out),

    h = x Wᵀ + b + (α / r) · x Aᵀ Bᵀ         A (r, in), B (out, r)

A starts random (Kaiming-uniform, as PEFT), B starts at 0, so training
starts exactly at the pretrained model.  Only A and B are trained: r·(in +
out) numbers instead of in·out, and the optimizer keeps state for those
alone.  ``merge()`` folds the update into W (W += (α/r) B A) so that
inference costs nothing extra.

Names follow Hugging Face PEFT where they exist: ``base_layer``, ``lora_A``,
``lora_B``, ``r``, ``lora_alpha``, ``lora_dropout``, ``scaling``, ``merge()``,
``unmerge()``, ``merge_and_unload``, ``get_peft_model_state_dict`` (here
:func:`lora_state_dict`) and ``set_peft_model_state_dict`` (here
:func:`load_lora_state_dict`).
"""
from __future__ import annotations

import math

from ..autograd import no_grad
from . import init
from .dropout import Dropout
from .linear import Linear
from .module import Module
from .quantized import QuantizedLinear


class LoRALinear(Module):
    """A frozen ``nn.Linear`` plus a trainable rank-``r`` update (see the module docstring).

    Args:
        base_layer: the Linear to adapt; its parameters are frozen
            (``requires_grad = False``).  It may be a quantized layer
            (:mod:`minigrad.nn.quantized`, QLoRA): the adapters are made in its
            ``compute_dtype``, and :meth:`merge` refuses (merge into a
            dequantized copy with :func:`merge_and_unload`).
        r: the rank, >= 1.
        lora_alpha: α; the update is scaled by α / r (default 1, PEFT's 8 is
            for r = 8).
        lora_dropout: dropout on the adapter's input (training only).

    Shapes: (*, in_features) -> (*, out_features), as the base layer.
    Parameters: ``lora_A.weight`` (r, in_features), ``lora_B.weight``
    (out_features, r).

    Raises:
        TypeError: ``base_layer`` is not a Linear.
        ValueError: r < 1.
    """

    def __init__(self, base_layer, r: int, lora_alpha: float = 1.0, lora_dropout: float = 0.0):
        super().__init__()
        _check_lora(base_layer, r)
        self.base_layer = base_layer
        for p in base_layer.parameters():
            p.requires_grad = False
        dtype = getattr(base_layer, "compute_dtype", base_layer.weight.dtype)
        device = base_layer.weight.device
        self.lora_A = Linear(base_layer.in_features, r, bias=False, device=device, dtype=dtype)
        self.lora_B = Linear(r, base_layer.out_features, bias=False, device=device, dtype=dtype)
        init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        init.zeros_(self.lora_B.weight)
        self.lora_dropout = Dropout(lora_dropout)
        self.r, self.lora_alpha, self.scaling = r, lora_alpha, lora_alpha / r
        self.merged = False

    def forward(self, x):
        y = self.base_layer(x)
        if self.merged:
            return y
        # BEGIN SOLUTION ch13.3
        return y + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        # END SOLUTION

    @no_grad()
    def merge(self) -> None:
        """W += (α/r) B A: the update folded into the base weight; forward then
        runs the base layer alone.  Raises RuntimeError when already merged, or
        when the base is quantized (4 or 8 bits cannot hold W + (α/r) B A:
        :func:`merge_and_unload` merges into a dequantized copy)."""
        if isinstance(self.base_layer, QuantizedLinear):
            raise RuntimeError("LoRALinear.merge: the base layer is quantized "
                               f"({type(self.base_layer).__name__}); its codes cannot hold "
                               "the update. merge_and_unload(model) merges into a "
                               "dequantized float copy instead")
        if self.merged:
            raise RuntimeError("LoRALinear.merge: the adapter is already merged")
        self.base_layer.weight.data += self._delta()
        self.merged = True

    @no_grad()
    def unmerge(self) -> None:
        """Undo :meth:`merge` (W -= (α/r) B A).  Raises RuntimeError when not merged."""
        if not self.merged:
            raise RuntimeError("LoRALinear.unmerge: the adapter is not merged")
        self.base_layer.weight.data -= self._delta()
        self.merged = False

    def _delta(self):
        """(α/r) B A, of the base weight's shape (out, in)."""
        # BEGIN SOLUTION ch13.3
        return (self.lora_B.weight.data @ self.lora_A.weight.data) * self.scaling
        # END SOLUTION

    def extra_repr(self) -> str:
        return f"r={self.r}, lora_alpha={self.lora_alpha}, merged={self.merged}"


def apply_lora(model, r: int, alpha: float = 1.0, targets=("c_attn",), dropout: float = 0.0):
    """Replace every Linear whose name ends with one of ``targets`` (PEFT's
    ``target_modules``, e.g. ``("c_attn", "c_proj")``) by a :class:`LoRALinear`,
    and freeze every other parameter of ``model``.

    Returns the model (changed in place).  Its trainable parameters are the
    adapters' A and B only: pass ``[p for p in model.parameters() if
    p.requires_grad]`` to the optimizer.

    Raises ValueError when no Linear matches ``targets``.
    """
    found = [(parent, child_name) for name, parent in model.named_modules()
             for child_name, child in parent.named_children()
             if isinstance(child, (Linear, QuantizedLinear)) and child_name in targets]
    if not found:
        raise ValueError(f"apply_lora: no Linear layer named one of {tuple(targets)} in "
                         f"the model")
    for p in model.parameters():
        p.requires_grad = False
    for parent, child_name in found:
        setattr(parent, child_name, LoRALinear(getattr(parent, child_name), r, alpha, dropout))
    return model


def lora_layers(model):
    """``(dotted name, LoRALinear)`` for every adapter in ``model``."""
    return [(name, m) for name, m in model.named_modules() if isinstance(m, LoRALinear)]


def lora_state_dict(model) -> dict:
    """The adapters alone: ``{"<layer>.lora_A.weight": array, ...}`` (PEFT's
    ``get_peft_model_state_dict``), small enough to ship per task; save it
    with ``minigrad.save``."""
    return {name: value for name, value in model.state_dict().items()
            if ".lora_A." in name or ".lora_B." in name}


def load_lora_state_dict(model, state: dict) -> None:
    """Load adapters saved by :func:`lora_state_dict` into a model that has the
    same adapters (``apply_lora`` with the same r and targets).

    Raises KeyError naming missing or unexpected adapter entries, ValueError for
    a shape that does not match."""
    own = lora_state_dict(model)
    missing, unexpected = sorted(set(own) - set(state)), sorted(set(state) - set(own))
    if missing or unexpected:
        raise KeyError(f"load_lora_state_dict: missing adapter entries {missing}, "
                       f"unexpected {unexpected}")
    params = dict(model.named_parameters())
    with no_grad():
        for name, value in state.items():
            if tuple(value.shape) != params[name].shape:
                raise ValueError(f"load_lora_state_dict: {name} has shape "
                                 f"{tuple(value.shape)}, the model's is {params[name].shape}")
            params[name].data[...] = value


def merge_and_unload(model):
    """Merge every adapter into its base weight and put the plain Linear back
    (PEFT's ``merge_and_unload``); returns the model, with all parameters
    trainable again.  A quantized base is first dequantized into a float
    ``nn.Linear`` (its ``compute_dtype``), and the update merged into that
    copy: the result is a float model."""
    for name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, LoRALinear):
                if isinstance(child.base_layer, QuantizedLinear):
                    child.base_layer = child.base_layer.to_linear()
                if not child.merged:
                    child.merge()
                setattr(parent, child_name, child.base_layer)
    for p in model.parameters():
        p.requires_grad = p.dtype.kind == "f"      # quantized codes never train
    return model


def _check_lora(base_layer, r):
    if not isinstance(base_layer, (Linear, QuantizedLinear)):
        raise TypeError(f"LoRALinear: base_layer must be an nn.Linear or a quantized "
                        f"linear layer, got "
                        f"{type(base_layer).__name__}")
    if isinstance(r, bool) or not isinstance(r, int) or r < 1:
        raise ValueError(f"LoRALinear: rank r must be an int >= 1, got {r!r}")
