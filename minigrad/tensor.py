"""Tensor: an array, its gradient, and the Function that created it.

A Tensor wraps a NumPy (CPU) or CuPy (GPU) array in ``.data``.  Operators and
methods call :mod:`minigrad.functions`, which record the graph that
:meth:`Tensor.backward` walks.  ``.grad`` is a Tensor without a graph (or None),
of the same shape and dtype as ``.data``.
"""
from __future__ import annotations

import numbers

import numpy as np

from . import autograd, backend, inplace, versions
from .dtypes import get_default_dtype, set_default_dtype  # noqa: F401 (re-exported)
from .functions import elementwise as E
from .functions import linalg as L
from .functions import reduction as R
from .functions import shape as S
from .functions import softmax as SM
from .tensor_more import TensorMore
from .tensor_ops import TensorOps, clamp_tensor

float16, float32, float64 = np.float16, np.float32, np.float64
int32, int64, bool_ = np.int32, np.int64, np.bool_

# The default floating dtype and the promotion rules live in minigrad.dtypes
# (below functions/, which use them); these names stay importable from here.
def _is_floating(dtype) -> bool:
    return np.dtype(dtype).kind in "fc"


def _to_array(data, dtype=None, device="cpu"):
    """Convert data (array, Tensor, number, nested list) to an array on ``device``."""
    if isinstance(data, Tensor):
        data = data.data
    xp = backend.array_module(device)
    if backend.is_array(data):
        arr = data
        if dtype is not None:
            arr = arr.astype(dtype, copy=False)
        if arr.dtype.kind == "O":
            raise TypeError(f"tensor: cannot make a tensor from an array of dtype object; "
                            f"expected a numeric or boolean dtype")
        return backend.to_device(arr, device)
    try:
        arr = np.asarray(data)
    except ValueError:      # NumPy's message for [[1, 2], [3]]: "inhomogeneous shape"
        raise ValueError("tensor: cannot make a tensor from a ragged nested list; every "
                         "row must have the same length") from None
    if dtype is None and arr.dtype.kind == "f" and not isinstance(data, np.generic):
        arr = arr.astype(get_default_dtype())    # Python floats take the default dtype
        # (a NumPy scalar such as np.float64(2.0) keeps its own, as in PyTorch)
    elif dtype is not None:
        arr = arr.astype(dtype)
    if arr.dtype.kind in "OUS":
        raise TypeError(f"tensor: cannot make a tensor from data of type "
                        f"{type(data).__name__} (dtype {arr.dtype})")
    return arr if xp is np else xp.asarray(arr)


def as_tensor_like(x, reference=None) -> "Tensor":
    """A constant Tensor for ``x`` (a number or array) combined with ``reference``.

    A Python number, or a NumPy scalar such as ``np.sqrt(64)``, takes the
    reference's floating dtype, so float32 stays float32 in ``x * 2`` and
    ``x / np.sqrt(d)`` (PyTorch's rule for scalars); an integer tensor with a
    float number gives the default floating dtype.
    """
    if isinstance(x, numbers.Complex) and not isinstance(x, numbers.Real):
        raise TypeError(f"minigrad has no complex dtype: cannot combine a tensor with "
                        f"the complex number {x!r}; expected a real number")
    if isinstance(x, numbers.Number):
        is_float = isinstance(x, (float, np.floating))
        if reference is not None:
            dtype = reference.dtype
            if not _is_floating(dtype) and is_float:
                dtype = get_default_dtype()
            elif dtype.kind == "b" and not isinstance(x, (bool, np.bool_)):
                dtype = np.dtype(np.int64)       # bool tensor + 1 is int64 (PyTorch)
            if dtype.kind in "iu" and not is_float and not isinstance(x, (bool, np.bool_)):
                info = np.iinfo(dtype)
                if not info.min <= int(x) <= info.max:   # uint8 + 300 wraps, as in PyTorch
                    x = (int(x) - info.min) % (info.max - info.min + 1) + info.min
            return Tensor(reference._xp.asarray(x, dtype=dtype))
        if isinstance(x, np.generic):
            return Tensor(np.asarray(x))
        return Tensor(np.asarray(x, dtype=get_default_dtype() if is_float else None))
    if isinstance(x, np.generic):
        x = np.asarray(x)
    if isinstance(x, (list, tuple)):
        x = np.asarray(x)
        if x.dtype.kind == "f" and reference is not None and _is_floating(reference.dtype):
            x = x.astype(reference.dtype)
    if backend.is_array(x):
        return Tensor(x)
    raise TypeError(f"expected a Tensor, an array or a number, got {type(x).__name__}")


