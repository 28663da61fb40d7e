"""The accumulation buffer: where a window's gradients add up, in a chosen precision.

A :class:`GradientAccumulator` built with ``dtype=`` (or ``compensated=True``)
moves each micro-batch's fresh gradient out of ``param.grad`` into a
:class:`GradBuffer` after its backward, and writes the window's sum back into
``param.grad`` (in the parameter's own dtype) just before the update.  The
parameters and the optimizer never see the buffer's dtype.

Precision of a running sum (Higham, *Accuracy and Stability of Numerical
Algorithms*, 2nd ed., 2002, sec. 4.2 and 4.3):

* plain summation of k terms in a format with unit roundoff u errs by at
  most about (k - 1) u times the sum of the magnitudes, typically about
  sqrt(k) u when the rounding errors are independent, and a term smaller than
  half the spacing of the running sum is lost entirely (``1 + 1 + ...`` stops
  growing at 2048 in float16, u = 2**-11, and at 256 in bfloat16, u = 2**-8);
* compensated (Kahan) summation carries the lost low part of every addition
  in a second buffer ``c`` of the same dtype; its error is at most
  (2u + O(k u**2)) times the sum of the magnitudes, about the error of
  rounding the exact sum once (Kahan 1965, "Further remarks on reducing
  truncation errors", Comm. ACM 8(1)).

bfloat16 has no NumPy dtype; it comes from the ``ml_dtypes`` package
(``pip install minigrad[lowp]``).  On the GPU it needs CuPy 14 or newer, whose
ufuncs have bfloat16 loops when ``ml_dtypes`` is installed and NumPy is 2.1.2
or newer (:func:`minigrad.backend.bfloat16_problem` checks, once).
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..tensor import Tensor

_NAMES = {"float64": "float64", "float32": "float32", "float16": "float16",
          "half": "float16", "bfloat16": "bfloat16"}


def resolve_dtype(dtype):
    """The NumPy dtype named by ``dtype`` (a name, a NumPy dtype, or ml_dtypes' bfloat16).

    Accepted: float64, float32, float16 and bfloat16.

    Raises:
        ValueError: another dtype (integers, complex, unknown names).
        ImportError: bfloat16 without the ``ml_dtypes`` package.
    """
    name = dtype if isinstance(dtype, str) else getattr(np.dtype(dtype), "name", str(dtype))
    if name not in _NAMES:
        raise ValueError(f"accumulation buffer dtype must be one of float64, float32, "
                         f"float16, bfloat16; got {dtype!r}")
    name = _NAMES[name]
    if name == "bfloat16":
        try:
            import ml_dtypes  # noqa: PLC0415 (optional extra)
        except ImportError:
            raise ImportError("a bfloat16 buffer needs the ml_dtypes package: "
                              "pip install 'minigrad[lowp]'") from None
        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


class GradBuffer:
    """Sums of gradients, one array per parameter, in one dtype, optionally compensated.

    Args:
        dtype: the buffer's dtype (see :func:`resolve_dtype`), or None for
            each parameter's own dtype.
        compensated: if True, Kahan summation: a second array per parameter
            holds the running compensation, in the same dtype (twice the memory).

    The buffer is keyed by the position of a parameter in the list passed to
    :meth:`add` and :meth:`write`; pass the same list every time.
    """

    def __init__(self, dtype=None, compensated=False):
        self.dtype = None if dtype is None else resolve_dtype(dtype)
        self.compensated = bool(compensated)
        self.reset()

    def reset(self) -> None:
        """Forget the window's sums."""
        self.sums = {}
        self.compensations = {}

    def _dtype_for(self, grad):
        if self.dtype is None:
            return grad.dtype
        if self.dtype.name == "bfloat16" and backend.is_cupy_array(grad):
            problem = backend.bfloat16_problem(backend.get_array_module(grad))
            if problem is not None:
                raise TypeError("a bfloat16 accumulation buffer on the GPU needs CuPy 14 or "
                                "newer with ml_dtypes and NumPy >= 2.1.2 (CuPy's bfloat16 "
                                f"support), which failed here ({problem}); use float16 "
                                "or float32")
        return self.dtype

    def add(self, params) -> None:
        """Move each ``param.grad`` into the buffer: sum += grad, then grad = None.

        An overflow gives inf (float16 above 65504), which the accumulator's
        finite check (or a GradScaler) catches at the update; NumPy's warning
        about it is silenced here.
        """
        with np.errstate(over="ignore", invalid="ignore"):
            self._add(params)

    def _add(self, params) -> None:
        for i, p in enumerate(params):
            if p.grad is None:
                continue
            g = p.grad.data.astype(self._dtype_for(p.grad.data))   # rounds to the buffer
            p.grad = None
            if i not in self.sums:
                self.sums[i] = g
                if self.compensated:
                    self.compensations[i] = backend.get_array_module(g).zeros_like(g)
            elif self.compensated:
                self.sums[i], self.compensations[i] = kahan_add(
                    self.sums[i], self.compensations[i], g)
            else:
                self.sums[i] = self.sums[i] + g        # one rounding, in the buffer's dtype

    def write(self, params) -> None:
        """Set ``param.grad`` to the window's sum, in the parameter's dtype; empty the buffer."""
        for i, p in enumerate(params):
            if i in self.sums:
                p.grad = Tensor(self.sums[i].astype(p.dtype))
        self.reset()

    @property
    def nbytes(self) -> int:
        """Bytes held now by the sums and compensations."""
        return int(sum(a.nbytes for a in self.sums.values())
                   + sum(a.nbytes for a in self.compensations.values()))

    def state_dict(self) -> dict:
        """Copies of the pending sums and compensations, by parameter position."""
        return {"sums": {i: a.copy() for i, a in self.sums.items()},
                "compensations": {i: a.copy() for i, a in self.compensations.items()}}

    def load_state_dict(self, state) -> None:
        """Restore :meth:`state_dict` (None or a missing state empties the buffer)."""
        self.reset()
        if state:
            self.sums = {i: a.copy() for i, a in state["sums"].items()}
            self.compensations = {i: a.copy() for i, a in state["compensations"].items()}


def kahan_add(total, compensation, value):
    """One step of Kahan's compensated summation, every operation in the arrays' dtype.

    Returns the new ``(total, compensation)``::

        y = value - c        # the term, corrected by what was lost before
        t = total + y        # big + small: low bits of y are lost ...
        c = (t - total) - y  # ... and recovered here (exactly, in binary floating point)
        total = t
    """
    # BEGIN SOLUTION ch12.1
    y = value - compensation
    t = total + y
    compensation = (t - total) - y
    # END SOLUTION
    return t, compensation
