"""Normalization layers: BatchNorm1d, BatchNorm2d, LayerNorm, GroupNorm, and
exact BatchNorm running statistics under gradient accumulation.

Batch normalization and accumulation
------------------------------------
BatchNorm's running statistics are a side effect of the *training* forward
pass: every forward updates

    running_mean ← (1 - momentum) · running_mean + momentum · batch mean
    running_var  ← (1 - momentum) · running_var  + momentum · unbiased batch variance

When a batch is split into k micro-batches, the default (as in PyTorch) is one
such update **per micro-batch** with that micro-batch's statistics: the
"ghost batch" behaviour (Hoffer et al. 2017).  It is not the update of the full
batch.  For x = [1, 2, 4, 8] as [1, 2] + [4, 8], momentum 0.1, from
running_mean 0 and running_var 1:

* full batch, one update:       running_mean 0.375, running_var 1.858333...
* two micro-batch updates:      running_mean 0.735, running_var 1.655

With ``merge_running_stats=True`` a layer in training mode still *normalizes*
each micro-batch with its own statistics (that is what the gradients are made
of), but does not touch the running statistics.  Instead it merges the
micro-batch's per-channel (count, mean, M2 = Σ(x - mean)²) into a pending
accumulator with the parallel algorithm of Chan, Golub & LeVeque (1979)
(exact to rounding, float64):

    n = n_a + n_b,   δ = mean_b - mean_a,
    mean = mean_a + δ · n_b / n,   M2 = M2_a + M2_b + δ² · n_a · n_b / n

and :meth:`_BatchNorm.apply_merged_running_stats` later applies ONE momentum
update with the merged mean and unbiased variance M2 / (n - 1), the numbers of
the full batch.  ``minigrad.optim.GradientAccumulator`` calls
:func:`apply_merged_running_stats` once per window.
"""
from __future__ import annotations

import numbers

import numpy as np

from .. import backend
from ..arguments import check_bool
from ..autograd import is_recomputing
from ..dtypes import check_layer_dtype
from ..functions import norm as _norm
from ..tensor import Tensor, get_default_dtype
from .module import Module, Parameter

# ----------------------------------------------------------------------------
# Functional forms
# ----------------------------------------------------------------------------


def _affine_inputs(name, x, weight, bias, shape):
    """The Function's inputs: (x,) without affine parameters, else (x, weight, bias)
    with a missing one replaced by ones / zeros.  Checks both shapes, and both
    dtypes against the input's (:func:`minigrad.dtypes.check_layer_dtype`)."""
    check_layer_dtype(name, x, weight=weight, bias=bias)
    for label, p in (("weight", weight), ("bias", bias)):
        if p is not None and tuple(p.shape) != shape:
            raise ValueError(f"{name}: {label} has shape {tuple(p.shape)} but the input of "
                             f"shape {tuple(x.shape)} needs shape {shape}")
    if weight is None and bias is None:
        return (x,)
    xp = x._xp
    if weight is None:
        weight = Tensor(xp.ones(shape, dtype=x.dtype))
    if bias is None:
        bias = Tensor(xp.zeros(shape, dtype=x.dtype))
    return (x, weight, bias)


def _check_channels(name, x, label, t):
    if t is not None and tuple(t.shape) != (x.shape[1],):
        raise ValueError(f"{name}: {label} has shape {tuple(t.shape)} but the input of "
                         f"shape {tuple(x.shape)} has {x.shape[1]} channels; expected "
                         f"shape ({x.shape[1]},)")


