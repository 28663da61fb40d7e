"""The array-module shim: the one door between minigrad and NumPy / CuPy.

Every other module asks this one which array library holds an array
(:func:`get_array_module`), where an array lives (:func:`device_of`), and how to
move it (:func:`to_device`, :func:`asnumpy`).  CuPy is optional: it is imported
lazily, the first time a GPU is asked for, and nothing else in minigrad imports it.

Device names are the strings ``"cpu"`` and ``"cuda"`` (``"cuda:0"`` is accepted
and means ``"cuda"``; minigrad uses one GPU).

Subnormal numbers.  A float32 value below ``numpy.finfo(float32).tiny``
(≈ 1.18e-38) in magnitude is *subnormal*.  NumPy computes and keeps
subnormals; CUDA kernels may flush them to zero (sigmoid(-100) in float32:
3.78e-44 on the CPU, 0 on an H200).  minigrad promises the same result on
every device up to an absolute error of ``tiny`` at such values, not the
subnormal digits themselves; float64 (tiny ≈ 2.2e-308) is not flushed.
Where a result must not be flushed, compute it in float64 (or in log space:
``log_softmax`` instead of ``log(softmax)``).
"""
from __future__ import annotations

import numbers

import numpy as np

_cupy = None          # the cupy module once imported successfully
_cupy_tried = False   # whether the import was attempted
_cuda_usable = None   # cached answer of cuda_is_available()


def _import_cupy():
    """Import CuPy once; return the module or None when it is not installed."""
    global _cupy, _cupy_tried
    if not _cupy_tried:
        _cupy_tried = True
        try:
            import cupy  # noqa: PLC0415  (lazy on purpose)
            _cupy = cupy
        except Exception:  # ImportError, or a broken CUDA install
            _cupy = None
    return _cupy


def cuda_is_available() -> bool:
    """True when CuPy imports *and* a GPU can allocate memory.

    CuPy installs and imports on machines without a GPU or driver; it fails only
    at the first allocation.  So this function allocates a small array and
    reports False on any error.  It never raises.
    """
    global _cuda_usable
    if _cuda_usable is None:
        cp = _import_cupy()
        if cp is None:
            _cuda_usable = False
        else:
            try:
                cp.cuda.runtime.getDeviceCount()
                (cp.arange(2) + 1).sum().item()
                _cuda_usable = True
            except Exception:
                _cuda_usable = False
    return _cuda_usable


def normalize_device(device) -> str:
    """Return ``"cpu"`` or ``"cuda"`` for a device name; raise ValueError otherwise."""
    if device is None:
        return "cpu"
    name = str(device)
    if name == "cpu":
        return "cpu"
    if name == "cuda" or name.startswith("cuda:"):
        return "cuda"
    raise ValueError(f"unknown device {device!r}: expected 'cpu' or 'cuda'")


def array_module(device: str):
    """The array module (numpy or cupy) that holds arrays on ``device``.

    Raises RuntimeError for ``"cuda"`` when no GPU is usable.
    """
    if normalize_device(device) == "cpu":
        return np
    # BEGIN SOLUTION ch09.1
    if not cuda_is_available():
        raise RuntimeError("device 'cuda' requested but no usable GPU was found "
                           "(CuPy not installed, or no GPU/driver); use device='cpu'")
    return _cupy
    # END SOLUTION


def is_cupy_array(x) -> bool:
    """True when ``x`` is a CuPy ndarray (False without importing CuPy)."""
    return _cupy is not None and isinstance(x, _cupy.ndarray)


# The dtypes of minigrad's fused GPU kernels (optimizer updates, GELU, losses).
FUSED_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def is_array(x) -> bool:
    """True when ``x`` is a NumPy or a CuPy ndarray."""
    return isinstance(x, np.ndarray) or is_cupy_array(x)


def get_array_module(x):
    """numpy or cupy, whichever holds the array ``x`` (numpy for anything else)."""
    if _cupy is not None and isinstance(x, _cupy.ndarray):
        return _cupy
    return np


def device_of(x) -> str:
    """``"cuda"`` for a CuPy array, ``"cpu"`` otherwise."""
    return "cuda" if is_cupy_array(x) else "cpu"


def asnumpy(x) -> np.ndarray:
    """Return a NumPy array: CuPy arrays are copied to the host, others converted."""
    if is_cupy_array(x):
        return _cupy.asnumpy(x)
    return np.asarray(x)


def to_device(x, device: str):
    """Return the array ``x`` on ``device`` (no copy when it is already there)."""
    device = normalize_device(device)
    if device == "cpu":
        return asnumpy(x)
    xp = array_module("cuda")
    return xp.asarray(x)


