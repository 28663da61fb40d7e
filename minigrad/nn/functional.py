"""Functional forms of the layers and losses (``torch.nn.functional`` names).

Every function takes Tensors and returns a Tensor; the layers in
:mod:`minigrad.nn` call these.  Shapes: N is the batch size, C the number of
classes or channels, ``*`` any number of further axes.
"""
from __future__ import annotations

import numbers
import warnings

import numpy as np

from .. import backend
from ..arguments import check_bool, check_int
from .. import random as _random
from ..dtypes import check_layer_dtype
from ..functions import elementwise as E
from ..functions import softmax as SM
from ..functions import activation as A
from ..functions.activation import GELU
from ..functions.dropout import DropoutFunction, scaled_mask
from ..functions.embedding import EmbeddingFunction
from ..functions.linear import LinearFunction
from ..functions.loss import BCEWithLogits, CrossEntropy, NLLLoss, check_reduction
from ..tensor import Tensor


def _tensor(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    return x


def _index_array(ids, device):
    """Integer ids (Tensor, array or list) as an array on ``device``."""
    if isinstance(ids, Tensor):
        ids = ids.data
    if not backend.is_array(ids):
        ids = np.asarray(ids)
    return backend.to_device(ids, device)


# ---------------------------------------------------------------- activations
def relu(x: Tensor, inplace: bool = False) -> Tensor:
    """max(x, 0) elementwise; gradient 0 at 0 (as PyTorch).  ``inplace=True``
    writes the result into ``x`` and returns ``x`` (see :func:`_in_place`)."""
    return _in_place(x, E.ReLU()(_tensor(x, "relu")), inplace)


def tanh(x: Tensor) -> Tensor:
    return E.Tanh()(_tensor(x, "tanh"))


def sigmoid(x: Tensor) -> Tensor:
    """1 / (1 + exp(-x)), computed without overflow; same shape and dtype as x.

    Results below float32's smallest normal number (x < -87 or so) may be 0 on
    the GPU where the CPU gives a subnormal: the absolute error is at most
    ``numpy.finfo(float32).tiny`` (≈ 1.18e-38) on every device
    (:class:`minigrad.functions.elementwise.Sigmoid`)."""
    return E.Sigmoid()(_tensor(x, "sigmoid"))


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """GELU: x·Φ(x) (exact, erf form, PyTorch's default) or its tanh
    approximation with ``approximate="tanh"``.  See
    :class:`minigrad.functions.activation.GELU`."""
    return GELU(approximate)(_tensor(x, "gelu"))


def softmax(x: Tensor, dim: int = -1, *, dtype=None, axis=None) -> Tensor:
    """exp(x) / Σ exp(x) along ``dim`` (or ``axis``; stable: the maximum is
    subtracted); ``x`` is cast to ``dtype`` first when given."""
    x = _tensor(x, "softmax") if dtype is None else _tensor(x, "softmax").to(dtype=dtype)
    return SM.Softmax(dim if axis is None else axis)(x)


def log_softmax(x: Tensor, dim: int = -1, *, dtype=None, axis=None) -> Tensor:
    """x - logsumexp(x) along ``dim`` (or ``axis``; stable, finite for -inf
    entries in a row with a finite one); ``x`` is cast to ``dtype`` first when given."""
    x = _tensor(x, "log_softmax") if dtype is None else \
        _tensor(x, "log_softmax").to(dtype=dtype)
    return SM.LogSoftmax(dim if axis is None else axis)(x)


def softmin(x: Tensor, dim: int = -1, *, dtype=None, axis=None) -> Tensor:
    """softmax(-x) along ``dim``: the smallest entry gets the largest weight."""
    return softmax(-_tensor(x, "softmin"), dim, dtype=dtype, axis=axis)


def silu(x: Tensor, inplace: bool = False) -> Tensor:
    """x·σ(x) ("swish"); see :class:`minigrad.functions.activation.SiLU`."""
    return _in_place(x, A.SiLU()(_tensor(x, "silu")), inplace)


def leaky_relu(x: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    """x for x > 0, negative_slope·x otherwise."""
    if isinstance(negative_slope, (bool, np.bool_)) or not isinstance(negative_slope,
                                                                       numbers.Real):
        raise TypeError(f"leaky_relu: negative_slope must be a number, got "
                        f"{type(negative_slope).__name__} {negative_slope!r}")
    return _in_place(x, A.LeakyReLU(negative_slope)(_tensor(x, "leaky_relu")), inplace)


def elu(x: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    """x for x > 0, alpha·(exp(x) - 1) otherwise (Clevert et al. 2016)."""
    return _in_place(x, A.ELU(alpha)(_tensor(x, "elu")), inplace)


def softplus(x: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    """(1/beta)·log(1 + exp(beta·x)); x itself where beta·x > threshold."""
    return A.Softplus(beta, threshold)(_tensor(x, "softplus"))


def hardtanh(x: Tensor, min_val: float = -1.0, max_val: float = 1.0,
             inplace: bool = False) -> Tensor:
    """x clipped to [min_val, max_val] (gradient 1 strictly inside, else 0)."""
    if min_val > max_val:
        raise ValueError(f"hardtanh: min_val ({min_val}) must not exceed max_val ({max_val})")
    return _in_place(x, A.Hardtanh(min_val, max_val)(_tensor(x, "hardtanh")), inplace)


def relu6(x: Tensor, inplace: bool = False) -> Tensor:
    """min(max(x, 0), 6): hardtanh(x, 0, 6)."""
    return _in_place(x, A.Hardtanh(0.0, 6.0)(_tensor(x, "relu6")), inplace)


def mish(x: Tensor, inplace: bool = False) -> Tensor:
    """x·tanh(softplus(x)) (Misra 2019)."""
    return _in_place(x, A.Mish()(_tensor(x, "mish")), inplace)


def hardswish(x: Tensor, inplace: bool = False) -> Tensor:
    """x·relu6(x + 3)/6 (Howard et al. 2019)."""
    return _in_place(x, A.Hardswish()(_tensor(x, "hardswish")), inplace)


def logsigmoid(x: Tensor) -> Tensor:
    """log σ(x), stable for large |x|."""
    return A.LogSigmoid()(_tensor(x, "logsigmoid"))


def _in_place(x: Tensor, out: Tensor, inplace: bool) -> Tensor:
    """PyTorch's ``inplace=True`` of an activation: ``x`` takes the values of
    ``out`` (``x.copy_(out)``) and is returned; the gradient still flows
    through the activation to ``x``'s old value.  As every in-place
    operation (:mod:`minigrad.inplace`), it raises RuntimeError on a leaf
    that requires grad, or on a view, while gradients are recorded."""
    return x.copy_(out) if inplace else out


# ------------------------------------------------------------ shape helpers
def pad(input: Tensor, pad, mode: str = "constant", value=None) -> Tensor:  # noqa: A002
    """Pad the last dimensions: ``pad = (left, right)`` for the last one,
    ``(left, right, top, bottom)`` for the last two, and so on (PyTorch's
    order).  ``mode``: "constant" (filled with ``value``, default 0),
    "reflect" (mirrored without the edge), "replicate" (the edge repeated),
    "circular" (wrapped around).  See :class:`minigrad.functions.shape.Pad`.

    A negative amount in "constant" mode removes that many entries from
    that side (PyTorch's cropping).

    Raises ValueError for an odd-length or too long ``pad``, an unknown mode,
    negative padding in another mode or one that leaves a negative size,
    or a reflect padding not smaller than the dimension.
    """
    from ..functions.shape import Pad  # noqa: PLC0415
    _check_pad(_tensor(input, "pad"), pad, mode, value)
    return Pad(pad, mode, 0.0 if value is None else value)(input)


def _check_pad(x, pad, mode, value):
    """F.pad's arguments, with PyTorch's rules (the sizes are checked by Pad)."""
    if not isinstance(pad, (tuple, list)) or any(
            isinstance(p, (bool, np.bool_)) or not isinstance(p, (int, np.integer))
            for p in pad):
        raise TypeError(f"pad: pad must be a tuple of ints, got {pad!r}")
    if mode == "constant":
        if value is not None and (isinstance(value, (bool, np.bool_)) or not isinstance(
                value, numbers.Real)):
            raise TypeError(f"pad: value must be a number, got {type(value).__name__} "
                            f"{value!r}")
        return
    if value is not None:
        raise ValueError(f'pad: padding mode "{mode}" doesn\'t take in value argument '
                         f"(got value={value!r}); value only applies to mode='constant'")
    k = len(pad) // 2
    if len(pad) % 2 == 0 and k in (1, 2, 3) and x.ndim not in (k + 1, k + 2):
        raise ValueError(f"pad: {mode} padding of {k} dimension(s) (pad of length "
                         f"{len(pad)}) needs a {k + 1}-D or {k + 2}-D input, got shape "
                         f"{x.shape}")
    if len(pad) % 2 == 0 and k > 3:
        raise ValueError(f"pad: {mode} padding supports 1 to 3 padded dimensions, got pad "
                         f"{tuple(pad)}")
    if mode == "circular":
        for i in range(min(k, x.ndim)):
            n = x.shape[x.ndim - 1 - i]
            if max(pad[2 * i], pad[2 * i + 1]) > n:
                raise ValueError(f"pad: circular padding {tuple(pad)} wraps around more "
                                 f"than once a dimension of size {n}; each pad must be at "
                                 f"most the size")


def one_hot(tensor, num_classes: int = -1) -> Tensor:
    """Integer class ids of any shape -> int64 one-hot vectors of shape
    ids.shape + (num_classes,); num_classes = -1 takes max(ids) + 1.

    Raises ValueError for a negative id or one >= num_classes, TypeError for
    non-integer ids."""
    ids = _index_array(tensor, tensor.device if isinstance(tensor, Tensor) else "cpu")
    if ids.dtype.kind not in "iu":
        raise TypeError(f"one_hot: class ids must be integers, got dtype {ids.dtype}")
    check_int("one_hot", "num_classes", num_classes)
    xp = backend.get_array_module(ids)
    if num_classes == -1:
        num_classes = int(ids.max()) + 1 if ids.size else 0
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= num_classes):
        raise ValueError(f"one_hot: class ids must lie in [0, {num_classes}), got values "
                         f"from {int(ids.min())} to {int(ids.max())}")
    return Tensor((ids[..., None] == xp.arange(num_classes)).astype(np.int64))


def normalize(input: Tensor, p: float = 2.0, dim: int = 1, eps: float = 1e-12) -> Tensor:  # noqa: A002
    """x / max(‖x‖_p, eps) along ``dim`` (``torch.nn.functional.normalize``)."""
    from ..linalg import vector_norm  # noqa: PLC0415
    norm = vector_norm(_tensor(input, "normalize"), p, dim, True)
    return input / norm.clip(min=eps)


# --------------------------------------------------------------------- layers
def _bilinear_uint8(input, sizes, scales, align_corners):
    """Bilinear resizing of a uint8 image as PyTorch's CPU kernel does it: one
    pass per spatial dim, the last (width) first, each with weights in 16-bit
    fixed point and the sum rounded back to uint8 (so results agree with
    PyTorch to the last unit, not only within ±1)."""
    out = np.asarray(input.detach().numpy()).astype(np.int64)
    for dim in (3, 2):
        n_in, n_out = out.shape[dim], sizes[dim - 2]
        if n_in == n_out:
            continue
        if align_corners:
            step = (n_in - 1) / (n_out - 1) if n_out > 1 else 0.0
        else:
            step = scales[dim - 2]          # input size / output size, or 1/scale_factor
        delta = 0.5 if align_corners else 0.0
        rows = []
        wt_max = 0.0
        for i in range(n_out):
            center = step * (i + 0.5 - delta)
            lo = max(int(center - 1.0 + 0.5 + delta), 0)
            hi = min(int(center + 1.0 + 0.5 + delta), n_in)
            hi = min(hi, lo + 2)
            idx = np.arange(lo, max(hi, lo))
            w = np.maximum(0.0, 1.0 - np.abs(idx - center + 0.5 - delta))
            total = w.sum()
            if total != 0.0:
                w = w / total
                wt_max = max(wt_max, float(w.max()))
            rows.append((idx, w))
        precision = 0
        while precision < 22 and int(0.5 + wt_max * (1 << (precision + 1))) < (1 << 15):
            precision += 1
        moved = np.moveaxis(out, dim, -1)
        acc = np.full(moved.shape[:-1] + (n_out,), 1 << (precision - 1) if precision else 0,
                      dtype=np.int64)
        for i, (idx, w) in enumerate(rows):
            v = w * (1 << precision)
            wi = np.where(v < 0, v - 0.5, v + 0.5).astype(np.int64)
            for k, j in enumerate(idx):
                acc[..., i] += wi[k] * moved[..., j]
        out = np.moveaxis(np.clip(acc >> precision, 0, 255), -1, dim)
    return Tensor(out.astype(np.uint8))


def interpolate(input: Tensor, size=None, scale_factor=None, mode: str = "nearest",  # noqa: A002
                align_corners=None, recompute_scale_factor=None, antialias=False) -> Tensor:
    """Resize the spatial dimensions of (N, C, L), (N, C, H, W) or (N, C, D, H, W)
    inputs (``torch.nn.functional.interpolate``).

    Give ``size`` (an int or one per spatial dimension) or ``scale_factor``.
    Each output position o reads the input at a source position, along one
    spatial dimension after the other; s = in/out, or 1/scale_factor when
    that is given (PyTorch's choice, unless ``recompute_scale_factor=True``):

    - "nearest": floor(o·s); "nearest-exact": floor((o + ½)·s) (any of 3-5-D);
    - "linear" (3-D), "bilinear" (4-D), "trilinear" (5-D): (o + ½)·s - ½
      (clamped at 0), or o·(in - 1)/(out - 1) with ``align_corners=True``,
      mixing the two neighbours linearly;
    - "area" (3-5-D): the mean over each output cell's window, adaptive
      average pooling (:func:`adaptive_avg_pool2d`);
    - "bicubic" (4-D): the same position (not clamped), mixing four
      neighbours (clamped to the edge) with Keys' cubic convolution weights,
      a = -0.75 as PyTorch (R. Keys, "Cubic convolution interpolation for
      digital image processing", IEEE Trans. ASSP 29(6), 1981, eq. 4).

    Built from ``index_select`` and products, so the gradient flows back
    through them.  Output dtype and device are the input's.

    Raises ValueError for both or neither of size and scale_factor, an
    unknown mode (the message names the supported ones), a mode on an input
    of the wrong number of dimensions, align_corners with a nearest mode,
    recompute_scale_factor with size, or antialias=True (not supported).
    """
    if mode == "area":          # the mean over each output cell: adaptive average pooling
        from .functional_more import interpolate_area  # noqa: PLC0415
        return interpolate_area(input, size, scale_factor, align_corners,
                                recompute_scale_factor, antialias)
    _check_interpolate(input, mode, align_corners, antialias)
    sizes, scales = _resize_plan(input, size, scale_factor, recompute_scale_factor)
    if input.dtype == np.uint8 and mode == "bilinear" and input.ndim == 4:
        return _bilinear_uint8(input, sizes, scales, align_corners)
    if input.dtype.kind in "biu" and not mode.startswith("nearest"):
        # integer images (uint8): mixed in float32, rounded back, as PyTorch
        out = interpolate(input.float(), sizes, None, mode, align_corners, None, antialias)
        info = np.iinfo(input.dtype) if input.dtype.kind != "b" else None
        data = out.detach()._data.round()
        if info is not None:
            data = data.clip(info.min, info.max)
        return Tensor(data.astype(input.dtype))
    out = input
    for k, (n_out, scale) in enumerate(zip(sizes, scales)):
        dim = 2 + k
        taps = _resize_taps(mode, input.shape[dim], n_out, scale, align_corners)
        if mode.startswith("nearest"):
            out = out.index_select(dim, taps[0][0])
            continue
        shape = [1] * input.ndim
        shape[dim] = n_out
        mixed = None
        for index, weight in taps:
            w = backend.to_device(weight.reshape(shape).astype(input.dtype), input.device)
            term = out.index_select(dim, index) * w
            mixed = term if mixed is None else mixed + term
        out = mixed
    return out


def _resize_taps(mode, n_in, n_out, scale, align_corners):
    """[(input positions, weights)], each of length n_out: output o of one
    spatial dimension is the sum over the taps of weight[o] · input[index[o]]
    (PyTorch's source positions and weights; nearest modes: one tap, no weight)."""
    o = np.arange(n_out)
    if mode in ("nearest", "nearest-exact"):
        shift = 0.5 if mode == "nearest-exact" else 0.0
        return [(np.minimum(np.floor((o + shift) * scale).astype(np.int64), n_in - 1), None)]
    if align_corners:
        pos = o * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        pos = (o + 0.5) * scale - 0.5
        if mode != "bicubic":
            pos = np.maximum(pos, 0.0)
    low = np.floor(pos).astype(np.int64)
    t = pos - low
    if mode == "bicubic":
        weights = (_cubic_far(t + 1), _cubic_near(t), _cubic_near(1 - t), _cubic_far(2 - t))
        return [(np.clip(low + k, 0, n_in - 1), w) for k, w in zip((-1, 0, 1, 2), weights)]
    low = np.minimum(low, n_in - 1)
    return [(low, 1 - t), (np.minimum(low + 1, n_in - 1), t)]


CUBIC_A = -0.75          # PyTorch's (and OpenCV's) choice of Keys' parameter a


def _cubic_near(x, a=CUBIC_A):
    """Keys' kernel for |x| <= 1: (a + 2)|x|³ - (a + 3)|x|² + 1."""
    return ((a + 2) * x - (a + 3)) * x * x + 1


def _cubic_far(x, a=CUBIC_A):
    """Keys' kernel for 1 < |x| < 2: a|x|³ - 5a|x|² + 8a|x| - 4a."""
    return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a


_RESIZE_DIMS = {"nearest": (3, 4, 5), "nearest-exact": (3, 4, 5), "area": (3, 4, 5),
                "linear": (3,),
                "bilinear": (4,), "bicubic": (4,), "trilinear": (5,)}


def _check_interpolate(x, mode, align_corners, antialias):
    """interpolate's arguments, with PyTorch's rules."""
    _tensor(x, "interpolate")
    if mode not in _RESIZE_DIMS:
        raise ValueError(f"interpolate: mode must be one of "
                         f"{', '.join(repr(m) for m in _RESIZE_DIMS)}, got {mode!r}")
    if x.ndim not in _RESIZE_DIMS[mode]:
        wanted = " or ".join(f"{n}-D" for n in _RESIZE_DIMS[mode])
        raise ValueError(f"interpolate: {mode} needs a {wanted} input ((N, C) and "
                         f"{'/'.join(str(n - 2) for n in _RESIZE_DIMS[mode])} spatial "
                         f"dimensions), got shape {x.shape}")
    if align_corners is not None:
        check_bool("interpolate", "align_corners", align_corners)
    if (mode.startswith("nearest") or mode == "area") and align_corners is not None:
        raise ValueError("interpolate: align_corners only applies to the interpolating "
                         "modes 'linear', 'bilinear', 'bicubic' and 'trilinear'")
    if antialias:
        raise ValueError("interpolate: antialias=True is not supported (only "
                         "antialias=False)")


def _check_resize_sizes(spatial, sizes):
    """PyTorch's refusal of an empty input or output of interpolate."""
    if any(n <= 0 for n in sizes) or any(n <= 0 for n in spatial):
        raise ValueError(f"interpolate: input and output sizes should be greater than 0, "
                         f"but got input {tuple(spatial)} and output {tuple(sizes)}")


def _resize_plan(x, size, scale_factor, recompute_scale_factor=None):
    """(output sizes, input/output scales) of interpolate's spatial dimensions."""
    spatial = x.shape[2:]
    if (size is None) == (scale_factor is None):
        raise ValueError("interpolate: give exactly one of size and scale_factor")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("interpolate: recompute_scale_factor is not meaningful with an "
                             "explicit size")
        sizes = (size,) * len(spatial) if isinstance(size, (int, np.integer)) \
            else tuple(size)
        if len(sizes) != len(spatial):
            raise ValueError(f"interpolate: size {size} does not match the "
                             f"{len(spatial)} spatial dimensions of shape {x.shape}")
        if any(isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer))
               for n in sizes):
            raise TypeError(f"interpolate: size must be an int or a tuple of ints, got "
                            f"{size!r}")
        _check_resize_sizes(spatial, sizes)
        return sizes, [n / m for n, m in zip(spatial, sizes)]
    factors = (scale_factor,) * len(spatial) \
        if isinstance(scale_factor, (int, float, np.number)) else tuple(scale_factor)
    if len(factors) != len(spatial):
        raise ValueError(f"interpolate: scale_factor {scale_factor} does not match the "
                         f"{len(spatial)} spatial dimensions of shape {x.shape}")
    if any(isinstance(f, (bool, np.bool_)) or not isinstance(f, (int, float, np.number))
           or not f > 0 for f in factors):
        raise ValueError(f"interpolate: scale_factor must be positive numbers, got "
                         f"{scale_factor!r}")
    sizes = [int(np.floor(n * f)) for n, f in zip(spatial, factors)]
    _check_resize_sizes(spatial, sizes)
    if recompute_scale_factor:
        return sizes, [n / m for n, m in zip(spatial, sizes)]
    return sizes, [1 / f for f in factors]


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """y = x Wᵀ + b: x (*, in), weight (out, in), bias (out,) or None -> (*, out).

    One fused Function.  Raises ValueError when x's last axis is not ``in``,
    TypeError when x's dtype is not the weight's and bias's (PyTorch raises
    too; see :mod:`minigrad.dtypes`).
    """
    if not isinstance(x, Tensor):
        _tensor(x, "linear")                # raises
    dtype = x._data.dtype
    if weight._data.dtype != dtype or (bias is not None and bias._data.dtype != dtype):
        check_layer_dtype("linear", x, weight=weight, bias=bias)
    if bias is None:
        return LinearFunction()(x, weight)
    return LinearFunction()(x, weight, bias)


def embedding(ids, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` (num_embeddings, dim) picked by integer ``ids`` (any
    shape; Tensor, array or list) -> ids.shape + (dim,).

    Repeated ids add up in backward; row ``padding_idx`` gets no gradient.
    Raises ValueError naming an id outside [0, num_embeddings), for a weight
    that is not 2-D and for a padding_idx outside [-num_embeddings,
    num_embeddings) (a negative one counts from the end), as PyTorch.
    """
    _tensor(weight, "embedding")
    if weight.ndim != 2:
        raise ValueError(f"embedding: 'weight' must be 2-D (num_embeddings, dim), got shape "
                         f"{weight.shape}")
    if padding_idx is not None:
        n = weight.shape[0]
        if isinstance(padding_idx, (bool, np.bool_)) or not isinstance(
                padding_idx, (int, np.integer)) or not -n <= padding_idx < n:
            raise ValueError(f"embedding: padding_idx must be an int within num_embeddings "
                             f"[-{n}, {n}), got {padding_idx!r}")
        padding_idx = int(padding_idx) % n
    ids = _index_array(ids, weight.device)
    return EmbeddingFunction(ids, padding_idx)(weight)


def _check_p(p):
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0.0 <= p < 1.0:
        raise ValueError(f"dropout: probability p must lie in [0, 1), got {p!r}")


def dropout_uniforms(shape, device, generator=None, example_index=None, step=0,
                     layer_id=0):
    """The uniform numbers in [0, 1) that decide a dropout mask of ``shape``.

    * ``example_index`` given (integers, one per example along axis 0): value
      [n, j] is ``hash_uniform(seed, step, layer_id, example_index[n], j)``,
      j the flat position within the example: a pure function of the example,
      so any split of the batch into micro-batches draws the same values.
    * ``generator`` given: drawn from that ``numpy.random.Generator``.
    * otherwise: the global hash stream, whose counter advances by the number
      of values drawn (:func:`minigrad.random.global_hash_uniform`).
    """
    if example_index is not None:
        xp = backend.array_module(device)
        idx = _index_array(example_index, device).reshape(-1)
        if len(shape) == 0 or idx.shape[0] != shape[0]:
            raise ValueError(f"dropout: example_index has {idx.shape[0]} entries but the "
                             f"input of shape {tuple(shape)} has "
                             f"{shape[0] if shape else 0} examples along axis 0")
        per_example = int(np.prod(shape[1:], dtype=np.int64))
        positions = xp.arange(per_example, dtype=xp.uint64)
        u = _random.hash_uniform(xp, _random.initial_seed(), step, layer_id,
                                 idx[:, None], positions[None, :])
        return u.reshape(shape)
    if generator is not None:
        return backend.to_device(generator.random(shape), device)
    return _random.global_hash_uniform(shape, device)


def dropout(x: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False, *,
            generator=None, example_index=None, step: int = 0, layer_id: int = 0) -> Tensor:
    """Inverted dropout: zero each entry with probability ``p`` and scale the
    rest by 1/(1-p); the identity when ``training`` is False or p = 0.

    Args:
        x: any shape, floating.
        p: drop probability in [0, 1).
        inplace: write the result into ``x`` and return ``x`` (see
            :func:`_in_place`).
        generator: draw from this ``numpy.random.Generator`` instead.
        example_index, step, layer_id: per-example masks, see
            :func:`dropout_uniforms` and :class:`minigrad.nn.Dropout`.

    Raises ValueError for p outside [0, 1) or an example_index whose length
    is not x.shape[0].
    """
    _tensor(x, "dropout")
    _check_p(p)
    check_bool("dropout", "training", training)
    check_bool("dropout", "inplace", inplace)
    if not training or p == 0.0:
        return x
    u = dropout_uniforms(x.shape, x.device, generator, example_index, step, layer_id)
    # float(p): a NumPy float64 p would make the scale, and the result, float64
    return _in_place(x, DropoutFunction(scaled_mask(u, float(p), x.dtype))(x), inplace)


# --------------------------------------------------------------------- losses
def _no_legacy_reduction(name, size_average, reduce):
    """PyTorch's deprecated ``size_average``/``reduce`` keep their positions in
    the argument list, so that positional calls bind as in PyTorch, but are
    not supported."""
    if size_average is not None or reduce is not None:
        raise TypeError(f"{name}: size_average and reduce are deprecated in PyTorch and "
                        f"not supported; use reduction='mean' | 'sum' | 'none'")


def _class_weight(weight, reference, name):
    """Loss weights (Tensor, array or list of numbers) as an array on the
    device of ``reference``, or None.  They are constants: a weight that
    requires grad raises RuntimeError (PyTorch has no gradient for them either)."""
    if weight is None:
        return None
    if isinstance(weight, Tensor):
        if weight.requires_grad:
            raise RuntimeError(f"{name}: the class weights get no gradient; pass "
                               "weight.detach()")
        if weight.device != reference.device:
            raise RuntimeError(f"{name}: weight is on {weight.device} but the input is on "
                               f"{reference.device}; move it with .to(device)")
        return weight.data
    array = backend.as_array(weight)
    if array.dtype.kind in "iub":
        array = array.astype(reference.dtype)
    return backend.to_device(array, reference.device)


def cross_entropy(logits: Tensor, target, weight=None, size_average=None,
                  ignore_index: int = -100, reduce=None, reduction: str = "mean",
                  label_smoothing: float = 0.0) -> Tensor:
    """Cross-entropy of logits against integer class targets (log-softmax and NLL
    fused into one Function, :class:`minigrad.functions.loss.CrossEntropy`).

    Shapes: logits (N, C) or (N, C, d1, ...); target (N,) or (N, d1, ...)
    integers (Tensor, array or list).  Output: a scalar ("mean", "sum") or the
    target's shape ("none").

    "mean" divides by the number of targets not equal to ``ignore_index``;
    when every target is ignored that is 0/0 = nan, as in PyTorch.
    ``label_smoothing`` ε mixes the one-hot target with the uniform
    distribution: (1-ε)·onehot + ε/C (PyTorch's definition).

    ``weight`` (C,) rescales class c's terms by w[c]; "mean" then divides by
    the summed weight of the kept targets, Σ_i w[y_i], not by their number
    (PyTorch's normalization, also with label smoothing).  With gradient
    accumulation the window's weighted mean is exact when every micro-batch
    passes ``num_items=`` its own Σ_i w[y_i] (a float).

    The arguments come in PyTorch's order; ``size_average`` and ``reduce``
    (deprecated in PyTorch) must stay None: use ``reduction``.

    Raises:
        ValueError: a target outside [0, C) that is not ``ignore_index`` (the
            message names the value and C), mismatched shapes, an unknown
            reduction, label_smoothing outside [0, 1], a weight not of shape (C,).
        TypeError: a non-integer target or a non-floating weight, or
            ``size_average``/``reduce`` given.
        RuntimeError: a weight that requires grad or lives on another device.
    """
    _tensor(logits, "cross_entropy")
    _no_legacy_reduction("cross_entropy", size_average, reduce)
    if not (isinstance(target, Tensor) and target.dtype.kind in "iu") \
            and _is_probabilities(target, logits):
        return _soft_cross_entropy(logits, target, weight, reduction, label_smoothing)
    # (Without CuPy loaded every tensor is on the CPU: no device to compare.)
    if not (isinstance(target, Tensor)
            and (backend._cupy is None or target.device == logits.device)):
        target = Tensor(_index_array(target, logits.device))
    w = _class_weight(weight, logits, "cross_entropy")
    return CrossEntropy(ignore_index, reduction, label_smoothing, w)(logits, target)


def _is_probabilities(target, logits) -> bool:
    """A floating target of the logits' shape holds class probabilities."""
    dtype = target.dtype if hasattr(target, "dtype") else np.asarray(target).dtype
    return np.dtype(dtype).kind == "f" and tuple(np.shape(target) if not hasattr(
        target, "shape") else target.shape) == logits.shape


def _soft_cross_entropy(logits, target, weight, reduction, label_smoothing):
    """Cross-entropy against class probabilities p (N, C, ...), PyTorch's form:
    loss_n = -Σ_c w_c·p_nc·log_softmax(x)_nc, with p mixed as (1-ε)·p + ε/C
    for label smoothing; "mean" divides by the number of rows N·d1·...
    (not by the weights).  The target may require grad."""
    check_reduction("cross_entropy", reduction)
    if not 0.0 <= label_smoothing <= 1.0:
        raise ValueError(f"cross_entropy: label_smoothing must lie in [0, 1], got "
                         f"{label_smoothing}")
    if not isinstance(target, Tensor):
        target = Tensor(backend.to_device(np.asarray(target, dtype=logits.dtype),
                                          logits.device))
    classes = logits.shape[1] if logits.ndim > 1 else logits.shape[0]
    dim = 1 if logits.ndim > 1 else 0
    if label_smoothing:
        target = target * (1 - label_smoothing) + label_smoothing / classes
    terms = target * SM.LogSoftmax(dim)(logits)
    w = _class_weight(weight, logits, "cross_entropy")
    if w is not None:
        shape = [1] * logits.ndim
        shape[dim] = classes
        terms = terms * Tensor(w.reshape(shape))
    loss = -terms.sum(dim)
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def nll_loss(log_probs: Tensor, target, weight=None, size_average=None,
             ignore_index: int = -100, reduce=None, reduction: str = "mean") -> Tensor:
    """Negative log-likelihood of log-probabilities (N, C) or (N, C, d1, ...) at
    integer targets (N, ...); arguments in PyTorch's order, reductions, class
    ``weight`` (C,) and errors as :func:`cross_entropy` ("mean" divides by
    Σ_i w[y_i])."""
    _tensor(log_probs, "nll_loss")
    _no_legacy_reduction("nll_loss", size_average, reduce)
    target = _index_array(target, log_probs.device)
    w = _class_weight(weight, log_probs, "nll_loss")
    return NLLLoss(ignore_index, reduction, w)(log_probs, target)


def mse_loss(input: Tensor, target, size_average=None, reduce=None,  # noqa: A002
             reduction: str = "mean", weight=None) -> Tensor:
    """Mean squared error (input - target)², reduced by "mean" | "sum" | "none".

    ``input`` and ``target`` broadcast together and each gets its gradient
    back in its own shape; both may require gradients.  When their shapes
    differ a UserWarning is issued, as in PyTorch: (N, 1) against (N,)
    broadcasts to (N, N), a classic silent bug.  ``weight`` (the input's
    shape) multiplies each squared error; "mean" is then Σ w·(x - y)² / Σ w
    (PyTorch's).

    Raises:
        ValueError: shapes that do not broadcast, a weight of another shape
            than the input, or an unknown reduction.
    """
    _no_legacy_reduction("mse_loss", size_average, reduce)
    check_reduction("mse_loss", reduction)
    _tensor(input, "mse_loss")
    try:
        diff = input - target
    except ValueError as error:     # the shapes do not broadcast
        raise ValueError(f"mse_loss: {error}") from None
    target_shape = target.shape if hasattr(target, "shape") else np.shape(target)
    if tuple(target_shape) != input.shape:
        warnings.warn(f"mse_loss: target shape {tuple(target_shape)} differs from input "
                      f"shape {input.shape}; they are broadcast together to "
                      f"{diff.shape}, which is likely not what you want (give both "
                      "the same shape)", UserWarning, stacklevel=2)
    squared = diff * diff
    if weight is not None:
        weight = _mse_weight(weight, input)
        squared = squared * weight
    if reduction == "none":
        return squared
    if reduction == "sum":
        return squared.sum()
    return squared.mean() if weight is None else squared.sum() / weight.sum()


def _mse_weight(weight, input):  # noqa: A002
    """mse_loss's weight as a Tensor of the input's shape (it may require grad)."""
    if not isinstance(weight, Tensor):
        weight = Tensor(backend.to_device(backend.as_array(weight).astype(input.dtype),
                                          input.device))
    if weight.shape != input.shape:
        raise ValueError(f"mse_loss: weight of shape {weight.shape} must have the input's "
                         f"shape {input.shape}")
    return weight


def binary_cross_entropy_with_logits(input: Tensor, target, weight=None,  # noqa: A002
                                     size_average=None, reduce=None,
                                     reduction: str = "mean", pos_weight=None) -> Tensor:
    """Binary cross-entropy on logits, in the log-sum-exp form that stays finite
    and accurate for logits of any size (±40 and beyond).

    ``loss = (1 - y)·x + (1 + (pos_weight - 1)·y)·(log(1 + exp(-|x|)) + max(-x, 0))``

    ``input`` (any shape), ``target`` (broadcastable, values in [0, 1]) and
    ``pos_weight`` (broadcastable, e.g. (C,)) may all require gradients.
    ``weight`` (broadcastable) rescales each element's loss, as PyTorch's
    ``weight=``; it is a constant (no gradient; one that requires grad raises
    RuntimeError).
    """
    _tensor(input, "binary_cross_entropy_with_logits")
    _no_legacy_reduction("binary_cross_entropy_with_logits", size_average, reduce)
    w = _class_weight(weight, input, "binary_cross_entropy_with_logits")
    fn = BCEWithLogits(reduction, w)
    if pos_weight is None:
        return fn(input, target)
    return fn(input, target, pos_weight)


def binary_cross_entropy(input: Tensor, target, weight=None, size_average=None,  # noqa: A002
                         reduce=None, reduction: str = "mean") -> Tensor:
    """Binary cross-entropy on probabilities p in [0, 1] (``torch.nn.functional.
    binary_cross_entropy``):

        loss = -w·(y·max(log p, -100) + (1 - y)·max(log(1 - p), -100))

    The logs are clamped at -100 as PyTorch does, so p = 0 or 1 gives a finite
    loss (100 at worst) and a finite gradient.  Prefer
    :func:`binary_cross_entropy_with_logits` on logits: it is exact where
    sigmoid saturates.

    Args:
        input: probabilities, any shape, floating.
        target: the same shape as ``input``, values in [0, 1] (a Tensor, which
            may require grad, or an array).
        weight: rescales each element; broadcastable to the input's shape
            (a constant: no gradient, as in PyTorch).
        reduction: "mean" | "sum" | "none".

    Raises:
        ValueError: target and input shapes differ, an input value outside
            [0, 1], a weight that does not broadcast, an unknown reduction.
        RuntimeError: a weight that requires grad.
    """
    from ..functions.loss import BCE  # noqa: PLC0415 (keeps the import block short)
    _tensor(input, "binary_cross_entropy")
    _no_legacy_reduction("binary_cross_entropy", size_average, reduce)
    target_shape = tuple(target.shape) if hasattr(target, "shape") else np.shape(target)
    if tuple(target_shape) != input.shape:
        raise ValueError(f"binary_cross_entropy: target of shape {tuple(target_shape)} "
                         f"differs from input of shape {input.shape}; give both the "
                         "same shape")
    if not isinstance(target, Tensor):
        target = Tensor(backend.to_device(backend.as_array(target, input.dtype), input.device))
    w = _class_weight(weight, input, "binary_cross_entropy")
    return BCE(reduction, w)(input, target)


# Functional forms of convolution, normalization and pooling: defined next to
# their layers, re-exported here under torch.nn.functional's names.
from .conv import conv1d, conv2d, conv_transpose2d  # noqa: E402  (after the definitions above: no import cycle)
from .normalization import batch_norm, group_norm, layer_norm  # noqa: E402
from .pooling import avg_pool2d, max_pool2d, max_unpool2d  # noqa: E402
from ..functions.attention import scaled_dot_product_attention  # noqa: E402,F401
from .functional_more import (adaptive_avg_pool1d, adaptive_avg_pool2d,  # noqa: E402,F401
                              avg_pool1d, celu, fold, hardsigmoid, huber_loss, kl_div,
                              l1_loss, max_pool1d, selu, smooth_l1_loss, unfold)
from .functional_extra import (cosine_embedding_loss, glu, hardshrink,  # noqa: E402,F401
                               hinge_embedding_loss, margin_ranking_loss,
                               multilabel_soft_margin_loss, pairwise_distance,
                               pixel_shuffle, pixel_unshuffle, poisson_nll_loss, prelu,
                               rms_norm, soft_margin_loss, softshrink, softsign, tanhshrink,
                               threshold, triplet_margin_loss)