def batch_norm(input, running_mean, running_var, weight=None, bias=None,  # noqa: A002
               training=False, momentum=0.1, eps=1e-5) -> Tensor:
    """Batch normalization, as ``torch.nn.functional.batch_norm``.

    y = (x - μ) / sqrt(σ² + eps) · weight + bias, per channel (axis 1).

    Args:
        input: (N, C) or (N, C, *) (e.g. (N, C, L), (N, C, H, W)).
        running_mean, running_var: Tensors (C,) or None.
        weight, bias: (C,) or None (no scaling / no shift).
        training: True: μ and the *biased* σ² of this batch over every axis
            but 1 (Ioffe & Szegedy 2015, Algorithm 1); if the running tensors
            are given they are updated in place with ``momentum`` (the
            *unbiased* variance goes into ``running_var``, as in PyTorch),
            except while a checkpointed forward is recomputed
            (:func:`minigrad.autograd.is_recomputing`).  False: the running
            statistics are used (an affine map of x; backward still works).
        momentum: the weight of the new batch statistic in the update.
        eps: added to the variance inside the square root.

    Returns:
        A tensor of the input's shape.

    Raises:
        ValueError: input with fewer than 2 dimensions; a parameter or running
            statistic whose shape is not (C,); training with one value per
            channel ("Expected more than 1 value per channel when training,
            got input size ..."); ``training=False`` without running statistics.

    A batch of 0 (N = 0) gives an empty output and leaves the running
    statistics unchanged, as in PyTorch.
    """
    if input.ndim < 2:
        raise ValueError(f"batch_norm: expected an input of shape (N, C) or (N, C, *), "
                         f"got shape {tuple(input.shape)}")
    check_bool("batch_norm", "training", training)
    channels = input.shape[1]
    for label, t in (("running_mean", running_mean), ("running_var", running_var)):
        _check_channels("batch_norm", input, label, t)
    check_layer_dtype("batch_norm", input, running_mean=running_mean,
                      running_var=running_var)
    inputs = _affine_inputs("batch_norm", input, weight, bias, (channels,))
    if not training:
        if running_mean is None or running_var is None:
            raise ValueError("batch_norm: training=False needs running_mean and running_var")
        return _norm.BatchNormEval(running_mean.data, running_var.data, eps)(*inputs)
    count = _values_per_channel(input)
    if count == 1:
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {tuple(input.shape)}")
    fn = _norm.BatchNormTrain(eps)
    out = fn(*inputs)
    # A batch of 0 gives an empty output and leaves the running statistics
    # alone, as in PyTorch.
    if running_mean is not None and running_var is not None and not is_recomputing() \
            and count > 0:
        _update_running_stats(running_mean, running_var, fn.batch_mean,
                              fn.batch_var * (count / (count - 1)), momentum)
    return out


def _values_per_channel(x):
    """N·(spatial size): how many values each channel's statistics average."""
    count = x.shape[0]
    for size in x.shape[2:]:
        count *= size
    return count


def _update_running_stats(running_mean, running_var, mean, unbiased_var, factor):
    """running ← (1 - factor)·running + factor·new, in place (keeps dtype and device)."""
    xp = running_mean._xp
    # float16 buffers blend in float32, as PyTorch: a batch variance above 65504
    # must not turn the running variance into inf
    wide = np.float32 if running_mean.dtype == np.float16 else running_mean.dtype
    mean = xp.asarray(mean).astype(wide, copy=False)
    unbiased_var = xp.asarray(unbiased_var).astype(wide, copy=False)
    # BEGIN SOLUTION ch02.11
    running_mean.data[...] = (1 - factor) * running_mean.data + factor * mean
    running_var.data[...] = (1 - factor) * running_var.data + factor * unbiased_var
    # END SOLUTION


