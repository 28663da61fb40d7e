"""Gradient clipping by the global norm of all gradients."""
from __future__ import annotations

import math

import numpy as np

from .. import backend
from ..tensor import Tensor
from .checks import check_number


def _global_norm(grads, norm_type: float) -> float:
    """The ``norm_type``-norm of all entries of all gradient arrays, as a float.

    No gradient-sized temporary for the usual norms (2 and inf: a dot product,
    a max and a min) and one host synchronization in all: the per-array parts
    stay on the device until the final ``float``.
    """
    # BEGIN SOLUTION ch03.5
    xp = backend.get_array_module(grads[0])
    if math.isinf(norm_type):
        maxima = [xp.maximum(g.max(), -g.min()) for g in grads if g.size]    # max |g|
        return float(xp.stack(maxima).max()) if maxima else 0.0   # a nan stays nan
    if norm_type == 2.0:
        power_sum = sum(xp.vdot(g.ravel(), g.ravel()) for g in grads)   # sum of g²
    else:
        power_sum = sum((xp.abs(g) ** norm_type).sum() for g in grads)
    return float(power_sum) ** (1.0 / norm_type)
    # END SOLUTION


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False) -> float:
    """Scale all gradients together so that their global norm is at most ``max_norm``.

    The global norm is the norm of the vector of every gradient entry of
    every parameter::

        total = (sum_p ||g_p||^q) ^ (1/q)          (q = norm_type; max |g| for inf)
        g_p  <- g_p * min(1, max_norm / (total + 1e-6))

    in place, exactly PyTorch's ``torch.nn.utils.clip_grad_norm_`` (the 1e-6
    keeps the division finite; the factor is clamped to 1 so small gradients
    are left alone).  Clipping rescales the whole gradient, so its direction
    is kept.  Parameters whose ``.grad`` is None are skipped.

    Args:
        parameters: a Tensor or an iterable of Tensors.
        max_norm: the largest allowed norm, >= 0.
        norm_type: q, a positive number or ``float("inf")`` (default 2).
        error_if_nonfinite: raise when the total norm is nan or inf (otherwise
            the gradients are multiplied by a nan/zero factor, as in PyTorch).

    Returns:
        The total norm *before* clipping, as a Python float (0.0 when no
        parameter has a gradient).

    Raises:
        TypeError / ValueError: ``max_norm`` or ``norm_type`` is not a valid
            number.  RuntimeError: non-finite total norm with
            ``error_if_nonfinite=True``.
    """
    max_norm = check_number("clip_grad_norm_", "max_norm", max_norm)
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)) or \
            not norm_type > 0:
        raise ValueError(f"clip_grad_norm_: norm_type must be a positive number or "
                         f"inf, got {norm_type!r}")
    norm_type = float(norm_type)
    if isinstance(parameters, Tensor):
        parameters = [parameters]
    grads = [p.grad.data for p in parameters if p.grad is not None]
    if not grads:
        return 0.0
    # float16 gradients are summed in float32, as PyTorch does: the squares of
    # gradients above 256 would overflow to inf and zero every gradient.
    total = _global_norm([g.astype(np.float32) if g.dtype.itemsize < 4 else g
                          for g in grads], norm_type)
    if error_if_nonfinite and not math.isfinite(total):
        raise RuntimeError(f"clip_grad_norm_: the total norm of order {norm_type} of the "
                           f"gradients is {total}; pass error_if_nonfinite=False to clip "
                           "anyway")
    # BEGIN SOLUTION ch03.5
    clip_coef = min(max_norm / (total + 1e-6), 1.0)
    with np.errstate(invalid="ignore"):     # inf * 0 = nan is the documented outcome
        for g in grads:
            g *= clip_coef
    # END SOLUTION
    return total
