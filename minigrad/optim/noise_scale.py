"""The gradient noise scale, measured for free while accumulating.

**The idea.**  A mini-batch gradient is the true gradient G plus noise.  For
a batch of b items drawn independently, the noise has covariance Σ/b (Σ: the
covariance of the per-item gradients), so

    E |g_b|² = |G|² + tr(Σ) / b.

Measure the squared norm at two batch sizes and you have two equations for
the two unknowns |G|² and tr(Σ).  Gradient accumulation has both sizes at
hand: every micro-batch is a small batch (b items), the window a big one
(B items).  Solving (McCandlish, Kaplan, Amodei et al., *An Empirical Model
of Large-Batch Training*, 2018, Appendix A.1) gives unbiased estimates

    |G|²  ≈ (B |G_B|² − b |G_b|²) / (B − b),
    tr(Σ) ≈ (|G_b|² − |G_B|²) / (1/b − 1/B),

and their ratio is the *simple noise scale* B_simple = tr(Σ) / |G|²: the
batch size at which the noise in a gradient is as large as the gradient
itself.  One window's estimates are very noisy (|G|² may even come out
negative), so the numerator and the denominator are each smoothed by an
exponential moving average, and B_simple is the ratio of the two averages
(the paper's advice: the ratio of two noisy numbers is biased, the average of
ratios more so).

**Unequal micro-batches.**  A micro-batch of n_j items has
E |g_j|² = |G|² + tr(Σ)/n_j.  Averaging with the item weights n_j/B (the
weights that make the window's gradient, as ``num_items`` does) gives
E Σ_j (n_j/B)|g_j|² = |G|² + k·tr(Σ)/B: the small batch is b = B/k, the mean
micro-batch size (:func:`window_estimates`).

**Data parallelism.**  With W ranks, each rank's local window (its k
micro-batches) is the small batch and the all-reduced window the big one:
b = B / W.  The ranks add their item-weighted squared norms in one extra
all-reduce of two numbers per window.

**Where the norms come from, at no memory cost.**  A micro-batch's squared
norm is the sum over parameters of a dot product of the flat incoming gradient
with itself, taken as the backward driver hands it to ``.grad``
(:func:`minigrad.autograd.add_leaf_observer`): nothing is copied and nothing
of a parameter's size allocated.  It is closed when the next ``backward``
starts, or when the optimizer is about to step (a step pre-hook), where the
window's squared norm is read from ``.grad`` (from the clipping norm when
clipped); a step post-hook folds the estimate in once the update succeeded.
The accumulator's update path (backward, step, the update) is untouched.

**Where it does not apply.**  A window of one micro-batch has only one batch
size (b = B): there is nothing to solve (use k >= 2, or data parallelism).
BatchNorm in training normalizes each item by its micro-batch's statistics,
so a micro-batch's gradient is not a mean of independent per-item gradients
and E |g_b|² = |G|² + tr(Σ)/b does not hold: the tracker refuses such a graph.
"""
from __future__ import annotations

import weakref

import numpy as np

from .. import autograd, backend

_NAME = "GradientAccumulator(track_noise_scale=True)"


def unbiased_estimates(small_sq: float, b: float, big_sq: float, big: float):
    """``(|G|², tr Σ)`` from mean squared gradient norms at two batch sizes.

    Args:
        small_sq: |G_b|², the mean squared norm of gradients of batches of b items.
        b: the small batch size (items).
        big_sq: |G_B|², the squared norm of the gradient of a batch of B items.
        big: B > b.

    Unbiased when E|g_b|² = |G|² + tr(Σ)/b (McCandlish et al. 2018, A.1).
    """
    # BEGIN SOLUTION ch14.1
    grad_sq = (big * big_sq - b * small_sq) / (big - b)
    trace = (small_sq - big_sq) / (1.0 / b - 1.0 / big)
    # END SOLUTION
    return grad_sq, trace


def window_estimates(micro_sq_norms, micro_items, window_sq_norm: float):
    """``(|G|², tr Σ)`` of one accumulation window.

    Args:
        micro_sq_norms: |g_j|², the squared norm of each micro-batch's *mean*
            gradient, shape (k,).
        micro_items: n_j > 0, the items each micro-batch's loss averages over, (k,).
        window_sq_norm: |G_B|², the squared norm of the window's item-weighted
            mean gradient (B = Σ_j n_j items).

    Raises:
        ValueError: fewer than two micro-batches (b would equal B).
    """
    n = np.asarray(micro_items, dtype=np.float64)
    sq = np.asarray(micro_sq_norms, dtype=np.float64)
    if n.shape != sq.shape or n.size < 2:
        raise ValueError(f"window_estimates: need the norms and items of >= 2 micro-batches "
                         f"(b < B), got {sq.size} norms and {n.size} item counts")
    big = float(n.sum())
    # BEGIN SOLUTION ch14.1
    small_sq = float(n @ sq) / big      # item-weighted: E = |G|² + tr Σ / b ...
    b = big / n.size                    # ... with b = B / k, the mean micro-batch size
    # END SOLUTION
    return unbiased_estimates(small_sq, b, window_sq_norm, big)


