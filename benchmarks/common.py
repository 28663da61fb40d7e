"""Shared pieces of the benchmarks: one BLAS thread, interleaved timing, peak memory, tables.

Timing rule: every comparison is a ratio of two medians measured side by side
in one run.  :func:`interleaved_median` runs the contenders in turn, repeat
after repeat (A B C A B C ...), so a slow patch of the machine (a frequency
change) hits all of them alike.  It reads the *CPU time* of the process
(user + system, :func:`time.process_time`) by default, not the wall clock:
every contender runs on one thread, so CPU time is the work done, and it does
not count the moments the process waits for a core while other jobs run on a
small shared machine (on 2 busy cores, wall-clock ratios moved by ±20 % from
run to run; CPU-time ratios by a few per cent).

Memory rule: peak memory is measured with :func:`minigrad.memory.peak`
(tracemalloc) in runs separate from the timed ones, since tracing slows
Python down.
"""
from __future__ import annotations

import gc
import os
import statistics
import sys
import time

# Run from a checkout without installing: the repository root holds minigrad/.
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")   # effective only before NumPy is first imported

import numpy as np  # noqa: E402

import minigrad  # noqa: E402


def one_blas_thread():
    """Limit NumPy's BLAS (and OpenMP) to one thread with threadpoolctl.

    Returns the limiter (call ``.unregister()`` to lift it) or None when
    threadpoolctl is not installed; the environment variables set on import
    of this module then do the work, if NumPy was not imported before.
    """
    try:
        from threadpoolctl import threadpool_limits  # noqa: PLC0415
    except ImportError:
        return None
    return threadpool_limits(limits=1)


def interleaved_median(contenders: dict, repeats: int, warmup: int = 1,
                       clock=time.process_time) -> dict:
    """Median seconds of each callable, run in turn ``repeats`` times.

    Args:
        contenders: ``{name: zero-argument callable}``.
        repeats: timed calls per contender (odd numbers give a true median).
        warmup: untimed calls per contender first (caches, BLAS start-up).
        clock: the clock read before and after each call: CPU time of the
            process by default (see the module docstring); pass
            ``time.perf_counter`` for wall-clock time.

    Returns:
        ``{name: median seconds}``.
    """
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, fn in contenders.items():
            gc.collect()                        # no collector pause inside a timing
            t0 = clock()
            fn()
            times[name].append(clock() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def paired_ratios(a, b, repeats: int, warmup: int = 1, clock=time.process_time) -> dict:
    """The median of the paired ratios time(a) / time(b), the two calls alternating.

    Each repeat times ``a()`` then ``b()`` (the order swapped every other
    repeat, so neither always runs first) and keeps the ratio of the pair:
    a slow patch of the machine that lasts a pair hits both sides of its
    ratio, so the median of the ratios is steadier than the ratio of the
    medians.  A full ``gc.collect()`` runs before every call, outside the timing.

    Returns:
        ``{"ratio": median of the ratios, "ratio_quartiles": (q1, q3),
        "median_s": (median seconds of a, of b), "repeats": repeats}``.
    """
    for _ in range(warmup):
        a()
        b()
    ta, tb = [], []
    for i in range(repeats):
        for fn, out in ((a, ta), (b, tb)) if i % 2 == 0 else ((b, tb), (a, ta)):
            gc.collect()
            t0 = clock()
            fn()
            out.append(clock() - t0)
    ratios = [x / y for x, y in zip(ta, tb)]
    q = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    return {"ratio": statistics.median(ratios), "ratio_quartiles": (q[0], q[2]),
            "median_s": (statistics.median(ta), statistics.median(tb)), "repeats": repeats}


def interleaved_medians_both_clocks(contenders: dict, repeats: int, warmup: int = 1,
                                    collect_each: bool = True) -> dict:
    """As :func:`interleaved_median`, reading the CPU time *and* the wall clock
    around every call.

    ``collect_each=True`` runs a full ``gc.collect()`` before every call, so
    no collector pause lands inside a timing; the collection also walks every
    object of the process and leaves the caches cold, which costs a
    Python-heavy call more than a NumPy-heavy one.  ``collect_each=False``
    is :mod:`timeit`'s method instead: the collector is disabled while the
    repeats run (one collection before them), and the calls run back to
    back, as the steps of a training loop do.

    Returns:
        ``{name: {"cpu": median CPU seconds, "wall": median wall seconds,
        "cpu_spread": (q1, q3) of the CPU seconds, "wall_spread": (q1, q3)}}``:
        the quartiles show the noise of the machine.
    """
    for fn in contenders.values():
        for _ in range(warmup):
            fn()
    cpu = {name: [] for name in contenders}
    wall = {name: [] for name in contenders}
    gc.collect()
    was_enabled = gc.isenabled()
    if not collect_each:
        gc.disable()
    try:
        for _ in range(repeats):
            for name, fn in contenders.items():
                if collect_each:
                    gc.collect()
                c0, w0 = time.process_time(), time.perf_counter()
                fn()
                w1, c1 = time.perf_counter(), time.process_time()
                cpu[name].append(c1 - c0)
                wall[name].append(w1 - w0)
    finally:
        if was_enabled:
            gc.enable()

    def quartiles(t):
        q = statistics.quantiles(t, n=4) if len(t) > 1 else [t[0]] * 3
        return (q[0], q[2])

    return {name: {"cpu": statistics.median(cpu[name]), "wall": statistics.median(wall[name]),
                   "cpu_spread": quartiles(cpu[name]), "wall_spread": quartiles(wall[name])}
            for name in contenders}


def peak_bytes(fn, repeats: int = 1) -> int:
    """The bytes ``fn()`` allocates at its peak (tracemalloc), the median of ``repeats``.

    Whatever ``fn`` builds inside (a model, an optimizer) is counted; what
    existed before the call is not.
    """
    peaks = []
    for _ in range(repeats):
        gc.collect()
        with minigrad.memory.peak() as m:
            fn()
        peaks.append(m.peak_bytes)
    return int(statistics.median(peaks))


def mib(n_bytes) -> float:
    return n_bytes / 2 ** 20


def print_table(title: str, headers: list, rows: list) -> None:
    """Print rows (lists of values) under headers, columns right-aligned.

    Floats are shown with 3 significant decimals, booleans as yes/NO.
    """
    def fmt(v):
        if isinstance(v, bool):
            return "yes" if v else "NO"
        if isinstance(v, float):
            return f"{v:.3f}" if abs(v) < 1000 else f"{v:.0f}"
        return str(v)

    cells = [[fmt(v) for v in row] for row in rows]
    widths = [max(len(str(h)), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]
    print(f"\n{title}")
    print("  ".join(str(h).rjust(w) for h, w in zip(headers, widths)))
    print("  ".join("-" * w for w in widths))
    for r in cells:
        print("  ".join(c.rjust(w) for c, w in zip(r, widths)))


def seed_all(seed: int = 0) -> np.random.Generator:
    """Seed minigrad and return a NumPy generator for the benchmark's data."""
    minigrad.manual_seed(seed)
    return np.random.default_rng(seed)