def as_array(x, dtype=None):
    """``x`` as an array where it already lives: a CuPy array stays on its GPU
    (``numpy.asarray`` refuses CuPy arrays: implicit conversion is not
    allowed), anything else becomes a NumPy array.  ``dtype`` casts (no copy
    when it already matches)."""
    if is_cupy_array(x):
        return x if dtype is None else x.astype(dtype, copy=False)
    return np.asarray(x, dtype=dtype)


def opmath_dtype(dtype):
    """The dtype to compute in, and keep sums and state in, for arrays of
    ``dtype``: float32 for float16 and bfloat16 (ml_dtypes), else ``dtype``
    itself.  float16 ends at 65,504 and has 11 bits: a sum of 70,000 values,
    a count, or Adam's ``eps = 1e-8`` do not survive in it.  PyTorch's "opmath"
    type is the same idea."""
    found = _OPMATH.get(dtype)
    if found is None:                     # once per dtype: dtype.name is slow
        found = np.dtype(dtype)
        low = (found.kind == "f" and found.itemsize < 4) or found.name == "bfloat16"
        found = _OPMATH[dtype] = np.dtype(np.float32) if low else found
    return found


_OPMATH = {}      # dtype -> opmath_dtype(dtype), filled on first use
_FLOAT64 = np.dtype(np.float64)


_bfloat16_problem = {}   # array module name -> None (bfloat16 works) or why not


def bfloat16_problem(xp):
    """None when the array module ``xp`` computes in bfloat16, else the reason.

    bfloat16 has no NumPy dtype of its own: ``ml_dtypes`` provides it, and
    NumPy arrays of it work on the CPU.  CuPy 14 adds bfloat16 loops to its
    ufuncs (add, subtract, multiply, isfinite, min/max, ``astype``) when
    ``ml_dtypes`` is installed and NumPy is 2.1.2 or newer; older CuPy,
    NumPy or a CUDA runtime before 12.2 lack them.  So the answer is a
    probe, made once per module: a small array cast to bfloat16, added,
    subtracted and cast back, as a bfloat16 accumulation buffer does.
    """
    name = xp.__name__
    if name not in _bfloat16_problem:
        try:
            import ml_dtypes  # noqa: PLC0415
            bf16 = np.dtype(ml_dtypes.bfloat16)
            a = xp.arange(3, dtype=np.float32).astype(bf16)
            back = ((a + a) - a).astype(np.float32)
            ok = bool(xp.isfinite(a).all()) and asnumpy(back).tolist() == [0.0, 1.0, 2.0]
            _bfloat16_problem[name] = None if ok else "bfloat16 arithmetic gave wrong values"
        except Exception as e:      # ImportError, or CuPy without bfloat16 loops
            _bfloat16_problem[name] = f"{type(e).__name__}: {e}"
    return _bfloat16_problem[name]


def count_as(count, array):
    """``count`` (an item total, a number of micro-batches) as a NumPy scalar to
    divide ``array`` by: float64 for float64 arrays, float32 for every other.

    ``float16_array /= 80000`` casts the Python number to float16 first, where
    it is inf (float16 ends at 65,504), and the mean becomes 0; a float32
    scalar makes NumPy and CuPy divide in float32 and round the quotient once.
    For float32 arrays nothing changes (a float32 division, bit for bit).
    """
    dtype = np.float64 if array.dtype == _FLOAT64 else np.float32
    if _cupy is not None and isinstance(count, _cupy.ndarray):    # computed on the GPU
        return count.astype(dtype)
    return dtype(count)


def scatter_add(target, indices, values) -> None:
    """``target[indices] += values`` where repeated indices add up, in place.

    NumPy's ``np.add.at`` on the CPU; ``cupy.add.at`` on the GPU.  The
    backward of indexing (``t[idx]``) and of :class:`minigrad.nn.Embedding`
    goes through here.

    Reproducibility: on the GPU the adds are *atomic*, so the order in which
    the values landing on one repeated index are summed changes from run to
    run; float addition is not associative, so a float32 (or float64)
    gradient row that receives several values can differ in its last bits
    between two identical runs (float32: a few units of 1e-7 relative).  What
    is bitwise reproducible: every CPU run (``np.add.at`` adds in index
    order), GPU scatter-adds where no index repeats (each slot receives one
    value), and integer dtypes (integer addition is associative).  Tests and
    ``verify`` compare GPU results with tolerances for this reason.
    """
    if is_cupy_array(target):
        check_index_bounds(indices, target.shape)     # CuPy wraps; NumPy raises
        _cupy.add.at(target, indices, values)        # cupyx.scatter_add: deprecated
    else:
        np.add.at(target, indices, values)


