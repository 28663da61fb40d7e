"""Exact BatchNorm under gradient accumulation: the full batch's update from micro-batches.

Why ordinary accumulation cannot do it
--------------------------------------
In training mode a BatchNorm layer normalizes every value of a channel with
the mean μ and (biased) variance σ² of *the batch it sees*.  Accumulating k
micro-batches therefore normalizes with k different statistics: the gradient
of ghost-batch normalization, not the full batch's.  Two things couple the
examples of a window:

* **forward**: μ and σ² are sums over the whole window;
* **backward**: with x̂ = (x - μ)/σ, y = γ·x̂ + β and dx̂ = γ·∂L/∂y, the
  gradient of one input is (Ioffe & Szegedy 2015, §3)

      dx_i = (1/σ) · (dx̂_i - mean_window(dx̂) - x̂_i · mean_window(dx̂ · x̂))

  so it needs two per-channel window sums, Σ dx̂ and Σ dx̂·x̂ (equal to γ·∂L/∂β
  and γ·∂L/∂γ: the layer's own parameter gradients).

Both are per-channel numbers, so they can be gathered one micro-batch at a
time and the activations recomputed rather than stored.

The pass count for L BatchNorm layers
-------------------------------------
Number the layers 1..L in the order a forward calls them.

* *Statistics.*  Layer l's input depends on μ, σ of every layer below it, so
  its window statistics can only be gathered once those are known: pass p
  runs every micro-batch forward (without a graph) with layers < p normalized
  by their window statistics and merges layer p's per-channel (count, mean,
  M2) (Chan, Golub & LeVeque 1979); the forward stops at layer p, since
  nothing above it is needed yet.  **L statistics passes.**
* *Backward sums.*  The sums of layer l need the exact ∂L/∂y at l, which runs
  through every layer called after l, and those need *their* sums.  So the
  sums are gathered top down: pass q (q = 1..L) runs forward and backward on
  every micro-batch, with the layers above l = L + 1 - q already corrected,
  and stops the backward at layer l after adding up Σ dx̂ and Σ dx̂·x̂.
  **L collecting passes.**
* *Gradients.*  With every sum known, one last forward and backward per
  micro-batch gives every parameter's exact gradient (this pass is the
  ordinary accumulation pass, handed to a ``GradientAccumulator``).
  **1 final pass.**

Per window (k micro-batches): **2L + 1 forward passes** (L of them stopped at
a BatchNorm layer, without a graph) and **L + 1 backward passes** (L of them
stopped at a BatchNorm layer), against 1 and 1 for plain accumulation.  No
pass can be saved by merging: the sums at layer l are affine in those above
it (backward is linear), but reading off the coefficients would take 2C
extra passes per layer.  Memory: one micro-batch's graph at a time, plus
four float64 vectors of C numbers per layer (mean, 1/σ, and the two sums).

The running statistics get one update per window with the window's mean
and unbiased variance, exactly what one full-batch forward does.

Requirements: every micro-batch of a window must run the same layers in the
same order, each BatchNorm layer once per forward; dropout must draw the
same mask in every pass, i.e. ``Dropout(p, per_example=True)`` inside
``nn.dropout_context`` (the default global-counter masks would change from
pass to pass and are refused).  Checkpointed segments work: their forward
is recomputed in backward and a recomputation adds nothing to the sums.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from collections.abc import Callable, Iterable

import numpy as np

from .. import backend
from ..autograd import Function, is_recomputing, no_grad
from ..functions.norm import channel_shape
from ..tensor import Tensor
from .dropout import Dropout
from .module import Module
from .normalization import _BatchNorm, batchnorm_layers, merge_moments


class _StopForward(Exception):
    """Raised by the layer whose statistics a statistics pass gathers: the rest
    of that micro-batch's forward is not needed."""


@dataclasses.dataclass
class ExactBatchNormPasses:
    """What :func:`exact_batchnorm_backward` ran for one window.

    Attributes:
        layers: L, the BatchNorm layers in training mode that the forward called.
        micro_batches: k, the micro-batches in the window.
        statistics_passes: passes gathering window statistics (L).
        collecting_passes: forward + backward passes gathering the sums (L).
        forward_passes: micro-batch forwards divided by k (2L + 1).
        backward_passes: micro-batch backwards divided by k (L + 1).
        window_loss: the item-weighted mean loss of the window (float).
    """

    layers: int
    micro_batches: int
    statistics_passes: int
    collecting_passes: int
    forward_passes: float
    backward_passes: float
    window_loss: float