class Tensor(TensorOps, TensorMore):
    """A multi-dimensional array that records operations for automatic differentiation.

    Make one with :func:`minigrad.tensor`; ``Tensor(array)`` wraps an array
    without copying.

    Attributes:
        data: the NumPy or CuPy array (assignable, as in PyTorch).
        grad: a Tensor of the same shape and dtype holding the accumulated
            gradient, or None before the first backward.  Assigning one of
            another shape, dtype or device raises RuntimeError (PyTorch's rule).
        requires_grad: whether operations on this tensor are recorded.

    In-place operators and methods (``+=``, ``add_``, ``zero_``, ``t[i] = v``,
    ...) change the tensor itself; see :mod:`minigrad.inplace` for when they
    are allowed.  More of PyTorch's methods (split, cumprod, mm, the
    bitwise operators, ...) come from the base classes
    :class:`minigrad.tensor_ops.TensorOps` and
    :class:`minigrad.tensor_more.TensorMore` (trace, kron, nansum, ...).
    """

    __slots__ = ("_data", "_grad", "_requires_grad", "_creator", "_output_index",
                 "name", "__weakref__")
    # numpy_array * tensor calls Tensor.__rmul__ (and array < tensor calls
    # Tensor.__gt__): NumPy and CuPy defer to an operand of higher priority.
    # CuPy's own ndarray has 100: a tie makes cupy_array + tensor raise.
    __array_priority__ = 1000

    def __init__(self, data, requires_grad: bool = False, name: str | None = None):
        if not (type(data) is np.ndarray or backend.is_array(data)):   # fast path first
            # A NumPy scalar (what a full reduction returns) keeps its dtype.
            data = np.asarray(data) if isinstance(data, np.generic) else _to_array(data)
        self._data = data
        if data.base is not None:           # a view: see versions.live_aliases
            versions.register_alias(self)
        self._grad = None
        self._creator = None
        self._output_index = 0
        self.name = name
        # The requires_grad setter's check, inline: every recorded result passes here.
        self._requires_grad = data.dtype.kind == "f" if requires_grad else False
        if requires_grad and not self._requires_grad:
            self.requires_grad = True          # raises the setter's TypeError

    # ------------------------------------------------------------------ state
    @property
    def data(self):
        return self._data

    @data.setter
    def data(self, value):
        if isinstance(value, Tensor):
            value = value.data
        if not backend.is_array(value):
            raise TypeError(f"Tensor.data must be a NumPy or CuPy array, got "
                            f"{type(value).__name__}")
        self._data = value

    @property
    def grad(self):
        return self._grad

    @grad.setter
    def grad(self, value):
        """Assign a gradient: None, or a Tensor of this tensor's shape, dtype and
        device (PyTorch's checks); anything else raises at once rather than being
        broadcast into an update later."""
        if value is not None:
            _check_grad(self, value)
        self._grad = value

    @property
    def requires_grad(self) -> bool:
        return self._requires_grad

    @requires_grad.setter
    def requires_grad(self, value: bool):
        # Not complex either: its gradients need conjugates, which no Function computes.
        if value and self._data.dtype.kind != "f":
            raise TypeError(f"only floating-point tensors can require gradients; this "
                            f"tensor has dtype {self._data.dtype}")
        if not value and self._creator is not None:
            raise RuntimeError("requires_grad can only be switched off on a leaf tensor; "
                               "use .detach()")
        self._requires_grad = bool(value)

    def requires_grad_(self, requires_grad: bool = True) -> "Tensor":
        """Set ``requires_grad`` in place and return self."""
        self.requires_grad = requires_grad
        return self

    @property
    def creator(self):
        """The Function that produced this tensor (None for a leaf)."""
        return self._creator

    @property
    def is_leaf(self) -> bool:
        return self._creator is None

    @property
    def _xp(self):
        return backend.get_array_module(self._data)

    @property
    def shape(self) -> tuple:
        return tuple(self._data.shape)

    @property
    def ndim(self) -> int:
        return self._data.ndim

    def size(self, dim=None):
        """The shape as a tuple (``torch.Tensor.size``), or the size of
        dimension ``dim``.  The number of entries is :meth:`numel`."""
        if dim is None:
            return tuple(self._data.shape)
        return self._data.shape[_check_dims("size", self.ndim, dim)[0]]

    @property
    def dtype(self):
        return self._data.dtype

    @property
    def device(self) -> str:
        return backend.device_of(self._data)

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def numel(self) -> int:
        """The number of entries."""
        return int(self._data.size)

    # ---------------------------------------------------------------- autograd
    def backward(self, grad=None, retain_graph: bool = False) -> None:
        """Add the gradient of this tensor w.r.t. every leaf into ``leaf.grad``.

        See :func:`minigrad.autograd.backward` for ``grad``, ``retain_graph``
        and the errors raised.
        """
        autograd.backward(self, grad, retain_graph=retain_graph)

    def detach(self) -> "Tensor":
        """A new leaf sharing this tensor's data, with no graph and no grad."""
        alias = Tensor(self._data)
        if self._creator is not None:       # an interior tensor may be re-recorded in place
            versions.register_alias(alias)
        return alias

    def zero_grad(self) -> None:
        self._grad = None

    # ------------------------------------------------------------- conversion
    def numpy(self, *, force=False) -> np.ndarray:
        """The data as a NumPy array (copied from the GPU when needed).

        On the CPU this shares memory with ``.data``, like ``torch.Tensor.numpy``.
        minigrad always does what PyTorch's ``force=True`` does (no error for a
        tensor that requires grad or lives on the GPU), so ``force`` changes nothing.
        """
        return backend.asnumpy(self._data)

    def __array__(self, dtype=None, copy=None):
        """NumPy's conversion protocol: ``np.asarray(t)``, ``np.array(t)``.

        CPU tensors give their data (no copy unless ``dtype`` differs or
        ``copy=True``; ``copy=False`` with a dtype change raises ValueError, as
        NumPy 2 asks).  A GPU tensor raises TypeError: copy it to the host
        explicitly with ``.numpy()`` (or ``.cpu()``), so no transfer happens
        by accident.  A tensor that requires grad raises RuntimeError, as in
        PyTorch: ``np.exp(t)`` would compute on its array and silently drop
        it from the graph; use ``minigrad.exp(t)``, or ``t.detach()`` /
        ``t.numpy()`` when leaving the graph is what you want.
        """
        if self._requires_grad:
            raise RuntimeError("can't convert a tensor that requires grad to a NumPy array "
                               "implicitly: a NumPy function would drop it from the graph. "
                               "Use minigrad's operation (minigrad.exp(t), t.sum(), ...), or "
                               "t.detach() / t.numpy() to leave the graph on purpose")
        if self.device != "cpu":
            raise TypeError(f"cannot convert a tensor on {self.device} to a NumPy array "
                            f"implicitly; call .numpy() (copies it to the host) or .cpu()")
        data = self._data
        if dtype is not None and np.dtype(dtype) != data.dtype:
            if copy is False:
                raise ValueError(f"Tensor.__array__: converting dtype {data.dtype} to "
                                 f"{np.dtype(dtype)} needs a copy, but copy=False")
            return data.astype(dtype)
        return data.copy() if copy else data

    def item(self):
        """The single value as a Python number; ValueError if size != 1."""
        if self._data.size != 1:
            raise ValueError(f"item: only a tensor with one element can be converted to "
                             f"a Python number, got shape {self.shape}")
        return self._data.item()

    def tolist(self):
        return self.numpy().tolist()

    def to(self, device=None, dtype=None) -> "Tensor":
        """This tensor on ``device`` and/or with ``dtype`` (self when nothing changes).

        Differentiable: gradients flow back to the original tensor.  A cast to
        a non-floating dtype gives a constant (no graph), as in PyTorch.
        """
        if device is not None and not isinstance(device, str) and dtype is None:
            dtype, device = device, None   # t.to(float64)
        out = self
        if device is not None and backend.normalize_device(device) != self.device:
            out = ToDevice(backend.normalize_device(device))(out)
        if dtype is not None and np.dtype(dtype) != out.dtype:
            _check_numeric_dtype(dtype)
            if not _is_floating(dtype):
                return Tensor(out._data.astype(dtype))
            out = AsType(np.dtype(dtype))(out)
        return out

    def cpu(self) -> "Tensor":
        return self.to("cpu")

    def cuda(self) -> "Tensor":
        return self.to("cuda")

    def astype(self, dtype) -> "Tensor":
        return self.to(dtype=dtype)

    def float(self) -> "Tensor":
        return self.to(dtype=np.float32)

    def double(self) -> "Tensor":
        return self.to(dtype=np.float64)

    def __repr__(self):
        body = np.array2string(self.numpy(), separator=", ", prefix="tensor(")
        extra = ""
        if self.dtype != get_default_dtype():
            extra += f", dtype={self.dtype}"
        if self.device != "cpu":
            extra += f", device='{self.device}'"
        if self._creator is not None:
            extra += f", grad_fn=<{type(self._creator).__name__}>"
        elif self.requires_grad:
            extra += ", requires_grad=True"
        return f"tensor({body}{extra})"

    def __bool__(self):
        if self._data.size != 1:
            raise ValueError(f"the truth value of a tensor with {self._data.size} "
                             "elements is ambiguous")
        return bool(self._data)

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __hash__(self):
        return id(self)

    # -------------------------------------------------------------- operators
    def __add__(self, other):
        return E.Add()(self, other)

    def __radd__(self, other):
        return E.Add()(other, self)

    def __sub__(self, other):
        return E.Sub()(self, other)

    def __rsub__(self, other):
        return E.Sub()(other, self)

    def __mul__(self, other):
        return E.Mul()(self, other)

    def __rmul__(self, other):
        return E.Mul()(other, self)

    def __truediv__(self, other):
        return E.Div()(self, other)

    def __rtruediv__(self, other):
        return E.Div()(other, self)

    def __pow__(self, other):
        if isinstance(other, np.generic) and not isinstance(other, np.bool_):
            other = other.item()     # float32 ** np.float64(0.5) stays float32 (PyTorch)
        if isinstance(other, numbers.Number) and not isinstance(other, bool):
            if isinstance(other, int) and other < 0 and self.dtype.kind in "iub":
                raise ValueError(f"pow: integers to negative integer powers are not allowed "
                                 f"(a {self.dtype} tensor ** {other}); convert the tensor "
                                 f"with .float() or .double() first")
            return E.PowScalar(other)(self)
        return E.Pow()(self, other)

    def __rpow__(self, other):
        return E.Pow()(other, self)

    def __matmul__(self, other):
        return L.MatMul()(self, other)

    def __rmatmul__(self, other):
        return L.MatMul()(other, self)

    def __neg__(self):
        return E.Neg()(self)

    def __pos__(self):
        return self

    def __getitem__(self, index):
        index = _index_arrays(index)
        if type(index) is tuple:        # ints mixed with arrays: PyTorch's order
            split = S.select_ints_first(index)
            if split is not None:
                return S.GetItem(split[1])(S.GetItem(split[0])(self))
        return S.GetItem(index)(self)

    # comparisons give boolean tensors without a graph
    def _compare(self, other, op, name):
        """``op(self, other)`` on the arrays.  An array or Tensor operand goes
        through the device check every Function's inputs get
        (:func:`minigrad.autograd.check_same_device`): a NumPy array against a
        GPU tensor raises minigrad's device error, as ``+`` does."""
        if isinstance(other, (list, tuple)):
            other = np.asarray(other)
        if backend.is_array(other):
            other = Tensor(other)
        if isinstance(other, Tensor):
            autograd.check_same_device(name, (self, other))
            other = other._data
        return Tensor(op(self._data, other))

    def __eq__(self, other):
        return self._compare(other, lambda a, b: a == b, "eq")

    def __ne__(self, other):
        return self._compare(other, lambda a, b: a != b, "ne")

    def __lt__(self, other):
        return self._compare(other, lambda a, b: a < b, "lt")

    def __le__(self, other):
        return self._compare(other, lambda a, b: a <= b, "le")

    def __gt__(self, other):
        return self._compare(other, lambda a, b: a > b, "gt")

    def __ge__(self, other):
        return self._compare(other, lambda a, b: a >= b, "ge")

    # ---------------------------------------------------------------- methods
    # PyTorch's names with PyTorch's meaning.  Reductions take ``dim`` and
    # ``keepdim`` and also NumPy's ``axis`` and ``keepdims`` (as PyTorch does);
    # ``dtype`` and ``out`` let np.sum(t) / np.mean(t) / np.max(t), which call
    # these methods with them, work; ``out`` must stay None.
    def sum(self, dim=None, keepdim=False, dtype=None, out=None, *, axis=None, keepdims=None):
        dim, keepdim = _dim_args(dim, keepdim, axis, keepdims)
        return R.Sum(dim, keepdim)(_numpy_call_args(self, "sum", dtype, out))

    def mean(self, dim=None, keepdim=False, dtype=None, out=None, *, axis=None, keepdims=None):
        dim, keepdim = _dim_args(dim, keepdim, axis, keepdims)
        if dtype is not None and np.dtype(dtype).kind != "f":
            raise TypeError(f"mean(): could not infer output dtype. Optional dtype must be "
                            f"either a floating point or complex dtype. Got: {np.dtype(dtype)}")
        return R.Mean(dim, keepdim)(_numpy_call_args(self, "mean", dtype, out))

    def max(self, dim=None, keepdim=False, out=None, *, axis=None, keepdims=None):
        """The largest entry (a 0-d tensor; tied maxima share the gradient); with
        ``dim`` (an int) the named tuple ``(values, indices)`` along it, the
        gradient going to the entry at ``indices``; with a Tensor, the
        elementwise :func:`minigrad.maximum`.  See :meth:`amax` for several dims."""
        if isinstance(dim, Tensor):
            return E.Maximum()(self, dim)
        dim, keepdim = _dim_args(dim, keepdim, axis, keepdims)
        if dim is None:
            return R.Max(None, keepdim)(_numpy_call_args(self, "max", None, out))
        return _values_and_indices(self, dim, keepdim, "max")

    def min(self, dim=None, keepdim=False, out=None, *, axis=None, keepdims=None):
        """The smallest entry, or ``(values, indices)`` along ``dim``; see :meth:`max`."""
        if isinstance(dim, Tensor):
            return E.Minimum()(self, dim)
        dim, keepdim = _dim_args(dim, keepdim, axis, keepdims)
        if dim is None:
            return R.Min(None, keepdim)(_numpy_call_args(self, "min", None, out))
        return _values_and_indices(self, dim, keepdim, "min")

    def amax(self, dim=None, keepdim=False):
        """The maximum over ``dim`` (an int or a tuple; () or None: all), values
        only; tied maxima share the gradient evenly (``torch.amax``: its
        backward multiplies by the mask, see :class:`~minigrad.functions.reduction.AMax`)."""
        return R.AMax(None if dim == () else dim, _flag("amax: keepdim", keepdim))(self)

    def amin(self, dim=None, keepdim=False):
        """The minimum over ``dim``; see :meth:`amax`."""
        return R.AMin(None if dim == () else dim, _flag("amin: keepdim", keepdim))(self)

    def var(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
            keepdims=None, ddof=None, dtype=None, out=None):
        """Variance Σ(x - mean)² / (N - correction) over ``dim``.

        ``correction=1`` (the default, Bessel's correction: the unbiased
        estimate), 0 gives the biased one; ``unbiased=False`` is
        ``correction=0``, and NumPy's ``ddof`` is accepted for ``correction``.
        N - correction <= 0 gives inf or nan, as in PyTorch.
        """
        return self._var(R.Var, dim, unbiased, keepdim, correction, axis, keepdims, ddof,
                         dtype, out)

    def _var(self, cls, dim, unbiased, keepdim, correction, axis, keepdims, ddof, dtype,
             out):
        name = cls.name
        if isinstance(dim, (bool, np.bool_)):   # var(False): PyTorch's var(input, unbiased)
            if unbiased is not None:
                raise TypeError(f"{name}(): got unbiased twice")
            dim, unbiased = None, bool(dim)
        dim, keepdim = _dim_args(dim, keepdim, axis, keepdims)
        x = _numpy_call_args(self, name, dtype, out)
        return cls(dim, keepdim, _correction(unbiased, correction, ddof, name))(x)

    def std(self, dim=None, unbiased=None, keepdim=False, *, correction=None, axis=None,
            keepdims=None, ddof=None, dtype=None, out=None):
        """Standard deviation: the square root of :meth:`var` (same arguments);
        its gradient is 0 where the result is 0 (a constant slice), as in PyTorch."""
        return self._var(R.Std, dim, unbiased, keepdim, correction, axis, keepdims, ddof,
                         dtype, out)

    def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
        """The vector p-norm over ``dim`` (all entries for None); ``"fro"`` is
        p = 2.  See :func:`minigrad.linalg.vector_norm`."""
        x = self if dtype is None else self.to(dtype=dtype)
        return L.VectorNorm(L.check_ord(2 if p == "fro" else p), dim,
                            _flag("norm: keepdim", keepdim))(x)

    def argmax(self, dim=None, keepdim=False, *, axis=None):
        """Position of the largest entry (the first one on ties), int64: in the
        flattened tensor for ``dim=None``, else along ``dim``."""
        return _arg_reduce(self, "argmax", dim if axis is None else axis,
                           _flag("argmax: keepdim", keepdim))

    def argmin(self, dim=None, keepdim=False, *, axis=None):
        """Position of the smallest entry; see :meth:`argmax`."""
        return _arg_reduce(self, "argmin", dim if axis is None else axis,
                           _flag("argmin: keepdim", keepdim))

    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return S.Reshape(shape)(self)

    def view(self, *shape):
        return self.reshape(*shape)

    def flatten(self, start_dim=0, end_dim=-1):
        """Merge dimensions start_dim..end_dim (inclusive) into one; a 0-d
        tensor becomes shape (1,)."""
        if self.ndim == 0:
            return self.reshape(1)
        start, end = (d % self.ndim for d in _check_dims("flatten", self.ndim,
                                                          start_dim, end_dim))
        if start > end:
            raise ValueError(f"flatten: start_dim {start_dim} comes after end_dim "
                             f"{end_dim} for a tensor with {self.ndim} dimensions")
        merged = int(np.prod(self.shape[start:end + 1]))   # not -1: 0 elements are fine
        return self.reshape(*self.shape[:start], merged, *self.shape[end + 1:])

    def transpose(self, dim0, dim1):
        """Swap dimensions ``dim0`` and ``dim1`` (``torch.transpose``); for any
        order of all dimensions use :meth:`permute`."""
        perm = list(range(self.ndim))
        d0, d1 = (d % max(self.ndim, 1) for d in _check_dims("transpose", self.ndim,
                                                             dim0, dim1))
        if self.ndim:
            perm[d0], perm[d1] = perm[d1], perm[d0]
        return S.Transpose(perm)(self)

    def swapaxes(self, axis0, axis1):
        return self.transpose(axis0, axis1)

    def permute(self, *dims):
        """The dimensions in the order ``dims`` (a permutation of 0..ndim-1,
        negative allowed): ``x.permute(2, 0, 1)``."""
        if len(dims) == 1 and isinstance(dims[0], (tuple, list)):
            dims = dims[0]
        return S.Transpose(dims)(self)

    @property
    def T(self):
        return S.Transpose(None)(self)

    @property
    def mT(self):
        """The last two dimensions swapped (a batch of matrices transposed)."""
        return self.transpose(-2, -1)

    def t(self):
        """The transpose of a tensor with at most 2 dimensions."""
        if self.ndim > 2:
            raise ValueError(f"t: expected a tensor with at most 2 dimensions, got "
                             f"shape {self.shape}; use transpose(dim0, dim1) or permute")
        return self.T

    def broadcast_to(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return S.BroadcastTo(shape)(self)

    def squeeze(self, dim=None, *, axis=None):
        """Remove size-1 dimensions: all, or those of ``dim`` (an int or a
        tuple) whose size is 1; a named dimension of another size stays."""
        return S.Squeeze(dim if axis is None else axis)(self)

    def unsqueeze(self, dim):
        _check_dims("unsqueeze", self.ndim + 1, dim)
        return S.Unsqueeze(dim)(self)

    def exp(self):
        return E.Exp()(self)

    def log(self):
        return E.Log()(self)

    def sqrt(self):
        return E.Sqrt()(self)

    def abs(self):
        return E.Abs()(self)

    def tanh(self):
        return E.Tanh()(self)

    def sigmoid(self):
        return E.Sigmoid()(self)

    def relu(self):
        return E.ReLU()(self)

    def clip(self, min=None, max=None):  # noqa: A002 (PyTorch's names)
        """Clamp into [min, max]; at least one bound must be given (PyTorch's rule).
        A bound may be a number or a Tensor (broadcast; it then gets a
        gradient too, see :func:`minigrad.tensor_ops.clamp_tensor`)."""
        if isinstance(min, Tensor) or isinstance(max, Tensor):
            return clamp_tensor(self, min, max)     # tensor bounds, with gradients
        if min is None and max is None:
            raise ValueError("clamp: at least one of min and max must be given, got "
                             "min=None and max=None")
        return E.Clip(min, max)(self)

    clamp = clip

    def softmax(self, dim=-1, dtype=None, *, axis=None):
        """softmax along ``dim``, computed in ``dtype`` when given (PyTorch's)."""
        x = self if dtype is None else self.to(dtype=dtype)
        return SM.Softmax(dim if axis is None else axis)(x)

    def log_softmax(self, dim=-1, dtype=None, *, axis=None):
        """log_softmax along ``dim``, computed in ``dtype`` when given."""
        x = self if dtype is None else self.to(dtype=dtype)
        return SM.LogSoftmax(dim if axis is None else axis)(x)

    # PyTorch's method spellings of the operators
    def add(self, other, alpha=1):
        """self + alpha·other."""
        return E.Add()(self, other if alpha == 1 else other * alpha)

    def sub(self, other, alpha=1):
        """self - alpha·other."""
        return E.Sub()(self, other if alpha == 1 else other * alpha)

    def mul(self, other):
        return E.Mul()(self, other)

    def div(self, other, rounding_mode=None):
        """self / other; ``rounding_mode="floor"`` or ``"trunc"`` rounds the
        quotient (a result with zero gradient)."""
        q = E.Div()(self, other)
        if rounding_mode is None:
            return q
        if rounding_mode not in ("floor", "trunc"):
            raise ValueError(f"div: rounding_mode must be None, 'floor' or 'trunc', got "
                             f"{rounding_mode!r}")
        floor = self.__floordiv__(other)
        if rounding_mode == "floor":
            return floor
        out = Tensor(q._data.trunc() if hasattr(q._data, "trunc") else  # a constant:
                     q._xp.trunc(q._data))                            # gradient 0
        # integers divided by integers stay integers, as with "floor"
        return out if np.dtype(floor.dtype).kind == "f" else out.to(floor.dtype)

    multiply, divide, subtract, true_divide = mul, div, sub, div

    def pow(self, exponent):
        return self.__pow__(exponent)

    def neg(self):
        return E.Neg()(self)

    negative = neg

    def matmul(self, other):
        return L.MatMul()(self, other)

    def square(self):
        return E.PowScalar(2)(self)

    def maximum(self, other):
        return E.Maximum()(self, other)

    def minimum(self, other):
        return E.Minimum()(self, other)

    def eq(self, other):
        return self.__eq__(other)

    def ne(self, other):
        return self.__ne__(other)

    def lt(self, other):
        return self.__lt__(other)

    def le(self, other):
        return self.__le__(other)

    def gt(self, other):
        return self.__gt__(other)

    def ge(self, other):
        return self.__ge__(other)

    def dim(self) -> int:
        """The number of dimensions (``ndim``)."""
        return self._data.ndim

    def clone(self):
        """A copy that stays in the graph (the gradient passes through)."""
        return E.Clone()(self)

    def contiguous(self):
        return self

    def long(self):
        return self.to(dtype=np.int64)

    def int(self):
        return self.to(dtype=np.int32)

    def half(self):
        return self.to(dtype=np.float16)

    def bool(self):
        return self.to(dtype=np.bool_)

    def type(self, dtype=None):
        """Without ``dtype``, the type name (``"minigrad.FloatTensor"`` for
        float32, as ``torch.Tensor.type``); with one, this tensor cast to it."""
        if dtype is None:
            return f"minigrad.{_TYPE_NAMES.get(self.dtype, str(self.dtype))}"
        return self.to(dtype=dtype)

    # more shape functions
    def expand(self, *sizes):
        """A broadcast view to ``sizes`` (-1 keeps a dimension's size; new
        dimensions go in front); the gradient sums over the copies."""
        if len(sizes) == 1 and isinstance(sizes[0], (tuple, list)):
            sizes = tuple(sizes[0])
        if len(sizes) < self.ndim:
            raise ValueError(f"expand: {len(sizes)} sizes for a tensor with {self.ndim} "
                             f"dimensions; give at least one per dimension")
        lead = len(sizes) - self.ndim
        shape = tuple(n if s == -1 and i >= lead else s
                      for i, (s, n) in enumerate(zip(sizes, (None,) * lead + self.shape)))
        return S.BroadcastTo(shape)(self)

    def expand_as(self, other):
        return self.expand(other.shape)

    def repeat(self, *repeats):
        """``repeats[i]`` copies along dimension i, one after the other
        (``numpy.tile``); more repeats than dimensions add leading ones."""
        if len(repeats) == 1 and isinstance(repeats[0], (tuple, list)):
            repeats = tuple(repeats[0])
        for r in repeats:
            if isinstance(r, (bool, np.bool_)) or not isinstance(r, (int, np.integer)) or r < 0:
                raise ValueError(f"repeat: repeats must be non-negative ints, got "
                                 f"{tuple(repeats)!r}")
        return S.Repeat(repeats)(self)

    def flip(self, *args, dims=None):
        """Reverse the order of the entries along ``dims`` (ints, a tuple or a
        list; ``x.flip(0, 1)``, ``x.flip((0, 1))`` or ``x.flip(dims=[0])``)."""
        if dims is None:
            dims = tuple(args[0]) if len(args) == 1 and isinstance(args[0], (tuple, list)) \
                else args
        elif args:
            raise TypeError("flip: give the dims either positionally or as dims=, not both")
        dims = (dims,) if isinstance(dims, (int, np.integer)) else tuple(dims)
        return S.Flip(dims)(self)

    def roll(self, shifts, dims=None):
        """Shift entries by ``shifts`` along ``dims`` (the flattened tensor for
        None), wrapping around."""
        _check_roll(self, shifts, dims)
        return S.Roll(shifts, dims)(self)

    def unflatten(self, dim, sizes):
        """Split dimension ``dim`` into ``sizes`` (one may be -1)."""
        d = _check_dims("unflatten", self.ndim, dim)[0] % max(self.ndim, 1)
        sizes = _unflatten_sizes(tuple(sizes), self.shape[d] if self.ndim else 1)
        return self.reshape(*self.shape[:d], *sizes, *self.shape[d + 1:])

    def diagonal(self, offset=0, dim1=0, dim2=1):
        _int_arg("diagonal", "offset", offset)
        return S.Diagonal(offset, dim1, dim2)(self)

    # indexing along one dimension
    def gather(self, dim, index):
        """out[i][j][k] = self[i][index[i][j][k]][k] for dim = 1 (``torch.gather``)."""
        from .functions.indexing import Gather  # noqa: PLC0415
        return Gather(dim, _int_array(index, self, "gather"))(self)

    def take_along_dim(self, indices, dim=None):
        """``gather`` with broadcasting (``torch.take_along_dim``); the flattened
        tensor for ``dim=None``."""
        from .functions.indexing import Gather  # noqa: PLC0415
        idx = _int_array(indices, self, "take_along_dim")
        x = self
        if dim is None:
            x, idx, dim = self.reshape(-1), idx.reshape(-1), 0
        d = _check_dims("take_along_dim", x.ndim, dim)[0] % max(x.ndim, 1)
        n = x.shape[d] if x.ndim else 1
        if idx.size and int(idx.min()) < 0:   # take_along_dim counts negative indices
            if int(idx.min()) < -n:           # from the end (gather does not)
                raise IndexError(f"take_along_dim: index {int(idx.min())} is out of bounds "
                                 f"for dimension {d} with size {n}")
            idx = idx % n
        if idx.ndim != x.ndim:
            raise ValueError(f"take_along_dim: indices have {idx.ndim} dimensions but the "
                             f"input has {x.ndim}")
        try:
            shape = np.broadcast_shapes(x.shape[:d] + (1,) + x.shape[d + 1:],
                                        idx.shape[:d] + (1,) + idx.shape[d + 1:])
        except ValueError:
            raise ValueError(f"take_along_dim: indices of shape {tuple(idx.shape)} do not "
                             f"broadcast with the input of shape {x.shape} outside dim {d}; "
                             f"expected sizes equal or 1 there") from None
        x = x.broadcast_to(shape[:d] + (x.shape[d],) + shape[d + 1:])
        idx = x._xp.broadcast_to(idx, shape[:d] + (idx.shape[d],) + shape[d + 1:])
        return Gather(d, idx)(x)

    def index_select(self, dim, index):
        """The entries at the positions ``index`` (1-D) along ``dim``."""
        from .functions.indexing import IndexSelect  # noqa: PLC0415
        return IndexSelect(dim, _int_array(index, self, "index_select"))(self)

    def scatter(self, dim, index, src=None, *, value=None, reduce=None):
        """A copy with out[i][index[i][j][k]][k] = src[i][j][k] (dim = 1);
        ``src`` a Tensor or a number, or ``value=`` a number (``torch.scatter``).  ``reduce="add"`` or
        ``"multiply"`` combines instead of overwriting: ``scatter_reduce`` with
        "sum" or "prod" (PyTorch deprecates this form, and gives it no
        gradient; minigrad gives scatter_reduce's)."""
        from .functions.indexing import Scatter, ScatterReduce  # noqa: PLC0415
        idx = _int_array(index, self, "scatter")
        if src is None and value is None:
            raise TypeError("scatter: src must be a Tensor or a number, got None "
                            "(or pass value= a number)")
        if src is not None and value is not None:
            raise TypeError("scatter: give src or value=, not both")
        source = _scatter_source(src if value is None else value, idx, self)
        if reduce is None:
            return Scatter(dim, idx)(self, source)
        if reduce not in ("add", "multiply"):
            raise ValueError(f"scatter: reduce must be 'add' or 'multiply' (scatter_reduce "
                             f"has more), got {reduce!r}")
        return ScatterReduce(dim, idx, "sum" if reduce == "add" else "prod")(self, source)

    def scatter_reduce(self, dim, index, src, reduce, *, include_self=True):
        """A copy in which every src[i][j][k] is combined into
        out[i][index[i][j][k]][k] (dim = 1) by ``reduce``: "sum", "prod",
        "mean", "amax" or "amin"; ``include_self=False`` leaves the written
        entries' own values out (``torch.scatter_reduce``).  ``index`` is an
        integer tensor with ``self``'s number of dimensions, no larger than
        ``src``; raises ValueError for another ``reduce``, TypeError for a
        ``src`` that is not a Tensor."""
        from .functions.indexing import ScatterReduce  # noqa: PLC0415
        if not isinstance(src, Tensor):
            raise TypeError(f"scatter_reduce: src must be a Tensor, got {type(src).__name__}")
        idx = _int_array(index, self, "scatter_reduce")
        _scatter_source(src, idx, self, "scatter_reduce")
        if not isinstance(include_self, (bool, np.bool_)):
            raise TypeError(f"scatter_reduce: include_self must be a bool, got "
                            f"{type(include_self).__name__}")
        return ScatterReduce(dim, idx, reduce, include_self)(self, src)

    def scatter_add(self, dim, index, src):
        """A copy with out[i][index[i][j][k]][k] += src[i][j][k] (dim = 1)."""
        from .functions.indexing import ScatterAdd  # noqa: PLC0415
        idx = _int_array(index, self, "scatter_add")
        return ScatterAdd(dim, idx)(self, _scatter_source(src, idx, self, "scatter_add"))

    # more reductions
    def logsumexp(self, dim=None, keepdim=False):
        """log Σ exp over ``dim``, computed stably."""
        return R.LogSumExp(dim, _flag("logsumexp: keepdim", keepdim))(self)

    def cumsum(self, dim, dtype=None):
        """Running sums along ``dim`` (an int: PyTorch has no flattened form),
        computed in ``dtype`` when given."""
        if isinstance(dim, (bool, np.bool_)) or not isinstance(dim, (int, np.integer)):
            raise TypeError(f"cumsum: dim must be an int, got {dim!r}")
        return R.CumSum(dim)(self if dtype is None else self.to(dtype=dtype))

    def prod(self, dim=None, keepdim=False, dtype=None):
        x = self if dtype is None else self.to(dtype=dtype)
        if isinstance(dim, (tuple, list)):
            raise TypeError(f"prod: dim must be an int or None, got {dim!r}")
        return R.Prod(dim, _flag("prod: keepdim", keepdim))(x)

    def all(self, dim=None, keepdim=False):
        """Whether every entry is non-zero (a bool tensor, no graph)."""
        keepdim = _flag("all: keepdim", keepdim)
        axes = None if dim is None else R.normalize_axis(dim, max(self.ndim, 1), "all")
        return Tensor(self._xp.asarray(self._data.all(axis=axes if self.ndim else None,
                                                      keepdims=keepdim)))

    def any(self, dim=None, keepdim=False):
        """Whether some entry is non-zero (a bool tensor, no graph)."""
        keepdim = _flag("any: keepdim", keepdim)
        axes = None if dim is None else R.normalize_axis(dim, max(self.ndim, 1), "any")
        return Tensor(self._xp.asarray(self._data.any(axis=axes if self.ndim else None,
                                                      keepdims=keepdim)))

    def sort(self, dim=-1, descending=False, stable=False):
        """The named tuple (values, indices) sorted along ``dim``; equal values
        keep their order (a stable sort; ``stable`` is accepted for PyTorch's
        signature).  The gradient goes back to where each value came from."""
        from . import return_types  # noqa: PLC0415
        _flag("sort: stable", stable)
        indices = self.argsort(dim, descending)
        return return_types.sort(self.gather(dim, indices) if self.ndim else self * 1,
                                 indices)

    def argsort(self, dim=-1, descending=False, stable=False):
        """Positions that sort ``dim`` (int64; equal values keep their order)."""
        if self.ndim == 0:
            return Tensor(self._xp.zeros((), dtype=np.int64))
        d = _check_dims("argsort", self.ndim, dim)[0]
        if not isinstance(descending, (bool, np.bool_)):
            raise TypeError(f"argsort: descending must be a bool, got "
                            f"{type(descending).__name__}")
        _flag("argsort: stable", stable)
        xp = self._xp
        key = -self._data if descending and self.dtype.kind != "b" else self._data
        if descending and self.dtype.kind == "b":
            key = ~self._data
        order = xp.argsort(key, axis=d, kind="stable")
        if descending and self.dtype.kind == "f":   # NaN is the largest: first, as in PyTorch
            not_nan = xp.take_along_axis(~xp.isnan(self._data), order, axis=d)
            order = xp.take_along_axis(order, xp.argsort(not_nan, axis=d, kind="stable"),
                                       axis=d)
        return Tensor(order.astype(np.int64))

    def topk(self, k, dim=None, largest=True, sorted=True):  # noqa: A002 (PyTorch's name)
        """The ``k`` largest (or smallest) entries along ``dim`` (None: the
        last) and their positions, as the named tuple (values, indices),
        largest first."""
        from . import return_types  # noqa: PLC0415
        dim = -1 if dim is None else dim
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, (int, np.integer)):
            raise TypeError(f"topk: k must be an int, got {type(k).__name__} {k!r}")
        for flag, value in (("largest", largest), ("sorted", sorted)):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"topk: {flag} must be a bool, got {type(value).__name__}")
        _check_dims("topk", self.ndim, dim)
        n = self.shape[dim] if self.ndim else 1
        if not 0 <= k <= n:
            raise ValueError(f"topk: k = {k} is out of range for a dimension of size {n}")
        indices = self.argsort(dim, descending=largest)
        if self.ndim:
            indices = Tensor(self._xp.take(indices._data, np.arange(k), axis=dim))
        return return_types.topk(self.gather(dim, indices) if self.ndim else self * 1,
                                 indices)

    # more elementwise math
    def sin(self):
        return E.Sin()(self)

    def cos(self):
        return E.Cos()(self)

    def erf(self):
        from .functions.activation import Erf  # noqa: PLC0415
        return Erf()(self)

    def rsqrt(self):
        return E.Rsqrt()(self)

    def log2(self):
        return E.Log2()(self)

    def log10(self):
        return E.Log10()(self)

    def exp2(self):
        return E.Exp2()(self)

    def floor(self):
        return E.Rounding("floor")(self)

    def ceil(self):
        return E.Rounding("ceil")(self)

    def round(self, decimals=0):
        return E.Rounding("round", decimals)(self)

    def trunc(self):
        return E.Rounding("trunc")(self)

    def sign(self):
        return E.Rounding("sign")(self)

    def lerp(self, end, weight):
        """self + weight·(end - self); ``weight`` a number or a Tensor."""
        return E.Lerp()(self, end, weight)

    def isnan(self):
        return Tensor(self._xp.isnan(self._data))

    def isinf(self):
        return Tensor(self._xp.isinf(self._data))

    def isfinite(self):
        return Tensor(self._xp.isfinite(self._data))

    def __mod__(self, other):
        return E.Remainder()(self, other)

    def __rmod__(self, other):
        return E.Remainder()(other, self)

    remainder = __mod__

    def __floordiv__(self, other):
        """a // b rounded toward -inf; a constant (no gradient), as in PyTorch."""
        a, b = E._promote(self._data, as_tensor_like(other, self)._data
                          if not isinstance(other, Tensor) else other._data)
        return Tensor(E.floor_divide(a, b))

    def __rfloordiv__(self, other):
        return as_tensor_like(other, self).__floordiv__(self)

    floor_divide = __floordiv__

    # attention's masks (minigrad.functions.attention)
    def masked_fill(self, mask, value):
        return _attention().masked_fill(self, mask, value)

    def tril(self, diagonal=0):
        return _attention().tril(self, _int_arg("tril", "diagonal", diagonal))

    def triu(self, diagonal=0):
        return _attention().triu(self, _int_arg("triu", "diagonal", diagonal))

    # --------------------------------------------------------------- in place
    # PyTorch's in-place operators and methods; see minigrad.inplace for the
    # rules (no_grad updates, the leaf error, the version counter).
    def __iadd__(self, other):
        return inplace.add_(self, other)

    def __isub__(self, other):
        return inplace.sub_(self, other)

    def __imul__(self, other):
        return inplace.mul_(self, other)

    def __itruediv__(self, other):
        return inplace.div_(self, other)

    def add_(self, other, alpha=1):
        return inplace.add_(self, other, alpha)

    def sub_(self, other, alpha=1):
        return inplace.sub_(self, other, alpha)

    def mul_(self, other):
        return inplace.mul_(self, other)

    def div_(self, other, *, rounding_mode=None):
        if rounding_mode is None:
            return inplace.div_(self, other)
        return inplace.copy_(self, self.div(other, rounding_mode=rounding_mode))

    def clamp_(self, min=None, max=None):  # noqa: A002 (PyTorch's names)
        if isinstance(min, Tensor) or isinstance(max, Tensor):     # tensor bounds
            return inplace.copy_(self, self.clamp(min, max))
        return inplace.clamp_(self, min, max)

    clip_ = clamp_

    def zero_(self):
        return inplace.zero_(self)

    def fill_(self, value):
        return inplace.fill_(self, value)

    def copy_(self, src, non_blocking=False):
        """Copy ``src``'s values into this tensor (see :func:`minigrad.inplace.copy_`);
        the copy is always synchronous, whatever ``non_blocking`` says."""
        return inplace.copy_(self, src)

    def __setitem__(self, index, value):
        inplace.setitem(self, _index_arrays(index), value)