def scatter_reduce_at(op: str, target, indices, values) -> None:
    """``target[indices] = op(target[indices], values)`` in place, a repeated
    index applying ``op`` once per occurrence; ``op`` is ``"multiply"``,
    ``"maximum"`` or ``"minimum"`` (:func:`scatter_add` for ``"add"``).

    NumPy's ``np.<op>.at``; on the GPU ``cupy.maximum.at``/``cupy.minimum.at``,
    and the product on the host (CuPy has no ``multiply.at``).
    """
    if not is_cupy_array(target):
        getattr(np, op).at(target, indices, values)
        return
    check_index_bounds(indices, target.shape)
    if op == "multiply":
        host = asnumpy(target)
        np.multiply.at(host, tuple(asnumpy(i) if is_cupy_array(i) else i for i in indices),
                       asnumpy(values))
        target[...] = _cupy.asarray(host)
    else:
        getattr(_cupy, op).at(target, indices, values)


def check_index_bounds(index, shape) -> None:
    """Raise IndexError, as NumPy does, when an integer in ``index`` is out of
    bounds for ``shape``.

    CuPy does not check: an out-of-bounds integer index wraps around (modulo
    the axis size) and reads or adds into another element, silently.  The GPU
    paths of indexing call this first (one reduction and one host sync per
    integer array); NumPy checks by itself.

    Args:
        index: what ``a[index]`` takes: an int, slice, None, Ellipsis, an
            integer or boolean array (NumPy or CuPy), or a tuple of these.
        shape: the shape of the array being indexed.

    Raises:
        IndexError: "index 7 is out of bounds for axis 0 with size 3"
            (NumPy's words), or too many indices.
    """
    parts = index if isinstance(index, tuple) else (index,)
    consumed = [1 if p is not None and p is not Ellipsis and not _is_bool_array(p)
                else (p.ndim if _is_bool_array(p) else 0) for p in parts]
    if Ellipsis in [p for p in parts if not is_array(p)]:
        at = next(i for i, p in enumerate(parts) if not is_array(p) and p is Ellipsis)
        consumed[at] = len(shape) - sum(consumed)
    if sum(consumed) > len(shape):
        raise IndexError(f"too many indices for array: array is {len(shape)}-dimensional, "
                         f"but {sum(consumed)} were indexed")
    axis = 0
    for part, n in zip(parts, consumed):
        if not _is_bool_array(part) and (is_array(part) or isinstance(part, numbers.Integral)):
            size = shape[axis]
            xp = get_array_module(part) if is_array(part) else np
            bad = xp.asarray(part)
            bad = bad[(bad < -size) | (bad >= size)]
            if bad.size:
                raise IndexError(f"index {int(bad.reshape(-1)[0])} is out of bounds for axis "
                                 f"{axis} with size {size}")
        axis += n


def all_finite(arrays) -> bool:
    """True when every entry of every array in ``arrays`` is finite (no inf, no nan).

    Each array's min and max carry any inf or nan (a nan makes both nan), so
    nothing array-sized is allocated (``isfinite(a)`` would be a boolean array
    as large as ``a``), and the answer comes to the host once for all the
    arrays, not once per array: on the GPU each read waits for the device.
    The arrays share one device.
    """
    arrays = [a for a in arrays if a.size]
    if not arrays:
        return True
    xp = get_array_module(arrays[0])
    extremes = xp.stack([e for a in arrays for e in (a.min(), a.max())])
    return bool(xp.isfinite(extremes).all())


def _is_bool_array(part) -> bool:
    return is_array(part) and part.dtype == np.bool_


KERNELS = {}    # name -> Kernel: every fused GPU kernel minigrad declares
_compiled = {}  # name -> cupy.ElementwiseKernel, built on first use


class Kernel:
    """A fused GPU kernel, declared as data by :func:`elementwise_kernel`.

    Calling it runs a ``cupy.ElementwiseKernel`` built from these fields the
    first time (``kernel(g, lr, p)``, CuPy's calling convention).  Because the
    fields are plain data, ``tools/check_kernels.py`` can read every kernel
    minigrad declares (:data:`KERNELS`) and compile it with NVRTC on a
    machine without a GPU.

    Attributes:
        name: the kernel's name (``minigrad_<name>`` in a GPU profile).
        in_params, out_params, operation: CuPy's ``ElementwiseKernel`` arguments.
        types: for each type letter of the parameter lists, the dtypes
            minigrad calls the kernel with (``{"T": FUSED_DTYPES}``).
        scalars: the input parameters minigrad passes as Python numbers (the
            others are arrays).
    """

    def __init__(self, name, in_params, out_params, operation, types, scalars):
        self.name, self.in_params, self.out_params = name, in_params, out_params
        self.operation, self.scalars = operation, tuple(scalars)
        self.types = {letter: tuple(np.dtype(d) for d in dtypes)
                      for letter, dtypes in types.items()}

    def __call__(self, *args):
        kernel = _compiled.get(self.name)
        if kernel is None:
            cp = array_module("cuda")
            kernel = _compiled[self.name] = cp.ElementwiseKernel(
                self.in_params, self.out_params, self.operation, f"minigrad_{self.name}")
        return kernel(*args)

    def __repr__(self):
        return f"Kernel({self.name!r}, {self.in_params!r}, {self.out_params!r})"


