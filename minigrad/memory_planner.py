"""The memory planner: the peak bytes of training, from counts and dtypes, before running it.

Training memory = resident part + transient part (see :mod:`minigrad.memory`):

* resident, per trainable parameter: its value, its gradient, the optimizer's
  state (SGD none, SGD with momentum one buffer, Adam two moments), and in
  mixed precision a float32 "master" copy of the value that the optimizer
  updates (Micikevicius et al. 2018, "Mixed Precision Training"); per frozen
  parameter: its value only, possibly quantized to 8 or 4 bits (Dettmers et
  al. 2023, "QLoRA");
* transient: the activations that forward keeps for backward, proportional
  to the micro-batch.

Mixed-precision Adam therefore costs 2 (float16 value) + 2 (float16
gradient) + 4 (float32 master) + 4 + 4 (float32 moments) = 16 bytes per
parameter (Rajbhandari et al. 2020, "ZeRO", sec. 3.1).  Gradient accumulation
changes none of these: it only multiplies the batch that one update sees.

Activations of a transformer layer, per sequence of s tokens, width h, a
heads, stored in 16 bits, are ``s h (34 + 5 a s / h)`` bytes (Korthikanti
et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
eq. 1); other activation dtypes scale it by bytes/2.  With checkpointing of
every layer only each layer's input is kept, ``2 s h`` bytes (16 bits), plus
the peak of one layer's backward while it is recomputed: its activations, the
gradients flowing through it and the temporaries of its GELU's derivative,
``25 s h + a s²`` numbers (see :func:`transformer_activation_bytes`).  For
other models pass the activation bytes per item measured with
:func:`minigrad.memory.peak`.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

BYTES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "8bit": 1,
         "int4": 0.5, "4bit": 0.5}
# A quantized weight also stores its scales (minigrad.quantization, minigrad.nn.quantized):
# "8bit"/"4bit" above count the codes alone (the rounding the 13B example uses); these
# count the codes plus the constants, as the layers store them.
BLOCKSIZE, NESTED_BLOCKSIZE = 64, 256          # QLoRA's blocks of weights, of scales
QUANTIZED = {
    "nf4": 0.5 + 4 / BLOCKSIZE,                                    # + a float32 per block
    "fp4": 0.5 + 4 / BLOCKSIZE,
    "nf4-dq": 0.5 + 1 / BLOCKSIZE + 4 / (BLOCKSIZE * NESTED_BLOCKSIZE),  # double quantized
    "fp4-dq": 0.5 + 1 / BLOCKSIZE + 4 / (BLOCKSIZE * NESTED_BLOCKSIZE),
    "int8-rowwise": None,                      # 1 + 4 / row length: see quantized_bytes_per
}


def quantized_bytes_per(frozen_dtype: str, row_length: int | None = None) -> float:
    """Bytes per weight of a quantized frozen base, constants included.

    * ``"int8-rowwise"`` (LLM.int8()): 1 byte per code + a float32 absmax per
      row of ``row_length`` numbers: 1 + 4 / row_length.
    * ``"nf4"``, ``"fp4"`` (QLoRA): half a byte per code + a float32 absmax
      per block of 64: 0.5 + 4/64 = 0.5625.
    * ``"nf4-dq"``, ``"fp4-dq"``: the absmax double quantized, one int8 per
      block and a float32 per 256 blocks: 0.5 + 1/64 + 4/(64·256) = 0.51587.

    Rounding: the per-layer mean of double quantization (4 bytes), a last
    block or row group cut short, and odd counts are left out (under 0.1 %
    for layers of more than 4096 numbers).

    Raises ValueError for another name, or ``"int8-rowwise"`` without a
    row length >= 1.
    """
    if frozen_dtype not in QUANTIZED:
        raise ValueError(f"plan: a quantized frozen_dtype is one of {', '.join(QUANTIZED)}, "
                         f"got {frozen_dtype!r}")
    if frozen_dtype == "int8-rowwise":
        if isinstance(row_length, bool) or not isinstance(
                row_length, (int, float, np.integer, np.floating)) or not row_length >= 1:
            raise ValueError(f"plan: int8-rowwise needs row_length >= 1 (numbers per row, "
                             f"or their mean over the layers), got {row_length!r}")
        return 1 + 4 / row_length
    return QUANTIZED[frozen_dtype]
OPTIMIZER_STATES = {"sgd": 0, "sgd-momentum": 1, "adam": 2, "adamw": 2}


def _bytes_per(name, what):
    key = name if isinstance(name, str) else np.dtype(name).name
    if key not in BYTES:
        raise ValueError(f"plan: {what} must be one of {', '.join(BYTES)}, got {name!r}")
    return BYTES[key]


def _frozen_bytes_per(name, row_length):
    if isinstance(name, str) and name in QUANTIZED:
        return quantized_bytes_per(name, row_length)
    return _bytes_per(name, "frozen_dtype")


def _count(value, what, allow_zero=False):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or \
            value < (0 if allow_zero else 1):
        raise ValueError(f"plan: {what} must be an int >= {0 if allow_zero else 1}, "
                         f"got {value!r}")
    return int(value)


@dataclass
class MemoryPlan:
    """The planner's estimate, in bytes (floats; see :func:`plan`)."""
    parameters: float
    gradients: float
    optimizer_state: float
    activations: float
    memory: float | None = None
    settings: dict = field(default_factory=dict)

    @property
    def resident(self) -> float:
        """Bytes that live from one update to the next (all but activations)."""
        return self.parameters + self.gradients + self.optimizer_state

    @property
    def total(self) -> float:
        """The estimated peak: resident + activations."""
        return self.resident + self.activations

    @property
    def fits(self) -> bool | None:
        """Whether ``total <= memory`` (None when no memory was given)."""
        return None if self.memory is None else self.total <= self.memory

    def as_dict(self) -> dict:
        return {"parameters": self.parameters, "gradients": self.gradients,
                "optimizer_state": self.optimizer_state, "activations": self.activations,
                "total": self.total, "memory": self.memory, "fits": self.fits}

    def __str__(self):
        lines = [f"{name:<16}{_gb(value):>12}" for name, value in (
            ("parameters", self.parameters), ("gradients", self.gradients),
            ("optimizer state", self.optimizer_state), ("activations", self.activations),
            ("total", self.total))]
        if self.memory is not None:
            verdict = "fits" if self.fits else "does NOT fit"
            lines.append(f"{verdict} in {_gb(self.memory).strip()} "
                         f"({100 * self.total / self.memory:.0f} % of it)")
        return "\n".join(lines)


