"""GradientAccumulator: k micro-batches, one optimizer update, the full-batch result."""
from __future__ import annotations

import math
import numbers
import warnings

import numpy as np

from .. import backend
from ..tensor import Tensor
from .buffers import GradBuffer
from .clip import clip_grad_norm_
from .lr_scheduler import LRScheduler
from .grad_scaler import GradScaler
from .optimizer import Optimizer, check_number, check_state_keys


_NONFINITE = "non-finite loss or gradient in the window"

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

    **Failures change nothing.**  ``step``, ``flush`` and ``load_state_dict``
    either complete or raise with the state as it was: at an update, the
    optimizer's checks of every gradient and hyperparameter and the
    scheduler's step run before the first gradient is divided (the scheduler
    is stepped ahead and put back if anything later fails).  Should the
    optimizer's own step raise after that, it puts itself back
    (:class:`~minigrad.optim.Optimizer`), and the window stays open with its
    gradient already normalized and clipped, marked so that calling ``step``
    (or ``flush``) again divides nothing twice and makes the update an
    uninterrupted run makes.

    Args:
        optimizer: the :class:`~minigrad.optim.Optimizer` to step once per window.
        accumulation_steps: k, the number of micro-batches per update (int >= 1).
        max_grad_norm: if given (> 0), clip the window's gradient to this
            global 2-norm before the update (:func:`clip_grad_norm_`).
        scheduler: an optional learning-rate scheduler of ``optimizer``, stepped
            once per update.
        model: an optional :class:`~minigrad.nn.Module`; when given, its
            BatchNorm layers merge their running statistics over each window.
        comm: an optional MPI communicator (``minigrad.distributed.init()``)
            for data parallelism: at the window's end the gradients and item
            counts of every rank are summed by one all-reduce before the
            division by the global item count, so every rank takes the
            update of the whole W-rank window
            (:func:`minigrad.distributed.reduce_window`).  Every rank must
            make the same number of ``step()`` calls per window and call
            ``flush()`` together, which then always communicates.
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
                   "mode", "item_total", "loss_sum", "nonfinite", "prepared", "pending_grads",
                   "optimizer", "scheduler", "batchnorm")

    def __init__(self, optimizer, accumulation_steps, *, max_grad_norm=None,
                 scheduler=None, model=None, comm=None, dtype=None, compensated=False,
                 scaler=None):
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
        self.comm = comm
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
        self._prepared = None         # (window loss, grad norm) once the grads are normalized

    # ------------------------------------------------------------- per micro-batch
    def backward(self, loss, num_items=None) -> None:
        """Back-propagate micro-batch j's mean loss, weighted by its item count.

        Adds ``num_items * grad(loss)`` into the parameters' ``.grad`` (the
        gradient of the sum of the micro-batch's per-item losses) and counts
        ``num_items``.  A non-finite loss is not back-propagated; it marks the
        window to be skipped.

        A micro-batch with no items (``num_items=0``: every target ignored,
        e.g. prompt-only rows in fine-tuning) counts as one of the window's
        k micro-batches and adds nothing: its loss (a mean over nothing, nan
        in PyTorch's convention) is neither back-propagated nor added to the
        window's loss, so the update equals the full batch's.  A window
        whose micro-batches together hold no items has no mean gradient: it
        is skipped with a RuntimeWarning (no optimizer or scheduler step;
        ``skipped_windows`` counts it), since a step on a zero gradient would
        only move the weights on stale momentum.

        Args:
            loss: a Tensor with one element that requires grad: the *mean* of
                the micro-batch's per-item losses.
            num_items: n_j, the number of items the mean is over (an int or a
                number >= 0; a one-element Tensor works too), or None to
                count the micro-batch as 1.

        Raises:
            TypeError: ``loss`` is not a Tensor, or ``num_items`` not a number.
            ValueError: ``loss`` has more than one element, ``num_items < 0``
                (or not finite), or the window mixes ``num_items`` and None.
            RuntimeError: ``loss`` does not require grad, or ``backward`` is
                called twice without ``step`` in between.
        """
        if not isinstance(loss, Tensor):
            raise TypeError(f"GradientAccumulator.backward: loss must be a Tensor, got "
                            f"{type(loss).__name__}")
        if loss.numel() != 1:
            raise ValueError(f"GradientAccumulator.backward: loss must be a scalar (the "
                             f"micro-batch's mean loss), got shape {loss.shape}; reduce it "
                             "with .mean() or reduction='mean'")
        if not loss.requires_grad:
            raise RuntimeError("GradientAccumulator.backward: the loss does not require "
                               "grad (was it computed under no_grad(), or from parameters "
                               "with requires_grad=False?)")
        if self._prepared is not None:
            raise RuntimeError("GradientAccumulator.backward: the last update raised after "
                               "its gradients were normalized; call step() (or flush()) "
                               "again to retry it before the next micro-batch")
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
        # BEGIN SOLUTION ch04.3
        value = float(loss.item())
        if weight == 0:
            pass                          # no items: nothing to add (see above)
        elif math.isfinite(value):
            xp = backend.get_array_module(loss.data)
            scale = 1.0 if self.scaler is None else self.scaler.get_scale()
            loss.backward(xp.full(loss.shape, weight * scale, dtype=loss.dtype))
            if self.buffer is not None:
                self.buffer.add(self._all_params())
        else:
            self._nonfinite = True
        self._mode = mode
        self._item_total += weight
        if weight != 0:
            self._loss_sum += weight * value
        # END SOLUTION
        self._awaiting_step = True

    @staticmethod
    def _check_num_items(num_items):
        """Return the micro-batch's weight n_j (1 when num_items is None)."""
        if num_items is None:
            return 1
        if isinstance(num_items, Tensor):
            if num_items.numel() != 1:
                raise ValueError(f"GradientAccumulator.backward: num_items must be one "
                                 f"number, got a tensor of shape {num_items.shape}")
            num_items = num_items.item()
        if isinstance(num_items, bool) or not isinstance(num_items, numbers.Real):
            raise TypeError(f"GradientAccumulator.backward: num_items must be a number >= 0 "
                            f"number (the count of items the loss averages over), got "
                            f"{num_items!r}")
        if not (math.isfinite(num_items) and num_items >= 0):
            raise ValueError(f"GradientAccumulator.backward: num_items must be a finite "
                             f"number >= 0 (the count of items the loss averages over), "
                             f"got {num_items}")
        return int(num_items) if isinstance(num_items, numbers.Integral) else float(num_items)

    def step(self) -> bool:
        """Close micro-batch j; on the k-th, update the parameters.

        Returns:
            True when an optimizer update was made (the window was complete
            and finite); False otherwise (the window is still filling, or it
            was skipped for non-finite values).

        Raises:
            RuntimeError: no ``backward`` since the last ``step``.
            Whatever the update raises (a gradient of the wrong shape, a bad
            hyperparameter, a scheduler's ``lr_lambda``): then nothing has
            changed, the micro-batch is still waiting for this ``step``, and
            calling it again gives the update an uninterrupted run makes.
        """
        if not self._awaiting_step:
            raise RuntimeError("GradientAccumulator.step: no backward() since the last "
                               "step(); call backward(loss) once per micro-batch first")
        # BEGIN SOLUTION ch04.4
        if self.micro_step + 1 < self.accumulation_steps:
            self._awaiting_step = False
            self.micro_step += 1
            return False
        return self._update()           # closes the window, or raises having changed nothing
        # END SOLUTION

    def flush(self) -> bool:
        """Apply a short final window (end of data), normalized by what it holds.

        Returns:
            True when an update was made; False when no micro-batch was
            pending (or the window was skipped for non-finite values).

        Raises:
            RuntimeError: a ``backward`` is waiting for its ``step``.
            Whatever the update raises, as :meth:`step` (nothing changed).
        """
        if self._awaiting_step:
            raise RuntimeError("GradientAccumulator.flush: the last backward() has no "
                               "step() yet; call step() before flush()")
        if self.comm is not None:       # collective: other ranks may hold items
            return self._update()
        # BEGIN SOLUTION ch05.1
        if self.micro_step == 0:
            return False
        return self._update()
        # END SOLUTION

    # ------------------------------------------------------------------ update
    def _all_params(self):
        return [p for group in self.optimizer.param_groups for p in group["params"]]

    def _params_with_grad(self):
        return [p for group in self.optimizer.param_groups for p in group["params"]
                if p.grad is not None]

    def _update(self) -> bool:
        """Normalize by the window's total, clip, step optimizer and scheduler once.

        All or nothing: what can fail on bad input runs first (the optimizer's
        checks of every gradient and hyperparameter, then the scheduler's step,
        taken ahead and undone on failure).  If the optimizer's step raises
        anyway, the scheduler is put back and the gradients stay normalized
        (and clipped), marked so that a retry uses them as they are.
        """
        self.optimizer._check_step()          # raises before anything changes
        ahead = self._step_scheduler_ahead()  # raises having changed nothing
        try:
            if self._prepared is None:
                if self.buffer is not None:     # the window's sums, summed in the buffer,
                    self.buffer.write(self._all_params())   # back into .grad
                if self.comm is not None and not self._reduce_window():
                    self._undo_scheduler(ahead)
                    return False            # no rank had a micro-batch (flush at the end)
                total = self._item_total
                if total == 0:              # every micro-batch empty: no mean to step on
                    self._undo_scheduler(ahead)
                    self._skip_window(math.nan, "the window holds no items (num_items=0 "
                                                "for every micro-batch)")
                    return False
                params = self._params_with_grad()
                if self.scaler is not None:
                    self.scaler.unscale_(self.optimizer)    # once per window, before clipping
                # BEGIN SOLUTION ch04.5
                for p in params:
                    p.grad.data /= total    # sum_j n_j grad L_j -> grad of the window mean
                window_loss = self._loss_sum / total
                if self._nonfinite or not _all_finite(params):
                    self._undo_scheduler(ahead)
                    self._skip_window(window_loss)
                    return False
                grad_norm = self.last_grad_norm
                if self.max_grad_norm is not None:
                    grad_norm = clip_grad_norm_(params, self.max_grad_norm)
                # END SOLUTION
                self._prepared = (window_loss, grad_norm)   # a retry must not divide again
            self.optimizer.step()
        except BaseException:
            self._undo_scheduler(ahead)
            raise
        if ahead is not None:
            _set_rates(self.optimizer, ahead[1])
        if self.scaler is not None:
            self.scaler.update()                # one scale update per window
        if self.model is not None:
            from .. import nn  # noqa: PLC0415
            nn.apply_merged_running_stats(self.model)
        self.optimizer.zero_grad()
        self.window_loss, self.last_grad_norm = self._prepared
        self.updates += 1
        self._reset_window()
        return True

    def _step_scheduler_ahead(self):
        """Step the scheduler before the optimizer, so that it fails (if it
        does) before anything else changed.  Returns None without a scheduler,
        else ``(its state before, the new rates, the current rates)``; the
        groups keep the current rates for the optimizer's step, and get the
        new ones after it."""
        if self.scheduler is None:
            return None
        before = self.scheduler.state_dict()
        rates = _rates(self.optimizer)
        self.scheduler.step()                 # all or nothing
        new_rates = _rates(self.optimizer)
        _set_rates(self.optimizer, rates)
        return before, new_rates, rates

    def _undo_scheduler(self, ahead) -> None:
        if ahead is None:
            return
        before, _, rates = ahead
        if isinstance(self.scheduler, LRScheduler):
            self.scheduler._set_state(self.scheduler._check_state(before))
        else:
            self.scheduler.load_state_dict(before)
        _set_rates(self.optimizer, rates)

    def _reduce_window(self) -> bool:
        """Data parallelism: sum gradients and counts over the ranks, one all-reduce."""
        from ..distributed import reduce_window  # noqa: PLC0415 (loaded on demand)
        return reduce_window(self)

    def _skip_window(self, window_loss, reason=_NONFINITE) -> None:
        # BEGIN SOLUTION ch05.3
        if self.model is not None:
            from .. import nn  # noqa: PLC0415
            for layer in nn.batchnorm_layers(self.model):
                layer.set_pending_stats(None)
        if self.buffer is not None:
            self.buffer.reset()
        self.optimizer.zero_grad()
        self.window_loss = window_loss
        self.skipped_windows += 1
        self._reset_window()
        if self.scaler is not None and reason == _NONFINITE:
            self.scaler.update()            # an overflow of the scaled gradients: back off
        else:
            warnings.warn(f"GradientAccumulator: {reason} "
                          f"after {self.updates} updates (window loss {window_loss}); "
                          "the window is skipped: no optimizer or scheduler step",
                          RuntimeWarning, stacklevel=4)
        # END SOLUTION

    # --------------------------------------------------------- save and resume
    def state_dict(self) -> dict:
        """Everything needed to resume mid-window exactly.

        Returns a dict with the counters, the pending gradient of every
        parameter (copies, in the optimizer's parameter order; None where
        there is none), ``optimizer.state_dict()``, the scheduler's state, and
        the model's pending BatchNorm statistics (when ``model`` was given).
        Arrays and plain Python values only: :func:`minigrad.save` writes it
        without pickle.
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
            "prepared": None if self._prepared is None else list(self._prepared),
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

        All or nothing: the counters and gradients are checked first, then
        the optimizer, the scheduler and the BatchNorm statistics are loaded;
        if any of them raises, everything loaded so far is put back.

        Raises:
            TypeError: ``state`` is not a dict, or a value has the wrong type.
            ValueError: a key of :meth:`state_dict` is missing,
                ``accumulation_steps`` differs, a counter is out of range, the
                number of parameters or a gradient's shape differs, or
                a scheduler / model / BatchNorm layer count does not match (and
                whatever the optimizer's and scheduler's ``load_state_dict``
                raise).
        """
        name = "GradientAccumulator.load_state_dict"
        check_state_keys(name, state, self._STATE_KEYS)
        if self.buffer is None and state.get("buffer") and state["buffer"]["sums"]:
            raise ValueError(f"{name}: the state holds a window summed in an accumulation "
                             "buffer (dtype=/compensated=); build this accumulator with "
                             "the same dtype and compensated")
        if state["accumulation_steps"] != self.accumulation_steps:
            raise ValueError(f"{name}: saved with accumulation_steps="
                             f"{state['accumulation_steps']}, this accumulator has "
                             f"{self.accumulation_steps}")
        counters = self._check_counters(name, state)
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        grads = self._check_pending_grads(name, state["pending_grads"], params)
        if (state["scheduler"] is None) != (self.scheduler is None):
            raise ValueError(f"{name}: the saved state and this accumulator differ in "
                             "having a scheduler")
        if (state["batchnorm"] is None) != (self.model is None):
            raise ValueError(f"{name}: the saved state and this accumulator differ in "
                             "having a model")
        layers = []
        if self.model is not None:
            from .. import nn  # noqa: PLC0415
            layers = list(nn.batchnorm_layers(self.model))
            if not isinstance(state["batchnorm"], list) or \
                    len(state["batchnorm"]) != len(layers):
                raise ValueError(f"{name}: saved pending statistics of "
                                 f"{len(state['batchnorm'])} BatchNorm layers, the model "
                                 f"has {len(layers)}")
        # Checked what can be checked here; the optimizer, scheduler and layers
        # check their own parts as they load.  Keep what is needed to undo.
        opt = self.optimizer
        undo = (opt.state, [dict(g) for g in opt.param_groups], opt._loaded_lrs,
                None if self.scheduler is None else self.scheduler.state_dict(),
                [layer.get_pending_stats() for layer in layers],
                None if self.buffer is None else self.buffer.state_dict())
        try:
            opt.load_state_dict(state["optimizer"])
            if self.scheduler is not None:
                self.scheduler.load_state_dict(state["scheduler"])
            for layer, stats in zip(layers, state["batchnorm"] or ()):
                layer.set_pending_stats(stats)
            if self.buffer is not None:
                self.buffer.load_state_dict(state.get("buffer"))
        except BaseException:
            if self.buffer is not None:
                self.buffer.load_state_dict(undo[5])
            opt.state, opt._loaded_lrs = undo[0], undo[2]
            for group, saved in zip(opt.param_groups, undo[1]):
                group.clear()
                group.update(saved)
            if self.scheduler is not None:
                self._undo_scheduler((undo[3], None, [g["lr"] for g in undo[1]]))
            for layer, stats in zip(layers, undo[4]):
                layer.set_pending_stats(stats)
            raise
        for p, g in zip(params, grads):
            p.grad = g
        for key, value in counters.items():
            setattr(self, key, value)

    def _check_counters(self, name, state) -> dict:
        """The attributes to set from ``state``, each checked."""
        def integer(key, low=0, high=None):
            value = state[key]
            if isinstance(value, bool) or not isinstance(value, numbers.Integral) or \
                    value < low or (high is not None and value > high):
                raise ValueError(f"{name}: {key} must be an int in [{low}, "
                                 f"{'inf' if high is None else high}], got {value!r}")
            return int(value)

        def real(key, optional=True):
            value = state[key]
            if value is None and optional:
                return None
            if isinstance(value, bool) or not isinstance(value, numbers.Real):
                raise TypeError(f"{name}: {key} must be a number"
                                f"{' or None' if optional else ''}, got {value!r}")
            return value

        def flag(key):
            if not isinstance(state[key], bool):
                raise TypeError(f"{name}: {key} must be True or False, got {state[key]!r}")
            return state[key]

        if state["mode"] not in (None, "items", "count"):
            raise ValueError(f"{name}: mode must be None, 'items' or 'count', got "
                             f"{state['mode']!r}")
        max_grad_norm = state["max_grad_norm"]
        if max_grad_norm is not None:
            max_grad_norm = check_number(name, "max_grad_norm", max_grad_norm, low=0.0,
                                         low_inclusive=False)
        prepared = state["prepared"]
        if prepared is not None:
            if not isinstance(prepared, (list, tuple)) or len(prepared) != 2:
                raise ValueError(f"{name}: prepared must be None or [window_loss, "
                                 f"grad_norm], got {prepared!r}")
            prepared = tuple(prepared)
        item_total = real("item_total", optional=False)
        if item_total < 0:
            raise ValueError(f"{name}: item_total must be >= 0, got {item_total}")
        return {"max_grad_norm": max_grad_norm,
                "micro_step": integer("micro_step", 0, self.accumulation_steps - 1),
                "updates": integer("updates"),
                "skipped_windows": integer("skipped_windows"),
                "window_loss": real("window_loss"),
                "last_grad_norm": real("last_grad_norm"),
                "_awaiting_step": flag("awaiting_step"),
                "_mode": state["mode"],
                "_item_total": item_total,
                "_loss_sum": real("loss_sum", optional=False),
                "_nonfinite": flag("nonfinite"),
                "_prepared": prepared}

    @staticmethod
    def _check_pending_grads(name, pending, params) -> list:
        """The new ``.grad`` of every parameter (Tensors or None), built
        before any is assigned."""
        if not isinstance(pending, (list, tuple)) or len(pending) != len(params):
            count = len(pending) if isinstance(pending, (list, tuple)) else "no"
            raise ValueError(f"{name}: saved {count} gradients for {len(params)} parameters")
        grads = []
        for i, (p, g) in enumerate(zip(params, pending)):
            if g is None:
                grads.append(None)
                continue
            if not (isinstance(g, np.ndarray) or backend.is_cupy_array(g)):
                raise TypeError(f"{name}: gradient {i} must be an array or None, got "
                                f"{type(g).__name__}")
            if tuple(g.shape) != p.shape:
                raise ValueError(f"{name}: gradient {i} has shape {tuple(g.shape)}, the "
                                 f"parameter has {p.shape}")
            if g.dtype.kind != "f":
                raise TypeError(f"{name}: gradient {i} has dtype {g.dtype}, expected a "
                                f"floating-point array (it is cast to the parameter's {p.dtype})")
            grads.append(Tensor(backend.to_device(g, p.device).astype(p.dtype)))  # copies
        return grads

    def __repr__(self):
        return (f"GradientAccumulator(accumulation_steps={self.accumulation_steps}, "
                f"micro_step={self.micro_step}, updates={self.updates}, "
                f"max_grad_norm={self.max_grad_norm})")


def _rates(optimizer) -> list:
    return [group["lr"] for group in optimizer.param_groups]


def _set_rates(optimizer, rates) -> None:
    for group, lr in zip(optimizer.param_groups, rates):
        group["lr"] = lr


def _all_finite(params) -> bool:
    """True when every gradient entry of every parameter is finite."""
    for p in params:
        xp = backend.get_array_module(p.grad.data)
        if not bool(xp.isfinite(p.grad.data).all()):
            return False
    return True