def _attention():
    """minigrad.functions.attention (imported on first use: it builds on Tensor)."""
    from .functions import attention  # noqa: PLC0415
    return attention


def _check_numeric_dtype(dtype) -> None:
    """TypeError for a dtype a tensor cannot hold (object, strings, dates, records)."""
    if np.dtype(dtype).kind not in "biuf" and np.dtype(dtype).name != "bfloat16":
        raise TypeError(f"to: a tensor holds booleans, integers or floats; got dtype "
                        f"{np.dtype(dtype)} (kind {np.dtype(dtype).kind!r})")


def _check_grad(tensor, grad) -> None:
    """Raise unless ``grad`` can be ``tensor``'s gradient (PyTorch's messages)."""
    if not isinstance(grad, Tensor):
        raise TypeError(f"assigned grad expected to be a Tensor or None but got grad of "
                        f"type {type(grad).__name__}")
    if grad is tensor:
        raise RuntimeError("can't assign Variable as its own grad")
    if grad.shape != tensor.shape:
        raise RuntimeError(f"attempting to assign a gradient of size '{list(grad.shape)}' "
                           f"to a tensor of size '{list(tensor.shape)}'. Please ensure "
                           "that the gradient and the tensor are the same size")
    if grad.dtype != tensor.dtype:
        raise RuntimeError(f"attempting to assign a gradient with dtype '{grad.dtype}' to "
                           f"a tensor with dtype '{tensor.dtype}'; the gradient's dtype "
                           "must equal the data's")
    if grad.device != tensor.device:
        raise RuntimeError(f"attempting to assign a gradient located on device "
                           f"'{grad.device}' to a tensor located on device "
                           f"'{tensor.device}'; move it with .to(device) first")