def _gb(n: float) -> str:
    """Decimal units, as memory is sold: '208.00 GB'."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            return f"{n / size:.2f} {unit}"
    return f"{n:.0f} B"


def parse_bytes(text) -> float:
    """'24GB' -> 24e9, '512MiB' -> 536870912, '1e6' -> 1e6 (a number is bytes).

    Raises:
        ValueError: not a size, or not finite and > 0 (``-5``, ``inf``, ``0B``).
    """
    if isinstance(text, bool):
        raise ValueError(f"expected a size such as 24GB, 512MiB or 1e9, got {text!r}")
    if isinstance(text, (int, float, np.integer, np.floating)):
        value = float(text)
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"a size must be a finite number of bytes > 0, got {text!r}")
        return value
    units = {"kib": 2 ** 10, "mib": 2 ** 20, "gib": 2 ** 30, "tib": 2 ** 40, "kb": 1e3,
             "mb": 1e6, "gb": 1e9, "tb": 1e12, "b": 1}
    s = str(text).strip().lower()
    for unit, size in units.items():
        if s.endswith(unit):
            number = s[:-len(unit)].strip()
            break
    else:
        number, size = s, 1
    try:
        value = float(number) * size
    except ValueError:
        raise ValueError(f"expected a size such as 24GB, 512MiB or 1e9, got {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"a size must be > 0, got {text!r}")
    return value


def transformer_activation_bytes(seq_len, width, depth, heads, *, micro_batch=1,
                                 activation_bytes=2, checkpointing=False) -> float:
    """Activation bytes of training a transformer, at their peak.

    Without checkpointing: what the layers keep for backward, per layer and
    sequence ``s h (34 + 5 a s / h)`` bytes in 16 bits (Korthikanti et al.
    2022, "Reducing Activation Recomputation in Large Transformer Models",
    eq. 1).

    With checkpointing of every layer, the peak is reached inside the
    backward of a recomputed layer, at its GELU, and holds (in numbers; no
    dropout, a pre-LayerNorm GPT block as :mod:`minigrad.models.gpt` builds it):

    * every layer's input, kept by its checkpoint: ``depth · s h``;
    * the recomputed layer's activations: its input, the inputs of the
      ``c_attn``, ``c_proj`` and ``c_fc`` projections (s h each), q, k, v
      (3 s h), the second LayerNorm's input (s h), GELU's input and the MLP
      output projection's input (4 s h each), and the attention weights
      (a s²): ``16 s h + a s²``; the MLP output projection has already
      run its backward and released its input: ``- 4 s h``;
    * the gradients flowing: the layer output's (s h) and the MLP hidden's
      (4 s h);
    * GELU's derivative (tanh form): its result and its tanh temporary, two
      arrays of the hidden's size (4 s h): ``8 s h``.  The derivative runs
      in place, block by block; once the hidden holds more than one block
      (65,536 numbers) the temporary is one block, not 4 s h, and the plan
      is high by up to 4 s h.

    In all ``depth · s h + 25 s h + a s²`` numbers.  The recomputed layer's
    input is counted twice (it is one array, held by its checkpoint and by
    ``ln_1``); that s h stands for the rest the measurement finds at the
    peak (the slots of gradients still to be summed, Python's objects).
    Measured on the GPT with :func:`minigrad.memory.peak` (one batch of 16
    and micro-batch 1 × 16, 4 layers, width 128, context 64), the plan is
    within 21 % (high for the batch of 16, where the temporary is one
    block; within 9 % on a tiny GPT, tested).  Korthikanti et al.'s "inputs
    plus one layer's activations" leaves out the last two items.

    All counts scale with ``activation_bytes`` (per number; the formula is
    written for 2) and ``micro_batch``.
    """
    s, h, a = seq_len, width, heads
    if checkpointing:
        numbers = depth * s * h + 25 * s * h + a * s * s
        per_sequence = 2 * numbers                  # bytes in 16 bits
    else:
        per_sequence = depth * s * h * (34 + 5 * a * s / h)
    return per_sequence * micro_batch * activation_bytes / 2


def plan(params, *, trainable=None, param_dtype="float32", grad_dtype=None,
         master_weights=False, optimizer="adam", state_dtype="float32", frozen_dtype=None,
         micro_batch=1, activation_bytes_per_item=None, seq_len=None, width=None, depth=None,
         heads=None, activation_dtype=None, checkpointing=False, accumulation_steps=1,
         memory=None, row_length=None) -> MemoryPlan:
    """Estimate the peak memory of training, by part.

    Args:
        params: the model's parameter count (int).
        trainable: how many of them train (an adapter); the rest is a frozen
            base stored in ``frozen_dtype``.  Default: all of them.
        param_dtype: dtype of the trainable values (and of the base when
            ``frozen_dtype`` is None): float64, float32, float16, bfloat16.
        grad_dtype: dtype of the gradients (default ``param_dtype``).
        master_weights: keep a float32 copy of the trainable values for the
            optimizer (mixed precision).
        optimizer: ``"sgd"``, ``"sgd-momentum"``, ``"adam"`` (or ``"adamw"``).
        state_dtype: dtype of the optimizer's buffers.
        frozen_dtype: dtype of the frozen base: a float name, ``"8bit"``
            (``"int8"``) or ``"4bit"`` (``"int4"``) for the codes alone, or,
            with their scales and constants (:func:`quantized_bytes_per`),
            ``"int8-rowwise"``, ``"nf4"``, ``"fp4"``, ``"nf4-dq"``, ``"fp4-dq"``.
        row_length: numbers per row of the base's weights (or their mean,
            weights / rows, over layers of different shapes), for
            ``"int8-rowwise"`` (one float32 scale per row); default ``width``.
        micro_batch: items (sequences) per forward/backward.
        activation_bytes_per_item: measured activation bytes per item (with
            the checkpointing setting it is measured under); or give
            ``seq_len``, ``width``, ``depth``, ``heads`` of a transformer.
        activation_dtype: dtype of the activations in the transformer formula
            (default ``param_dtype``).
        checkpointing: checkpoint every transformer layer.
        accumulation_steps: k; recorded, and it changes nothing above: the
            batch of an update is ``micro_batch * k``, the memory is not.
        memory: the memory to fit in, bytes (a number, or a string '24GB').

    Returns:
        A :class:`MemoryPlan` (``print`` it for the breakdown and the verdict).

    Raises:
        ValueError: a count below 1 (``trainable`` below 0 or above
            ``params``), an unknown dtype or optimizer, both or neither
            activation descriptions.
    """
    params = _count(params, "params")
    trainable = params if trainable is None else _count(trainable, "trainable", allow_zero=True)
    if trainable > params:
        raise ValueError(f"plan: trainable ({trainable}) cannot exceed params ({params})")
    micro_batch = _count(micro_batch, "micro_batch")
    accumulation_steps = _count(accumulation_steps, "accumulation_steps")
    if optimizer not in OPTIMIZER_STATES:
        raise ValueError(f"plan: optimizer must be one of {', '.join(OPTIMIZER_STATES)}, "
                         f"got {optimizer!r}")
    value_b = _bytes_per(param_dtype, "param_dtype")
    grad_b = value_b if grad_dtype is None else _bytes_per(grad_dtype, "grad_dtype")
    state_b = _bytes_per(state_dtype, "state_dtype")
    frozen_b = value_b if frozen_dtype is None else _frozen_bytes_per(
        frozen_dtype, width if row_length is None else row_length)
    frozen = params - trainable

    transformer = (seq_len, width, depth, heads)
    if activation_bytes_per_item is not None and any(v is not None for v in transformer):
        raise ValueError("plan: give activation_bytes_per_item or a transformer's seq_len, "
                         "width, depth and heads, not both")
    if activation_bytes_per_item is not None:
        if isinstance(activation_bytes_per_item, bool) or not isinstance(
                activation_bytes_per_item, (int, float, np.integer, np.floating)) or \
                not (math.isfinite(activation_bytes_per_item) and activation_bytes_per_item >= 0):
            raise ValueError(f"plan: activation_bytes_per_item must be a finite number >= 0, "
                             f"got {activation_bytes_per_item!r}")
        activations = float(activation_bytes_per_item) * micro_batch
    elif all(v is not None for v in transformer):
        act_b = value_b if activation_dtype is None else _bytes_per(activation_dtype,
                                                                    "activation_dtype")
        shape = [_count(v, n) for v, n in zip(transformer, ("seq_len", "width", "depth", "heads"))]
        try:
            activations = float(transformer_activation_bytes(
                *shape, micro_batch=micro_batch, activation_bytes=act_b,
                checkpointing=checkpointing))
        except OverflowError:
            activations = math.inf
    else:
        raise ValueError("plan: give activation_bytes_per_item, or all of seq_len, width, "
                         "depth and heads of a transformer")

    # BEGIN SOLUTION ch12.3
    parameters = trainable * value_b + frozen * frozen_b
    if master_weights:
        parameters += trainable * 4
    gradients = trainable * grad_b
    optimizer_state = trainable * OPTIMIZER_STATES[optimizer] * state_b
    # END SOLUTION
    _check_finite(parameters=parameters, gradients=gradients,
                  optimizer_state=optimizer_state, activations=activations)
    settings = dict(params=params, trainable=trainable, param_dtype=param_dtype,
                    grad_dtype=grad_dtype or param_dtype, master_weights=master_weights,
                    optimizer=optimizer, state_dtype=state_dtype, frozen_dtype=frozen_dtype,
                    micro_batch=micro_batch, accumulation_steps=accumulation_steps,
                    batch=micro_batch * accumulation_steps, checkpointing=checkpointing)
    return MemoryPlan(parameters, gradients, optimizer_state, activations,
                      None if memory is None else parse_bytes(memory), settings)


def _check_finite(**parts) -> None:
    """A plan whose bytes overflow a float (``seq_len=1e300``) says so, instead of "inf GB"."""
    for name, value in parts.items():
        try:
            finite = math.isfinite(value)
        except OverflowError:           # an int beyond float's range
            finite = False
        if not finite:
            raise ValueError(f"plan: the {name.replace('_', ' ')} estimate overflows (more "
                             "than 1e308 bytes); check the counts and sizes given")


def bytes_per_parameter(mp: MemoryPlan) -> float:
    """Resident bytes per parameter of a plan: 16 for mixed-precision Adam."""
    return mp.resident / mp.settings["params"]


__all__ = ["plan", "MemoryPlan", "transformer_activation_bytes", "parse_bytes",
           "bytes_per_parameter", "quantized_bytes_per", "BYTES", "QUANTIZED",
           "OPTIMIZER_STATES"]