def _normalized_shape(name, normalized_shape):
    if isinstance(normalized_shape, numbers.Integral) and not isinstance(normalized_shape,
                                                                          bool):
        normalized_shape = (int(normalized_shape),)
    try:
        shape = tuple(int(n) for n in normalized_shape)
    except (TypeError, ValueError):
        raise TypeError(f"{name}: normalized_shape must be an int or a tuple of ints, got "
                        f"{normalized_shape!r}") from None
    if not shape or min(shape) < 1:
        raise ValueError(f"{name}: normalized_shape must be non-empty with positive sizes, "
                         f"got {shape}")
    return shape


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5) -> Tensor:  # noqa: A002
    """Layer normalization over the trailing ``normalized_shape`` axes, as
    ``torch.nn.functional.layer_norm`` (Ba, Kiros & Hinton 2016).

    y = (x - μ) / sqrt(σ² + eps) · weight + bias, with μ and the *biased* σ²
    over the last ``len(normalized_shape)`` axes of each example.

    Args:
        input: (*, *normalized_shape).
        normalized_shape: an int or a tuple of ints.
        weight, bias: of shape ``normalized_shape``, or None.

    Returns:
        A tensor of the input's shape.

    Raises:
        ValueError: the input's trailing shape is not ``normalized_shape``, or
            weight / bias has another shape.
    """
    shape = _normalized_shape("layer_norm", normalized_shape)
    if tuple(input.shape[input.ndim - len(shape):]) != shape or input.ndim < len(shape):
        raise ValueError(f"layer_norm: given normalized_shape={shape}, expected an input of "
                         f"shape (*, {', '.join(map(str, shape))}), got shape "
                         f"{tuple(input.shape)}")
    inputs = _affine_inputs("layer_norm", input, weight, bias, shape)
    return _norm.LayerNorm(len(shape), eps)(*inputs)


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5) -> Tensor:  # noqa: A002
    """Group normalization, as ``torch.nn.functional.group_norm`` (Wu & He 2018).

    The C channels are split into ``num_groups`` consecutive groups; each
    (example, group) is normalized with the mean and *biased* variance of its
    C/G channels and all spatial positions; then y = x̂ · weight + bias per channel.

    Args:
        input: (N, C, *).
        num_groups: G, a divisor of C.
        weight, bias: (C,) or None.

    Returns:
        A tensor of the input's shape.

    Raises:
        ValueError: input with fewer than 2 dimensions, C not divisible by G,
            weight / bias not of shape (C,), or, as PyTorch,
            N·(C/G)·(spatial size) = 1 (one example whose groups hold one
            value each: "Expected more than 1 value per channel ...").

    A batch of 0 gives an empty output, as in PyTorch.
    """
    if input.ndim < 2:
        raise ValueError(f"group_norm: expected an input of shape (N, C, *), got shape "
                         f"{tuple(input.shape)}")
    channels = input.shape[1]
    if not isinstance(num_groups, int) or num_groups < 1 or channels % num_groups:
        raise ValueError(f"group_norm: expected the number of channels {channels} (input "
                         f"shape {tuple(input.shape)}) to be divisible by num_groups="
                         f"{num_groups!r}")
    if _values_per_channel(input) * (channels // num_groups) == 1:
        # PyTorch's check: N·(C/G)·(spatial size) values would be 1
        raise ValueError(f"Expected more than 1 value per channel when training, got input "
                         f"size {tuple(input.shape)} (group_norm with num_groups="
                         f"{num_groups}: each group holds one value, whose normalization "
                         "is 0/0)")
    inputs = _affine_inputs("group_norm", input, weight, bias, (channels,))
    return _norm.GroupNorm(num_groups, eps)(*inputs)


# ----------------------------------------------------------------------------
# Batch normalization layers
# ----------------------------------------------------------------------------

def _param(fill, shape, dtype, device):
    return Parameter(backend.array_module(device or "cpu").full(shape, fill, dtype=dtype))


def channel_moments(x):
    """Per-channel statistics of one batch x of shape (N, C, *), in float64.

    Returns ``{"count": int64 0-d array, "mean": (C,), "m2": (C,)}`` (NumPy
    arrays) with count = N·(size of *), the mean over every axis but 1, and
    M2 = Σ (x - mean)², so that M2 / count is the biased variance BatchNorm
    normalizes with and M2 / (count - 1) the unbiased one of ``running_var``.
    """
    axes = (0,) + tuple(range(2, x.ndim))
    data = x.data.astype(np.float64)
    # BEGIN SOLUTION ch06.1
    mean = data.mean(axis=axes)
    centered = data - mean.reshape((1, -1) + (1,) * (x.ndim - 2))
    m2 = (centered * centered).sum(axis=axes)
    # END SOLUTION
    return {"count": np.asarray(x.numel() // x.shape[1], dtype=np.int64),
            "mean": backend.asnumpy(mean), "m2": backend.asnumpy(m2)}


def merge_moments(a, b):
    """Merge two per-channel summaries ``{"count", "mean", "m2"}`` exactly
    (Chan, Golub & LeVeque 1979); ``a`` may be None.  Arrays are float64."""
    if a is None:
        return b
    # BEGIN SOLUTION ch06.2
    na, nb = float(a["count"]), float(b["count"])
    n = na + nb
    delta = b["mean"] - a["mean"]
    return {"count": np.asarray(a["count"] + b["count"], dtype=np.int64),
            "mean": a["mean"] + delta * (nb / n),
            "m2": a["m2"] + b["m2"] + delta * delta * (na * nb / n)}
    # END SOLUTION


class _BatchNorm(Module):
    """Shared machinery of BatchNorm1d and BatchNorm2d (see their docstrings)."""

    _name = "BatchNorm"

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, device=None, dtype=None, *,
                 merge_running_stats=False):
        super().__init__()
        if not isinstance(num_features, int) or isinstance(num_features, bool) or \
                num_features < 1:
            raise ValueError(f"{self._name}: num_features must be a positive int, got "
                             f"{num_features!r}")
        if momentum is not None and not 0.0 <= momentum <= 1.0:
            raise ValueError(f"{self._name}: momentum must be in [0, 1] or None, got "
                             f"{momentum!r}")
        self.num_features, self.eps, self.momentum = num_features, eps, momentum
        self.affine, self.track_running_stats = affine, track_running_stats
        self.merge_running_stats = merge_running_stats
        self._pending = None          # merged (count, mean, m2) of this window, or None
        self._exact_window = None     # set while nn.exact_batchnorm_backward runs a window
        dtype = np.dtype(dtype or get_default_dtype())
        xp = backend.array_module(device or "cpu")
        if affine:
            self.weight = _param(1.0, (num_features,), dtype, device)
            self.bias = _param(0.0, (num_features,), dtype, device)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        if track_running_stats:
            self.register_buffer("running_mean", xp.zeros(num_features, dtype=dtype))
            self.register_buffer("running_var", xp.ones(num_features, dtype=dtype))
            self.register_buffer("num_batches_tracked", xp.zeros((), dtype=np.int64))
        else:
            self.register_buffer("running_mean", None)
            self.register_buffer("running_var", None)
            self.register_buffer("num_batches_tracked", None)

    def _check_input_dim(self, x):  # pragma: no cover - abstract
        raise NotImplementedError

    def reset_running_stats(self) -> None:
        """running_mean ← 0, running_var ← 1, num_batches_tracked ← 0, pending cleared."""
        self._pending = None
        if self.track_running_stats:
            self.running_mean.data[...] = 0
            self.running_var.data[...] = 1
            self.num_batches_tracked.data[...] = 0

    def _next_factor(self):
        """Count one more batch and return the averaging factor: ``momentum``, or
        1 / num_batches_tracked for the cumulative average (``momentum=None``)."""
        self.num_batches_tracked.data[...] += 1
        if self.momentum is None:
            return 1.0 / float(self.num_batches_tracked.item())
        return self.momentum

    def forward(self, x: Tensor) -> Tensor:
        self._check_input_dim(x)
        if x.shape[1] != self.num_features:
            raise ValueError(f"{self._name}: expected {self.num_features} channels (axis 1), "
                             f"got input of shape {tuple(x.shape)}")
        use_batch_stats = self.training or not self.track_running_stats
        if use_batch_stats and self._exact_window is not None:   # window statistics
            return self._exact_window.forward(self, x)
        if use_batch_stats and _values_per_channel(x) == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got "
                             f"input size {tuple(x.shape)}")
        updates = self.training and self.track_running_stats and not is_recomputing()
        factor = 0.0
        if updates and self.merge_running_stats:
            if x.shape[0]:                       # an empty micro-batch adds nothing
                self._merge_micro_batch(x)
            updates = False
        elif updates:
            factor = self._next_factor()
        return batch_norm(x, self.running_mean if updates or not use_batch_stats else None,
                          self.running_var if updates or not use_batch_stats else None,
                          self.weight, self.bias, training=use_batch_stats,
                          momentum=factor, eps=self.eps)

    # ------------------------------------------------- merged running statistics
    def _merge_micro_batch(self, x):
        """Fold this micro-batch's per-channel (count, mean, M2) into the pending state."""
        # BEGIN SOLUTION ch06.3
        self._pending = merge_moments(self._pending, channel_moments(x))
        # END SOLUTION

    def apply_merged_running_stats(self) -> bool:
        """Apply one running-statistics update from the merged pending statistics.

        running_mean and running_var move once with ``momentum`` (or the
        cumulative factor for ``momentum=None``) towards the merged mean and the
        merged *unbiased* variance M2 / (n - 1); num_batches_tracked grows by
        one; the pending state is cleared.

        Returns:
            True if anything was pending (an update was applied), else False.
        """
        pending = self._pending
        if pending is None or not self.track_running_stats:
            self._pending = None
            return False
        # BEGIN SOLUTION ch06.4
        self._pending = None
        n = int(pending["count"])
        factor = self._next_factor()
        xp = self.running_mean._xp
        _update_running_stats(self.running_mean, self.running_var,
                              xp.asarray(pending["mean"]),
                              xp.asarray(pending["m2"] / (n - 1)), factor)
        return True
        # END SOLUTION

    def get_pending_stats(self):
        """The pending merged statistics as ``{"count": int64 0-d array, "mean":
        float64 (C,), "m2": float64 (C,)}`` (NumPy copies), or None."""
        if self._pending is None:
            return None
        return {k: np.array(v, copy=True) for k, v in self._pending.items()}

    def set_pending_stats(self, state) -> None:
        """Restore what :meth:`get_pending_stats` returned (None clears).

        Raises:
            ValueError: keys other than count / mean / m2, a count < 2, or
                arrays that are not of shape (num_features,).
        """
        if state is None:
            self._pending = None
            return
        if set(state) != {"count", "mean", "m2"}:
            raise ValueError(f"{self._name}.set_pending_stats: expected keys "
                             f"['count', 'm2', 'mean'], got {sorted(state)}")
        mean = np.array(backend.asnumpy(state["mean"]), dtype=np.float64)
        m2 = np.array(backend.asnumpy(state["m2"]), dtype=np.float64)
        count = np.asarray(backend.asnumpy(state["count"]), dtype=np.int64)
        for label, arr in (("mean", mean), ("m2", m2)):
            if arr.shape != (self.num_features,):
                raise ValueError(f"{self._name}.set_pending_stats: {label} has shape "
                                 f"{arr.shape}, expected ({self.num_features},)")
        if count.shape != () or int(count) < 2:   # every merged micro-batch had >= 2
            raise ValueError(f"{self._name}.set_pending_stats: count must be an integer "
                             f">= 2 (values per channel), got {state['count']!r}")
        self._pending = {"count": count, "mean": mean, "m2": m2}

    def extra_repr(self) -> str:
        text = (f"{self.num_features}, eps={self.eps}, momentum={self.momentum}, "
                f"affine={self.affine}, track_running_stats={self.track_running_stats}")
        if self.merge_running_stats:
            text += ", merge_running_stats=True"
        return text