class _LayerWindow:
    """One BatchNorm layer's per-channel numbers for the current window."""

    def __init__(self, layer: _BatchNorm):
        self.layer = layer
        self.moments = None                       # merged {"count", "mean", "m2"}, float64
        self.mean = self.inv_std = None           # (C,) float64 on the layer's device
        self.count = 0                            # values per channel in the window
        self.sum_dxhat = self.sum_dxhat_xhat = None
        self.xp = np                              # the array module of the layer's inputs

    def merge(self, x) -> None:
        """Fold one micro-batch's per-channel (count, mean, M2) into the window's."""
        axes = (0,) + tuple(range(2, x.ndim))
        self.xp = x._xp
        data = x.data.astype(np.float64)
        mean = data.mean(axis=axes)
        centered = data - mean.reshape(channel_shape(data))
        summary = {"count": np.asarray(x.numel() // x.shape[1], dtype=np.int64),
                   "mean": backend.asnumpy(mean),
                   "m2": backend.asnumpy((centered * centered).sum(axis=axes))}
        self.moments = merge_moments(self.moments, summary)

    def finish_statistics(self) -> None:
        """μ and 1/sqrt(σ² + eps) of the window, σ² = M2 / count (biased)."""
        xp = self.xp
        count = int(self.moments["count"])
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got "
                             f"{count} in the whole window ({self.layer._name})")
        var = self.moments["m2"] / count
        self.count = count
        self.mean = xp.asarray(self.moments["mean"])
        self.inv_std = xp.asarray(1.0 / np.sqrt(var + self.layer.eps))

    def add_sums(self, dxhat, xhat, axes) -> None:
        xp = backend.get_array_module(dxhat)
        s1 = dxhat.sum(axis=axes).astype(xp.float64)
        s2 = (dxhat * xhat).sum(axis=axes).astype(xp.float64)
        if self.sum_dxhat is None:
            self.sum_dxhat, self.sum_dxhat_xhat = s1, s2
        else:
            self.sum_dxhat = self.sum_dxhat + s1
            self.sum_dxhat_xhat = self.sum_dxhat_xhat + s2

    def finish_sums(self, xp, channels: int) -> None:
        if self.sum_dxhat is None:          # no gradient reached the layer
            self.sum_dxhat = xp.zeros(channels)
            self.sum_dxhat_xhat = xp.zeros(channels)


class WindowBatchNorm(Function):
    """BatchNorm with the *window's* statistics, x of shape (N, C, *).

    Forward: y = γ·(x - μ_w)·inv_std_w + β, with μ_w, σ_w of the whole window.
    Backward, with dx̂ = γ·g and the window means m1 = Σ_w dx̂ / n_w,
    m2 = Σ_w dx̂·x̂ / n_w (n_w values per channel in the window):

        dx = inv_std_w · (dx̂ - m1 - x̂·m2),   dγ = Σ g·x̂,   dβ = Σ g

    which is :func:`minigrad.functions.norm.normalized_grad` with the means
    taken over the window instead of the micro-batch.  While the window's
    sums of this layer are being gathered, backward adds this micro-batch's
    Σ dx̂ and Σ dx̂·x̂ and sends no gradient further down.
    """

    def __init__(self, state: _LayerWindow, window: _Window):
        self.state, self.window = state, window

    def forward(self, x, weight=None, bias=None):
        shape = channel_shape(x)
        self.axes = (0,) + tuple(range(2, x.ndim))
        self.inv_std = self.state.inv_std.astype(x.dtype).reshape(shape)
        self.xhat = (x - self.state.mean.astype(x.dtype).reshape(shape)) * self.inv_std
        if weight is None:
            return self.xhat
        self.weight = weight.reshape(shape)
        return self.xhat * self.weight + bias.reshape(shape)

    def backward(self, g):
        state, affine = self.state, len(self.needs_input_grad) == 3
        dxhat = g * self.weight if affine else g
        if self.window.collecting is state:
            state.add_sums(dxhat, self.xhat, self.axes)
            return (None, None, None) if affine else None
        if state.sum_dxhat is None:
            # Below the layer being gathered, reached through a skip connection:
            # this pass's gradients here are discarded anyway.
            return (None, None, None) if affine else None
        dx = None
        if self.needs_input_grad[0]:
            shape = channel_shape(g)
            m1 = (state.sum_dxhat / state.count).astype(g.dtype).reshape(shape)
            m2 = (state.sum_dxhat_xhat / state.count).astype(g.dtype).reshape(shape)
            dx = self.inv_std * (dxhat - m1 - self.xhat * m2)
        if not affine:
            return dx
        dweight = (g * self.xhat).sum(axis=self.axes) if self.needs_input_grad[1] else None
        dbias = g.sum(axis=self.axes) if self.needs_input_grad[2] else None
        return dx, dweight, dbias


