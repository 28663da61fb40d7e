"""The checks of :class:`~minigrad.optim.GradientAccumulator`, one call each.

Every function raises before anything changes, with a message that names
what was wrong and what was expected; none of them changes the accumulator.
"""
from __future__ import annotations

import math
import numbers

from .. import nn
from ..tensor import Tensor
from .checks import check_number, check_writable
from .grad_scaler import GradScaler
from .optimizer import Optimizer


def check_accumulator(optimizer, accumulation_steps, max_grad_norm, scheduler, model,
                      scaler, comm=None):
    """Check the constructor's arguments; returns ``max_grad_norm`` as a float (or None)."""
    owner = "GradientAccumulator"
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{owner}: optimizer must be a minigrad Optimizer, "
                        f"got {type(optimizer).__name__}")
    if isinstance(accumulation_steps, bool) or \
            not isinstance(accumulation_steps, numbers.Integral):
        raise TypeError(f"{owner}: accumulation_steps must be an int >= 1, "
                        f"got {accumulation_steps!r}")
    if accumulation_steps < 1:
        raise ValueError(f"{owner}: accumulation_steps must be >= 1, got {accumulation_steps}")
    if max_grad_norm is not None:
        max_grad_norm = check_number(owner, "max_grad_norm", max_grad_norm, low=0.0,
                                     low_inclusive=False)
    if scheduler is not None and getattr(scheduler, "optimizer", None) is not optimizer:
        raise ValueError(f"{owner}: the scheduler must belong to the same "
                         "optimizer (scheduler.optimizer is not optimizer)")
    if model is not None and not isinstance(model, nn.Module):
        raise TypeError(f"{owner}: model must be a minigrad.nn.Module, "
                        f"got {type(model).__name__}")
    if scaler is not None and not isinstance(scaler, GradScaler):
        raise TypeError(f"{owner}: scaler must be a minigrad.optim.GradScaler, "
                        f"got {type(scaler).__name__}")
    if comm is not None and not all(callable(getattr(comm, m, None))
                                    for m in ("Allreduce", "Get_size", "Get_rank")):
        raise TypeError(f"{owner}: comm must be a communicator (minigrad.distributed.init(), "
                        f"an mpi4py Comm), with Allreduce, Get_size and Get_rank; got "
                        f"{type(comm).__name__}")
    return max_grad_norm


def check_backward(acc, loss, num_items):
    """Check a call of ``backward(loss, num_items)``; returns ``(n_j, mode)``.

    Raises:
        TypeError: ``loss`` is not a Tensor, or ``num_items`` not a number.
        ValueError: ``loss`` has more than one element, ``num_items < 0`` (or
            not finite), or the window mixes ``num_items`` and None.
        RuntimeError: ``loss`` does not require grad, ``backward`` is called
            twice without ``step`` in between, or the last update must be retried.
    """
    name = "GradientAccumulator.backward"
    if not isinstance(loss, Tensor):
        raise TypeError(f"{name}: loss must be a Tensor, got {type(loss).__name__}")
    if loss.numel() != 1:
        raise ValueError(f"{name}: loss must be a scalar (the micro-batch's mean loss), got "
                         f"shape {loss.shape}; reduce it with .mean() or reduction='mean'")
    if not loss.requires_grad:
        raise RuntimeError(f"{name}: the loss does not require grad (was it computed under "
                           "no_grad(), or from parameters with requires_grad=False?)")
    check_window_open(name, acc.window)
    if acc.window.awaiting_step:
        raise RuntimeError(f"{name}: called twice without step() in between; call step() "
                           "once after each micro-batch's backward (sum the losses first "
                           "if one micro-batch has several)")
    weight = num_items_weight(num_items)
    mode = "count" if num_items is None else "items"
    if acc.noise is not None:
        if num_items is None:
            raise ValueError(f"{name}: track_noise_scale needs num_items (the items the "
                             "loss averages over), so that the noise scale is in items")
        acc.noise.check_loss(loss)
        acc.noise.close_micro_batch()       # the previous micro-batch's |g_j|² is complete
    if acc.window.mode is not None and mode != acc.window.mode:
        raise ValueError(f"{name}: this window mixes micro-batches with num_items and "
                         "without; pass num_items for every micro-batch or for none")
    return weight, mode


