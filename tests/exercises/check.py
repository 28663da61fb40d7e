"""Comparisons whose failure messages diagnose a student's mistake."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad


def _as_array(x):
    if isinstance(x, minigrad.Tensor):
        return x.numpy()
    return None if x is None else np.asarray(x)


def assert_close(actual, expected, what, hints=(), rtol=1e-7, atol=1e-10):
    """Fail with a diagnosis unless ``actual`` ≈ ``expected``.

    ``hints`` holds ``(wrong_value, explanation)`` pairs: when ``actual`` equals
    a known wrong answer, its explanation is added to the message.  A result
    that is a multiple of the right one is reported as "c × the expected value".
    """
    got, want = _as_array(actual), np.asarray(_as_array(expected))
    if got is None:
        pytest.fail(f"{what} is None; expected an array of shape {want.shape}", pytrace=False)
    if got.shape != want.shape:
        extra = [text for wrong, text in hints if np.shape(wrong) == got.shape]
        pytest.fail(f"{what} has shape {got.shape}, expected {want.shape}"
                    + (f": {extra[0]}" if extra else ""), pytrace=False)
    if np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
        return
    error = float(np.nanmax(np.abs(got - want))) if got.size else 0.0
    message = f"{what} is wrong (largest error {error:.3g})"
    for wrong, text in hints:
        wrong = np.asarray(wrong)
        if wrong.shape == got.shape and np.allclose(got, wrong, rtol=rtol, atol=atol):
            message += f": {text}"
            break
    else:
        norm = float(np.vdot(want, want))
        if norm > 0 and np.all(np.isfinite(got)):
            c = float(np.vdot(want, got)) / norm
            if abs(c) > 1e-12 and np.allclose(got, c * want, rtol=1e-6, atol=atol):
                message += (f": it is {c:.2f} × the expected value" if c > 0 else
                            f": it is {c:.2f} × the expected value (the sign is wrong)")
    message += f"\n  got      {np.array2string(got.ravel()[:6], precision=5)}" \
               f"\n  expected {np.array2string(want.ravel()[:6], precision=5)}"
    pytest.fail(message, pytrace=False)


def leaves(*arrays, requires_grad=True):
    """float64 leaf tensors."""
    return [minigrad.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)
            for a in arrays]


def forward_backward(fn, arrays, grad):
    """Run ``fn`` (a Function instance) on leaf tensors made from ``arrays`` and
    call its ``backward(grad)`` directly, without the backward driver.

    Returns ``(output array, tuple of gradients)``.
    """
    out = fn(*leaves(*arrays))
    grads = fn.backward(np.asarray(grad, dtype=np.float64))
    if not isinstance(grads, tuple):
        grads = (grads,)
    return out.numpy(), grads


def rng(seed=0):
    return np.random.default_rng(seed)