def squared_norm(g):
    """|g|² = Σ g², as a dot product of the flat array with itself: no temporary
    of g's size for a contiguous array (a 0-d array on the GPU: no wait)."""
    if not (g.flags.c_contiguous or g.flags.f_contiguous):
        g = g.copy()                    # a strided view: rare for a gradient
    flat = g.reshape(-1) if g.flags.c_contiguous else g.T.reshape(-1)   # views
    if flat.dtype.itemsize < 4:         # float16/bfloat16: sum in float32
        xp = backend.get_array_module(flat)
        return xp.einsum("i,i->", flat, flat, dtype=np.float32) if xp is np \
            else xp.dot(flat.astype(np.float32), flat.astype(np.float32))
    out = flat @ flat
    return float(out) if isinstance(out, np.generic) or not backend.is_array(out) else out


class NoiseScaleTracker:
    """The estimates of a :class:`~minigrad.optim.GradientAccumulator` with
    ``track_noise_scale=True``; read them as ``acc.noise_scale``,
    ``acc.noise_grad_sq`` and ``acc.noise_trace``.

    Attributes:
        beta: the moving averages' decay (0 <= beta < 1).
        windows: windows measured so far.
        history: one dict per measured window: ``update``, ``items`` (B),
            ``small_batch`` (b), the window's raw ``grad_sq`` and ``trace``,
            and the smoothed ``noise_scale`` after it.
    """

    def __init__(self, params, beta: float = 0.9, ranks: int = 1, accumulator=None):
        if not 0.0 <= beta < 1.0:
            raise ValueError(f"{_NAME}: noise_scale_beta must be in [0, 1), got {beta}")
        self.beta, self.ranks = float(beta), int(ranks)
        self._ids = {id(p) for p in params}
        self.windows = 0
        self.history: list[dict] = []
        self._grad_sq_avg = self._trace_avg = 0.0
        self.reset_window()
        if self.ranks == 1:             # micro-batches are the small batch: watch them arrive
            autograd.add_leaf_observer(self)
        if accumulator is not None:     # the window's end: around the optimizer's step
            self._acc = weakref.ref(accumulator)
            me = weakref.ref(self)      # hooks must not keep the tracker alive
            accumulator.optimizer.register_step_pre_hook(
                lambda *_: me() is not None and me()._before_step())
            accumulator.optimizer.register_step_post_hook(
                lambda *_: me() is not None and me()._after_step())

    def close(self) -> None:
        """Stop observing backward passes."""
        autograd.remove_leaf_observer(self)

    # ------------------------------------------------------------ the averages
    def update(self, grad_sq: float, trace: float) -> None:
        """Fold one window's raw estimates into the two moving averages."""
        # BEGIN SOLUTION ch14.1
        self.windows += 1
        self._grad_sq_avg = self.beta * self._grad_sq_avg + (1 - self.beta) * grad_sq
        self._trace_avg = self.beta * self._trace_avg + (1 - self.beta) * trace
        # END SOLUTION

    def _corrected(self, average):
        """An average divided by 1 − beta^t (as Adam's moments): the first is the raw value."""
        return None if self.windows == 0 else average / (1.0 - self.beta ** self.windows)

    @property
    def grad_sq(self):
        """The smoothed |G|² estimate (None before the first window)."""
        return self._corrected(self._grad_sq_avg)

    @property
    def trace(self):
        """The smoothed tr(Σ) estimate (None before the first window)."""
        return self._corrected(self._trace_avg)

    @property
    def noise_scale(self):
        """B_simple = smoothed tr(Σ) / smoothed |G|², in items; None before the
        first window and while the smoothed |G|² is not positive (the gradient
        is still buried in its noise: wait for more windows)."""
        if self.windows == 0 or self._grad_sq_avg <= 0:
            return None
        return float(self._trace_avg / self._grad_sq_avg)

    # ------------------------------------------------------ one micro-batch
    def observe_leaf_gradient(self, leaf, g) -> None:
        """Called by the backward driver with a parameter's incoming gradient."""
        if id(leaf) in self._ids:
            self._pending = self._pending + squared_norm(g)

    def check_loss(self, loss) -> None:
        """Refuse a loss whose graph holds BatchNorm in training mode."""
        from ..functions.norm import BatchNormTrain  # noqa: PLC0415
        seen, stack = set(), [loss._creator]
        while stack:
            fn = stack.pop()
            if fn is None or id(fn) in seen:
                continue
            seen.add(id(fn))
            if isinstance(fn, BatchNormTrain):
                raise ValueError(f"{_NAME}: the loss goes through BatchNorm in training "
                                 "mode; a micro-batch's gradient is then not a mean of "
                                 "independent per-item gradients, and the two-batch "
                                 "estimate does not apply (use model.eval(), GroupNorm or "
                                 "LayerNorm, or track without BatchNorm)")
            stack.extend(getattr(x, "_creator", None) for x in fn.inputs)

    def close_micro_batch(self) -> None:
        """The last micro-batch's backward is over (a new one starts, or the window
        ends): its gradient was n_j·scale times its mean gradient g_j, so keep
        ``n_j |g_j|²`` = pending / (n_j scale²), with n_j the items it added."""
        acc = self._acc()
        weight = float(acc.window.item_total) - self._counted
        pending, self._pending = self._pending, 0.0
        self._counted += weight
        if self.ranks == 1 and weight > 0:
            scale = 1.0 if acc.scaler is None else float(acc.scaler.get_scale())
            self._micro_sq.append(pending / (weight * scale ** 2))
            self._micro_items.append(weight)

    def _before_step(self) -> None:
        """The optimizer is about to step on the window's mean gradient: estimate."""
        self.close_micro_batch()
        self._estimate = self.window_estimate(self._acc())

    def _after_step(self) -> None:
        """The step succeeded: fold the window's estimate in."""
        acc = self._acc()
        self.record(self._estimate, acc.updates + 1)
        self._estimate = None

    def reset_window(self) -> None:
        """Forget the open window (closed, skipped, or restored from a state)."""
        self._pending = 0.0
        self._counted = 0.0             # items of the micro-batches closed so far
        self._estimate = None
        self.partial_window = False     # restored mid-window: its first norms are lost
        self._micro_sq: list = []       # n_j |g_j|² per micro-batch (0-d arrays on a GPU)
        self._micro_items: list = []
        self._ranks_sum = None          # data parallel: (Σ_r N_r |g_r|², active ranks)

    # --------------------------------------------------------- one window
    def before_reduce(self, acc) -> None:
        """Data parallelism: this rank's window is the small batch.  Before the
        gradients are summed over the ranks, take |Σ_j n_j g_j|² / N_r (= N_r |g_r|²)
        and sum it, with the number of ranks that had items, in one all-reduce."""
        from ..distributed import allreduce_sum_  # noqa: PLC0415 (distributed imports optim)
        items = float(acc.window.item_total)
        scale = 1.0 if acc.scaler is None else acc.scaler.get_scale()
        local = 0.0
        if items > 0 and not acc.window.nonfinite:
            local = sum(float(squared_norm(p.grad.data)) for p in acc.optimizer._params()
                        if p.grad is not None) / (items * scale ** 2)
        both = np.array([local, 1.0 if items > 0 else 0.0])
        allreduce_sum_(acc.comm, both)
        self._ranks_sum = (float(both[0]), float(both[1]))

    def window_estimate(self, acc):
        """``(|G|², tr Σ, b, B)`` of the window whose mean gradient is in ``.grad``
        (before the optimizer's step), or None when it has one batch size only."""
        if self.partial_window:
            return None
        big = float(acc.window.item_total)
        norm = acc.window.prepared[1]
        if acc.max_grad_norm is not None and norm is not None:    # .grad is clipped
            big_sq = float(norm) ** 2
        else:
            big_sq = float(sum(float(squared_norm(p.grad.data))
                               for p in acc.optimizer._params() if p.grad is not None))
        if self.ranks > 1:
            weighted, active = self._ranks_sum
            if active < 2:
                return None
            small_sq, b = weighted / big, big / active
            return (*unbiased_estimates(small_sq, b, big_sq, big), b, big)
        if len(self._micro_sq) < 2:     # e.g. a short last window of one micro-batch
            return None
        values = self._micro_sq         # n_j |g_j|² per micro-batch
        if any(backend.is_cupy_array(v) for v in values):
            values = backend.asnumpy(_stack_device(values))    # one transfer per window
        items = np.asarray(self._micro_items)
        sq = np.asarray(values, dtype=np.float64) / items      # |g_j|²
        grad_sq, trace = window_estimates(sq, items, big_sq)
        return grad_sq, trace, big / len(items), big

    def record(self, estimate, update: int) -> None:
        """Fold a window's estimate into the averages and the history."""
        if estimate is None:
            return
        grad_sq, trace, b, big = estimate
        self.update(grad_sq, trace)
        self.history.append({"update": update, "items": big, "small_batch": b,
                             "grad_sq": grad_sq, "trace": trace,
                             "noise_scale": self.noise_scale})


def _stack_device(values):
    """0-d CuPy arrays (and floats) into one host array: one transfer."""
    xp = backend.get_array_module(next(v for v in values if backend.is_array(v)))
    return xp.stack([xp.asarray(v, dtype=np.float64) for v in values])


__all__ = ["unbiased_estimates", "window_estimates", "squared_norm", "NoiseScaleTracker"]
