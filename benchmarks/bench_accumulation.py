"""Gradient accumulation: peak memory and time per update against k, at a fixed effective batch.

An MLP 784-512-512-10 (float32, Adam) takes one update on an effective batch
of 1024 examples, cut into k micro-batches of 1024 / k, k in {1, 2, 4, 8, 16}.
For every k we measure

* the peak memory of a training run (tracemalloc), counted from before the
  model is built, so it includes the parameters, their gradients, Adam's two
  moments and the activations of one micro-batch;
* the median CPU time of one update (k forward/backward passes and one step),
  all k values timed in turn, repeat after repeat.

The memory floor: accumulated training at 8 × 128 peaks at ≤ 1.15 ×
the peak of one plain 128-example training step, i.e. accumulation costs no
memory beyond one micro-batch's activations.

Run:  python benchmarks/bench_accumulation.py [--quick]
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

WIDTHS = (784, 512, 512, 10)
EFFECTIVE_BATCH = 1024
STEPS = (1, 2, 4, 8, 16)
FLOOR = 1.15          # peak(8 x 128) / peak(one 128 step)


def make_model():
    layers = []
    for i, (a, b) in enumerate(zip(WIDTHS[:-1], WIDTHS[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(WIDTHS) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def make_data(rng, n=EFFECTIVE_BATCH):
    x = rng.standard_normal((n, WIDTHS[0]), dtype="float32")
    y = rng.integers(0, WIDTHS[-1], n)
    return x, y


def accumulated_update(model, accumulator, x, y, k):
    """One optimizer update from k micro-batches of len(x) / k examples."""
    size = len(x) // k
    for j in range(k):
        xb = minigrad.tensor(x[j * size:(j + 1) * size])
        yb = minigrad.tensor(y[j * size:(j + 1) * size])
        loss = F.cross_entropy(model(xb), yb)
        accumulator.backward(loss, num_items=size)
        del loss
        accumulator.step()


def plain_step(model, opt, x, y):
    """One ordinary training step on the whole of x."""
    loss = F.cross_entropy(model(minigrad.tensor(x)), minigrad.tensor(y))
    loss.backward()
    del loss
    opt.step()
    opt.zero_grad()


def training_peak(x, y, k=None, updates=2):
    """Peak bytes of building the model and taking ``updates`` updates.

    ``k=None``: plain steps on the whole of ``x``; else accumulated updates
    of k micro-batches.  Two updates, so that the second runs with every
    buffer (gradients, Adam's moments) already allocated.
    """
    def train():
        minigrad.manual_seed(0)
        model = make_model()
        opt = optim.Adam(model.parameters(), lr=1e-3)
        if k is None:
            for _ in range(updates):
                plain_step(model, opt, x, y)
        else:
            acc = optim.GradientAccumulator(opt, k)
            for _ in range(updates):
                accumulated_update(model, acc, x, y, k)
    return common.peak_bytes(train)


def timed_update(x, y, k):
    """A zero-argument callable taking one accumulated update (model built once)."""
    minigrad.manual_seed(0)
    model = make_model()
    opt = optim.Adam(model.parameters(), lr=1e-3)
    acc = optim.GradientAccumulator(opt, k)
    return lambda: accumulated_update(model, acc, x, y, k)


def run(quick: bool = False) -> dict:
    """Measure every k, print the table, return the numbers and the floor check."""
    limits = common.one_blas_thread()
    try:
        rng = common.seed_all(0)
        x, y = make_data(rng)
        minigrad.manual_seed(0)
        resident = minigrad.memory.breakdown(make_model())["parameters"]

        base_peak = training_peak(x[:128], y[:128])       # one plain 128-example step
        peaks = {k: training_peak(x, y, k) for k in STEPS}
        times = common.interleaved_median({k: timed_update(x, y, k) for k in STEPS},
                                          repeats=5 if quick else 15)
    finally:
        if limits is not None:
            limits.unregister()

    rows, table = [], {}
    for k in STEPS:
        table[k] = {"micro_batch": EFFECTIVE_BATCH // k, "peak_bytes": peaks[k],
                    "peak_vs_k1": peaks[k] / peaks[1], "update_s": times[k],
                    "time_vs_k1": times[k] / times[1]}
        rows.append([k, EFFECTIVE_BATCH // k, common.mib(peaks[k]), peaks[k] / peaks[1],
                     1e3 * times[k], times[k] / times[1]])
    rows.append(["plain", 128, common.mib(base_peak), base_peak / peaks[1], "-", "-"])
    common.print_table(
        f"Accumulation: MLP {'-'.join(map(str, WIDTHS))}, Adam, float32, effective batch "
        f"{EFFECTIVE_BATCH} (parameters {common.mib(resident):.2f} MiB)",
        ["k", "micro-batch", "peak MiB", "peak / k=1", "CPU ms / update", "time / k=1"], rows)

    ratio = peaks[8] / base_peak
    ok = ratio <= FLOOR
    print(f"floor: peak(8 x 128) / peak(one 128 step) = {ratio:.3f} <= {FLOOR}: "
          f"{'yes' if ok else 'NO'}")
    return {"steps": {str(k): v for k, v in table.items()},
            "plain_128_peak_bytes": base_peak,
            "parameter_bytes": resident,
            "floor_8x128": {"ratio": ratio, "floor": FLOOR, "ok": ok}}


if __name__ == "__main__":
    result = run(quick="--quick" in sys.argv[1:])
    sys.exit(0 if result["floor_8x128"]["ok"] else 1)
