"""GradientAccumulator: k micro-batches, one optimizer update, the full-batch result."""
from __future__ import annotations

import math
import warnings

from .. import backend, nn
from . import accumulation_checks as checks
from .accumulation_device import backward_on_device
from .accumulation_state import Window, accumulator_state, load_accumulator_state
from .buffers import GradBuffer
from .clip import clip_grad_norm_
from .lr_scheduler import step_ahead

_NONFINITE = "non-finite loss or gradient in the window"
_NO_ITEMS = "the window holds no items (num_items=0 for every micro-batch)"

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
    (or ``flush``) again does not divide a second time: the retry makes
    the same update as a run that never failed.

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
            ``"float16"`` or ``"bfloat16"`` (``ml_dtypes``; CuPy >= 14 on the GPU).
            Parameters and optimizer state keep their dtype.
        compensated: if True, Kahan summation in the buffer's dtype.
        scaler: an optional :class:`~minigrad.optim.GradScaler`: each
            micro-batch's loss is multiplied by its scale, the window's sum is
            unscaled once before clipping, an inf/nan window is skipped
            silently and the scale updated once per window.
        track_noise_scale: if True, estimate the gradient noise scale
            B_simple = tr(Σ)/|G|² from every window, micro-batches as the
            small batch and the window as the big one (data parallel: each
            rank's window and the all-reduced one), at the cost of one dot
            product per parameter gradient (:mod:`~minigrad.optim.noise_scale`).
            Needs ``num_items`` and two batch sizes (k >= 2, or >= 2 ranks);
            refuses a graph with BatchNorm in training mode.  Its averages are
            not part of ``state_dict()``; a window restored mid-way is not measured.
        noise_scale_beta: the decay of its two moving averages (default 0.9).

    Attributes:
        micro_step: micro-batches completed in the current window (0 ... k-1).
        updates: optimizer updates taken so far.
        window_loss: the item-weighted mean loss ``sum_j n_j L_j / sum_j n_j``
            of the last completed window, a float (None before the first).
            It is the full batch's mean loss, whatever k is.
        last_grad_norm: the global gradient norm before clipping at the last
            update (None unless ``max_grad_norm`` is set).
        skipped_windows: windows skipped because of non-finite values.
        noise_scale, noise_grad_sq, noise_trace: with ``track_noise_scale``,
            the smoothed B_simple, |G|² and tr(Σ) (None before the first
            window); ``noise`` holds the tracker and its per-window ``history``.

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

    def __init__(self, optimizer, accumulation_steps, *, max_grad_norm=None,
                 scheduler=None, model=None, comm=None, dtype=None, compensated=False,
                 scaler=None, track_noise_scale=False, noise_scale_beta=0.9):
        self.max_grad_norm = checks.check_accumulator(optimizer, accumulation_steps,
                                                      max_grad_norm, scheduler, model, scaler,
                                                      comm)
        self.optimizer, self.accumulation_steps = optimizer, int(accumulation_steps)
        self.scheduler, self.model, self.comm, self.scaler = scheduler, model, comm, scaler
        # The gradient noise scale, if asked for (noise_scale.py); None: not measured.
        self.noise = checks.noise_tracker(self, optimizer, accumulation_steps, comm, model,
                                          noise_scale_beta) if track_noise_scale else None
        if model is not None:
            nn.set_merge_running_stats(model, True)
        # Precision of the window's sums (buffers.py); None: .grad itself.
        self.buffer = GradBuffer(dtype, compensated) if dtype is not None or compensated \
            else None
        self.updates = 0
        self.skipped_windows = 0
        self.window_loss = None
        self.last_grad_norm = None
        self._reset_window()
        optimizer.zero_grad()

    def _reset_window(self) -> None:
        self.window = Window()          # the open window's counts (accumulation_state.py)
        if self.noise is not None:
            self.noise.reset_window()

    @property
    def micro_step(self) -> int:
        """Micro-batches completed in the current window (0 ... k-1)."""
        return self.window.micro_step

    # ------------------------------------------------------------- per micro-batch
    def backward(self, loss, num_items=None) -> None:
        """Back-propagate micro-batch j's mean loss L_j times its item count n_j.

        ``.grad`` gains n_j·grad L_j (the gradient of the *sum* of its per-item
        losses) and the window counts n_j; the division waits for the update.
        ``num_items``: n_j (a number >= 0 or a one-element Tensor; 0 adds
        nothing), or None to count 1.  A bad call raises TypeError, ValueError or
        RuntimeError (:func:`~minigrad.optim.accumulation_checks.check_backward`).
        """
        weight, mode = checks.check_backward(self, loss, num_items)
        if backend.is_cupy_array(loss.data):    # no wait for the GPU per micro-batch
            return backward_on_device(self, loss, weight, mode)
        self._weighted_backward(loss, weight, mode)

    def _weighted_backward(self, loss, weight, mode) -> None:
        """Micro-batch j's backward, once the call is checked: back-propagate its
        mean loss L_j seeded with n_j = ``weight`` (times the loss scale S when
        there is a ``scaler``), so that ``.grad`` gains n_j·S·grad L_j, unless
        n_j is 0 or L_j is inf or nan; then count it (``_count_micro_batch``)."""
        # BEGIN SOLUTION ch04.3
        value = float(loss.item())
        if weight != 0 and math.isfinite(value):
            # Seed backward with n_j (times the loss scale), not 1: it back-propagates
            # n_j·L_j, so .grad gains n_j·grad L_j.
            xp = backend.get_array_module(loss.data)
            scale = 1.0 if self.scaler is None else self.scaler.get_scale()
            loss.backward(xp.full(loss.shape, weight * scale, dtype=loss.dtype))
        self._count_micro_batch(weight, mode, value)
        # END SOLUTION

    def _count_micro_batch(self, weight, mode, value) -> None:
        """The end of every micro-batch's backward, the pipeline stages' too
        (they call it after their own backward): when n_j = ``weight`` is not 0,
        mark the window non-finite if L_j = ``value`` is inf or nan, else move
        ``.grad`` into the window's buffer when there is one
        (``self.buffer.add``), and add n_j·L_j to the window's loss sum; always
        record ``mode`` and add n_j to the window's item total."""
        window = self.window
        # BEGIN SOLUTION ch04.3
        if weight != 0:                         # no items: nothing to add
            if not math.isfinite(value):
                window.nonfinite = True
            elif self.buffer is not None:       # move .grad into the window's buffer:
                self.buffer.add(self.optimizer._params())   # sum += grad; grad = None
            window.loss_sum += weight * value
        window.mode = mode
        window.item_total += weight
        # END SOLUTION
        window.awaiting_step = True

    def step(self) -> bool:
        """Close micro-batch j; on the k-th, update the parameters.  Returns True
        when an update was made.  RuntimeError without a ``backward`` first; if
        the update raises, nothing changed, and a retry makes the same update.
        """
        checks.check_step(self)
        # BEGIN SOLUTION ch04.4
        if self.window.micro_step + 1 < self.accumulation_steps:
            self.window.awaiting_step = False
            self.window.micro_step += 1
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
        checks.check_flush(self)
        if self.comm is not None:       # collective: other ranks may hold items
            return self._update()
        # BEGIN SOLUTION ch05.1
        if self.window.micro_step == 0:
            return False
        return self._update()
        # END SOLUTION

    # ------------------------------------------------------------------ update
    def _update(self) -> bool:
        """Normalize by the window's total, clip, step optimizer and scheduler once:
        all or nothing (the checks first; ``step_ahead`` puts the scheduler back)."""
        self.optimizer._check_step()          # raises before anything changes
        checks.check_gradients_writable(self)
        with step_ahead(self.optimizer, self.scheduler) as schedule:    # the scheduler's step
            if not self.window.normalized:      # once: a retry must not divide again
                self.window.prepared = self._mean_gradient()    # (loss, norm) or None
                if not self.window.normalized:
                    return False            # skipped: the scheduler is put back
            self.optimizer.step()
            schedule.commit()
        self._after_step()                  # GradScaler's scale, BatchNorm's statistics
        self.optimizer.zero_grad()
        self.window_loss, self.last_grad_norm = self.window.prepared
        self.updates += 1
        self._reset_window()
        return True

    def _mean_gradient(self):
        """Divide the window's summed gradient by its item total, check, clip.
        Returns ``(window loss, grad norm)``, or None: the window is skipped or empty."""
        params = self._window_sums()    # the parameters whose .grad holds Σ_j n_j grad L_j
        if params is None:
            return None
        total = self.window.item_total
        # BEGIN SOLUTION ch04.5
        for p in params:                # sum_j n_j grad L_j -> grad of the window mean
            p.grad.data /= backend.count_as(total, p.grad.data)   # never a float16 count
        window_loss = self.window.loss_sum / total
        if self.window.nonfinite or not all_finite(params):
            self._skip_window(window_loss)
            return None
        grad_norm = self.last_grad_norm
        if self.max_grad_norm is not None:
            grad_norm = clip_grad_norm_(params, self.max_grad_norm)
        # END SOLUTION
        return window_loss, grad_norm

    def _window_sums(self):
        """The parameters whose ``.grad`` holds the window's sum, ready to divide.

        The sum comes back from the buffer (``dtype=``), is summed over the
        ranks (``comm``) and unscaled (``scaler``).  None when there is nothing
        to divide: no rank had a micro-batch (flush at the end), or the window
        holds no items (then it is skipped).
        """
        if self.buffer is not None:     # the window's sums, summed in the buffer,
            self.buffer.write(self.optimizer._params())     # back into .grad
        self.window.settle()            # a GPU window's loss sum, to the host once
        if self.noise is not None and self.noise.ranks > 1:
            self.noise.before_reduce(self)      # this rank's window: the small batch
        if self.comm is not None and not self._reduce_window():
            return None                 # no rank had a micro-batch (flush at the end)
        if self.window.item_total == 0:     # every micro-batch empty: no mean to step on
            self._skip_window(math.nan, _NO_ITEMS, stacklevel=6)    # one frame deeper
            return None
        params = [p for p in self.optimizer._params() if p.grad is not None]
        if self.scaler is not None:
            self.scaler.unscale_(self.optimizer)    # once per window, before clipping
            if self.window.nonfinite:   # an inf/nan loss: an overflow like any other
                self.scaler._record_found_inf(self.optimizer)
        return params

    def _after_step(self) -> None:
        """Once per window, after the optimizer's step: the GradScaler's scale
        update, the model's merged BatchNorm running statistics."""
        if self.scaler is not None:
            self.scaler.update()
        if self.model is not None:
            nn.apply_merged_running_stats(self.model)

    def _reduce_window(self) -> bool:
        """Data parallelism: sum gradients and counts over the ranks, one all-reduce."""
        from ..distributed import reduce_window  # noqa: PLC0415 (distributed imports optim)
        return reduce_window(self)

    def _skip_window(self, window_loss, reason=_NONFINITE, stacklevel=5) -> None:
        """Drop the window (non-finite, or no items) and warn; ``stacklevel``: the
        frames up to the user's ``step()`` or ``flush()`` call, where the warning points."""
        # BEGIN SOLUTION ch05.3
        if self.model is not None:
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
                          RuntimeWarning, stacklevel=stacklevel)
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
        return accumulator_state(self)

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
        load_accumulator_state(self, state)
        if self.noise is not None:      # the restored window's micro-batch norms are unknown
            self.noise.reset_window()
            self.noise.partial_window = self.micro_step > 0

    # ------------------------------------------------- the gradient noise scale
    @property
    def noise_scale(self):
        """B_simple = tr(Σ)/|G|² in items, smoothed over windows (``track_noise_scale``);
        None before the first estimate."""
        return None if self.noise is None else self.noise.noise_scale

    @property
    def noise_grad_sq(self):
        """The smoothed estimate of |G|², the true gradient's squared norm."""
        return None if self.noise is None else self.noise.grad_sq

    @property
    def noise_trace(self):
        """The smoothed estimate of tr(Σ), the per-item gradients' total variance."""
        return None if self.noise is None else self.noise.trace

    def __repr__(self):
        return (f"GradientAccumulator(accumulation_steps={self.accumulation_steps}, "
                f"micro_step={self.micro_step}, updates={self.updates}, "
                f"max_grad_norm={self.max_grad_norm})")


def all_finite(params) -> bool:
    """True when every gradient entry of every parameter is finite: one read on
    the host for all of them, nothing gradient-sized allocated
    (:func:`minigrad.backend.all_finite`)."""
    return backend.all_finite([p.grad.data for p in params])
