"""Memory accounting: how many bytes a block of code needs at its peak.

Training memory has two parts.  The *resident* part lives from one step to
the next: parameters, their gradients, the optimizer's state.  The *transient*
part lives inside one step: the activations that forward keeps for backward,
and the gradients flowing back.  Gradient accumulation bounds the transient
part by the micro-batch; checkpointing bounds it by a segment of layers.
:func:`peak` measures a block's peak; :func:`bytes_of` and :func:`breakdown`
count the resident part.

Measuring on the CPU
    :mod:`tracemalloc` (Python's allocation tracer).  NumPy (≥ 1.13) reports
    the data buffers of its arrays to it, so every array allocated in the
    block is seen, together with Python objects.  Only memory allocated
    while tracing is counted; tracing slows Python code down (roughly 1.5-3×
    for code that allocates many small objects), so time a block and measure
    its memory in separate runs.

Measuring on the GPU
    CuPy's default memory pool, through :mod:`minigrad.backend`: the bytes
    in use by live CuPy arrays (each rounded up to the pool's 512-byte
    blocks).  The peak is tracked by a CuPy memory hook that reads the pool
    after every allocation, so it is exact for allocations made from this
    thread through the default pool; memory that CuPy or a library takes
    outside the pool (cuBLAS workspaces, kernels) is not counted.
"""
from __future__ import annotations

import tracemalloc

from . import backend
from .tensor import Tensor

# The measurements now open on the CPU, innermost last.  tracemalloc keeps one
# global peak; a nested block resets it, so before any reset the peak so far is
# folded into every open measurement (see _fold_cpu_peak).
_open_cpu = []
_started_tracing = False


class peak:  # noqa: N801 (a context manager used like a function, as torch.no_grad)
    """Measure the bytes allocated by a block of code, at its peak and at its end.

    Usage::

        with minigrad.memory.peak() as m:
            loss = model(x).sum()
            loss.backward()
        print(m.peak_bytes, m.current_bytes)

    Args:
        device: ``"cpu"`` (tracemalloc) or ``"cuda"`` (CuPy's memory pool).

    Attributes (ints, bytes):
        start_bytes: bytes in use when the block began (on the CPU, the bytes
            traced so far: 0 for an outermost block, since tracing starts
            there; on the GPU, all bytes in the pool's use).
        peak_bytes: the highest number of bytes in use at any moment of the
            block, *minus* ``start_bytes``: what the block needed on top of
            what already existed.  Never negative.
        current_bytes: bytes in use minus ``start_bytes``, read at the end of
            the block (live while it runs): what the block left allocated.
            Negative when the block freed more than it kept.

    Blocks can be nested; each reports its own peak.

    Raises:
        ValueError: unknown device name.
        RuntimeError: ``device="cuda"`` without a usable GPU.
    """

    def __init__(self, device: str = "cpu"):
        self.device = backend.normalize_device(device)
        if self.device == "cuda":
            backend.array_module("cuda")      # raises RuntimeError without a GPU
        self.start_bytes = 0
        self._peak_absolute = 0
        self._end_absolute = None
        self._gpu_hook = None

    # ------------------------------------------------------------- reading
    @property
    def peak_bytes(self) -> int:
        return max(self._peak_absolute_now() - self.start_bytes, 0)

    @property
    def current_bytes(self) -> int:
        end = self._end_absolute if self._end_absolute is not None else self._in_use()
        return end - self.start_bytes

    def _in_use(self) -> int:
        if self.device == "cuda":
            return backend.gpu_memory_stats()["used"]
        return tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0

    def _peak_absolute_now(self) -> int:
        if self._end_absolute is not None:           # block finished: frozen value
            return self._peak_absolute
        if self.device == "cuda":
            return max(self._peak_absolute, self._gpu_hook.peak_used)
        return max(self._peak_absolute, tracemalloc.get_traced_memory()[1])

    # ---------------------------------------------------------- the block
    def __enter__(self):
        if self.device == "cuda":
            backend.synchronize("cuda")
            self._gpu_hook = backend.gpu_peak_hook()
            self._gpu_hook.__enter__()
            self.start_bytes = self._peak_absolute = self._gpu_hook.peak_used
        else:
            _start_cpu(self)
        return self

    def __exit__(self, *exc):
        if self.device == "cuda":
            backend.synchronize("cuda")
            self._gpu_hook.__exit__(*exc)
            self._peak_absolute = max(self._peak_absolute, self._gpu_hook.peak_used)
            self._end_absolute = backend.gpu_memory_stats()["used"]
        else:
            _stop_cpu(self)
        return False

    def __repr__(self):
        return (f"<memory.peak device={self.device} peak_bytes={self.peak_bytes} "
                f"current_bytes={self.current_bytes}>")