autograd._register_tensor_type(Tensor, as_tensor_like)


def _numpy_call_args(tensor, name, dtype, out):
    """The tensor a reduction works on: cast to ``dtype`` if given; ``out``
    (NumPy's output argument) is not supported."""
    if out is not None:
        raise TypeError(f"Tensor.{name}: out= is not supported; use the returned tensor")
    return tensor if dtype is None else tensor.to(dtype=dtype)


_TYPE_NAMES = {np.dtype(np.float16): "HalfTensor", np.dtype(np.float32): "FloatTensor",
               np.dtype(np.float64): "DoubleTensor", np.dtype(np.int8): "CharTensor",
               np.dtype(np.uint8): "ByteTensor", np.dtype(np.int16): "ShortTensor",
               np.dtype(np.int32): "IntTensor", np.dtype(np.int64): "LongTensor",
               np.dtype(np.bool_): "BoolTensor"}


def _dim_args(dim, keepdim, axis, keepdims):
    """``dim``/``keepdim`` from PyTorch's names or NumPy's ``axis``/``keepdims``."""
    if axis is not None:
        if dim is not None:
            raise TypeError("got both dim and axis; pass one of them")
        dim = axis
    keepdim = keepdim if keepdims is None else keepdims
    return dim, _flag("keepdim", keepdim)


