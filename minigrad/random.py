"""Seeded random streams.

minigrad owns one NumPy ``Generator`` (initialization, ``randn``, dropout's
default masks) and a GPU stream for ``randn``/``rand`` on the GPU: value i
is a pure function of (seed, i), computed on the device by the counter-based
hash below (:class:`CounterStream`), so its whole state is one integer that
:func:`get_rng_state` can save, and a draw launches a few elementwise kernels
in the requested precision.
:func:`manual_seed` resets every stream, so a notebook can always start over.

Dropout draws its masks from a third source: a *counter-based* hash
(:func:`hash_uniform`).  A uniform number there is a pure function of integer
keys (seed, counter, ...), computed with the same uint64 arithmetic by NumPy
and CuPy, so a mask is identical on CPU and GPU, costs no stored state, and
can be drawn again at will (:func:`get_rng_state` / :func:`set_rng_state`).
Functions that draw random numbers also accept an explicit
``numpy.random.Generator`` through a ``generator=`` argument.
"""
from __future__ import annotations

import threading

import numpy as np

from . import backend

_seed = 0
_cpu = np.random.default_rng(_seed)
_gpu_offset = 0      # GPU values drawn since manual_seed (the GPU stream's whole state)
_offset = 0          # counter of the hash stream: values drawn since manual_seed
_layer_ids = 0       # per-example dropout layers made since manual_seed
_STREAM_GPU = 0x5EED_C0DA        # key that separates the GPU stream's seeds


def manual_seed(seed: int) -> None:
    """Reset minigrad's random streams (CPU and GPU) to ``seed``.

    Raises TypeError unless ``seed`` is a non-negative int.
    """
    global _seed, _cpu, _gpu_offset, _offset, _layer_ids
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0:
        raise TypeError(f"manual_seed: seed must be a non-negative int, got {seed!r}")
    _seed = int(seed)
    _cpu = np.random.default_rng(_seed)
    _gpu_offset = 0
    _offset = 0
    _layer_ids = 0


def initial_seed() -> int:
    """The seed last given to :func:`manual_seed` (0 at import)."""
    return _seed


def default_generator() -> np.random.Generator:
    """The CPU stream that functions use when no generator is given."""
    return _cpu


class CounterStream:
    """Normal and uniform draws from the counter-based hash, on any array module.

    Value i of the stream is ``hash_uniform(seed, stream, i, j)`` (j = 0, 1):
    ``random`` returns the first uniform, ``standard_normal`` combines both by
    Box-Muller, z = sqrt(-2 ln(1 - u0)) cos(2 pi u1) (Box & Muller 1958).
    Nothing is stored but the counter, so no generator object (CuPy's
    ``default_rng`` holds a cuRAND state per thread: megabytes on a large GPU)
    is built per draw, and saving the stream is saving one integer.  float32
    and float16 draws are computed in float32 from 24 random bits, float64
    draws in float64 from 53.

    The methods mirror ``numpy.random.Generator``'s ``random(size, dtype)`` and
    ``standard_normal(size, dtype)``.
    """

    def __init__(self, xp):
        self.xp = xp

    def random(self, size, dtype=np.float64):
        return _counter_uniform(self.xp, _take_gpu_counters(size, self.xp), 0, dtype)

    def standard_normal(self, size, dtype=np.float64):
        xp, counters = self.xp, _take_gpu_counters(size, self.xp)
        u0 = _counter_uniform(xp, counters, 0, dtype)
        u1 = _counter_uniform(xp, counters, 1, dtype)
        work = u0.dtype.type
        return xp.sqrt(work(-2) * xp.log1p(-u0)) * xp.cos(work(2 * np.pi) * u1)


def _take_gpu_counters(size, xp):
    """The next ``prod(size)`` counters of the GPU stream, as a uint64 array of shape ``size``."""
    global _gpu_offset
    shape = (size,) if isinstance(size, int) else tuple(size)
    n = 1
    for s in shape:
        n *= int(s)
    counters = xp.arange(_gpu_offset, _gpu_offset + n, dtype=xp.uint64).reshape(shape)
    _gpu_offset += n
    return counters


def _counter_uniform(xp, counters, j, dtype):
    """Uniforms in [0, 1): 53 bits in float64, 24 bits in float32 (for float32 and float16)."""
    h = hash_keys(xp, _seed, _STREAM_GPU, counters, j)
    if np.dtype(dtype) == np.float64:
        return (h >> xp.uint64(11)).astype(xp.float64) * (2.0 ** -53)
    return (h >> xp.uint64(40)).astype(xp.float32) * np.float32(2.0 ** -24)


def gpu_generator():
    """The GPU stream (a :class:`CounterStream` over CuPy)."""
    return CounterStream(backend.array_module("cuda"))


def get_generator(device="cpu", generator=None):
    """The generator to draw with: ``generator`` if given, else the device's stream."""
    if generator is not None:
        return generator
    return _cpu if backend.normalize_device(device) == "cpu" else gpu_generator()