_BN_DOC = """

    Args:
        num_features: C, the number of channels (axis 1).
        eps: added to the variance inside the square root.
        momentum: weight of each new batch statistic in the running averages;
            None: cumulative moving average (factor 1 / num_batches_tracked).
        affine: learn ``weight`` (init 1) and ``bias`` (init 0), shape (C,).
        track_running_stats: keep ``running_mean`` (init 0), ``running_var``
            (init 1) and ``num_batches_tracked`` buffers, used in eval mode.
            False: no buffers, batch statistics in both modes.
        merge_running_stats: under gradient accumulation, merge the statistics
            of the micro-batches and update the running averages once per
            window (:meth:`apply_merged_running_stats`) instead of once per
            forward.  False (the default) is the per-micro-batch "ghost batch"
            update, as in PyTorch.  See the module docstring.
        device, dtype: of the parameters and buffers.

    Training mode: normalize with the batch mean and *biased* variance;
    running_var receives the *unbiased* variance (PyTorch's rule).  One value
    per channel raises ValueError.  Eval mode: normalize with the running
    statistics; backward works in both modes.  While a checkpointed forward
    is recomputed, the running statistics are left alone.

    Raises:
        ValueError: a wrong number of dimensions or channels, one value per
            channel in training, num_features < 1, momentum outside [0, 1].
    """