class _Window:
    """The state of one window, shared by its BatchNorm layers while it runs."""

    def __init__(self):
        self.states = {}            # id(layer) -> _LayerWindow
        self.order = []             # layers whose statistics are known, in call order
        self.target = None          # the layer a statistics pass is gathering
        self.collecting = None      # the layer a collecting pass is gathering
        self.statistics_pass = False
        self.called = set()         # layers called in this micro-batch's forward

    def start_micro_batch(self) -> None:
        self.called = set()

    def forward(self, layer: _BatchNorm, x: Tensor) -> Tensor:
        """Called by a BatchNorm layer in training mode while the window runs."""
        if not is_recomputing():
            if id(layer) in self.called:
                raise ValueError(f"exact_batchnorm_backward: {layer._name} was called twice "
                                 "in one forward; each BatchNorm layer must be called once "
                                 "per micro-batch")
            self.called.add(id(layer))
        state = self.states.setdefault(id(layer), _LayerWindow(layer))
        if state.mean is None:
            if not self.statistics_pass:
                raise RuntimeError(f"exact_batchnorm_backward: {layer._name} was not called "
                                   "in the statistics passes; every micro-batch must run "
                                   "the same layers")
            if self.target is None:
                self.target = state
            elif self.target is not state:
                raise RuntimeError("exact_batchnorm_backward: the micro-batches of the window "
                                   "call the BatchNorm layers in different orders")
            state.merge(x)
            raise _StopForward
        if layer.affine:
            return WindowBatchNorm(state, self)(x, layer.weight, layer.bias)
        return WindowBatchNorm(state, self)(x)


def _replayable(micro_batches) -> Callable[[], Iterable]:
    """A function returning a fresh iterable of the window's micro-batches."""
    if callable(micro_batches):
        return micro_batches
    if iter(micro_batches) is micro_batches:
        raise TypeError("exact_batchnorm_backward: micro_batches is a one-shot iterator, but "
                        "the window is read 2L + 1 times; pass a list or a callable that "
                        "returns the micro-batches again")
    return lambda: micro_batches


def _loss_and_weight(result):
    """Split ``loss_fn``'s result into (loss, num_items or None, weight)."""
    loss, num_items = result if isinstance(result, tuple) else (result, None)
    if not isinstance(loss, Tensor) or loss.numel() != 1:
        raise TypeError("exact_batchnorm_backward: loss_fn must return a one-element loss "
                        "Tensor or (loss, num_items)")
    weight = num_items.item() if isinstance(num_items, Tensor) else num_items
    if weight is None:
        weight = 1
    if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or \
            not (math.isfinite(weight) and weight > 0):
        raise ValueError(f"exact_batchnorm_backward: num_items must be a positive number, "
                         f"got {num_items!r}")
    return loss, num_items, weight


def _check_dropout(model: Module) -> None:
    for m in model.modules():
        if isinstance(m, Dropout) and m.training and m.p > 0 and not m.per_example:
            raise ValueError("exact_batchnorm_backward: Dropout(per_example=False) draws new "
                             "masks in every pass over the window; use "
                             "Dropout(p, per_example=True) inside nn.dropout_context")