def _flag(name, value):
    """A bool argument (PyTorch refuses 'x', None or 1 where a bool is expected)."""
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__} {value!r}")
    return bool(value)


def _int_arg(name, arg, value):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: {arg} must be an int, got {type(value).__name__} {value!r}")
    return int(value)


def _check_roll(x, shifts, dims):
    """roll's arguments, with PyTorch's rules: shifts and dims of equal length
    (dims=None only with a single shift), each dim in range."""
    many = isinstance(shifts, (tuple, list))
    for s in (tuple(shifts) if many else (shifts,)):
        _int_arg("roll", "shifts", s)
    if dims is None:
        if many and len(shifts) != 1:
            raise ValueError(f"roll: shifts {tuple(shifts)} need dims of the same length; "
                             f"dims=None takes a single shift")
        return
    dim_list = tuple(dims) if isinstance(dims, (tuple, list)) else (dims,)
    if x.ndim == 0 and dim_list:
        raise IndexError(f"roll: dimension specified as {dim_list[0]} but the tensor has "
                         f"no dimensions")
    shift_list = tuple(shifts) if many else (shifts,)
    if len(shift_list) == 0:
        raise ValueError("roll: `shifts` required")
    if len(shift_list) != len(dim_list):
        raise ValueError(f"roll: shifts and dimensions must align: shifts {shift_list} and "
                         f"dims {dim_list}")
    _check_dims("roll", x.ndim, *dim_list)


