"""Weights in 8 and 4 bits: absmax quantization, NF4, double quantization.

A frozen weight does not need 32 bits per number.  Two schemes, the ones
bitsandbytes implements for PyTorch:

**int8, one scale per row** (LLM.int8(): Dettmers et al. 2022, "LLM.int8():
8-bit Matrix Multiplication for Transformers at Scale", sec. 3.1, *absmax*
quantization with vector-wise constants).  Row r of W (out, in) is divided by
its largest magnitude c_r = max |W[r]| and scaled to [-127, 127]:

    q = round(127 · W[r] / c_r) ∈ int8,        W[r] ≈ q · c_r / 127

1 byte per number plus 4 bytes per row for c_r.  (LLM.int8() also keeps
outlier *input features* in 16 bits; for a frozen base that is dequantized
before the product, as here and as QLoRA does, it is not needed.)

**4 bits, one scale per block of 64** (QLoRA: Dettmers et al. 2023, "QLoRA:
Efficient Finetuning of Quantized LLMs", sec. 3).  The weight, flattened in
row-major order, is cut into blocks of ``blocksize`` = 64 numbers; each block
is divided by its absmax c_b and every number is rounded to the *nearest* of
16 levels in [-1, 1]; the level's index (0..15) is a 4-bit code:

    code = argmin_k |W_i / c_b - level_k|,      W_i ≈ level[code] · c_b

Two codes share one byte.  **Nibble order**: element 2j goes to the *high*
nibble of byte j, element 2j+1 to the low nibble (bitsandbytes' order);
an odd count is padded with the code of 0.

* **NF4** ("4-bit NormalFloat", QLoRA sec. 3 and appendix E): the levels are
  quantiles of a standard normal, scaled to [-1, 1], 8 on the positive side
  and 7 on the negative side so that 0 is a level exactly (a zero weight,
  and padding, stay exact).  Weights are close to normal, so each level is
  used about equally often: the code is information-theoretically good for
  them (:func:`normal_float_levels` recomputes the table; :data:`NF4_LEVELS`
  is the paper's, to the last digit of bitsandbytes' ``functional.py``).
* **FP4**: bitsandbytes' 4-bit float (1 sign, 2 exponent, 1 mantissa bits).
* **int4** (for comparison only): 15 evenly spaced levels k/7, k = -7..7.

**Double quantization** (QLoRA sec. 3, "Double Quantization"): with blocks of
64, a float32 scale costs 32/64 = 0.5 bit per weight.  QLoRA quantizes the
scales themselves to 8 bits in blocks of 256, after subtracting their mean
(scales are positive; centered, they use both signs of the code).  Scales
then cost 8/64 + 32/(64·256) = 0.127 bit per weight.  QLoRA stores the
scales as 8-bit *floats*; here they are 8-bit *integers* with absmax
scaling (same bytes, a simpler code).

Bytes per weight, as stored here (``quantized_bytes`` counts them exactly):
int8 1 + 4/in_features; NF4 0.5 + 4/64 = 0.5625; NF4 with double
quantization 0.5 + 1/64 + 4/(64·256) ≈ 0.5159 (plus 4 bytes per layer for
the mean).

Every function takes NumPy or CuPy arrays and returns arrays of the same
module; dequantization on CuPy runs as one fused kernel
(:data:`DEQUANTIZE_4BIT`, :data:`DEQUANTIZE_INT8`).
"""
from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np

from . import backend

#: The 16 NF4 levels (QLoRA appendix E; bitsandbytes ``functional.py``,
#: ``get_4bit_type("nf4")``), ascending; code 7 is the exact 0.
NF4_LEVELS = np.array([
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0], dtype=np.float32)

#: bitsandbytes' FP4 (e2m1) levels, by code, divided by their largest (12).
FP4_LEVELS = (np.array([0, 0.0625, 8.0, 12.0, 4.0, 6.0, 2.0, 3.0,
                        -0.0, -0.0625, -8.0, -12.0, -4.0, -6.0, -2.0, -3.0]) / 12.0
              ).astype(np.float32)

#: Uniform 4-bit integers k/7 (k = -8..7; -8/7 is never chosen, |x| <= 1).
INT4_LEVELS = (np.arange(-8, 8) / 7.0).astype(np.float32)