def exact_batchnorm_backward(model: Module, micro_batches, loss_fn,
                             accumulator=None) -> ExactBatchNormPasses:
    """The full batch's gradient and BatchNorm statistics, from its micro-batches.

    Runs the window's micro-batches 2L + 1 times forward and L + 1 times
    backward (L = the BatchNorm layers in training mode; see the module
    docstring for the derivation) so that every BatchNorm layer normalizes
    with the statistics of the *whole window* and back-propagates with the
    window's sums, exactly as one forward and backward of the concatenated
    batch would, while holding one micro-batch's activations at a time.

    Args:
        model: the :class:`~minigrad.nn.Module` whose BatchNorm1d/2d layers
            are made exact (those in training mode, or without running
            statistics); every parameter the loss depends on belongs to it.
        micro_batches: the window, read several times: a list (or any
            re-iterable sequence) of micro-batches, or a callable that
            returns an iterable of them, the same ones in the same order, each
            time it is called.  A one-shot iterator is refused.
        loss_fn: ``loss_fn(model, micro_batch)`` returning the micro-batch's
            *mean* loss (a one-element Tensor) and optionally its item count,
            ``(loss, num_items)``, as for ``GradientAccumulator.backward``.
        accumulator: a :class:`~minigrad.optim.GradientAccumulator` at the
            start of a window (``micro_step == 0``) with ``accumulation_steps``
            >= k.  The final pass goes through its ``backward``/``step``, so
            its clipping, optimizer, scheduler and non-finite checks act as
            usual; the window is completed (``flush``) when k is smaller than
            its ``accumulation_steps``.  The merged running statistics are left
            pending for it to apply when it was given this ``model``, and
            applied at once otherwise.  None: the gradient of the window's
            item-weighted mean loss is *added* into ``.grad`` (as
            ``loss.backward()`` of the full batch would) and the running
            statistics are updated.

    Returns:
        An :class:`ExactBatchNormPasses` with the passes run (measured) and
        the window's loss.

    Raises:
        TypeError: ``micro_batches`` is a one-shot iterator; ``loss_fn``
            returns something else than a loss or (loss, num_items).
        ValueError: an empty window; a window of more micro-batches than the
            accumulator has room for; a BatchNorm layer called twice in one
            forward; a Dropout with ``per_example=False`` in training mode;
            one value per channel in the whole window; a non-positive
            ``num_items``.
        RuntimeError: an accumulator in the middle of a window; micro-batches
            that call the BatchNorm layers differently.

    Example (a batch of 12 as micro-batches of 2 + 4 + 6; the gradient is the
    full batch's, to rounding):

    >>> import numpy as np
    >>> import minigrad
    >>> from minigrad import nn
    >>> minigrad.set_default_dtype(np.float64)
    >>> rng = np.random.default_rng(0)
    >>> x, y = rng.standard_normal((12, 3)), rng.standard_normal((12, 1))
    >>> def loss_fn(model, batch):
    ...     xb, yb = batch
    ...     loss = nn.functional.mse_loss(model(minigrad.tensor(xb)), minigrad.tensor(yb))
    ...     return loss, len(xb)
    >>> def make():
    ...     minigrad.manual_seed(0)
    ...     return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 1))
    >>> full, exact = make(), make()
    >>> loss_fn(full, (x, y))[0].backward()
    >>> parts = [(x[:2], y[:2]), (x[2:6], y[2:6]), (x[6:], y[6:])]
    >>> passes = nn.exact_batchnorm_backward(exact, parts, loss_fn)
    >>> passes.forward_passes, passes.backward_passes
    (3.0, 2.0)
    >>> bool(np.allclose(exact[0].weight.grad.numpy(), full[0].weight.grad.numpy(),
    ...                  rtol=1e-12, atol=0))
    True
    >>> minigrad.set_default_dtype(np.float32)
    """
    if not isinstance(model, Module):
        raise TypeError(f"exact_batchnorm_backward: model must be a minigrad.nn.Module, "
                        f"got {type(model).__name__}")
    batches = _replayable(micro_batches)
    _check_dropout(model)
    if accumulator is not None and accumulator.micro_step != 0:
        raise RuntimeError("exact_batchnorm_backward: the accumulator is in the middle of a "
                           f"window (micro_step={accumulator.micro_step}); a window must "
                           "start with an empty accumulator")
    layers = [m for m in batchnorm_layers(model) if m.training or not m.track_running_stats]
    params = list(model.parameters())
    if accumulator is not None:
        known = {id(p) for p in params}
        params += [p for p in accumulator.optimizer._params() if id(p) not in known]
    window = _Window()
    counts = {"forward": 0, "backward": 0}
    for layer in layers:
        layer._exact_window = window
    stash = None
    try:
        k = _run_statistics_passes(model, batches, loss_fn, window, counts, len(layers))
        if k == 0:
            raise ValueError("exact_batchnorm_backward: the window holds no micro-batch")
        if accumulator is not None and k > accumulator.accumulation_steps:
            raise ValueError(f"exact_batchnorm_backward: {k} micro-batches do not fit in one "
                             f"window of the accumulator (accumulation_steps="
                             f"{accumulator.accumulation_steps})")
        stash = [(p, p.grad) for p in params]     # collecting passes write .grad: set aside
        for state in reversed(window.order):
            for p in params:
                p.grad = None
            window.collecting = state
            _gradient_pass(model, batches, loss_fn, window, counts, accumulate=None)
            state.finish_sums(state.xp, state.layer.num_features)
        window.collecting = None
        for p in params:
            p.grad = None
        pending_for_accumulator = accumulator is not None and accumulator.model is not None \
            and {id(m) for m in layers} <= {id(m) for m in batchnorm_layers(accumulator.model)}
        if accumulator is not None:
            for p, g in stash:                    # the accumulator owns .grad again
                p.grad = g
            stash = None
            if pending_for_accumulator:
                _set_pending(window)
            loss_sum, total = _gradient_pass(model, batches, loss_fn, window, counts,
                                             accumulate=accumulator)
            if accumulator.micro_step != 0:
                accumulator.flush()
        else:
            loss_sum, total = _gradient_pass(model, batches, loss_fn, window, counts,
                                             accumulate=None)
            _add_mean_gradient(stash, total)
            stash = None
        if not pending_for_accumulator:
            _set_pending(window)
            for state in window.order:
                state.layer.apply_merged_running_stats()
    finally:
        for layer in layers:
            layer._exact_window = None
        if stash is not None:                     # an error mid-way: give .grad back
            for p, g in stash:
                p.grad = g
    n_layers = len(window.order)
    return ExactBatchNormPasses(layers=n_layers, micro_batches=k,
                                statistics_passes=n_layers, collecting_passes=n_layers,
                                forward_passes=counts["forward"] / k,
                                backward_passes=counts["backward"] / k,
                                window_loss=loss_sum / total)