def _unflatten_sizes(sizes, n):
    """unflatten's sizes with its -1 resolved from the dimension's size ``n``
    (so that a dimension of 0 entries splits too: (0, 3) -> (0, 1, 3))."""
    if not sizes or any(isinstance(s, (bool, np.bool_)) or not isinstance(s, (int, np.integer))
                        for s in sizes):
        raise TypeError(f"unflatten: sizes must be a non-empty tuple of ints, got {sizes!r}")
    if sizes.count(-1) > 1 or any(s < -1 for s in sizes):
        raise ValueError(f"unflatten: sizes may hold one -1 and no other negative size, "
                         f"got {sizes!r}")
    known = int(np.prod([s for s in sizes if s != -1]))
    if -1 in sizes:
        if known == 0 or n % known:
            raise ValueError(f"unflatten: sizes {sizes} do not split a dimension of size {n}")
        sizes = tuple(n // known if s == -1 else s for s in sizes)
    elif known != n:
        raise ValueError(f"unflatten: sizes {sizes} multiply to {known}, not the size {n} "
                         f"of the dimension")
    return sizes


def _correction(unbiased, correction, ddof, name="var"):
    """var/std's divisor offset: ``correction``, else ``ddof``, else 1 or 0
    from ``unbiased`` (default 1, Bessel's correction, as in PyTorch)."""
    if unbiased is not None and not isinstance(unbiased, (bool, np.bool_)):
        raise TypeError(f"{name}(): argument 'unbiased' must be bool, got "
                        f"{type(unbiased).__name__}")
    if unbiased is not None and (correction is not None or ddof is not None):
        raise TypeError(f"{name}(): pass either 'unbiased' or 'correction', not both")
    if correction is not None:
        return correction
    if ddof is not None:
        return ddof
    return 0 if unbiased is False else 1


def _check_dims(name, ndim, *dims):
    """Each dim an int in [-ndim, ndim) (a 0-d tensor accepts 0 and -1)."""
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, (int, np.integer)):
            raise TypeError(f"{name}: dims must be ints, got {d!r}")
        if not -max(ndim, 1) <= d < max(ndim, 1):
            raise IndexError(f"{name}: dimension {d} is out of range for a tensor with "
                             f"{ndim} dimensions (expected -{max(ndim, 1)} <= dim < "
                             f"{max(ndim, 1)})")
    return dims