def check_backward_output(acc, output, grad_output, num_items):
    """Check a pipeline stage's ``backward_output``; returns ``n_j``."""
    name = "StageAccumulator.backward_output"
    check_window_open(name, acc.window)
    if acc.window.awaiting_step:
        raise RuntimeError(f"{name}: called twice without step() in between")
    if tuple(grad_output.shape) != tuple(output.shape):
        raise ValueError(f"{name}: the gradient has shape {tuple(grad_output.shape)}, the "
                         f"output {tuple(output.shape)}")
    weight = num_items_weight(num_items)
    if acc.window.mode == "count":
        raise RuntimeError(f"{name}: this window counts micro-batches without num_items; "
                           "pass num_items everywhere")
    return weight


def check_window_open(name, window) -> None:
    """RuntimeError when the last update raised after normalizing the window."""
    if window.normalized:
        raise RuntimeError(f"{name}: the last update raised after its gradients were "
                           "normalized; call step() (or flush()) again to retry it before "
                           "the next micro-batch")


def num_items_weight(num_items):
    """The micro-batch's weight n_j: ``num_items`` checked (1 when it is None)."""
    name = "GradientAccumulator.backward"
    if num_items is None:
        return 1
    if isinstance(num_items, Tensor):
        if num_items.numel() != 1:
            raise ValueError(f"{name}: num_items must be one number, got a tensor of "
                             f"shape {num_items.shape}")
        num_items = num_items.item()
    if isinstance(num_items, bool) or not isinstance(num_items, numbers.Real):
        raise TypeError(f"{name}: num_items must be a number >= 0 (the count of items the "
                        f"loss averages over), got {num_items!r}")
    if not (math.isfinite(num_items) and num_items >= 0):
        raise ValueError(f"{name}: num_items must be a finite number >= 0 (the count of "
                         f"items the loss averages over), got {num_items}")
    return int(num_items) if isinstance(num_items, numbers.Integral) else float(num_items)


def check_retry(name, acc) -> None:
    """RuntimeError when retrying the window's update would not be exact: the
    optimizer's step raised inside its arithmetic, after writing some
    parameters (see :class:`~minigrad.optim.Optimizer`)."""
    if acc.window.normalized and acc.optimizer._step_interrupted:
        raise RuntimeError(f"{name}: the last update was interrupted inside the "
                           "optimizer's step, after some parameters were written; a retry "
                           "would step them twice. Restore the model, the optimizer and "
                           "the accumulator from the last checkpoint (minigrad.load)")


def check_step(acc) -> None:
    check_retry("GradientAccumulator.step", acc)
    if not acc.window.awaiting_step:
        raise RuntimeError("GradientAccumulator.step: no backward() since the last "
                           "step(); call backward(loss) once per micro-batch first")


def check_flush(acc) -> None:
    check_retry("GradientAccumulator.flush", acc)
    if acc.window.awaiting_step:
        raise RuntimeError("GradientAccumulator.flush: the last backward() has no "
                           "step() yet; call step() before flush()")


def noise_tracker(acc, optimizer, accumulation_steps, comm, model, beta):
    """The :class:`~minigrad.optim.noise_scale.NoiseScaleTracker` of
    ``track_noise_scale=True``; ValueError where there is one batch size only
    (one micro-batch per window on one rank) or BatchNorm trains in ``model``."""
    from .noise_scale import NoiseScaleTracker  # noqa: PLC0415
    owner = "GradientAccumulator(track_noise_scale=True)"
    ranks = 1 if comm is None else int(comm.Get_size())
    if ranks == 1 and accumulation_steps < 2:
        raise ValueError(f"{owner}: a window of one micro-batch has one batch size only "
                         "(b = B), and the noise scale needs two; use accumulation_steps "
                         ">= 2 (micro-batch = small batch, window = big batch) or data "
                         "parallelism over >= 2 ranks")
    if model is not None and any(layer.training for layer in nn.batchnorm_layers(model)):
        raise ValueError(f"{owner}: the model has BatchNorm layers in training mode; the "
                         "two-batch estimate assumes each item's gradient is independent of "
                         "the others in its micro-batch, which BatchNorm breaks")
    return NoiseScaleTracker(optimizer._params(), beta, ranks=ranks, accumulator=acc)


def check_gradients_writable(acc) -> None:
    """The window's mean is taken in place (``p.grad.data /= total``): raise
    before the first division when a gradient's array is read-only."""
    if acc.window.normalized:
        return
    for i, p in enumerate(acc.optimizer._params()):
        if p.grad is not None:
            check_writable("GradientAccumulator", f"the gradient of parameter {i}",
                           p.grad.data)
