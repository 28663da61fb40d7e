"""Frozen linear layers whose weight is stored in 8 or 4 bits (LLM.int8(), QLoRA).

    y = x Ŵᵀ + b,     Ŵ = the weight dequantized, chunk by chunk of output rows

The weight is *frozen*: it gets no gradient, and no optimizer ever sees it.
It is stored as codes plus scales (:mod:`minigrad.quantization`): int8 with one
absmax per row (:class:`Linear8bitLt`), or NF4/FP4 codes packed two per byte
with one absmax per block of 64 and, optionally, the scales quantized again
(:class:`Linear4bit`, ``compress_statistics=True``: QLoRA's double
quantization).

Forward and backward never build the full-precision weight: they dequantize
``chunk_rows`` output rows at a time into the input's dtype, multiply, and
drop the chunk (QLoRA computes in 16-bit "by dequantizing on the fly").
Forward writes y[..., rows] = x Ŵ[rows]ᵀ; backward adds dL/dx += g[..., rows]
Ŵ[rows].  The input is not even kept for backward: without a weight gradient
nothing needs it.  The input's gradient flows through the dequantized weight,
so LoRA adapters on top (:mod:`minigrad.nn.lora`) train as on a float base.

:func:`quantize_model` swaps a trained model's ``Linear`` layers for these
(all, or those named); :func:`dequantize_model` swaps them back.

Names follow bitsandbytes (``Linear8bitLt``, ``Linear4bit``, ``quant_type``,
``compress_statistics``, ``blocksize``); bitsandbytes calls the int8 row
scales ``SCB``, here ``weight_absmax`` as for 4 bits.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from .. import quantization as Q
from ..autograd import Function, no_grad
from .linear import Linear
from .module import Module, Parameter

#: Numbers of the weight dequantized at once (64 Ki: 256 KiB in float32).
CHUNK_NUMBERS = 1 << 16


class QuantizedLinearFunction(Function):
    """y = x Ŵᵀ + b for a quantized ``layer``; backward: dx = g Ŵ, db = Σ g.

    Inputs: x (*, in), optionally b (out,).  The weight is not an input (it
    has no gradient): the Function reads it from ``layer``, a chunk of rows
    at a time."""

    def __init__(self, layer):
        self.layer = layer

    def forward(self, x, bias=None):
        layer = self.layer
        if x.ndim == 0 or x.shape[-1] != layer.in_features:
            raise ValueError(f"{type(layer).__name__}: input of shape {tuple(x.shape)} does "
                             f"not match in_features={layer.in_features}")
        xp = backend.get_array_module(x)
        y = xp.empty(x.shape[:-1] + (layer.out_features,), dtype=x.dtype)
        for rows, w in layer.weight_chunks(x.dtype):
            y[..., rows] = x @ w.T
        if bias is not None:
            y += bias
        self.x_shape, self.dtype = x.shape, x.dtype
        return y

    def backward(self, g):
        need = self.needs_input_grad
        gx = None
        if need[0]:
            xp = backend.get_array_module(g)
            gx = xp.zeros(self.x_shape, dtype=self.dtype)
            for rows, w in self.layer.weight_chunks(self.dtype):
                gx += g[..., rows] @ w
        if len(need) == 1:
            return (gx,)
        gb = g.reshape(-1, g.shape[-1]).sum(axis=0) if need[1] else None
        return gx, gb


class QuantizedLinear(Module):
    """What :class:`Linear8bitLt` and :class:`Linear4bit` share: sizes, bias,
    the chunked forward, :meth:`dequantize`.

    Attributes:
        in_features, out_features: as ``nn.Linear``.
        compute_dtype: the dtype of the original weight (LoRA adapters are
            made in it); forward computes in the input's dtype.
        chunk_rows: output rows dequantized at once.
    """

    def _init_common(self, in_features, out_features, bias, device, compute_dtype,
                     chunk_rows):
        for name, n in (("in_features", in_features), ("out_features", out_features)):
            if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n <= 0:
                raise ValueError(f"{type(self).__name__}: {name} must be a positive int, "
                                 f"got {n!r}")
        self.in_features, self.out_features = int(in_features), int(out_features)
        self.compute_dtype = np.dtype(compute_dtype or np.float32)
        self.chunk_rows = int(chunk_rows or max(1, CHUNK_NUMBERS // self.in_features))
        return backend.array_module(device or "cpu")

    def _init_bias(self, bias, xp):
        """The bias (float, trainable as in ``nn.Linear``), registered after the weight."""
        if bias:
            self.bias = Parameter(xp.zeros(self.out_features, dtype=self.compute_dtype))
        else:
            self.register_parameter("bias", None)

    def forward(self, x):
        fn = QuantizedLinearFunction(self)
        return fn(x) if self.bias is None else fn(x, self.bias)

    def weight_chunks(self, dtype):
        """Yield ``(slice of rows, Ŵ[rows] in dtype)``, ``chunk_rows`` rows at a time."""
        context = self._chunk_context()
        for r0 in range(0, self.out_features, self.chunk_rows):
            rows = slice(r0, min(r0 + self.chunk_rows, self.out_features))
            yield rows, self._dequantize_rows(rows, dtype, context)

    def _chunk_context(self):
        return None

    @no_grad()
    def dequantize(self, dtype=None):
        """The whole weight Ŵ (out, in) in ``dtype`` (default ``compute_dtype``): a new array."""
        dtype = np.dtype(dtype or self.compute_dtype)
        return self._dequantize_rows(slice(0, self.out_features), dtype, self._chunk_context())

    def to_linear(self) -> Linear:
        """A float ``nn.Linear`` holding Ŵ (in ``compute_dtype``) and a copy of the
        bias; no random numbers are drawn."""
        linear = Linear.__new__(Linear)
        Module.__init__(linear)
        linear.in_features, linear.out_features = self.in_features, self.out_features
        linear.weight = Parameter(self.dequantize())
        if self.bias is None:
            linear.register_parameter("bias", None)
        else:
            linear.bias = Parameter(self.bias.data.copy(), self.bias.requires_grad)
        return linear

    def quantized_bytes(self) -> int:
        """Bytes of the stored weight: codes, scales and constants (not the bias)."""
        return sum(int(p.data.nbytes) for name, p in self._parameters.items()
                   if p is not None and name != "bias")


class Linear8bitLt(QuantizedLinear):
    """A frozen Linear with an int8 weight and one absmax per row (LLM.int8()).

    Args:
        in_features, out_features, bias: as ``nn.Linear``.
        device: where the codes live.
        compute_dtype: dtype of the bias (default float32).
        chunk_rows: rows dequantized at once (default: 64 Ki numbers' worth).

    Parameters (all but ``bias`` frozen, ``requires_grad=False``):
        ``weight`` int8 (out, in), ``weight_absmax`` float32 (out,), ``bias``.
    Use :meth:`from_linear` to quantize a trained ``nn.Linear``.
    """

    def __init__(self, in_features, out_features, bias=True, device=None, compute_dtype=None,
                 chunk_rows=None):
        super().__init__()
        xp = self._init_common(in_features, out_features, bias, device, compute_dtype,
                               chunk_rows)
        self.weight = Parameter(xp.zeros((out_features, in_features), np.int8), False)
        self.weight_absmax = Parameter(xp.zeros(out_features, np.float32), False)
        self._init_bias(bias, xp)

    @classmethod
    @no_grad()
    def from_linear(cls, linear: Linear, chunk_rows=None) -> Linear8bitLt:
        """Quantize ``linear``'s weight (its bias is copied, and stays trainable)."""
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None,
                    linear.weight.device, linear.weight.dtype, chunk_rows)
        layer.weight.data, layer.weight_absmax.data = Q.quantize_int8_rowwise(linear.weight.data)
        if linear.bias is not None:
            layer.bias.data = linear.bias.data.copy()
        return layer

    def _dequantize_rows(self, rows, dtype, context):
        return Q.dequantize_int8_rowwise(self.weight.data, self.weight_absmax.data, dtype, rows)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, int8 row-wise absmax")


