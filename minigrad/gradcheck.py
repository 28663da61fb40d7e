"""Numerical gradient checking by central differences in float64."""
from __future__ import annotations

import numpy as np

from . import backend
from .autograd import no_grad
from .tensor import Tensor


class GradcheckError(AssertionError):
    """Raised by :func:`gradcheck` when an analytical gradient disagrees with the numerical one."""


def gradcheck(fn, inputs, eps: float = 1e-6, atol: float = 1e-5, rtol: float = 1e-3,
              raise_exception: bool = True, seed: int = 0) -> bool:
    """Check the backward of ``fn`` against central differences, in float64.

    For a random upstream gradient ``v`` (fixed by ``seed``) it compares, for
    every element ``x_i`` of every input that requires grad,

        analytical:  (vᵀ J)_i from ``backward(grad=v)``
        numerical:   (vᵀ f(x + eps·e_i) - vᵀ f(x - eps·e_i)) / (2·eps)

    and requires ``|analytical - numerical| <= atol + rtol·|numerical|``.
    Inputs are copied to float64 first; inputs with ``requires_grad=False``
    (and non-Tensor arguments) are passed through and not checked.

    Args:
        fn: callable taking the inputs and returning a Tensor (any shape) or a
            tuple of Tensors.
        inputs: a Tensor or a sequence of Tensors / other arguments.

    Returns:
        True when every entry agrees.  On a mismatch: raises
        :class:`GradcheckError` naming the input, the index and both values
        (``raise_exception=True``, the default) or returns False.
    """
    if isinstance(inputs, Tensor):
        inputs = (inputs,)
    inputs = [_as_float64(x) for x in inputs]
    checked = [i for i, x in enumerate(inputs) if isinstance(x, Tensor) and x.requires_grad]
    if not checked:
        raise ValueError("gradcheck: no input requires grad; nothing to check")

    outputs = _as_tuple(fn(*inputs))
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(o.shape) for o in outputs]
    for o in outputs:
        if o.dtype != np.float64:
            raise TypeError(f"gradcheck: fn returned dtype {o.dtype} for float64 inputs; "
                            "the gradient dtype must follow the data dtype")

    for i in checked:
        inputs[i].grad = None
    total = sum((o * Tensor(backend.to_device(v, o.device))).sum()
                for o, v in zip(outputs, vs) if o.requires_grad)
    if isinstance(total, Tensor) and total.requires_grad:
        total.backward()

    def projected():
        with no_grad():
            outs = _as_tuple(fn(*inputs))
            return float(sum(np.sum(o.numpy() * v) for o, v in zip(outs, vs)))

    for i in checked:
        x = inputs[i]
        analytical = (np.zeros(x.shape) if x.grad is None else x.grad.numpy()).reshape(-1)
        flat = x.data.reshape(-1)   # a view: writes below change x.data
        for j in range(flat.size):
            original = flat[j].item()
            flat[j] = original + eps
            plus = projected()
            flat[j] = original - eps
            minus = projected()
            flat[j] = original
            numerical = (plus - minus) / (2 * eps)
            a = float(analytical[j])
            ok = abs(a - numerical) <= atol + rtol * abs(numerical) or \
                (not np.isfinite(numerical) and a == numerical)
            if not ok:
                index = np.unravel_index(j, x.shape) if x.shape else ()
                msg = (f"gradcheck: gradient mismatch for input {i} (shape {x.shape}) at "
                       f"index {tuple(int(k) for k in index)}: analytical {a!r}, "
                       f"numerical {numerical!r} (atol={atol}, rtol={rtol})")
                if raise_exception:
                    raise GradcheckError(msg)
                return False
    return True


def _as_float64(x):
    if isinstance(x, Tensor):
        # A C-ordered copy, so that gradcheck's flat view writes into it.
        dtype = np.float64 if x.dtype.kind == "f" else x.dtype
        data = x.data.astype(dtype, order="C", copy=True)
        return Tensor(data, requires_grad=x.requires_grad)
    return x


def _as_tuple(out):
    if isinstance(out, Tensor):
        return (out,)
    if isinstance(out, (tuple, list)):
        return tuple(out)
    raise TypeError(f"gradcheck: fn must return a Tensor or a tuple of Tensors, got "
                    f"{type(out).__name__}")
