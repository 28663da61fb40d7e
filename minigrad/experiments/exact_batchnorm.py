"""Exact BatchNorm from micro-batches (multi-pass) against the full batch.

The accumulated run hands every window to
:func:`minigrad.nn.exact_batchnorm_backward` with a ``GradientAccumulator``:
2L + 1 forward and L + 1 backward passes over the micro-batches (L BatchNorm
layers), after which every BatchNorm layer has normalized with the window's
statistics and back-propagated with the window's sums.  The reference takes
one forward and backward of the full batch.  Compared at every update: the
gradients the optimizer used, and the parameters *and* BatchNorm running
statistics after the update (the "param" columns).

Models (``model=``):

* ``"mlp1"``: ``Linear(64, 32) -> BatchNorm1d -> Tanh -> Linear(32, 10)`` on
  digits;
* ``"mlp2"``: ``Linear(64, 32) -> BatchNorm1d -> Tanh -> Linear(32, 16) ->
  BatchNorm1d -> Tanh -> Linear(16, 10)`` on digits;
* ``"cnn"``: ``Conv2d(1, 4, 3) -> BatchNorm2d -> ReLU -> MaxPool2d -> Linear`` on MNIST.

The layer feeding a BatchNorm has no bias (``bias=False``, the usual choice):
BatchNorm subtracts the channel mean, so such a bias has a gradient of exactly
zero in exact arithmetic, and what both runs compute for it is rounding noise
(~1e-17).  SGD moves that bias by lr times the noise, harmlessly; Adam and
AdamW divide it by sqrt(v_hat) + eps, where eps = 1e-8 dominates, so each
step moves the bias by about lr * 1e-9 in a random direction, and two
correct runs would differ there at about 1e-10.
"""
from __future__ import annotations

import time

import numpy as np

import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.data import load_digits, load_mnist_test

from .cnn_mnist import make_cnn
from .common import (DIFFERS, DIFFERS_THRESHOLD, EQUAL, CaseResult, GradientRecorder, Run,
                     build_model, classification_windows, compare_runs, copy_parameters,
                     cross_entropy_loss, equal_tolerance, run_full_batch, snapshot)
from .mlp_digits import OPTIMIZERS as DIGITS_OPTIMIZERS
from .norm_layers import make_norm_mlp

#: Optimizers of these cases: SGD with momentum and AdamW (decoupled weight decay).
OPTIMIZERS = {
    "sgd-momentum": lambda params: optim.SGD(params, lr=0.05, momentum=0.9),
    "adamw": lambda params: optim.AdamW(params, lr=1e-2, weight_decay=0.01),
}


def make_mlp_bn(hidden: int = 32):
    """``Linear(64, h, bias=False) -> BatchNorm1d(h) -> Tanh -> Linear(h, 10)``."""
    return nn.Sequential(nn.Linear(64, hidden, bias=False), nn.BatchNorm1d(hidden), nn.Tanh(),
                         nn.Linear(hidden, 10))


def make_mlp_two_bn(hidden: int = 32, second: int = 16):
    """``Linear(64, h) -> BN -> Tanh -> Linear(h, h2) -> BN -> Tanh -> Linear(h2, 10)``
    (the two Linear layers before a BatchNorm without bias)."""
    return nn.Sequential(nn.Linear(64, hidden, bias=False), nn.BatchNorm1d(hidden), nn.Tanh(),
                         nn.Linear(hidden, second, bias=False), nn.BatchNorm1d(second),
                         nn.Tanh(), nn.Linear(second, 10))


def make_cnn_bn(channels: int = 4):
    """``Conv2d(1, c, 3, bias=False) -> BatchNorm2d(c) -> ReLU -> MaxPool2d(2) ->
    Flatten -> Linear(c*13*13, 10)``; input (N, 1, 28, 28)."""
    return nn.Sequential(nn.Conv2d(1, channels, 3, bias=False), nn.BatchNorm2d(channels),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(channels * 13 * 13, 10))


#: model name -> (builder, data loader, BatchNorm layers L)
MODELS = {
    "mlp1": (make_mlp_bn, load_digits, 1),
    "mlp2": (make_mlp_two_bn, load_digits, 2),
    "cnn": (make_cnn_bn, load_mnist_test, 1),
}


def _tracked(model) -> list:
    """The parameters, then every BatchNorm running_mean / running_var."""
    buffers = [b for name, b in model.named_buffers()
               if name.endswith("running_mean") or name.endswith("running_var")]
    return list(model.parameters()) + buffers


