"""Accumulation buffers: memory and time of a window by buffer dtype, against float32.

An MLP 256 → 1024 → 1024 → 10 (1.3 M float32 parameters) trains with SGD
through ``GradientAccumulator(optimizer, k=8, dtype=..., compensated=...)``,
micro-batches of 32.  For each buffer we measure

* the buffer's bytes while a window is open (``accumulator.buffer.nbytes``;
  the plain accumulator sums in ``.grad``, float32: 4 bytes per parameter);
* the median CPU time of one window (8 forward/backward passes, the buffer's
  additions, one update), all variants timed in turn, as a ratio to the
  plain float32 accumulator.

What to expect: float16 and bfloat16 halve the buffer; Kahan doubles it
back (a float16 sum + a float16 compensation = 4 bytes per parameter, the
same as float32).  Time: the extra pass over the gradient per micro-batch
(a cast and an addition; Kahan: four operations).  NumPy has no float16
arithmetic units: it converts every element to float32 and back, so on the
CPU a float16 buffer costs several times the plain window and Kahan in
float16 an order of magnitude; ml_dtypes' bfloat16 is faster.  These are
CPU numbers; on a GPU half-precision arithmetic is native.

Run:  python benchmarks/bench_precision.py [--quick]
"""
from __future__ import annotations

import sys

try:
    from . import common
except ImportError:      # run as a script: benchmarks/ is on sys.path
    import common

import minigrad  # noqa: E402
from minigrad import nn, optim  # noqa: E402
from minigrad.nn import functional as F  # noqa: E402

K = 8
MICRO = 32
VARIANTS = {"plain (float32 .grad)": {}, "float32": {"dtype": "float32"},
            "float16": {"dtype": "float16"}, "bfloat16": {"dtype": "bfloat16"},
            "float16 + Kahan": {"dtype": "float16", "compensated": True}}


def make_accumulator(options):
    minigrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                          nn.Linear(1024, 10))
    return model, optim.GradientAccumulator(optim.SGD(model.parameters(), lr=0.01), K,
                                            **options)


def window(model, acc, batches):
    for x, y in batches:
        acc.backward(F.cross_entropy(model(x), y), num_items=MICRO)
        acc.step()


def open_window_bytes(model, acc, batches):
    """Bytes holding the pending sum after one micro-batch (buffer or .grad)."""
    (x, y), = batches[:1]
    acc.backward(F.cross_entropy(model(x), y), num_items=MICRO)
    acc.step()
    held = acc.buffer.nbytes if acc.buffer is not None else minigrad.memory.grad_bytes(model)
    acc.flush()
    return held


def run(quick: bool = False) -> dict:
    limits = common.one_blas_thread()
    try:
        rng = common.seed_all(0)
        batches = [(minigrad.tensor(rng.standard_normal((MICRO, 256), dtype="float32")),
                    minigrad.tensor(rng.integers(0, 10, MICRO))) for _ in range(K)]
        runs = {name: make_accumulator(options) for name, options in VARIANTS.items()}
        held = {name: open_window_bytes(*runs[name], batches) for name in VARIANTS}
        times = common.interleaved_median(
            {name: (lambda r=runs[name]: window(*r, batches)) for name in VARIANTS},
            repeats=3 if quick else 9)
    finally:
        if limits is not None:
            limits.unregister()
    n = sum(p.numel() for p in runs["float32"][0].parameters())
    base_t = times["plain (float32 .grad)"]
    table, rows = {}, []
    for name in VARIANTS:
        table[name] = {"buffer_bytes": held[name], "bytes_per_param": held[name] / n,
                       "window_s": times[name], "time_vs_plain": times[name] / base_t}
        rows.append([name, common.mib(held[name]), held[name] / n, 1e3 * times[name],
                     times[name] / base_t])
    common.print_table(f"Accumulation buffers: {n} parameters, k = {K}, micro-batch {MICRO}",
                       ["buffer", "MiB", "bytes/param", "CPU ms / window", "time / plain"],
                       rows)
    return {"buffers": table}


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