def _int_array(index, x, name):
    """An index (Tensor, array or list of ints) as an integer array on x's device."""
    if isinstance(index, Tensor):
        index = index._data
    arr = index if hasattr(index, "dtype") else np.asarray(index)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: index must hold integers, got dtype {arr.dtype}")
    return backend.to_device(arr, x.device)


def _scatter_source(src, index, x, name="scatter"):
    """scatter's source: a Tensor of x's dtype (PyTorch refuses another), or a
    number filled into the index's shape."""
    if isinstance(src, Tensor):
        if src.dtype != x.dtype:
            raise TypeError(f"{name}: expected src to have the input's dtype {x.dtype}, "
                            f"got {src.dtype}")
        return src
    if isinstance(src, (bool, np.bool_)) or not isinstance(src, (numbers.Number, np.number)):
        raise TypeError(f"{name}: src must be a Tensor or a number, got "
                        f"{type(src).__name__}")
    return Tensor(x._xp.full(index.shape, src, dtype=x.dtype))


def _arg_reduce(x, name, dim, keepdim):
    """argmax/argmin as int64 positions (no graph)."""
    if dim is None:
        if x.numel() == 0:
            raise ValueError(f"{name}: cannot take the {name} of an empty tensor")
        out = getattr(x._data, name)()
        shape = (1,) * x.ndim if keepdim else ()
        return Tensor(x._xp.asarray(out, dtype=np.int64).reshape(shape))
    d = R.normalize_axis(dim, max(x.ndim, 1), name)[0]
    if x.ndim and x.shape[d] == 0:
        raise ValueError(f"{name}: cannot take the {name} over an empty axis of a "
                         f"tensor of shape {x.shape}")
    data = x._data if x.ndim else x._data.reshape(1)
    out = getattr(data, name)(axis=d, keepdims=keepdim).astype(np.int64)
    return Tensor(out.reshape(x.shape) if not x.ndim else out)


