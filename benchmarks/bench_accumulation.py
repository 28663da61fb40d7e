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

The parameter-dominated regime (:func:`parameter_regime`): an MLP
1024-1024-1024-10 (8.05 MiB of parameters, float32, SGD), where the
gradient buffer, not the activations, is what accumulation could double.
Rows: one step of micro-batch 1, a window of 16 × 1, one step of 512, a
window of 8 × 512, one step of 4096; each the peak above what existed before
the window (model and data built first).  Floors, with 2 % slack:

* 16 × 1 ≤ one micro-batch-1 step + the largest parameter's gradient bytes
  (backward hands each leaf its gradient as soon as it is final, so at most
  one weight's gradient is alive beside ``.grad``);
* 8 × 512 ≤ one 512 step + every parameter's gradient bytes (the ``.grad``
  buffer accumulation must keep: a plain step reaches its peak mid-backward,
  before most gradients exist, while a window holds ``.grad`` all along);
* against PyTorch, when installed: every row ≤ PyTorch's peak, 2 % slack (a graph keeps
  only the arrays some backward saved, as PyTorch's does; the difference left
  is the 16 KiB block of the SGD update and minigrad's Python objects);
* against the analytic minimum: one micro-batch-1 step ≤ the gradients' bytes,
  and 16 × 1 ≤ the gradients' bytes + the largest gradient (the activations
  of one example are a few KiB; the step's ``p -= lr * g`` runs in blocks,
  :mod:`minigrad.optim.updates`, so it adds no weight-sized temporary).

PyTorch (CPU) runs the same rows when installed.  Its CPU allocator is not
seen by tracemalloc, so its peaks come from ``torch.profiler`` with
``profile_memory=True``: the allocation and free records of its CPU
allocator, summed in time order.  tracemalloc also counts minigrad's Python
objects (a few KiB), so the two columns agree to that much.

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


# ------------------------------------------------ the parameter-dominated regime
BIG_WIDTHS = (1024, 1024, 1024, 10)
# (label, micro-batch, k): k = 1 is one plain step
BIG_ROWS = (("one step, micro-batch 1", 1, 1), ("16 x 1 accumulated", 1, 16),
            ("one step, micro-batch 512", 512, 1), ("8 x 512 accumulated", 512, 8),
            ("one step, micro-batch 4096", 4096, 1))
SLACK = 1.02


def _big_model():
    minigrad.manual_seed(0)
    return nn.Sequential(nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),
                         nn.Linear(1024, 10))


def _minigrad_window(model, opt, x, y, micro_batch, k):
    for j in range(k):
        rows = slice(j * micro_batch, (j + 1) * micro_batch)
        # Tensor(view) wraps the rows without a copy, as PyTorch's x[rows] below:
        # the data existed before the window in both.
        loss = F.cross_entropy(model(minigrad.Tensor(x[rows])), minigrad.Tensor(y[rows]))
        loss.backward()
        del loss
    opt.step()
    opt.zero_grad()


def minigrad_window_peak(x, y, micro_batch, k) -> int:
    """Peak bytes above the start of k micro-batch passes and one SGD step."""
    model = _big_model()
    opt = optim.SGD(model.parameters(), lr=0.01)
    return common.peak_bytes(lambda: _minigrad_window(model, opt, x, y, micro_batch, k))