LEVELS = {"nf4": NF4_LEVELS, "fp4": FP4_LEVELS, "int4": INT4_LEVELS}
BLOCKSIZE = 64                  # QLoRA's block of weights per scale
NESTED_BLOCKSIZE = 256          # QLoRA's block of scales per second-level scale


def normal_float_levels(offset: float = 0.9677083) -> np.ndarray:
    """The NF4 levels recomputed: quantiles of N(0, 1), normalized to [-1, 1].

    QLoRA (sec. 3, eq. 4 and appendix E; bitsandbytes ``create_normal_map``):
    8 positive quantiles at probabilities evenly spaced from 1/2 to
    ``offset``, 7 negative ones from 1/2 to ``offset`` (the 1/2's give the
    shared 0), all divided by the largest.  ``offset`` = 0.9677083 is
    bitsandbytes' choice, (1 - 1/(2·15) + 1 - 1/(2·16)) / 2: the quantile
    function is infinite at 1, so the outermost level cannot sit there.

    Returns a float64 array (16,), ascending, equal to :data:`NF4_LEVELS` to
    float32 rounding.
    """
    ppf = NormalDist().inv_cdf
    positive = [ppf(p) for p in np.linspace(offset, 0.5, 9)[:-1]]
    negative = [-ppf(p) for p in np.linspace(offset, 0.5, 8)[:-1]]
    levels = np.sort(np.array(positive + [0.0] + negative))
    return levels / levels.max()


def levels_of(quant_type: str) -> np.ndarray:
    """The 16 float32 levels of ``quant_type`` ("nf4", "fp4" or "int4"), by code."""
    if quant_type not in LEVELS:
        raise ValueError(f"quant_type must be one of {', '.join(LEVELS)}, got {quant_type!r}")
    return LEVELS[quant_type]


def nearest_level(x, levels):
    """For each value of ``x`` (normalized to [-1, 1]) the code (0..15, uint8)
    of the nearest level; a value halfway between two levels takes the lower
    one (bitsandbytes' ``dQuantizeNF4`` compares with ``>`` the midpoints)."""
    xp = backend.get_array_module(x)
    order = np.argsort(levels, kind="stable")                # codes by ascending level
    # BEGIN SOLUTION ch12.4
    ascending = levels[order].astype(np.float64)
    midpoints = xp.asarray((ascending[1:] + ascending[:-1]) / 2)
    rank = xp.searchsorted(midpoints, x, side="left")       # how many midpoints lie below
    # END SOLUTION
    return xp.asarray(order.astype(np.uint8))[rank]


# ---------------------------------------------------------------- int8, per row
def quantize_int8_rowwise(weight):
    """LLM.int8()'s absmax quantization with one scale per row.

    Args:
        weight: (out, in) floating array.

    Returns:
        ``(codes, absmax)``: int8 (out, in) with values in [-127, 127], and
        float32 (out,) = max |weight[r]| (bitsandbytes' ``SCB``).  A row of
        zeros gets absmax 0 and codes 0.
    """
    xp = backend.get_array_module(weight)
    w = weight.astype(np.float64) if weight.dtype != np.float64 else weight
    absmax = xp.abs(w).max(axis=1)
    scale = xp.where(absmax > 0, 127.0 / xp.where(absmax > 0, absmax, 1.0), 0.0)
    codes = xp.rint(w * scale[:, None]).astype(np.int8)
    return codes, absmax.astype(np.float32)


def dequantize_int8_rowwise(codes, absmax, dtype=np.float32, rows=slice(None)):
    """W[rows] ≈ codes[rows] · absmax[rows] / 127, in ``dtype``: (len(rows), in)."""
    xp = backend.get_array_module(codes)
    dtype = np.dtype(dtype)
    if xp is not np and dtype in backend.FUSED_DTYPES:
        c, a = codes[rows], absmax[rows]
        out = xp.empty(c.shape, dtype=dtype)
        return DEQUANTIZE_INT8(c, a, c.shape[1], out)
    math_dtype = np.result_type(dtype, np.float32)
    return (codes[rows].astype(math_dtype)
            * (absmax[rows].astype(math_dtype) / 127)[:, None]).astype(dtype, copy=False)


