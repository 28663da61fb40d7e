"""More of ``torch.nn.functional``: the activations selu, celu and
hardsigmoid; the losses l1_loss, smooth_l1_loss, huber_loss and kl_div;
1-D pooling and adaptive average pooling; unfold and fold (im2col).
All are re-exported by :mod:`minigrad.nn.functional`.

Shapes: N is the batch size, C the number of channels, ``*`` any number of
further axes.  Pooling takes batched inputs (N, C, L) / (N, C, H, W) or
unbatched ones (C, L) / (C, H, W), as PyTorch does.
"""
from __future__ import annotations

import warnings

import numpy as np

from .. import backend
from ..functions import more_activations as MA
from ..functions.conv import check_windows, pair
from ..functions.elementwise import Where
from ..functions.fold import Fold, Unfold
from ..functions.loss import check_reduction
from ..tensor import Tensor


def _tensor(x, name):
    if not isinstance(x, Tensor):
        raise TypeError(f"{name}: expected a Tensor, got {type(x).__name__}")
    return x


# ---------------------------------------------------------------- activations
def selu(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """scale·elu(x, α) with α ≈ 1.6733, scale ≈ 1.0507 (Klambauer et al. 2017);
    any shape, floating.  ``inplace=True`` writes into ``input``."""
    out = MA.SELU()(_tensor(input, "selu"))
    return input.copy_(out) if inplace else out


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:  # noqa: A002
    """max(0, x) + min(0, α(exp(x/α) - 1)) (Barron 2017); any shape.
    Raises ValueError for alpha = 0."""
    out = MA.CELU(alpha)(_tensor(input, "celu"))
    return input.copy_(out) if inplace else out


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:  # noqa: A002
    """relu6(x + 3)/6, a piecewise-linear sigmoid; any shape."""
    out = MA.Hardsigmoid()(_tensor(input, "hardsigmoid"))
    return input.copy_(out) if inplace else out


# --------------------------------------------------------------------- losses
def _difference(name, input, target):  # noqa: A002
    """input - target, broadcast, after the checks these losses share; warns,
    as PyTorch does, when the shapes differ (broadcasting (N, 1) against
    (N,) to (N, N) is a classic silent bug)."""
    _tensor(input, name)
    try:
        diff = input - target
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    target_shape = tuple(target.shape) if hasattr(target, "shape") else np.shape(target)
    if tuple(target_shape) != input.shape:
        warnings.warn(f"{name}: target shape {tuple(target_shape)} differs from input shape "
                      f"{input.shape}; they are broadcast together to {diff.shape}, which is "
                      "likely not what you want (give both the same shape)", UserWarning,
                      stacklevel=3)
    return diff


def _weighted(name, loss, weight, input):  # noqa: A002
    """loss · weight, with ``weight`` of the input's shape (ValueError otherwise)."""
    if not isinstance(weight, Tensor):
        weight = Tensor(backend.to_device(backend.as_array(weight, input.dtype), input.device))
    if weight.shape != input.shape:
        raise ValueError(f"{name}: weight of shape {weight.shape} must have the input's "
                         f"shape {input.shape}")
    return loss * weight, weight


def _reduce(loss, reduction):
    if reduction == "none":
        return loss
    return loss.sum() if reduction == "sum" else loss.mean()


def _select(condition, a, b):
    """where(condition, a, b) for Tensors; ``condition`` an array (no gradient)."""
    return Where(condition)(a, b)


def l1_loss(input: Tensor, target, size_average=None, reduce=None,  # noqa: A002
            reduction: str = "mean", weight=None) -> Tensor:
    """Mean absolute error |input - target|, reduced by "mean" | "sum" | "none"
    (``torch.nn.functional.l1_loss``).  Input and target broadcast (with a
    UserWarning when their shapes differ); the gradient sign(input - target)
    is 0 where they are equal.  ``weight`` (the input's shape) multiplies
    each error; "mean" is then Σ w·|d| / Σ w (PyTorch's).

    Raises ValueError for shapes that do not broadcast, a weight of another
    shape, or an unknown reduction.
    """
    _no_legacy("l1_loss", size_average, reduce)
    check_reduction("l1_loss", reduction)
    loss = _difference("l1_loss", input, target).abs()
    if weight is None:
        return _reduce(loss, reduction)
    loss, weight = _weighted("l1_loss", loss, weight, input)
    return loss.sum() / weight.sum() if reduction == "mean" else _reduce(loss, reduction)


def smooth_l1_loss(input: Tensor, target, size_average=None, reduce=None,  # noqa: A002
                   reduction: str = "mean", beta: float = 1.0) -> Tensor:
    """0.5·d²/beta where |d| < beta, else |d| - 0.5·beta, d = input - target
    (Girshick 2015, "Fast R-CNN", eq. 3; ``torch.nn.functional.smooth_l1_loss``).
    beta = 0 is the L1 loss.  Raises ValueError for beta < 0."""
    _no_legacy("smooth_l1_loss", size_average, reduce)
    check_reduction("smooth_l1_loss", reduction)
    if beta < 0:
        raise ValueError(f"smooth_l1_loss: beta must be >= 0, got {beta}")
    d = _difference("smooth_l1_loss", input, target)
    if beta == 0:
        return _reduce(d.abs(), reduction)
    inside = d.abs().data < beta
    loss = _select(inside, d * d * (0.5 / beta), d.abs() - 0.5 * beta)
    return _reduce(loss, reduction)


def huber_loss(input: Tensor, target, reduction: str = "mean",  # noqa: A002
               delta: float = 1.0, weight=None) -> Tensor:
    """0.5·d² where |d| < delta, else delta·(|d| - 0.5·delta), d = input - target
    (Huber 1964; ``torch.nn.functional.huber_loss``): smooth_l1_loss times
    delta.  ``weight`` (the input's shape) multiplies each element; "mean"
    stays the plain mean of the weighted losses (PyTorch's, unlike l1_loss).
    Raises ValueError for delta <= 0 or a weight of another shape."""
    check_reduction("huber_loss", reduction)
    if delta <= 0:
        raise ValueError(f"huber_loss: delta must be > 0, got {delta}")
    d = _difference("huber_loss", input, target)
    inside = d.abs().data < delta
    loss = _select(inside, d * d * 0.5, (d.abs() - 0.5 * delta) * delta)
    if weight is not None:
        loss, _ = _weighted("huber_loss", loss, weight, input)
    return _reduce(loss, reduction)


def kl_div(input: Tensor, target, size_average=None, reduce=None,  # noqa: A002
           reduction: str = "mean", log_target: bool = False) -> Tensor:
    """Kullback-Leibler divergence with ``input`` the log-probabilities of the
    model and ``target`` the probabilities (or log-probabilities with
    ``log_target=True``) of the data: pointwise
    target·(log target - input), 0 where target = 0 (``torch.nn.functional.kl_div``).

    reduction: "mean" (over all elements, PyTorch's default, which is not
    the divergence), "batchmean" (sum / N: the divergence per example),
    "sum" or "none".  Where target = 0, target·log(target) counts as 0 with
    gradient 0, so the gradient with respect to such a target is -input
    (a deliberate difference: PyTorch's is nan there, 0/0 in its ``xlogy``
    backward).  Raises ValueError for an unknown reduction.
    """
    _no_legacy("kl_div", size_average, reduce)
    if reduction not in ("mean", "batchmean", "sum", "none"):
        raise ValueError(f"kl_div: reduction must be 'mean', 'batchmean', 'sum' or 'none', "
                         f"got {reduction!r}")
    _tensor(input, "kl_div")
    if reduction == "mean":
        warnings.warn("kl_div: reduction='mean' divides the total by the batch size and by the "
                      "number of classes; 'batchmean' divides by the batch size only, the KL "
                      "divergence's definition (PyTorch warns likewise)", UserWarning,
                      stacklevel=2)
    if not isinstance(target, Tensor):
        target = Tensor(backend.to_device(backend.as_array(target, input.dtype), input.device))
    if log_target:
        loss = target.exp() * (target - input)
    else:
        zero = target.data == 0
        ones = Tensor(input._xp.ones((), dtype=target.dtype))
        safe = _select(zero, ones, target)                   # log(1) = 0 where target = 0
        loss = target * safe.log() - target * input
    if reduction == "batchmean":
        return loss.sum() / (input.shape[0] if input.ndim else 1)
    return _reduce(loss, reduction)


def _no_legacy(name, size_average, reduce):
    if size_average is not None or reduce is not None:
        raise ValueError(f"{name}: size_average and reduce are deprecated in PyTorch and "
                         f"not supported; use reduction='mean' | 'sum' | 'none'")


# -------------------------------------------------------------------- pooling
def _batched(name, x, spatial):
    """(x with a batch dimension, whether one was added): PyTorch accepts an
    unbatched (C, *spatial) input and returns an unbatched result."""
    _tensor(x, name)
    if x.ndim == spatial + 1:
        return x.unsqueeze(0), True
    if x.ndim != spatial + 2:
        raise ValueError(f"{name}: expected a {spatial + 1}-D (unbatched) or "
                         f"{spatial + 2}-D (batched) input, got shape {x.shape}")
    return x, False


def _single(value, name):
    """An int, or a 1-tuple of one, as an int (1-D pooling's arguments)."""
    if isinstance(value, (tuple, list)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {value!r}")
    return int(value)


def avg_pool1d(input: Tensor, kernel_size, stride=None, padding=0,  # noqa: A002
               ceil_mode=False, count_include_pad=True) -> Tensor:
    """Mean over windows of length K along L: (N, C, L) or (C, L) ->
    (N, C, OL) or (C, OL), OL = (L + 2·padding - K) // stride + 1
    (``torch.nn.functional.avg_pool1d``).  It is :func:`avg_pool2d` on a
    height-1 image; see there for the options and errors."""
    from .pooling import avg_pool2d  # noqa: PLC0415 (pooling imports functional)
    x, added = _batched("avg_pool1d", input, 1)
    k = _single(kernel_size, "avg_pool1d: kernel_size")
    s = k if stride is None else _single(stride, "avg_pool1d: stride")
    out = avg_pool2d(x.unsqueeze(2), (1, k), (1, s), (0, _single(padding, "avg_pool1d: "
                     "padding")), ceil_mode, count_include_pad).squeeze(2)
    return out.squeeze(0) if added else out


def max_pool1d(input: Tensor, kernel_size, stride=None, padding=0, dilation=1,  # noqa: A002
               ceil_mode=False, return_indices=False):
    """Maximum over windows of length K along L: (N, C, L) or (C, L) ->
    (N, C, OL) or (C, OL) (``torch.nn.functional.max_pool1d``); with
    ``return_indices=True`` also the int64 positions of the maxima along L.
    It is :func:`max_pool2d` on a height-1 image."""
    from .pooling import max_pool2d  # noqa: PLC0415
    x, added = _batched("max_pool1d", input, 1)
    if 0 in x.shape[1:]:
        raise ValueError(f"max_pool1d: expected (C, L) or (N, C, L) with C and L non-zero "
                         f"(only the batch may be empty), got shape {tuple(input.shape)}")
    k = _single(kernel_size, "max_pool1d: kernel_size")
    s = k if stride is None else _single(stride, "max_pool1d: stride")
    out = max_pool2d(x.unsqueeze(2), (1, k), (1, s),
                     (0, _single(padding, "max_pool1d: padding")),
                     (1, _single(dilation, "max_pool1d: dilation")), ceil_mode,
                     return_indices)
    if return_indices:
        values, indices = out
        values, indices = values.squeeze(2), indices.squeeze(2)
        return (values.squeeze(0), indices.squeeze(0)) if added else (values, indices)
    out = out.squeeze(2)
    return out.squeeze(0) if added else out


def adaptive_windows(n_in, n_out):
    """The (n_out, n_in) averaging matrix of adaptive pooling along one axis:
    output i is the mean of inputs floor(i·n_in/n_out) .. ceil((i+1)·n_in/n_out) - 1
    (PyTorch's windows; they overlap when n_out does not divide n_in)."""
    matrix = np.zeros((n_out, n_in))
    for i in range(n_out):
        start, stop = (i * n_in) // n_out, -(-((i + 1) * n_in) // n_out)
        matrix[i, start:stop] = 1.0 / (stop - start)
    return matrix


def adaptive_avg_pool(x: Tensor, sizes) -> Tensor:
    """Adaptive average pooling of the last ``len(sizes)`` dimensions of ``x``
    to ``sizes``, one axis after the other: each is a product with the
    constant :func:`adaptive_windows` matrix, so the gradient is exact.
    Raises TypeError for an integer or bool input (PyTorch refuses them too)."""
    if x.dtype.kind not in "fc":
        raise TypeError(f"adaptive average pooling needs a floating input, got dtype "
                        f"{x.dtype}; convert it with .float()")
    out = x
    for k, n_out in enumerate(sizes):
        dim = x.ndim - len(sizes) + k
        matrix = adaptive_windows(x.shape[dim], n_out).astype(x.dtype)
        windows = Tensor(backend.to_device(matrix.T.copy(), x.device))  # (n_in, n_out)
        out = (out.movedim(dim, -1) @ windows).movedim(-1, dim)
    return out


def interpolate_area(input, size, scale_factor, align_corners,  # noqa: A002
                     recompute_scale_factor, antialias) -> Tensor:
    """``F.interpolate(..., mode="area")``: each output cell is the mean of the
    input cells it covers, which is :func:`adaptive_avg_pool` to the output
    size (PyTorch computes it so too).  The arguments as interpolate's."""
    from .functional import _check_interpolate, _resize_plan  # noqa: PLC0415
    _check_interpolate(input, "area", align_corners, antialias)
    sizes, _ = _resize_plan(input, size, scale_factor, recompute_scale_factor)
    return adaptive_avg_pool(input, sizes)


def _output_sizes(name, x, output_size, spatial):
    sizes = (output_size,) * spatial if isinstance(output_size, (int, type(None))) \
        else tuple(output_size)
    if len(sizes) != spatial:
        raise ValueError(f"{name}: output_size {output_size!r} must be an int or "
                         f"{spatial} values")
    sizes = tuple(x.shape[x.ndim - spatial + k] if s is None else s
                  for k, s in enumerate(sizes))
    if any(isinstance(s, bool) or not isinstance(s, (int, np.integer)) or s < 0
           for s in sizes):
        raise ValueError(f"{name}: output_size must hold ints >= 0 (or None: the "
                         f"input's size), got {output_size!r}")
    return sizes


def adaptive_avg_pool2d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """Average pooling to a fixed output size (OH, OW), whatever the input's
    (``torch.nn.functional.adaptive_avg_pool2d``): (N, C, H, W) or (C, H, W)
    -> (N, C, OH, OW) or (C, OH, OW).  ``output_size``: an int or a pair,
    None keeping the input's size.  Output (i, j) averages rows
    floor(i·H/OH) .. ceil((i+1)·H/OH) - 1, likewise columns.

    Raises ValueError for an input that is not 3-D or 4-D or a bad output_size.
    """
    x, added = _batched("adaptive_avg_pool2d", input, 2)
    out = adaptive_avg_pool(x, _output_sizes("adaptive_avg_pool2d", x, output_size, 2))
    return out.squeeze(0) if added else out


def adaptive_avg_pool1d(input: Tensor, output_size) -> Tensor:  # noqa: A002
    """(N, C, L) or (C, L) -> (N, C, OL): see :func:`adaptive_avg_pool2d`."""
    x, added = _batched("adaptive_avg_pool1d", input, 1)
    out = adaptive_avg_pool(x, _output_sizes("adaptive_avg_pool1d", x, output_size, 1))
    return out.squeeze(0) if added else out


# ------------------------------------------------------------ unfold and fold
def _block_options(name, kernel_size, dilation, padding, stride):
    options = [pair(v, f"{name}: {label}") for v, label in
               ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"),
                (stride, "stride"))]
    return options


def unfold(input: Tensor, kernel_size, dilation=1, padding=0, stride=1) -> Tensor:  # noqa: A002
    """The sliding blocks of an image as columns, im2col
    (``torch.nn.functional.unfold``): (N, C, H, W) -> (N, C·KH·KW, L), or
    (C, H, W) -> (C·KH·KW, L), with L = OH·OW the number of blocks (OH as
    for a convolution with these options).  Column l holds block l
    (row-major over the OH×OW positions), channel slowest, then kernel row,
    kernel column.  A convolution is ``weight.view(O, -1) @ unfold(x)``.

    Raises ValueError for an input that is not 3-D or 4-D, options < 1
    (padding < 0), or a kernel larger than the padded input.
    """
    x, added = _batched("unfold", input, 2)
    kernel, dilation, padding, stride = _block_options("unfold", kernel_size, dilation,
                                                       padding, stride)
    out_hw = check_windows("unfold", x.shape[2:], kernel, stride, padding, dilation)
    out = Unfold(kernel, dilation, padding, stride, out_hw)(x)
    return out.squeeze(0) if added else out


def fold(input: Tensor, output_size, kernel_size, dilation=1, padding=0,  # noqa: A002
         stride=1) -> Tensor:
    """The inverse arrangement of :func:`unfold`, col2im
    (``torch.nn.functional.fold``): (N, C·KH·KW, L) -> (N, C, H, W), or
    (C·KH·KW, L) -> (C, H, W), with (H, W) = ``output_size``; entries of
    overlapping blocks are summed.  ``fold(unfold(x))`` is x times the
    number of blocks covering each pixel.

    Raises ValueError for an input that is not 2-D or 3-D, a dimension 1 not
    divisible by KH·KW, or an L that differs from the number of blocks that
    fit in ``output_size``.
    """
    x, added = _batched("fold", input, 1)
    kernel, dilation, padding, stride = _block_options("fold", kernel_size, dilation,
                                                       padding, stride)
    size = pair(output_size, "fold: output_size")
    out_hw = check_windows("fold", size, kernel, stride, padding, dilation)
    kk = kernel[0] * kernel[1]
    if x.shape[1] % kk:
        raise ValueError(f"fold: dimension 1 of the input ({x.shape[1]}) must be divisible "
                         f"by the kernel's size {kernel[0]}x{kernel[1]} = {kk}")
    if x.shape[2] != out_hw[0] * out_hw[1]:
        raise ValueError(f"fold: the input has {x.shape[2]} blocks (dimension 2), but "
                         f"output_size {size} with these options fits "
                         f"{out_hw[0]} x {out_hw[1]} = {out_hw[0] * out_hw[1]}")
    out = Fold(size, kernel, dilation, padding, stride, out_hw)(x)
    return out.squeeze(0) if added else out