def _tracked_names(model) -> list[str]:
    return [n for n, _ in model.named_parameters()] + [
        n for n, _ in model.named_buffers()
        if n.endswith("running_mean") or n.endswith("running_var")]


def run_exact(model, optimizer, windows, loss_fn) -> tuple[Run, list]:
    """Accumulation with exact BatchNorm: one :func:`exact_batchnorm_backward` per window.

    Returns the run (gradients, then parameters and running statistics after
    each update) and the :class:`~minigrad.nn.ExactBatchNormPasses` of every window.
    """
    return _run_windows(model, optimizer, windows, loss_fn, exact=True)


def run_plain(model, optimizer, windows, loss_fn) -> Run:
    """Ordinary accumulation (one pass, micro-batch statistics) with merged running
    statistics, recorded as :func:`run_exact` records."""
    return _run_windows(model, optimizer, windows, loss_fn, exact=False)[0]


def _run_windows(model, optimizer, windows, loss_fn, *, exact):
    recorder = GradientRecorder(optimizer, list(model.parameters()))
    accumulator = optim.GradientAccumulator(optimizer, len(windows[0][1]), model=model)
    run, passes = Run([], recorder.grads, []), []
    for _, micro_batches in windows:
        if exact:
            passes.append(nn.exact_batchnorm_backward(model, micro_batches, loss_fn,
                                                      accumulator))
        else:
            for micro_batch in micro_batches:
                loss, n = loss_fn(model, micro_batch)
                accumulator.backward(loss, num_items=n)
                accumulator.step()
        run.losses.append(float(accumulator.window_loss))
        run.params.append(snapshot(_tracked(model)))
    return run, passes