# ------------------------------------------------------------ 4 bits, per block
def quantize_4bit(weight, quant_type: str = "nf4", blocksize: int = BLOCKSIZE):
    """Block-wise absmax quantization to 4-bit codes, packed two per byte (QLoRA sec. 3).

    Args:
        weight: floating array of any shape; quantized in row-major order.
        quant_type: "nf4" (default), "fp4" or "int4" (see :data:`LEVELS`).
        blocksize: numbers per scale (64, as QLoRA).

    Returns:
        ``(packed, absmax)``: uint8 (ceil(n / 2),) with code 2j in the high
        nibble of byte j and code 2j+1 in the low nibble, and float32
        (ceil(n / blocksize),) the absmax of each block (the last block may
        be shorter).  A block of zeros has absmax 0 and decodes to zeros.

    Raises:
        ValueError: unknown ``quant_type``, blocksize < 2 or odd.
    """
    levels = levels_of(quant_type)
    _check_blocksize(blocksize)
    xp = backend.get_array_module(weight)
    flat = weight.reshape(-1).astype(np.float64)
    n = flat.size
    padded = xp.zeros(-(-n // blocksize) * blocksize, dtype=np.float64)
    padded[:n] = flat
    blocks = padded.reshape(-1, blocksize)
    # BEGIN SOLUTION ch12.4
    absmax = xp.abs(blocks).max(axis=1)                         # one scale per block
    safe = xp.where(absmax > 0, absmax, 1.0)
    codes = nearest_level(blocks / safe[:, None], levels).reshape(-1)[:n]
    if n % 2:                                                   # pad with the code of 0
        codes = xp.concatenate([codes, nearest_level(xp.zeros(1), levels)])
    packed = (codes[0::2] << 4) | codes[1::2]                   # first of a pair: high nibble
    # END SOLUTION
    return packed.astype(np.uint8), absmax.astype(np.float32)


def dequantize_4bit(packed, absmax, quant_type: str = "nf4", blocksize: int = BLOCKSIZE,
                    dtype=np.float32, start: int = 0, stop: int | None = None):
    """Numbers ``start:stop`` of the flattened weight from its 4-bit codes.

    Args:
        packed, absmax: as :func:`quantize_4bit` returns them (``absmax``
            already dequantized when double quantization is used).
        dtype: the compute dtype of the result.
        start, stop: a range of the flattened weight (default: all of it),
            so that a large weight can be dequantized piece by piece.

    Returns:
        A 1-d array of ``dtype``, ``stop - start`` numbers: level[code] · absmax
        of the number's block, computed in float32 (float64 for float64).
    """
    levels = levels_of(quant_type)
    xp = backend.get_array_module(packed)
    stop = 2 * packed.size if stop is None else stop
    dtype = np.dtype(dtype)
    if xp is not np and dtype in backend.FUSED_DTYPES:
        out = xp.empty(stop - start, dtype=dtype)
        table = xp.asarray(levels.astype(absmax.dtype))
        return DEQUANTIZE_4BIT(packed, absmax, table, start, blocksize, out)
    math_dtype = np.result_type(dtype, np.float32)
    lo, first_block = start // 2, start // blocksize
    # BEGIN SOLUTION ch12.4
    byte = packed[lo:-(-stop // 2)]
    codes = xp.stack([byte >> 4, byte & 0x0F], axis=1).reshape(-1)   # high nibble first
    codes = codes[start - 2 * lo:stop - 2 * lo]
    scales = xp.repeat(absmax[first_block:-(-stop // blocksize)].astype(math_dtype), blocksize)
    scales = scales[start - first_block * blocksize:stop - first_block * blocksize]
    values = xp.asarray(levels.astype(math_dtype))[codes] * scales
    # END SOLUTION
    return values.astype(dtype, copy=False)


def _check_blocksize(blocksize):
    if isinstance(blocksize, bool) or not isinstance(blocksize, (int, np.integer)) or \
            blocksize < 2 or blocksize % 2:
        raise ValueError(f"blocksize must be an even int >= 2, got {blocksize!r}")


# ------------------------------------------------------- double quantization
def quantize_absmax(absmax, blocksize: int = NESTED_BLOCKSIZE):
    """Double quantization of the block scales (QLoRA sec. 3).

    The scales, minus their mean, are quantized to int8 with one float32
    absmax per ``blocksize`` (256) of them.

    Returns:
        ``(codes, nested_absmax, offset)``: int8 (nblocks,), float32
        (ceil(nblocks / blocksize),), and the float32 mean (a 0-d array).
    """
    xp = backend.get_array_module(absmax)
    a = absmax.astype(np.float64)
    offset = a.mean() if a.size else xp.zeros(())
    centered = xp.zeros(-(-a.size // blocksize) * blocksize)
    centered[:a.size] = a - offset
    blocks = centered.reshape(-1, blocksize)
    nested = xp.abs(blocks).max(axis=1)
    scale = xp.where(nested > 0, 127.0 / xp.where(nested > 0, nested, 1.0), 0.0)
    codes = xp.rint(blocks * scale[:, None]).reshape(-1)[:a.size].astype(np.int8)
    return codes, nested.astype(np.float32), xp.asarray(offset, dtype=np.float32)


def dequantize_absmax(codes, nested_absmax, offset, blocksize: int = NESTED_BLOCKSIZE,
                      blocks=slice(None)):
    """The block scales back from :func:`quantize_absmax` (float32, of ``blocks``)."""
    xp = backend.get_array_module(codes)
    index = xp.arange(codes.size)[blocks]
    scale = nested_absmax.astype(np.float32)[index // blocksize] / np.float32(127)
    return codes[index].astype(np.float32) * scale + offset.astype(np.float32)


# ------------------------------------------------------------ the GPU kernels
_SCALE_DTYPES = (np.float32, np.float64)     # the scales: float32, or float64 after .to()

#: One output number of :func:`dequantize_4bit` per GPU thread: the byte, its nibble,
#: the level, times the block's scale; no temporary array.
DEQUANTIZE_4BIT = backend.elementwise_kernel(
    "dequantize_4bit",
    "raw uint8 packed, raw S absmax, raw S levels, int64 start, int64 blocksize",
    "T w",
    "const long long j = start + i;"
    "const unsigned char pair = packed[j >> 1];"
    "const int code = (j & 1) ? (pair & 15) : (pair >> 4);"
    "w = (T)(levels[code] * absmax[j / blocksize]);",
    types={"T": backend.FUSED_DTYPES, "S": _SCALE_DTYPES},
    scalars=("start", "blocksize"))

#: int8 codes of whole rows times their row's absmax / 127.
DEQUANTIZE_INT8 = backend.elementwise_kernel(
    "dequantize_int8",
    "int8 q, raw S absmax, int64 cols",
    "T w",
    "w = (T)((S)q * (absmax[i / cols] / (S)127));",
    types={"T": backend.FUSED_DTYPES, "S": _SCALE_DTYPES},
    scalars=("cols",))


# ------------------------------------------------------------------- bytes
def quantized_bytes(shape, scheme: str, *, blocksize: int = BLOCKSIZE,
                    double_quant: bool = False, nested_blocksize: int = NESTED_BLOCKSIZE) -> int:
    """The bytes a weight of ``shape`` (out, in) takes stored as ``scheme``
    ("float32", "float16", "int8", "4bit"): exactly what the layers of
    :mod:`minigrad.nn.quantized` hold (codes, scales, nested scales, mean)."""
    n = math.prod(shape)
    if scheme in ("float32", "float16", "bfloat16", "float64"):
        return n * np.dtype("float16" if scheme == "bfloat16" else scheme).itemsize
    if scheme == "int8":
        return n + 4 * shape[0]
    if scheme == "4bit":
        blocks = -(-n // blocksize)
        if not double_quant:
            return -(-n // 2) + 4 * blocks
        return -(-n // 2) + blocks + 4 * -(-blocks // nested_blocksize) + 4
    raise ValueError(f"quantized_bytes: scheme must be float32, float16, int8 or 4bit, "
                     f"got {scheme!r}")


def relative_error(weight, approximation) -> float:
    """‖W - Ŵ‖_F / ‖W‖_F, in float64."""
    w = backend.asnumpy(weight).astype(np.float64)
    a = backend.asnumpy(approximation).astype(np.float64)
    return float(np.linalg.norm(w - a) / np.linalg.norm(w))


__all__ = ["NF4_LEVELS", "FP4_LEVELS", "INT4_LEVELS", "LEVELS", "BLOCKSIZE",
           "NESTED_BLOCKSIZE", "normal_float_levels", "levels_of", "nearest_level",
           "quantize_int8_rowwise", "dequantize_int8_rowwise", "quantize_4bit",
           "dequantize_4bit", "quantize_absmax", "dequantize_absmax", "quantized_bytes",
           "relative_error"]