# ----------------------------------------------------------------------------
# Counter-based hash stream (dropout masks)
# ----------------------------------------------------------------------------

_GOLDEN = 0x9E3779B97F4A7C15     # 2**64 / golden ratio, splitmix64's increment
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_STREAM_DROPOUT = 0x5EED_D50      # key that separates the global dropout stream


def splitmix64(x):
    """The splitmix64 finalizer on a uint64 array (Steele, Lea & Flood, *Fast
    splittable pseudorandom number generators*, OOPSLA 2014).

    A bijection of 64-bit integers in which every input bit changes about half
    the output bits.  Multiplication wraps modulo 2**64, identically in NumPy
    and CuPy.  Returns a new uint64 array of the same shape and module.
    """
    xp = backend.get_array_module(x)
    u = xp.uint64
    with np.errstate(over="ignore"):     # wrapping modulo 2**64 is the point
        z = x.astype(u) + u(_GOLDEN)
        z = (z ^ (z >> u(30))) * u(_MIX1)
        z = (z ^ (z >> u(27))) * u(_MIX2)
        return xp.asarray(z ^ (z >> u(31)))


def hash_keys(xp, *keys):
    """Fold integer keys (numbers or integer arrays, broadcast together) into one
    uint64 array: h = splitmix64(... splitmix64(splitmix64(k0) ^ k1) ... ^ kn)."""
    h = None
    for k in keys:
        k = xp.asarray(k).astype(xp.uint64)
        h = splitmix64(k if h is None else h ^ k)
    return h


def hash_uniform(xp, *keys, dtype=np.float64):
    """Uniform numbers in [0, 1), a pure function of the integer ``keys``.

    The top 53 bits of :func:`hash_keys` scaled by 2**-53 (every value is an
    exact float64 multiple of 2**-53).  Same keys, same numbers, on any device.
    """
    h = hash_keys(xp, *keys)
    return ((h >> xp.uint64(11)).astype(xp.float64) * (2.0 ** -53)).astype(dtype)


def global_hash_uniform(shape, device="cpu"):
    """Draw ``shape`` uniforms from the global hash stream and advance its counter.

    Value i is ``hash_uniform(seed, stream, offset + i)``; the counter
    ``offset`` advances by the number of values drawn and is reset by
    :func:`manual_seed`.
    """
    global _offset
    xp = backend.array_module(device)
    n = 1
    for s in shape:
        n *= int(s)
    counters = xp.arange(_offset, _offset + n, dtype=xp.uint64).reshape(shape)
    _offset += n
    return hash_uniform(xp, _seed, _STREAM_DROPOUT, counters)


def next_layer_id() -> int:
    """A fresh id for a layer that draws per-example masks: 0, 1, 2, ... in
    construction order since the last :func:`manual_seed`."""
    global _layer_ids
    _layer_ids += 1
    return _layer_ids - 1


def get_rng_state() -> dict:
    """Everything a later draw depends on, on every device: the seed, the NumPy
    generator's state, the hash stream's counter and the GPU stream's draw
    counter (a dict; pass it to :func:`set_rng_state`).

    Gradient checkpointing saves it before a forward pass and restores it before
    the recomputation, so dropout and ``randn`` (CPU or GPU) draw the same
    numbers twice.
    """
    return {"seed": _seed, "numpy": _cpu.bit_generator.state, "offset": _offset,
            "gpu_offset": _gpu_offset}


def set_rng_state(state: dict) -> None:
    """Restore a state returned by :func:`get_rng_state`.

    Raises KeyError naming a missing entry (``gpu_offset`` may be missing,
    from a state saved before it existed; the GPU stream is then left as is).
    """
    global _seed, _cpu, _offset, _gpu_offset
    for key in ("seed", "numpy", "offset"):
        if key not in state:
            raise KeyError(f"set_rng_state: the state has no {key!r} entry; expected a "
                           f"dict from get_rng_state()")
    _seed = int(state["seed"])
    _cpu = np.random.default_rng()
    _cpu.bit_generator.state = state["numpy"]
    _offset = int(state["offset"])
    if "gpu_offset" in state:
        _gpu_offset = int(state["gpu_offset"])


# ----------------------------------------------------------------------------
# Per-example dropout contexts (the keys a forward pass draws its masks with)
# ----------------------------------------------------------------------------
# The stack lives here, below nn/, so that gradient checkpointing can save the
# contexts of a forward pass and replay them in its recomputation.

_contexts = threading.local()


def dropout_contexts() -> list:
    """This thread's stack of ``(step, example_index)`` entries (innermost last);
    ``minigrad.nn.dropout_context`` pushes and pops it."""
    stack = getattr(_contexts, "stack", None)
    if stack is None:
        stack = _contexts.stack = []
    return stack


def set_dropout_contexts(stack: list) -> list:
    """Make the list ``stack`` this thread's stack (itself, not a copy, so that
    putting the old one back restores the very object open ``with`` blocks
    hold); returns the old one."""
    old = dropout_contexts()
    _contexts.stack = stack
    return old