def _run_statistics_passes(model, batches, loss_fn, window, counts, n_layers) -> int:
    """Gather the window statistics layer by layer; return k (micro-batches).

    Pass p stops every forward at the p-th BatchNorm layer called; after
    ``n_layers`` passes every layer is known.  (A pass that reaches no new
    layer ends the loop early: some layers are not called by this forward.)
    """
    if n_layers == 0:
        return sum(1 for _ in batches())
    window.statistics_pass = True
    try:
        with no_grad():
            while len(window.order) < n_layers:
                window.target, k, completed = None, 0, 0
                for micro_batch in batches():
                    k += 1
                    window.start_micro_batch()
                    counts["forward"] += 1
                    try:
                        loss_fn(model, micro_batch)
                        completed += 1
                    except _StopForward:
                        pass
                if window.target is None:        # the remaining layers are not called
                    break
                if completed:
                    raise RuntimeError("exact_batchnorm_backward: the micro-batches of the "
                                       "window call the BatchNorm layers differently (some "
                                       "forwards did not reach the layer being gathered)")
                window.target.finish_statistics()
                window.order.append(window.target)
    finally:
        window.statistics_pass = False
        window.target = None
    return k


def _gradient_pass(model, batches, loss_fn, window, counts, accumulate):
    """Forward and backward of every micro-batch; returns (Σ w_j L_j, Σ w_j).

    The sum stays a 0-d float64 array on the loss's device until the pass
    ends: one read on the host per pass, not one per micro-batch (on the GPU
    each read waits for the device)."""
    loss_sum, total = 0.0, 0
    for micro_batch in batches():
        window.start_micro_batch()
        counts["forward"] += 1
        loss, num_items, weight = _loss_and_weight(loss_fn(model, micro_batch))
        with np.errstate(invalid="ignore"):          # inf - inf = nan, as Python floats
            loss_sum = loss_sum + np.float64(weight) * loss.data.astype(np.float64).reshape(())
        total += weight
        counts["backward"] += 1
        if accumulate is not None:
            accumulate.backward(loss, num_items=num_items)
            accumulate.step()
        else:   # a non-finite loss spreads to the gradient, as in a full-batch backward
            loss.backward(loss._xp.full(loss.shape, weight, dtype=loss.dtype))
    return float(loss_sum), total


def _add_mean_gradient(stash, total) -> None:
    """.grad ← what it held before + (this pass's Σ_j w_j ∇L_j) / Σ_j w_j."""
    for p, before in stash:
        new = p.grad
        p.grad = before
        if new is None:
            continue
        new.data /= total
        if before is None:
            p.grad = new
        else:
            before.data += new.data


def _set_pending(window) -> None:
    for state in window.order:
        if state.layer.track_running_stats:
            state.layer.set_pending_stats(state.moments)