def elementwise_kernel(name: str, in_params: str, out_params: str, operation: str, *,
                       types=None, scalars=()) -> Kernel:
    """Declare a fused GPU kernel (a ``cupy.ElementwiseKernel``); call it to run it.

    One kernel runs a whole chain of elementwise operations in one pass over
    memory, with no temporary array between the steps (``p -= lr * g`` in
    CuPy otherwise launches two kernels and allocates ``lr * g``).  The
    arguments are CuPy's: typed parameter lists such as ``"T g, T lr"``
    (``T`` takes the dtype of the arrays passed; a Python number passed for a
    ``T`` scalar is cast to it) and ``"T p"``, and the CUDA C body run for
    every element.  An output passed in as an existing array is updated in
    place, and its old value can be read in the body (``p -= lr * g``).

    Declare each kernel once, at module level: the declaration is recorded
    in :data:`KERNELS` (where ``tools/check_kernels.py`` compiles every
    kernel for every dtype in ``types``).  Nothing is compiled, and CuPy is
    not imported, until the returned :class:`Kernel` is first called.

    Args:
        types: dtypes per type letter, ``{"T": FUSED_DTYPES}`` by default.
        scalars: names of the input parameters passed as Python numbers.

    Raises:
        ValueError: ``name`` is already declared with another definition.
        RuntimeError: (when called) no GPU is usable.
    """
    kernel = Kernel(name, in_params, out_params, operation,
                    {"T": FUSED_DTYPES} if types is None else types, scalars)
    declared = KERNELS.setdefault(name, kernel)
    if vars(declared) != vars(kernel):
        raise ValueError(f"elementwise_kernel: a kernel named {name!r} is already declared "
                         "with another definition")
    return declared


def synchronize(device: str = "cuda") -> None:
    """Wait for queued GPU work to finish (no-op on the CPU); use before timing."""
    if normalize_device(device) == "cuda" and cuda_is_available():
        _cupy.cuda.get_current_stream().synchronize()


def gpu_memory_stats() -> dict:
    """CuPy memory-pool statistics in bytes: ``used``, ``total`` (held by the pool).

    Returns zeros when no GPU is usable.
    """
    if not cuda_is_available():
        return {"used": 0, "total": 0}
    pool = _cupy.get_default_memory_pool()
    return {"used": int(pool.used_bytes()), "total": int(pool.total_bytes())}


def gpu_peak_hook():
    """A CuPy memory hook that records the pool's highest ``used`` bytes.

    Use it as a context manager (CuPy registers it for the current thread)::

        hook = gpu_peak_hook()
        with hook:
            ...              # CuPy work
        hook.peak_used       # max of pool.used_bytes() seen, in bytes

    ``peak_used`` starts at the bytes in use when the hook is made and is
    updated after every allocation from CuPy's default memory pool on this
    thread (allocations are where a peak can happen).  Memory taken outside
    the pool (cuBLAS workspaces, compiled kernels) is not seen.

    Raises RuntimeError when no GPU is usable.
    """
    cp = array_module("cuda")
    pool = cp.get_default_memory_pool()

    class _PeakHook(cp.cuda.MemoryHook):
        def __init__(self):
            self.name = f"minigrad_peak_{id(self)}"   # hook names must be unique
            self.peak_used = int(pool.used_bytes())

        def malloc_postprocess(self, **kwargs):
            used = int(pool.used_bytes())
            if used > self.peak_used:
                self.peak_used = used

    return _PeakHook()


def check_same_device(name, tensors):
    """Raise RuntimeError naming ``name`` when ``tensors`` live on different
    devices (every Function's inputs and every comparison's operands pass
    here).  Free when CuPy was never imported: everything is on the CPU."""
    if _cupy is None:
        return
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        shown = ", ".join(f"{t.device} (shape {t.shape})" for t in tensors)
        raise RuntimeError(f"{name}: tensors are on different devices: {shown}; "
                           "move them to one device with .to(device)")