class Linear4bit(QuantizedLinear):
    """A frozen Linear with a 4-bit weight (QLoRA): NF4 or FP4 codes, two per
    byte, one absmax per block of ``blocksize`` numbers of the row-major
    weight, optionally double quantized.

    Args:
        in_features, out_features, bias, device, compute_dtype, chunk_rows:
            as :class:`Linear8bitLt`.
        quant_type: "nf4" (default) or "fp4" ("int4" for comparisons).
        compress_statistics: double quantization of the block scales (int8
            codes in blocks of 256, minus their mean).
        blocksize: numbers per scale (64).

    Parameters (all but ``bias`` frozen):
        ``weight`` uint8 (ceil(in·out / 2),): the packed codes, element 2j in
        the high nibble of byte j; ``weight_absmax``: float32 (blocks,) or,
        double quantized, int8 (blocks,) with ``weight_nested_absmax``
        float32 (ceil(blocks / 256),) and ``weight_offset`` float32 ().
    """

    def __init__(self, in_features, out_features, bias=True, device=None, compute_dtype=None,
                 chunk_rows=None, quant_type="nf4", compress_statistics=False,
                 blocksize=Q.BLOCKSIZE):
        super().__init__()
        Q.levels_of(quant_type)
        Q._check_blocksize(blocksize)
        xp = self._init_common(in_features, out_features, bias, device, compute_dtype,
                               chunk_rows)
        self.quant_type, self.blocksize = quant_type, int(blocksize)
        self.compress_statistics = bool(compress_statistics)
        n = self.in_features * self.out_features
        blocks = -(-n // self.blocksize)
        self.weight = Parameter(xp.zeros(-(-n // 2), np.uint8), False)
        if self.compress_statistics:
            self.weight_absmax = Parameter(xp.zeros(blocks, np.int8), False)
            self.weight_nested_absmax = Parameter(
                xp.zeros(-(-blocks // Q.NESTED_BLOCKSIZE), np.float32), False)
            self.weight_offset = Parameter(xp.zeros((), np.float32), False)
        else:
            self.weight_absmax = Parameter(xp.zeros(blocks, np.float32), False)
        self._init_bias(bias, xp)

    @classmethod
    @no_grad()
    def from_linear(cls, linear: Linear, quant_type="nf4", compress_statistics=False,
                    blocksize=Q.BLOCKSIZE, chunk_rows=None) -> Linear4bit:
        """Quantize ``linear``'s weight (its bias is copied, and stays trainable)."""
        layer = cls(linear.in_features, linear.out_features, linear.bias is not None,
                    linear.weight.device, linear.weight.dtype, chunk_rows, quant_type,
                    compress_statistics, blocksize)
        packed, absmax = Q.quantize_4bit(linear.weight.data, quant_type, blocksize)
        layer.weight.data = packed
        if compress_statistics:
            codes, nested, offset = Q.quantize_absmax(absmax)
            layer.weight_absmax.data, layer.weight_nested_absmax.data = codes, nested
            layer.weight_offset.data = offset
        else:
            layer.weight_absmax.data = absmax
        if linear.bias is not None:
            layer.bias.data = linear.bias.data.copy()
        return layer

    def block_absmax(self):
        """The scales of every block (float32 (blocks,)), dequantized when compressed."""
        if not self.compress_statistics:
            return self.weight_absmax.data
        return Q.dequantize_absmax(self.weight_absmax.data, self.weight_nested_absmax.data,
                                   self.weight_offset.data)

    def _chunk_context(self):
        return self.block_absmax()          # 1 number per 64: dequantized once per pass

    def _dequantize_rows(self, rows, dtype, absmax):
        start, stop = rows.start * self.in_features, rows.stop * self.in_features
        flat = Q.dequantize_4bit(self.weight.data, absmax, self.quant_type, self.blocksize,
                                 dtype, start, stop)
        return flat.reshape(rows.stop - rows.start, self.in_features)

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self.bias is not None}, quant_type={self.quant_type}, "
                f"blocksize={self.blocksize}, compress_statistics={self.compress_statistics}")


# ------------------------------------------------------------------ whole models
def _tied_weights(model) -> set:
    """ids of weights held by more than one module (GPT's lm_head and wte)."""
    holders = {}
    for _, module in model.named_modules():
        for p in module._parameters.values():
            if p is not None:
                holders[id(p)] = holders.get(id(p), 0) + 1
    return {k for k, count in holders.items() if count > 1}


def quantize_model(model, scheme: str = "nf4", *, targets=None, compress_statistics=False,
                   blocksize=Q.BLOCKSIZE, chunk_rows=None):
    """Replace ``model``'s ``nn.Linear`` layers by frozen quantized ones, in place.

    Args:
        scheme: "int8" (:class:`Linear8bitLt`), "nf4", "fp4" or "int4"
            (:class:`Linear4bit`).
        targets: layer names to convert: a name matches when it equals the
            layer's dotted name or its last part (``"c_attn"``, or
            ``"h.0.attn.c_attn"``).  Default: every Linear whose weight is
            not tied to another module's (GPT's ``lm_head`` shares the
            embedding's, which stays float).
        compress_statistics, blocksize, chunk_rows: see :class:`Linear4bit`.

    Returns:
        The model.  Its other parameters keep their ``requires_grad``; the
        quantized weights have none.

    Raises:
        ValueError: unknown scheme, or ``targets`` given and nothing matched.
    """
    if scheme not in ("int8", *Q.LEVELS):
        raise ValueError(f"quantize_model: scheme must be int8, nf4, fp4 or int4, got "
                         f"{scheme!r}")
    tied = _tied_weights(model)
    found = []
    for name, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            full = f"{name}.{child_name}" if name else child_name
            if type(child) is not Linear:
                continue
            if targets is None and id(child.weight) in tied:
                continue
            if targets is not None and child_name not in targets and full not in targets:
                continue
            if scheme == "int8":
                layer = Linear8bitLt.from_linear(child, chunk_rows)
            else:
                layer = Linear4bit.from_linear(child, scheme, compress_statistics, blocksize,
                                               chunk_rows)
            if child.bias is not None:
                layer.bias.requires_grad = child.bias.requires_grad
            setattr(parent, child_name, layer)
            found.append(full)
    if targets is not None and not found:
        raise ValueError(f"quantize_model: no Linear layer named one of {tuple(targets)}")
    return model


def dequantize_model(model):
    """Replace every quantized layer by a float ``nn.Linear`` holding Ŵ, in place."""
    for _, parent in list(model.named_modules()):
        for child_name, child in list(parent.named_children()):
            if isinstance(child, QuantizedLinear):
                setattr(parent, child_name, child.to_linear())
    return model


def quantized_layers(model):
    """``(dotted name, layer)`` for every quantized layer of ``model``."""
    return [(n, m) for n, m in model.named_modules() if isinstance(m, QuantizedLinear)]


__all__ = ["Linear8bitLt", "Linear4bit", "QuantizedLinear", "QuantizedLinearFunction",
           "quantize_model", "dequantize_model", "quantized_layers"]