def torch_window_peaks(x, y):
    """{label: peak bytes} of PyTorch's CPU allocator for each row, or None
    without PyTorch.  Read from the profiler's memory records (see the module
    docstring): every allocation adds, every free subtracts, the running
    maximum is the peak."""
    try:
        import torch  # noqa: PLC0415
        from torch.profiler import ProfilerActivity, profile  # noqa: PLC0415
    except ImportError:
        return None
    torch.set_num_threads(1)
    torch.manual_seed(0)
    nn_ = torch.nn
    model = nn_.Sequential(nn_.Linear(1024, 1024), nn_.ReLU(), nn_.Linear(1024, 1024),
                           nn_.ReLU(), nn_.Linear(1024, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def window(micro_batch, k):
        for j in range(k):
            rows = slice(j * micro_batch, (j + 1) * micro_batch)
            torch.nn.functional.cross_entropy(model(xt[rows]), yt[rows]).backward()
        opt.step()
        opt.zero_grad()

    window(1, 1)                      # first call: lazy initialisation outside the count
    peaks = {}
    for label, micro_batch, k in BIG_ROWS:
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            window(micro_batch, k)
        records = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
        in_use = peak = 0
        for e in sorted(records, key=lambda e: e.start_ns()):
            in_use += e.nbytes()
            peak = max(peak, in_use)
        peaks[label] = peak
    return peaks


def parameter_regime(quick: bool = False) -> dict:
    """Peaks of the rows of BIG_ROWS, minigrad and PyTorch, and the two floors."""
    rng = common.seed_all(0)
    x = rng.standard_normal((4096, BIG_WIDTHS[0]), dtype="float32")
    y = rng.integers(0, BIG_WIDTHS[-1], 4096)
    params = list(_big_model().parameters())
    largest = max(p.data.nbytes for p in params)
    all_grads = sum(p.data.nbytes for p in params)
    peaks = {label: minigrad_window_peak(x, y, mb, k) for label, mb, k in BIG_ROWS}
    torch_peaks = torch_window_peaks(x, y)

    one_step = {mb: peaks[label] for label, mb, k in BIG_ROWS if k == 1}
    rows = []
    for label, mb, k in BIG_ROWS:
        step = one_step[mb]
        theirs = torch_peaks[label] if torch_peaks else None
        rows.append([label, common.mib(peaks[label]), peaks[label] / step,
                     "-" if theirs is None else common.mib(theirs),
                     "-" if theirs is None else peaks[label] / theirs])
    common.print_table(
        f"Parameter-dominated regime: MLP {'-'.join(map(str, BIG_WIDTHS))}, SGD, float32 "
        f"(gradients {common.mib(all_grads):.2f} MiB, largest {common.mib(largest):.2f} MiB); "
        "peak above the start of the window",
        ["run", "minigrad MiB", "/ one step", "PyTorch CPU MiB", "minigrad / PyTorch"], rows)

    one, window = one_step[1], peaks["16 x 1 accumulated"]
    step512, window512 = one_step[512], peaks["8 x 512 accumulated"]
    floor_1 = {"ratio": window / one, "floor": round(SLACK * (one + largest) / one, 3),
               "ok": window <= SLACK * (one + largest)}
    floor_512 = {"ratio": window512 / step512,
                 "floor": round(SLACK * (step512 + all_grads) / step512, 3),
                 "ok": window512 <= SLACK * (step512 + all_grads)}
    # Against the analytic minimum (micro-batch 1: activations are a few KiB):
    # a step needs the gradients, a window the gradients + one weight's in flight.
    floor_step = {"ratio": one / all_grads, "floor": SLACK, "ok": one <= SLACK * all_grads}
    floor_window = {"ratio": window / (all_grads + largest), "floor": SLACK,
                    "ok": window <= SLACK * (all_grads + largest)}
    print(f"floor: peak(one step, micro-batch 1) = {one / all_grads:.3f} x the gradients' "
          f"bytes <= {SLACK}: {'yes' if floor_step['ok'] else 'NO'}")
    print(f"floor: peak(16 x 1) = {window / (all_grads + largest):.3f} x (gradients + largest "
          f"gradient) <= {SLACK}: {'yes' if floor_window['ok'] else 'NO'}")
    print(f"floor: peak(16 x 1) = {window / one:.3f} x one step <= (one step + largest "
          f"gradient) x {SLACK} = {floor_1['floor']:.3f} x: {'yes' if floor_1['ok'] else 'NO'}")
    print(f"floor: peak(8 x 512) = {window512 / step512:.3f} x one step <= (one step + all "
          f"gradients) x {SLACK} = {floor_512['floor']:.3f} x: "
          f"{'yes' if floor_512['ok'] else 'NO'}")
    floor_torch = None
    if torch_peaks:
        worst = max(peaks[label] / torch_peaks[label] for label, _, _ in BIG_ROWS)
        floor_torch = {"ratio": worst, "floor": SLACK, "ok": worst <= SLACK}
        print(f"floor: every row <= PyTorch's x {SLACK}: worst minigrad / PyTorch = "
              f"{worst:.3f}: {'yes' if floor_torch['ok'] else 'NO'}")
    return {"peaks_bytes": peaks, "torch_cpu_peaks_bytes": torch_peaks,
            "largest_gradient_bytes": largest, "gradient_bytes": all_grads,
            "floor_16x1": floor_1, "floor_8x512": floor_512,
            "floor_step_1_vs_gradients": floor_step, "floor_16x1_vs_gradients": floor_window,
            "floor_every_row_vs_pytorch": floor_torch}


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
            "floor_8x128": {"ratio": ratio, "floor": FLOOR, "ok": ok},
            "parameter_regime": parameter_regime(quick)}


if __name__ == "__main__":
    result = run(quick="--quick" in sys.argv[1:])
    regime = result["parameter_regime"]
    met = [result["floor_8x128"]["ok"]] + [v["ok"] for k, v in regime.items()
                                           if k.startswith("floor_")]
    sys.exit(0 if all(met) else 1)
