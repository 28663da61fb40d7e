"""``GradientAccumulator.backward`` for a loss on the GPU: no wait per micro-batch.

On the CPU, ``backward`` reads the loss as a Python float (``loss.item()``),
skips the backward of a non-finite loss and adds ``n_j * L_j`` to the
window's sum.  On the GPU, ``loss.item()`` is a device-to-host copy: the
host waits until the forward pass has run before it can queue the backward's
kernels, once per micro-batch.  Here nothing is read back:

* the window's loss sum stays on the device, a 0-d float64 array to which
  ``n_j * L_j`` is added, and so does its non-finite flag (a 0-d bool
  array; ``xp.asarray`` keeps NumPy from unwrapping them into scalars);
* the loss is back-propagated even when it is inf or nan, since that is not
  known without waiting: the accumulator's own ``_weighted_backward`` runs
  with the loss's ``item()`` taken as 0.0, and the loss itself is added here.
  Its inf/nan gradient does no harm: the window's
  end (:meth:`Window.settle <minigrad.optim.accumulation_state.Window.settle>`,
  one transfer of both values) sees the flag and skips the window, which
  zeroes the gradients and the buffer, exactly as the CPU path skips it.

The window's mean loss, the skip, the scaler's back-off and the update are
the CPU path's, to the bit: the same float64 products and sums, in the same
order.  What differs is only ``.grad`` between a non-finite micro-batch and
the window's end (inf/nan here, the earlier sums on the CPU).
"""
from __future__ import annotations

import numpy as np

from .. import backend


class _Unread:
    """``loss`` as the accumulator's own backward sees it on the GPU: its
    ``item()`` is 0.0 (a finite placeholder: the loss is not read, so it is
    back-propagated even when it is inf or nan, and counted as 0); everything
    else is the loss's."""

    def __init__(self, loss):
        self._loss = loss

    def item(self):
        return 0.0

    def __getattr__(self, name):
        return getattr(self._loss, name)


def backward_on_device(acc, loss, weight, mode) -> None:
    """``acc.backward(loss, num_items)`` once checked (``weight``, ``mode``:
    from ``accumulation_checks.check_backward``), for a loss on any device,
    without reading the loss on the host: the accumulator's own weighted
    backward and count run with the loss taken as 0.0, then the loss itself is
    added to the window's sum, and its non-finite flag set, on the device."""
    with np.errstate(invalid="ignore", over="ignore"):   # a nan loss: skipped at the end
        acc._weighted_backward(_Unread(loss), weight, mode)
    if weight != 0:                         # no items: nothing to add, as on the CPU
        xp = backend.get_array_module(loss.data)
        window = acc.window
        value = loss.data.astype(np.float64).reshape(())
        window.loss_sum = xp.asarray(window.loss_sum + np.float64(weight) * value)
        window.nonfinite = xp.asarray(xp.logical_or(window.nonfinite, ~xp.isfinite(value)))