def case_exact_batchnorm(model: str = "mlp1", *, optimizer: str = "sgd-momentum",
                         batch_size: int = 32, accumulation_steps: int = 4,
                         micro_sizes=None, mode: str = "exact", updates: int = 20,
                         device: str = "cpu", dtype=np.float64, seed: int = 0) -> CaseResult:
    """Exact BatchNorm (multi-pass) against the full batch (expected: equal).

    Args:
        model: ``"mlp1"``, ``"mlp2"`` or ``"cnn"`` (see the module docstring).
        optimizer: ``"sgd-momentum"`` (lr 0.05, momentum 0.9) or ``"adamw"``.
        batch_size: B, examples per update.
        accumulation_steps: k; the window is cut into k equal micro-batches
            unless ``micro_sizes`` (which must add up to B) is given.
        mode: ``"exact"`` (:func:`~minigrad.nn.exact_batchnorm_backward`,
            expected equal) or ``"plain"`` (ordinary accumulation with merged
            running statistics, expected to differ: the ghost-batch gradient).
        updates, device, dtype, seed: as in the other cases.

    The "param" columns compare the parameters and the BatchNorm running
    statistics after every update.  ``extras`` holds the measured passes per
    window (``forward_passes``, ``backward_passes``) and L (``layers``).
    """
    if model not in MODELS:
        raise ValueError(f"case_exact_batchnorm: model must be one of {sorted(MODELS)}, "
                         f"got {model!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"case_exact_batchnorm: optimizer must be one of "
                         f"{sorted(OPTIMIZERS)}, got {optimizer!r}")
    if mode not in ("exact", "plain"):
        raise ValueError(f"case_exact_batchnorm: mode must be 'exact' or 'plain', got {mode!r}")
    if micro_sizes is None:
        if batch_size % accumulation_steps:
            raise ValueError(f"batch_size {batch_size} is not a multiple of "
                             f"accumulation_steps {accumulation_steps}")
        micro_sizes = [batch_size // accumulation_steps] * accumulation_steps
    micro_sizes = [int(n) for n in micro_sizes]
    make, load, n_layers = MODELS[model]
    label = {"mlp1": "mlp BatchNorm1d", "mlp2": "mlp 2xBatchNorm1d",
             "cnn": "cnn-mnist BatchNorm2d"}[model]
    k = len(micro_sizes)
    shape = f"{batch_size}={k}x{micro_sizes[0]}" if len(set(micro_sizes)) == 1 else \
        f"{batch_size}={'+'.join(map(str, micro_sizes))}"
    return compare_exact(
        name=f"{label} {mode} {shape} {optimizer}", make_model=make,
        make_optimizer=OPTIMIZERS[optimizer], data=load(), batch_size=batch_size,
        micro_sizes=micro_sizes, mode=mode, updates=updates, device=device, dtype=dtype,
        seed=seed, layers=n_layers,
        description=f"{label}, {updates} {optimizer} updates: full batch vs "
                    f"{'exact multi-pass' if mode == 'exact' else 'plain'} accumulation; "
                    "params include the running statistics")


def case_batchnorm_exact(model: str = "mlp", *, updates: int = 20, device: str = "cpu",
                         dtype=np.float64, seed: int = 0) -> CaseResult:
    """The "BatchNorm train" rows of ``verify`` made exact (expected: equal).

    The same models, data, optimizer and windows as
    :func:`~minigrad.experiments.norm_layers.case_batchnorm` (``model="mlp"``:
    BatchNorm1d MLP on digits, 128 = 8 x 16, SGD lr 0.1) and
    :func:`~minigrad.experiments.cnn_mnist.case_cnn_mnist` (``model="cnn"``:
    BatchNorm2d CNN on MNIST, 32 = 4 x 8, SGD lr 0.05), whose plain accumulation
    differs from the full batch; here every window goes through
    :func:`~minigrad.nn.exact_batchnorm_backward`.
    """
    if model == "mlp":
        setting = (lambda: make_norm_mlp("batch"), DIGITS_OPTIMIZERS["sgd"], load_digits,
                   128, 8, "BatchNorm train exact (multi-pass)")
    elif model == "cnn":
        setting = (make_cnn, lambda params: optim.SGD(params, lr=0.05), load_mnist_test,
                   32, 4, "cnn-mnist BN train exact (multi-pass)")
    else:
        raise ValueError(f"case_batchnorm_exact: model must be 'mlp' or 'cnn', got {model!r}")
    make, make_optimizer, load, batch_size, k, name = setting
    return compare_exact(name=name, make_model=make, make_optimizer=make_optimizer,
                         data=load(), batch_size=batch_size, micro_sizes=[batch_size // k] * k,
                         mode="exact", updates=updates, device=device, dtype=dtype, seed=seed,
                         layers=1, description="the BatchNorm train case, every window through "
                         "exact_batchnorm_backward; params include the running statistics")


def compare_exact(*, name, make_model, make_optimizer, data, batch_size, micro_sizes, mode,
                  updates, device, dtype, seed, layers, description="") -> CaseResult:
    """Train full-batch and accumulated (``mode`` "exact" or "plain") from the same
    initial parameters on ``data = (X, y)``; compare gradients, parameters and
    running statistics at every update."""
    start = time.perf_counter()
    windows = classification_windows(*data, batch_size=batch_size, micro_sizes=micro_sizes,
                                     updates=updates, seed=seed)
    loss_fn = cross_entropy_loss(device, dtype)
    accumulated = build_model(make_model, seed=seed, device=device, dtype=dtype)
    reference = build_model(make_model, seed=seed, device=device, dtype=dtype)
    copy_parameters(accumulated, reference)
    full = _record_tracked(reference, make_optimizer, windows, loss_fn)
    extras = {"layers": layers, "micro_sizes": list(micro_sizes)}
    note = ""
    if mode == "exact":
        run, passes = run_exact(accumulated, make_optimizer(accumulated.parameters()),
                                windows, loss_fn)
        extras.update(forward_passes=passes[0].forward_passes,
                      backward_passes=passes[0].backward_passes)
        note = f"{passes[0].forward_passes:g} fwd + {passes[0].backward_passes:g} bwd passes"
    else:
        run = run_plain(accumulated, make_optimizer(accumulated.parameters()), windows, loss_fn)
    result = CaseResult(
        name=name, expected=EQUAL if mode == "exact" else DIFFERS,
        tolerance=equal_tolerance(dtype) if mode == "exact" else DIFFERS_THRESHOLD,
        description=description, note=note, device=device, dtype=np.dtype(dtype).name,
        extras=extras, **compare_runs(run, full, _tracked_names(accumulated)))
    result.seconds = time.perf_counter() - start
    return result


def _record_tracked(model, make_optimizer, windows, loss_fn) -> Run:
    """The full-batch reference, recording parameters and running statistics per update."""
    optimizer = make_optimizer(model.parameters())
    tracked = []
    handle = optimizer.register_step_post_hook(
        lambda *_: tracked.append(snapshot(_tracked(model))))
    run = run_full_batch(model, optimizer, windows, loss_fn)
    handle.remove()
    run.params = tracked
    return run