def _values_and_indices(x, dim, keepdim, name):
    """``max(dim)``/``min(dim)``: the named tuple (values, indices); values are
    gathered at indices, so the gradient goes to that entry only (PyTorch)."""
    from .functions.indexing import Gather  # noqa: PLC0415 (keeps the hot imports short)
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}: dim must be an int (values and indices along one "
                        f"dimension), got {dim!r}; use amax/amin to reduce over several")
    d = R.normalize_axis(dim, max(x.ndim, 1), name)[0]
    if x.ndim and x.shape[d] == 0:
        raise ValueError(f"{name}: cannot reduce an empty tensor of shape {x.shape} over "
                         f"dim {dim}")
    indices = _arg_reduce(x, "argmax" if name == "max" else "argmin", dim, True)
    values = Gather(dim, indices._data)(x)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    from . import return_types  # noqa: PLC0415
    return getattr(return_types, name)(values, indices)


def _index_arrays(index):
    """Replace Tensors inside an index (also inside lists) by their arrays."""
    if isinstance(index, Tensor):
        return index.data
    if isinstance(index, tuple):
        return tuple(_index_arrays(i) for i in index)
    if isinstance(index, list) and any(isinstance(i, Tensor) for i in index):
        return [_index_arrays(i) for i in index]
    return index


class ToDevice(autograd.Function):
    """Copy to another device; the gradient is copied back."""

    def __init__(self, device):
        self.device = device

    def forward(self, a):
        # BEGIN SOLUTION ch09.2
        self.source = backend.device_of(a)
        return backend.to_device(a, self.device)
        # END SOLUTION

    def backward(self, g):
        # BEGIN SOLUTION ch09.2
        return backend.to_device(g, self.source)
        # END SOLUTION


class AsType(autograd.Function):
    """Cast to another dtype; the gradient is cast back."""

    def __init__(self, dtype):
        self.dtype = dtype

    def forward(self, a):
        self.source = a.dtype
        return a.astype(self.dtype)

    def backward(self, g):
        return g.astype(self.source)