def _fold_cpu_peak() -> None:
    """Record tracemalloc's peak so far into every open CPU measurement."""
    if tracemalloc.is_tracing():
        so_far = tracemalloc.get_traced_memory()[1]
        for m in _open_cpu:
            m._peak_absolute = max(m._peak_absolute, so_far)


def _start_cpu(m: peak) -> None:
    global _started_tracing
    if not _open_cpu and not tracemalloc.is_tracing():
        tracemalloc.start()
        _started_tracing = True
    _fold_cpu_peak()
    tracemalloc.reset_peak()
    m.start_bytes = m._peak_absolute = tracemalloc.get_traced_memory()[0]
    _open_cpu.append(m)


def _stop_cpu(m: peak) -> None:
    global _started_tracing
    _fold_cpu_peak()
    m._end_absolute = tracemalloc.get_traced_memory()[0]
    _open_cpu.remove(m)
    if not _open_cpu and _started_tracing:
        tracemalloc.stop()
        _started_tracing = False


# ----------------------------------------------------------------------------
# Counting the resident part
# ----------------------------------------------------------------------------

def bytes_of(obj) -> int:
    """Bytes held by the arrays in ``obj``, each array counted once.

    ``obj`` may be an array, a Tensor (its data only, not its ``.grad``), a
    Module (anything with ``parameters()``: its parameters' data), an
    optimizer (anything with a ``state`` dict: the arrays of its state), or a
    list / tuple / dict of these, searched recursively.  Numbers and other
    objects count 0.  An array object reached twice (a tied weight) is counted
    once; two different arrays viewing one buffer are not detected and are
    both counted.

    Returns:
        The total ``nbytes`` (an int).
    """
    seen = set()
    return _count(obj, seen)


def _count(obj, seen) -> int:
    if backend.is_array(obj):
        if id(obj) in seen:
            return 0
        seen.add(id(obj))
        return int(obj.nbytes)
    if isinstance(obj, Tensor):
        return _count(obj.data, seen)
    if isinstance(obj, dict):
        return sum(_count(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_count(v, seen) for v in obj)
    if callable(getattr(obj, "parameters", None)):
        return sum(_count(p, seen) for p in obj.parameters())
    state = getattr(obj, "state", None)
    if isinstance(state, dict):
        return _count(state, seen)
    return 0


def grad_bytes(params) -> int:
    """Bytes held by the ``.grad`` of each parameter (a Module or an iterable of Tensors).

    Parameters whose ``.grad`` is None count 0.
    """
    if callable(getattr(params, "parameters", None)):
        params = params.parameters()
    return bytes_of([p.grad for p in params if p.grad is not None])


def breakdown(model, optimizer=None) -> dict:
    """The resident memory of training, by kind, in bytes.

    Returns a dict with ``parameters`` (the model's parameter data),
    ``gradients`` (their ``.grad`` buffers, 0 before the first backward),
    ``optimizer_state`` (momentum, Adam's moments; 0 without an optimizer or
    before its first step) and ``total``.
    """
    parts = {
        "parameters": bytes_of(model),
        "gradients": grad_bytes(model),
        "optimizer_state": bytes_of(optimizer.state) if optimizer is not None and
        isinstance(getattr(optimizer, "state", None), dict) else 0,
    }
    parts["total"] = sum(parts.values())
    return parts


def format_bytes(n: int) -> str:
    """A human-readable size: ``format_bytes(3_500_000) == '3.34 MiB'``."""
    if abs(n) < 1024:
        return f"{n:.0f} B"
    value = n / 1024
    for unit in ("KiB", "MiB"):
        if abs(value) < 1024:
            return f"{value:.2f} {unit}"
        value /= 1024
    return f"{value:.2f} GiB"


__all__ = ["peak", "bytes_of", "grad_bytes", "breakdown", "format_bytes"]


# The planner (estimates before running) lives in its own file.
from .memory_planner import MemoryPlan, plan  # noqa: E402

__all__ += ["plan", "MemoryPlan"]
