"""GradientAccumulator: k micro-batches, one optimizer update, the full-batch result."""
from __future__ import annotations

import math
import numbers
import warnings

from .. import backend
from ..tensor import Tensor
from .buffers import GradBuffer
from .clip import clip_grad_norm_
from .grad_scaler import GradScaler
from .optimizer import Optimizer, check_number, check_state_keys


class GradientAccumulator:
    """Train with a large batch by accumulating the gradients of k micro-batches.

    **The idea.**  A batch of N items may not fit in memory.  Cut it into k
    micro-batches, run forward and backward on each in turn, let the
    gradients add up in ``.grad``, and take *one* optimizer step.  Done right,
    that step is the full-batch step, to rounding: the gradient of a mean is
    the mean of the per-item gradients, and a mean can be computed in pieces::

        L = (1/N) sum_i l_i = sum_j (n_j/N) L_j,   L_j = mean loss of micro-batch j
        grad L = sum_j (n_j/N) grad L_j            (N = sum_j n_j)

    **What is normalized, and when.**  ``backward(loss, num_items=n_j)`` takes
    micro-batch j's *mean* loss L_j and back-propagates ``n_j * L_j``, so the
    gradient buffers hold ``sum_j n_j grad L_j``, the gradient of the *sum* of
    the per-item losses, and it adds n_j to a running count.  Only at the
    update, when the window is complete and N is known, are the buffers
    divided by N once.  So the window's item total need not be known in
    advance, and the micro-batches may have any sizes.

    **Why weight by items.**  The classic recipe divides each L_j by k.  That
    gives every *micro-batch* the same weight, so an item in a micro-batch of
    4 counts 8 times as much as one in a micro-batch of 32 (e.g. 100 = 32 +
    32 + 32 + 4 examples).  It matters most for token-level losses: with
    padded sequences of different lengths, ``cross_entropy(...,
    ignore_index=pad)`` averages over the micro-batch's *real* tokens, and two
    micro-batches of 10 and 100 tokens must give every token the weight 1/110,
    not 1/20 and 1/200.  Pass ``num_items`` = the number of items (examples,
    or non-ignored tokens) that L_j averages over.  Without ``num_items``
    every micro-batch counts 1 (divide by the number of micro-batches actually
    in the window), which is exact only for equal sizes; mixing the two modes
    in one window is an error.

    **Why once per window.**  Anything that acts on the *update* must run once
    per window, on the finished gradient: clipping by global norm (the norm of
    the full-batch gradient, not of each micro-batch's piece), the optimizer's
    step (SGD's momentum buffer, Adam's moments and its bias-correction step
    count t, weight decay), and the learning-rate scheduler.  ``step()``
    therefore only counts, until the k-th micro-batch: then it normalizes,
    clips, steps the optimizer and the scheduler once each, and zeroes the
    gradients.  Stepping them per micro-batch would be a different algorithm
    (k times the decay, k Adam steps with the wrong bias correction).

    **Where the equality ends: BatchNorm.**  Everything above is exact when
    each item's loss depends only on that item and the parameters: linear
    layers, convolutions, LayerNorm and GroupNorm (which normalize within one
    example), dropout with a mask per example, BatchNorm in eval mode.  BatchNorm
    in *training* normalizes by the statistics of the batch it sees, the
    micro-batch, so accumulation computes the gradient of a different model:
    exactly the full-batch gradient of "ghost batch" normalization, where each
    micro-batch is normalized on its own.  That is a property of the model,
    not an error of the sum.  The running statistics are a separate matter
    and can be made exact: pass ``model=`` and its BatchNorm layers merge the
    count, mean and sum of squared deviations of each micro-batch over the
    window (Chan, Golub & LeVeque 1979) and update ``running_mean``
    and ``running_var`` once per window, as one full-batch forward would
    (``minigrad.nn.set_merge_running_stats``); without ``model`` they update
    per micro-batch (the ghost-batch default, as in PyTorch).

    **Non-finite values.**  When a loss or an accumulated gradient is nan or
    inf, the whole window is skipped: no clipping, no optimizer or scheduler
    step, pending BatchNorm statistics are dropped, gradients are zeroed, a
    ``RuntimeWarning`` is issued, and ``skipped_windows`` grows by one.

    Args:
        optimizer: the :class:`~minigrad.optim.Optimizer` to step once per window.
        accumulation_steps: k, the number of micro-batches per update (int >= 1).
        max_grad_norm: if given (> 0), clip the window's gradient to this
            global 2-norm before the update (:func:`clip_grad_norm_`).
        scheduler: an optional learning-rate scheduler of ``optimizer``, stepped
            once per update.
        model: an optional :class:`~minigrad.nn.Module`; when given, its
            BatchNorm layers merge their running statistics over each window.
        dtype: the precision the window's gradients are summed in
            (:class:`~minigrad.optim.buffers.GradBuffer`): None (the
            parameters' own dtype, float32 by default), ``"float32"``,
            ``"float16"`` or ``"bfloat16"`` (``ml_dtypes``, CPU only).
            Parameters and optimizer state keep their dtype.
        compensated: if True, Kahan summation in the buffer's dtype.
        scaler: an optional :class:`~minigrad.optim.GradScaler`: each
            micro-batch's loss is multiplied by its scale, the window's sum is
            unscaled once before clipping, an inf/nan window is skipped
            silently and the scale updated once per window.

    Attributes:
        micro_step: micro-batches completed in the current window (0 ... k-1).
        updates: optimizer updates taken so far.
        window_loss: the item-weighted mean loss ``sum_j n_j L_j / sum_j n_j``
            of the last completed window, a float (None before the first).
            It is the full batch's mean loss, whatever k is.
        last_grad_norm: the global gradient norm before clipping at the last
            update (None unless ``max_grad_norm`` is set).
        skipped_windows: windows skipped because of non-finite values.

    Raises:
        TypeError: ``optimizer`` is not an Optimizer, ``accumulation_steps``
            is not an int, or ``model`` is not a Module.
        ValueError: ``accumulation_steps < 1``, ``max_grad_norm <= 0``, or a
            scheduler of another optimizer.

    Rules of use: call ``backward`` then ``step`` once per micro-batch (a
    second ``backward`` before ``step``, or ``step`` without ``backward``, is a
    RuntimeError); call ``flush()`` at the end of the data for a last, short
    window; do not zero the gradients yourself in between.  Gradients left in
    ``.grad`` from before the accumulator was made are cleared when it is made.

    Example (5 micro-batches of 2 examples, k = 4: one full window, then a
    short one of a single micro-batch, applied by ``flush``):

    >>> import numpy as np
    >>> import minigrad
    >>> from minigrad import nn
    >>> from minigrad.optim import SGD, GradientAccumulator
    >>> minigrad.manual_seed(0)
    >>> model = nn.Linear(3, 1)
    >>> acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), accumulation_steps=4)
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((10, 3), dtype=np.float32)
    >>> y = rng.standard_normal((10, 1), dtype=np.float32)
    >>> for xb, yb in zip(np.split(x, 5), np.split(y, 5)):
    ...     loss = nn.functional.mse_loss(model(minigrad.tensor(xb)), minigrad.tensor(yb))
    ...     acc.backward(loss, num_items=len(xb))
    ...     updated = acc.step()
    >>> acc.updates, acc.micro_step
    (1, 1)
    >>> acc.flush()
    True
    >>> acc.updates, acc.micro_step
    (2, 0)
    """

    # The keys of state_dict(), checked by load_state_dict without building one
    # (that would copy every pending gradient and optimizer buffer).
    _STATE_KEYS = ("accumulation_steps", "max_grad_norm", "micro_step", "updates",
                   "skipped_windows", "window_loss", "last_grad_norm", "awaiting_step",
                   "mode", "item_total", "loss_sum", "nonfinite", "pending_grads",
                   "optimizer", "scheduler", "batchnorm")

    def __init__(self, optimizer, accumulation_steps, *, max_grad_norm=None,
                 scheduler=None, model=None, dtype=None, compensated=False, scaler=None):
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"GradientAccumulator: optimizer must be a minigrad Optimizer, "
                            f"got {type(optimizer).__name__}")
        if isinstance(accumulation_steps, bool) or \
                not isinstance(accumulation_steps, numbers.Integral):
            raise TypeError(f"GradientAccumulator: accumulation_steps must be an int >= 1, "
                            f"got {accumulation_steps!r}")
        if accumulation_steps < 1:
            raise ValueError(f"GradientAccumulator: accumulation_steps must be >= 1, got "
                             f"{accumulation_steps}")
        if max_grad_norm is not None:
            max_grad_norm = check_number("GradientAccumulator", "max_grad_norm",
                                         max_grad_norm, low=0.0, low_inclusive=False)
        if scheduler is not None and getattr(scheduler, "optimizer", None) is not optimizer:
            raise ValueError("GradientAccumulator: the scheduler must belong to the same "
                             "optimizer (scheduler.optimizer is not optimizer)")
        self.optimizer = optimizer
        self.accumulation_steps = int(accumulation_steps)
        self.max_grad_norm = max_grad_norm
        self.scheduler = scheduler
        self.model = model
        if model is not None:
            from .. import nn  # noqa: PLC0415 (optim works without nn; loaded on demand)
            if not isinstance(model, nn.Module):
                raise TypeError(f"GradientAccumulator: model must be a minigrad.nn.Module, "
                                f"got {type(model).__name__}")
            nn.set_merge_running_stats(model, True)
        # Precision and loss scaling (buffers.py, grad_scaler.py).
        if scaler is not None and not isinstance(scaler, GradScaler):
            raise TypeError(f"GradientAccumulator: scaler must be a minigrad.optim.GradScaler, "
                            f"got {type(scaler).__name__}")
        self.buffer = GradBuffer(dtype, compensated) if dtype is not None or compensated \
            else None
        self.scaler = scaler
        self.updates = 0
        self.skipped_windows = 0
        self.window_loss = None
        self.last_grad_norm = None
        self._reset_window()
        optimizer.zero_grad()

    def _reset_window(self) -> None:
        self.micro_step = 0
        self._awaiting_step = False   # backward() done, step() not yet
        self._mode = None             # "items" (num_items given) or "count"
        self._item_total = 0          # sum_j n_j
        self._loss_sum = 0.0          # sum_j n_j * L_j
        self._nonfinite = False       # a non-finite loss was seen in this window

    # ------------------------------------------------------------- per micro-batch
    def backward(self, loss, num_items=None) -> None:
        """Back-propagate micro-batch j's mean loss, weighted by its item count.

        Adds ``num_items * grad(loss)`` into the parameters' ``.grad`` (the
        gradient of the sum of the micro-batch's per-item losses) and counts
        ``num_items``.  A non-finite loss is not back-propagated; it marks the
        window to be skipped.

        Args:
            loss: a Tensor with one element that requires grad: the *mean* of
                the micro-batch's per-item losses.
            num_items: n_j, the number of items the mean is over (an int or a
                positive number; a one-element Tensor works too), or None to
                count the micro-batch as 1.

        Raises:
            TypeError: ``loss`` is not a Tensor, or ``num_items`` not a number.
            ValueError: ``loss`` has more than one element, ``num_items <= 0``
                (or not finite), or the window mixes ``num_items`` and None.
            RuntimeError: ``loss`` does not require grad, or ``backward`` is
                called twice without ``step`` in between.
        """
        if not isinstance(loss, Tensor):
            raise TypeError(f"GradientAccumulator.backward: loss must be a Tensor, got "
                            f"{type(loss).__name__}")
        if loss.size != 1:
            raise ValueError(f"GradientAccumulator.backward: loss must be a scalar (the "
                             f"micro-batch's mean loss), got shape {loss.shape}; reduce it "
                             "with .mean() or reduction='mean'")
        if not loss.requires_grad:
            raise RuntimeError("GradientAccumulator.backward: the loss does not require "
                               "grad (was it computed under no_grad(), or from parameters "
                               "with requires_grad=False?)")
        if self._awaiting_step:
            raise RuntimeError("GradientAccumulator.backward: called twice without step() "
                               "in between; call step() once after each micro-batch's "
                               "backward (sum the losses first if one micro-batch has several)")
        weight = self._check_num_items(num_items)
        mode = "count" if num_items is None else "items"
        if self._mode is not None and mode != self._mode:
            raise ValueError("GradientAccumulator.backward: this window mixes micro-batches "
                             "with num_items and without; pass num_items for every "
                             "micro-batch or for none")
        value = float(loss.item())
        if math.isfinite(value):
            xp = backend.get_array_module(loss.data)
            scale = 1.0 if self.scaler is None else self.scaler.get_scale()
            loss.backward(xp.full(loss.shape, weight * scale, dtype=loss.dtype))
            if self.buffer is not None:
                self.buffer.add(self._all_params())
        else:
            self._nonfinite = True
        self._mode = mode
        self._item_total += weight
        self._loss_sum += weight * value
        self._awaiting_step = True

    @staticmethod
    def _check_num_items(num_items):
        """Return the micro-batch's weight n_j (1 when num_items is None)."""
        if num_items is None:
            return 1
        if isinstance(num_items, Tensor):
            if num_items.size != 1:
                raise ValueError(f"GradientAccumulator.backward: num_items must be one "
                                 f"number, got a tensor of shape {num_items.shape}")
            num_items = num_items.item()
        if isinstance(num_items, bool) or not isinstance(num_items, numbers.Real):
            raise TypeError(f"GradientAccumulator.backward: num_items must be a positive "
                            f"number (the count of items the loss averages over), got "
                            f"{num_items!r}")
        if not (math.isfinite(num_items) and num_items > 0):
            raise ValueError(f"GradientAccumulator.backward: num_items must be > 0, got "
                             f"{num_items} (a micro-batch without items has no mean loss; "
                             "skip it)")
        return int(num_items) if isinstance(num_items, numbers.Integral) else float(num_items)

    def step(self) -> bool:
        """Close micro-batch j; on the k-th, update the parameters.

        Returns:
            True when an optimizer update was made (the window was complete
            and finite); False otherwise (the window is still filling, or it
            was skipped for non-finite values).

        Raises:
            RuntimeError: no ``backward`` since the last ``step``.
        """
        if not self._awaiting_step:
            raise RuntimeError("GradientAccumulator.step: no backward() since the last "
                               "step(); call backward(loss) once per micro-batch first")
        self._awaiting_step = False
        self.micro_step += 1
        if self.micro_step < self.accumulation_steps:
            return False
        return self._update()

    def flush(self) -> bool:
        """Apply a short final window (end of data), normalized by what it holds.

        Returns:
            True when an update was made; False when no micro-batch was
            pending (or the window was skipped for non-finite values).

        Raises:
            RuntimeError: a ``backward`` is waiting for its ``step``.
        """
        if self._awaiting_step:
            raise RuntimeError("GradientAccumulator.flush: the last backward() has no "
                               "step() yet; call step() before flush()")
        if self.micro_step == 0:
            return False
        return self._update()

    # ------------------------------------------------------------------ update
    def _all_params(self):
        return [p for group in self.optimizer.param_groups for p in group["params"]]

    def _params_with_grad(self):
        return [p for group in self.optimizer.param_groups for p in group["params"]
                if p.grad is not None]

    def _update(self) -> bool:
        """Normalize by the window's total, clip, step optimizer and scheduler once."""
        total = self._item_total
        self.window_loss = self._loss_sum / total
        if self.buffer is not None:
            self.buffer.write(self._all_params())
        params = self._params_with_grad()
        for p in params:
            p.grad.data /= total        # sum_j n_j grad L_j  ->  grad of the window mean
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)     # once per window, before clipping
        if self._nonfinite or not _all_finite(params):
            self._skip_window()
            return False
        if self.max_grad_norm is not None:
            self.last_grad_norm = clip_grad_norm_(params, self.max_grad_norm)
        self.optimizer.step()
        if self.scheduler is not None:
            self.scheduler.step()
        if self.scaler is not None:
            self.scaler.update()
        if self.model is not None:
            from .. import nn  # noqa: PLC0415
            nn.apply_merged_running_stats(self.model)
        self.optimizer.zero_grad()
        self.updates += 1
        self._reset_window()
        return True

    def _skip_window(self) -> None:
        if self.scaler is not None:       # an overflow of the scaled gradients: lower the scale
            self.scaler.update()
        else:
            warnings.warn(f"GradientAccumulator: non-finite loss or gradient in the window "
                          f"after {self.updates} updates (window loss {self.window_loss}); "
                          "the window is skipped: no optimizer or scheduler step",
                          RuntimeWarning, stacklevel=3)
        if self.model is not None:
            from .. import nn  # noqa: PLC0415
            for layer in nn.batchnorm_layers(self.model):
                layer.set_pending_stats(None)
        if self.buffer is not None:
            self.buffer.reset()
        self.optimizer.zero_grad()
        self.skipped_windows += 1
        self._reset_window()

    # --------------------------------------------------------- save and resume
    def state_dict(self) -> dict:
        """Everything needed to resume mid-window exactly.

        Returns a dict with the counters, the pending gradient of every
        parameter (copies, in the optimizer's parameter order; None where
        there is none), ``optimizer.state_dict()``, the scheduler's state, and
        the model's pending BatchNorm statistics (when ``model`` was given).
        """
        pending = [None if p.grad is None else p.grad.data.copy()
                   for group in self.optimizer.param_groups for p in group["params"]]
        state = {
            "accumulation_steps": self.accumulation_steps,
            "max_grad_norm": self.max_grad_norm,
            "micro_step": self.micro_step,
            "updates": self.updates,
            "skipped_windows": self.skipped_windows,
            "window_loss": self.window_loss,
            "last_grad_norm": self.last_grad_norm,
            "awaiting_step": self._awaiting_step,
            "mode": self._mode,
            "item_total": self._item_total,
            "loss_sum": self._loss_sum,
            "nonfinite": self._nonfinite,
            "pending_grads": pending,
            "optimizer": self.optimizer.state_dict(),
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
            "batchnorm": None,
        }
        if self.buffer is not None:
            state["buffer"] = self.buffer.state_dict()
        if self.model is not None:
            from .. import nn  # noqa: PLC0415
            state["batchnorm"] = [layer.get_pending_stats()
                                  for layer in nn.batchnorm_layers(self.model)]
        return state

    def load_state_dict(self, state: dict) -> None:
        """Restore a state from :meth:`state_dict`, into an accumulator built
        like the saved one (same k, an optimizer over parameters of the same
        shapes, a scheduler and a model if the saved one had them).

        Raises:
            TypeError: ``state`` is not a dict.
            ValueError: a key of :meth:`state_dict` is missing,
                ``accumulation_steps`` differs, the number of
                parameters or a gradient's shape differs, or a scheduler /
                model / BatchNorm layer count does not match.
        """
        check_state_keys("GradientAccumulator.load_state_dict", state, self._STATE_KEYS)
        if self.buffer is None and state.get("buffer") and state["buffer"]["sums"]:
            raise ValueError("GradientAccumulator.load_state_dict: the state holds a window "
                             "summed in an accumulation buffer (dtype=/compensated=); build "
                             "this accumulator with the same dtype and compensated")
        if state["accumulation_steps"] != self.accumulation_steps:
            raise ValueError(f"GradientAccumulator.load_state_dict: saved with "
                             f"accumulation_steps={state['accumulation_steps']}, this "
                             f"accumulator has {self.accumulation_steps}")
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        pending = state["pending_grads"]
        if len(pending) != len(params):
            raise ValueError(f"GradientAccumulator.load_state_dict: saved {len(pending)} "
                             f"gradients for {len(params)} parameters")
        for i, (p, g) in enumerate(zip(params, pending)):
            if g is not None and tuple(g.shape) != p.shape:
                raise ValueError(f"GradientAccumulator.load_state_dict: gradient {i} has "
                                 f"shape {tuple(g.shape)}, the parameter has {p.shape}")
        if (state["scheduler"] is None) != (self.scheduler is None):
            raise ValueError("GradientAccumulator.load_state_dict: the saved state and "
                             "this accumulator differ in having a scheduler")
        if (state["batchnorm"] is None) != (self.model is None):
            raise ValueError("GradientAccumulator.load_state_dict: the saved state and "
                             "this accumulator differ in having a model")
        self.optimizer.load_state_dict(state["optimizer"])
        if self.scheduler is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        if self.model is not None:
            self._load_batchnorm(state["batchnorm"])
        for p, g in zip(params, pending):
            p.grad = None if g is None else Tensor(
                backend.to_device(g, p.device).astype(p.dtype))   # astype copies
        self.max_grad_norm = state["max_grad_norm"]
        self.micro_step = state["micro_step"]
        self.updates = state["updates"]
        self.skipped_windows = state["skipped_windows"]
        self.window_loss = state["window_loss"]
        self.last_grad_norm = state["last_grad_norm"]
        self._awaiting_step = state["awaiting_step"]
        self._mode = state["mode"]
        self._item_total = state["item_total"]
        self._loss_sum = state["loss_sum"]
        self._nonfinite = state["nonfinite"]
        if self.buffer is not None:
            self.buffer.load_state_dict(state.get("buffer"))

    def _load_batchnorm(self, saved) -> None:
        from .. import nn  # noqa: PLC0415
        layers = list(nn.batchnorm_layers(self.model))
        if len(saved) != len(layers):
            raise ValueError(f"GradientAccumulator.load_state_dict: saved pending "
                             f"statistics of {len(saved)} BatchNorm layers, the model has "
                             f"{len(layers)}")
        for layer, stats in zip(layers, saved):
            layer.set_pending_stats(stats)

    def __repr__(self):
        return (f"GradientAccumulator(accumulation_steps={self.accumulation_steps}, "
                f"micro_step={self.micro_step}, updates={self.updates}, "
                f"max_grad_norm={self.max_grad_norm})")


def _all_finite(params) -> bool:
    """True when every gradient entry of every parameter is finite."""
    for p in params:
        xp = backend.get_array_module(p.grad.data)
        if not bool(xp.isfinite(p.grad.data).all()):
            return False
    return True