class BatchNorm1d(_BatchNorm):
    __doc__ = ("Batch normalization of (N, C) or (N, C, L) inputs, as "
               "``torch.nn.BatchNorm1d``." + _BN_DOC)
    _name = "BatchNorm1d"

    def _check_input_dim(self, x):
        if x.ndim not in (2, 3):
            raise ValueError(f"BatchNorm1d: expected a 2-D (N, C) or 3-D (N, C, L) input, "
                             f"got shape {tuple(x.shape)}")


class BatchNorm2d(_BatchNorm):
    __doc__ = ("Batch normalization of (N, C, H, W) inputs, as ``torch.nn.BatchNorm2d``; "
               "N = 1 is allowed in training when H·W > 1." + _BN_DOC)
    _name = "BatchNorm2d"

    def _check_input_dim(self, x):
        if x.ndim != 4:
            raise ValueError(f"BatchNorm2d: expected a 4-D (N, C, H, W) input, got shape "
                             f"{tuple(x.shape)}")


# ----------------------------------------------------------------------------
# Helpers over whole models (used by minigrad.optim.GradientAccumulator)
# ----------------------------------------------------------------------------

def batchnorm_layers(model: Module) -> list:
    """Every BatchNorm1d / BatchNorm2d in ``model`` (itself included), in module order."""
    return [m for m in model.modules() if isinstance(m, _BatchNorm)]


