"""What every experiment shares: result rows, differences, and the two training runs.

Each experiment trains the same model twice from the same initial parameters:

* the **reference** run takes one optimizer step per full batch of B items
  (``loss.backward()`` on the batch's mean loss, then ``optimizer.step()``);
* the **accumulated** run cuts the same batch into k micro-batches, calls
  ``GradientAccumulator.backward`` / ``step`` once per micro-batch, and so also
  takes one optimizer step per window of k micro-batches.

At every update both runs record the gradients the optimizer used and the
parameters it produced. A :class:`CaseResult` holds the
largest differences between the two runs, the verdict, and the per-update
arrays a plot needs.

How differences are measured
----------------------------
At each update, with ``a`` the arrays (all gradients, or all parameters) of
the accumulated run and ``r`` those of the reference run::

    abs_diff = max |a - r|                 over every entry of every array
    rel_diff = max |a - r| / max |r|

(:func:`minigrad.testing.max_abs_diff` and :func:`~minigrad.testing.max_rel_diff`).
``rel_diff`` divides by the largest entry of the whole model, not entry by
entry nor array by array, so that entries that are zero in exact arithmetic
do not blow it up: the bias of a Linear layer just before a BatchNorm has
the gradient 0 (the normalization removes any shift), and both runs compute
it as rounding noise of about 1e-17. This is the "normwise" relative error of
numerical analysis, with the max-norm (N. J. Higham, *Accuracy and Stability
of Numerical Algorithms*, 2nd ed., §1.2). A case's ``max_rel_diff`` is the
largest ``rel_diff`` over all updates, gradients and parameters alike.

Verdicts
--------
An ``"equal"`` case passes when ``max_rel_diff <= tolerance``: the two runs
agree to rounding. A ``"differs"`` case passes when ``max_rel_diff >
tolerance``: its ``tolerance`` is the *threshold* the gap must exceed.
Default tolerances for "equal" (see :func:`equal_tolerance`): 1e-10 in float64,
where one rounding is about 1.1e-16 and 20 updates of a few thousand summed
terms stay many orders of magnitude below; 1e-4 in float32, where one rounding
is about 6e-8 and the two runs sum in different orders. The default threshold
for "differs" is 1e-3 (float64 and float32 alike): a real change of the maths
moves the gradients by percents, far above either tolerance.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Sequence

import numpy as np

import minigrad
import minigrad.nn
import minigrad.optim
from minigrad import backend
from minigrad.testing import max_abs_diff, max_rel_diff, to_numpy

#: The target that the losses skip (PyTorch's default ``ignore_index``): padding.
IGNORE_INDEX = -100
EQUAL = "equal"
DIFFERS = "differs"

#: Relative threshold a "differs" case must exceed (see the module docstring).
DIFFERS_THRESHOLD = 1e-3


def equal_tolerance(dtype) -> float:
    """The relative tolerance of an "equal" case: 1e-10 in float64, 1e-4 in float32."""
    dtype = np.dtype(dtype)
    if dtype == np.float64:
        return 1e-10
    if dtype == np.float32:
        return 1e-4
    raise ValueError(f"experiments run in float64 or float32, got dtype {dtype}")


@dataclasses.dataclass
class CaseResult:
    """One row of the verification table, with the arrays behind it.

    Attributes:
        name: short name of the case, e.g. ``"mlp-digits 128=8x16 sgd"``.
        expected: ``"equal"`` or ``"differs"``.
        tolerance: for "equal", the largest relative difference allowed; for
            "differs", the relative difference that must be exceeded.
        grad_abs_diff, grad_rel_diff: largest differences of the gradients the
            optimizer used, over parameters and updates (None when the case
            compares no gradients; NaN when a run produced NaN, which fails).
        param_abs_diff, param_rel_diff: the same for the parameters after each
            update (or for the compared statistics, see ``description``).
        description: one sentence on what is compared.
        note: a short extra number for the table (a ratio, a gap).
        device, dtype, updates, seconds: how it ran.
        losses_reference, losses_accumulated: float64 arrays of shape
            (updates,), the loss of each update (the window's item-weighted
            mean loss for the accumulated run).
        grad_rel_per_update, param_rel_per_update: float64 arrays of shape
            (updates,), the largest relative difference at each update.
        param_rel_by_name: ``{parameter name: largest relative difference}``
            over all updates, for a bar plot per layer.
        extras: other numbers a case reports (all JSON-friendly).
        expected_label, verdict_label: what the table shows in the "expected"
            and "verdict" columns instead of ``expected`` and "ok", for a case
            that reproduces a bug (e.g. "8x grad", "8x too large, as
            predicted"); "" keeps the plain words. A failed case shows "FAIL".
    """

    name: str
    expected: str
    tolerance: float
    grad_abs_diff: float | None = None
    grad_rel_diff: float | None = None
    param_abs_diff: float | None = None
    param_rel_diff: float | None = None
    description: str = ""
    note: str = ""
    device: str = "cpu"
    dtype: str = "float64"
    updates: int = 0
    seconds: float = 0.0
    losses_reference: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    losses_accumulated: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    grad_rel_per_update: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    param_rel_per_update: np.ndarray = dataclasses.field(default_factory=lambda: np.zeros(0))
    param_rel_by_name: dict = dataclasses.field(default_factory=dict)
    extras: dict = dataclasses.field(default_factory=dict)
    expected_label: str = ""
    verdict_label: str = ""

    def __post_init__(self):
        if self.expected not in (EQUAL, DIFFERS):
            raise ValueError(f"CaseResult {self.name!r}: expected must be "
                             f"{EQUAL!r} or {DIFFERS!r}, got {self.expected!r}")

    @property
    def max_abs_diff(self) -> float:
        """The larger of the gradient and parameter absolute differences (NaN if any is NaN)."""
        return _largest(self.grad_abs_diff, self.param_abs_diff)

    @property
    def max_rel_diff(self) -> float:
        """The larger of the gradient and parameter relative differences (NaN if any is NaN)."""
        return _largest(self.grad_rel_diff, self.param_rel_diff)

    @property
    def passed(self) -> bool:
        """Does the measured difference match the expectation?"""
        diff = self.max_rel_diff
        if not np.isfinite(diff):
            return False
        if self.expected == EQUAL:
            return diff <= self.tolerance
        return diff > self.tolerance

    def to_dict(self) -> dict:
        """A JSON-friendly dict: every field, arrays as lists, plus the verdict."""
        row = {"name": self.name, "expected": self.expected,
               "max_abs_diff": self.max_abs_diff, "max_rel_diff": self.max_rel_diff,
               "tolerance": self.tolerance, "passed": self.passed}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, np.ndarray):
                value = value.tolist()
            row.setdefault(field.name, value)
        return _finite_or_none(row)


def _largest(*values) -> float:
    """The largest of the measured values (None: not measured); NaN wins, so it fails."""
    measured = [float(v) for v in values if v is not None]
    if not measured or any(np.isnan(v) for v in measured):
        return float("nan")
    return max(measured)


def _finite_or_none(value):
    """JSON has no NaN: replace NaN and infinities by None, recursively."""
    if isinstance(value, dict):
        return {k: _finite_or_none(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite_or_none(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if np.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


# --------------------------------------------------------------------------- set-up


@contextlib.contextmanager
def default_dtype(dtype):
    """Make new parameters ``dtype`` inside the block; restore the old default after."""
    previous = minigrad.get_default_dtype()
    minigrad.set_default_dtype(dtype)
    try:
        yield
    finally:
        minigrad.set_default_dtype(previous)


def build_model(make_model: Callable, *, seed: int, device: str, dtype):
    """``make_model()`` with ``manual_seed(seed)`` first, in ``dtype``, on ``device``."""
    with default_dtype(dtype):
        minigrad.manual_seed(seed)
        model = make_model()
    return model.to(device)


def copy_parameters(source, target) -> None:
    """Copy every parameter of ``source`` into ``target`` (same names and shapes).

    Raises:
        ValueError: if the two models' parameter names or shapes differ.
    """
    src, dst = dict(source.named_parameters()), dict(target.named_parameters())
    if list(src) != list(dst):
        raise ValueError(f"copy_parameters: parameter names differ: {list(src)} vs {list(dst)}")
    for name, p in src.items():
        if p.shape != dst[name].shape:
            raise ValueError(f"copy_parameters: {name} has shape {p.shape} in the source "
                             f"and {dst[name].shape} in the target")
        dst[name].data = p.data.copy()


def to_tensor(array, *, device: str, dtype=None):
    """A constant Tensor on ``device``; floating arrays are cast to ``dtype``."""
    array = np.asarray(array)
    if dtype is not None and array.dtype.kind == "f":
        array = array.astype(dtype)
    return minigrad.tensor(array, device=device)


def snapshot(tensors) -> list[np.ndarray]:
    """NumPy copies of the values of tensors (parameters or buffers) or arrays."""
    return [to_numpy(t).copy() for t in tensors]


def snapshot_grads(parameters) -> list[np.ndarray]:
    """NumPy copies of each parameter's ``.grad`` (zeros where there is none)."""
    return [np.zeros(p.shape, dtype=p.dtype) if p.grad is None
            else backend.asnumpy(p.grad.data).copy() for p in parameters]


class GradientRecorder:
    """Records the gradient every optimizer update uses.

    It registers a step pre-hook on the optimizer
    (:meth:`~minigrad.optim.Optimizer.register_step_pre_hook`): just before
    each ``step()`` the ``.grad`` of every parameter holds the gradient of the
    update (with a ``GradientAccumulator``, the window's normalized gradient),
    and the hook copies it.

    Args:
        optimizer: the optimizer whose updates to watch.
        parameters: the parameters whose gradients to copy.

    Attributes:
        grads: one list of NumPy arrays per update, in parameter order.
    """

    def __init__(self, optimizer, parameters):
        self.recorded_parameters = list(parameters)
        self.grads: list[list[np.ndarray]] = []
        self.handle = optimizer.register_step_pre_hook(self._record)

    def _record(self, optimizer, args, kwargs) -> None:
        self.grads.append(snapshot_grads(self.recorded_parameters))


# --------------------------------------------------------------------------- runs

#: A window: the full batch and the list of its micro-batches. Each batch is a
#: tuple of NumPy arrays (inputs, targets, ...), handed to the case's loss function.
Window = tuple[tuple, list[tuple]]


@dataclasses.dataclass
class Run:
    """What one training run recorded: per update, the loss, gradients and parameters."""

    losses: list[float]
    grads: list[list[np.ndarray]]
    params: list[list[np.ndarray]]


def run_full_batch(model, optimizer, windows: Sequence[Window], loss_fn) -> Run:
    """The reference: one ``backward`` and one ``optimizer.step()`` per full batch.

    Args:
        loss_fn: ``loss_fn(model, batch) -> (mean loss Tensor, num_items)``.
    """
    parameters = list(model.parameters())
    run = Run([], [], [])
    for full_batch, _ in windows:
        optimizer.zero_grad()
        loss, _ = loss_fn(model, full_batch)
        loss.backward()
        run.grads.append(snapshot_grads(parameters))
        optimizer.step()
        run.losses.append(float(loss.item()))
        run.params.append(snapshot(parameters))
    return run


def run_accumulated(model, optimizer, windows: Sequence[Window], loss_fn, *,
                    weighting: str = "items", accumulator_kwargs=None) -> Run:
    """Gradient accumulation: one ``GradientAccumulator.backward``/``step`` per micro-batch.

    Args:
        weighting: ``"items"`` passes each micro-batch's item count to
            ``backward(loss, num_items=n)`` (the exact item-weighted mean);
            ``"equal"`` passes ``num_items=None`` (every micro-batch weighs 1/k).
        accumulator_kwargs: extra keyword arguments of ``GradientAccumulator``
            (e.g. ``model=`` for merged BatchNorm statistics).

    Every window must hold the same number k of micro-batches; k is the
    accumulator's ``accumulation_steps``.
    """
    if weighting not in ("items", "equal"):
        raise ValueError(f"weighting must be 'items' or 'equal', got {weighting!r}")
    k = len(windows[0][1])
    if any(len(micro) != k for _, micro in windows):
        raise ValueError("run_accumulated: every window must hold the same number of micro-batches")
    parameters = list(model.parameters())
    recorder = GradientRecorder(optimizer, parameters)
    accumulator = minigrad.optim.GradientAccumulator(optimizer, k,
                                                     **(accumulator_kwargs or {}))
    run = Run([], recorder.grads, [])
    for _, micro_batches in windows:
        for micro_batch in micro_batches:
            loss, num_items = loss_fn(model, micro_batch)
            accumulator.backward(loss, num_items=num_items if weighting == "items" else None)
            stepped = accumulator.step()
        if not stepped:
            raise RuntimeError("GradientAccumulator did not step at the end of a window "
                               "(it skips a window with a non-finite loss or gradient)")
        run.losses.append(float(accumulator.window_loss))
        run.params.append(snapshot(parameters))
    return run


def compare_runs(accumulated: Run, reference: Run, names: Sequence[str]) -> dict:
    """Largest differences between two runs, overall, per update and per parameter.

    Returns a dict with the ``CaseResult`` fields ``grad_abs_diff``,
    ``grad_rel_diff``, ``param_abs_diff``, ``param_rel_diff``,
    ``grad_rel_per_update``, ``param_rel_per_update``, ``param_rel_by_name``,
    ``losses_reference``, ``losses_accumulated`` and ``updates``.
    ``param_rel_by_name[name]`` is the largest difference of that one array
    (gradient or parameter) divided by the scale of the whole model at that update.
    """
    if len(accumulated.grads) != len(reference.grads):
        raise ValueError(f"runs took {len(accumulated.grads)} and {len(reference.grads)} updates")
    grad_abs = np.array([max_abs_diff(a, r) for a, r in zip(accumulated.grads, reference.grads)])
    grad_rel = np.array([max_rel_diff(a, r) for a, r in zip(accumulated.grads, reference.grads)])
    param_abs = np.array([max_abs_diff(a, r) for a, r in zip(accumulated.params, reference.params)])
    param_rel = np.array([max_rel_diff(a, r) for a, r in zip(accumulated.params, reference.params)])
    by_name = {name: 0.0 for name in names}
    for step_a, step_r in zip(accumulated.params + accumulated.grads,
                              reference.params + reference.grads):
        scale = max(float(np.max(np.abs(r))) for r in step_r)
        for name, a, r in zip(names, step_a, step_r):
            by_name[name] = max(by_name[name], max_abs_diff([a], [r]) / scale)
    return {
        "grad_abs_diff": float(grad_abs.max()), "grad_rel_diff": float(grad_rel.max()),
        "param_abs_diff": float(param_abs.max()), "param_rel_diff": float(param_rel.max()),
        "grad_rel_per_update": grad_rel, "param_rel_per_update": param_rel,
        "param_rel_by_name": by_name,
        "losses_reference": np.array(reference.losses),
        "losses_accumulated": np.array(accumulated.losses),
        "updates": len(reference.grads),
    }


def compare_training(*, name: str, expected: str, make_model: Callable,
                     make_optimizer: Callable, windows: Sequence[Window], loss_fn,
                     device: str, dtype, seed: int = 0, weighting: str = "items",
                     make_reference_model: Callable | None = None,
                     accumulator_kwargs=None, tolerance: float | None = None,
                     description: str = "", note: str = "", train_mode: bool = True) -> CaseResult:
    """Train full-batch and accumulated from the same initial parameters; compare.

    Args:
        name, expected, description, note: copied into the result.
        make_model: a function of no arguments that builds the model (called
            after ``manual_seed(seed)``, with ``dtype`` as the default dtype).
        make_optimizer: ``make_optimizer(parameters) -> optimizer``.
        windows: the data, as (full batch, micro-batches) pairs; one update each.
        loss_fn: ``loss_fn(model, batch) -> (mean loss Tensor, num_items)``.
        weighting: see :func:`run_accumulated`.
        make_reference_model: builds the full-batch model when it is not the
            same architecture (ghost-batch BatchNorm); its parameters are
            overwritten with the accumulated model's initial ones.
        tolerance: the "equal" tolerance or "differs" threshold; defaults to
            :func:`equal_tolerance` or :data:`DIFFERS_THRESHOLD`.
        train_mode: ``model.train()`` if True, else ``model.eval()`` (both runs).

    Returns:
        a :class:`CaseResult`.
    """
    start = time.perf_counter()
    model = build_model(make_model, seed=seed, device=device, dtype=dtype)
    reference = build_model(make_reference_model or make_model, seed=seed, device=device,
                            dtype=dtype)
    copy_parameters(model, reference)
    for m in (model, reference):
        m.train(train_mode)
    full = run_full_batch(reference, make_optimizer(reference.parameters()), windows, loss_fn)
    accumulated = run_accumulated(model, make_optimizer(model.parameters()), windows, loss_fn,
                                  weighting=weighting, accumulator_kwargs=accumulator_kwargs)
    names = [n for n, _ in model.named_parameters()]
    if tolerance is None:
        tolerance = equal_tolerance(dtype) if expected == EQUAL else DIFFERS_THRESHOLD
    return CaseResult(name=name, expected=expected, tolerance=tolerance,
                      description=description, note=note, device=device,
                      dtype=np.dtype(dtype).name, seconds=time.perf_counter() - start,
                      **compare_runs(accumulated, full, names))


def split_batch(batch: tuple, sizes: Sequence[int]) -> list[tuple]:
    """Cut a batch (tuple of arrays sharing the first axis) into parts of ``sizes``."""
    if sum(sizes) != len(batch[0]):
        raise ValueError(f"split_batch: sizes {list(sizes)} do not add up to the batch size "
                         f"{len(batch[0])}")
    bounds = np.cumsum([0, *sizes])
    return [tuple(a[lo:hi] for a in batch) for lo, hi in zip(bounds[:-1], bounds[1:])]


def classification_windows(X: np.ndarray, y: np.ndarray, *, batch_size: int,
                           micro_sizes: Sequence[int], updates: int, seed: int = 0) -> list[Window]:
    """``updates`` windows of ``batch_size`` examples, cut into micro-batches.

    The examples are visited in epochs, each a fresh permutation drawn from
    ``numpy.random.default_rng(seed)``; window t holds the examples
    ``order[t*B:(t+1)*B]`` of the concatenated epochs, cut into micro-batches
    of ``micro_sizes`` (which must add up to B).

    Returns:
        a list of ``updates`` pairs ``((X_t, y_t), [(X_tj, y_tj), ...])``.
    """
    rng = np.random.default_rng(seed)
    epochs = -(-updates * batch_size // len(X))  # ceiling division
    order = np.concatenate([rng.permutation(len(X)) for _ in range(epochs)])
    windows = []
    for t in range(updates):
        idx = order[t * batch_size:(t + 1) * batch_size]
        batch = (X[idx], y[idx])
        windows.append((batch, split_batch(batch, micro_sizes)))
    return windows


def cross_entropy_loss(device: str, dtype):
    """A loss function for classification windows: mean cross-entropy, items = examples."""
    def loss_fn(model, batch):
        x, y = batch
        logits = model(to_tensor(x, device=device, dtype=dtype))
        loss = minigrad.nn.functional.cross_entropy(logits, to_tensor(y, device=device))
        return loss, len(y)
    return loss_fn