def set_merge_running_stats(model: Module, enabled: bool = True) -> int:
    """Switch merged running statistics on (or off) for every BatchNorm layer in
    ``model``; returns the number of layers set.  Switching off leaves any pending
    statistics in place (apply or clear them first)."""
    layers = batchnorm_layers(model)
    for layer in layers:
        layer.merge_running_stats = bool(enabled)
    return len(layers)


def apply_merged_running_stats(model: Module) -> bool:
    """Apply the pending merged statistics of every BatchNorm layer in ``model``
    (one running-average update each); True if any layer had something pending."""
    applied = [layer.apply_merged_running_stats() for layer in batchnorm_layers(model)]
    return any(applied)


# ----------------------------------------------------------------------------
# Layer and group normalization
# ----------------------------------------------------------------------------

class LayerNorm(Module):
    """Layer normalization over the trailing ``normalized_shape`` axes, as
    ``torch.nn.LayerNorm`` (see :func:`layer_norm`; biased variance).

    Args:
        normalized_shape: an int or a tuple of ints (the trailing input shape).
        eps: added to the variance inside the square root.
        elementwise_affine: learn ``weight`` (init 1) and ``bias`` (init 0) of
            shape ``normalized_shape``.
        bias: with ``elementwise_affine``, whether to learn the bias.
        device, dtype: of the parameters.

    Raises:
        ValueError: an empty or non-positive ``normalized_shape``; at call time,
            an input whose trailing shape differs.
    """

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True,
                 device=None, dtype=None):
        super().__init__()
        self.normalized_shape = _normalized_shape("LayerNorm", normalized_shape)
        self.eps, self.elementwise_affine = eps, elementwise_affine
        dtype = np.dtype(dtype or get_default_dtype())
        if elementwise_affine:
            self.weight = _param(1.0, self.normalized_shape, dtype, device)
        else:
            self.register_parameter("weight", None)
        if elementwise_affine and bias:
            self.bias = _param(0.0, self.normalized_shape, dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        return layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return (f"{self.normalized_shape}, eps={self.eps}, "
                f"elementwise_affine={self.elementwise_affine}")


class GroupNorm(Module):
    """Group normalization of ``(N, C, *)`` inputs, as ``torch.nn.GroupNorm`` (see
    :func:`group_norm`).

    Args:
        num_groups: G, which must divide ``num_channels``.
        num_channels: C.
        eps: added to the variance inside the square root.
        affine: learn per-channel ``weight`` (init 1) and ``bias`` (init 0), shape (C,).
        device, dtype: of the parameters.
        bias: with ``affine``, whether to learn the bias.

    Raises:
        ValueError: ``num_channels`` not divisible by ``num_groups`` (or either < 1).
    """

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, device=None,
                 dtype=None, bias=True):
        super().__init__()
        for name, value in (("num_groups", num_groups), ("num_channels", num_channels)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"GroupNorm: {name} must be a positive int, got {value!r}")
        if num_channels % num_groups:
            raise ValueError(f"GroupNorm: num_channels ({num_channels}) must be divisible by "
                             f"num_groups ({num_groups})")
        self.num_groups, self.num_channels = num_groups, num_channels
        self.eps, self.affine = eps, affine
        dtype = np.dtype(dtype or get_default_dtype())
        if affine:
            self.weight = _param(1.0, (num_channels,), dtype, device)
        else:
            self.register_parameter("weight", None)
        if affine and bias:
            self.bias = _param(0.0, (num_channels,), dtype, device)
        else:
            self.register_parameter("bias", None)

    def forward(self, x: Tensor) -> Tensor:
        if x.ndim < 2 or x.shape[1] != self.num_channels:
            raise ValueError(f"GroupNorm: expected an input (N, {self.num_channels}, *), "
                             f"got shape {tuple(x.shape)}")
        return group_norm(x, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
