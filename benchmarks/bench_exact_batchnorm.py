"""What exact BatchNorm under accumulation costs: passes, time and memory.

``nn.exact_batchnorm_backward`` runs a window of k micro-batches 2L + 1 times
forward and L + 1 times backward (L BatchNorm layers); plain accumulation runs
it once each way.  Per model, side by side in one process (CPU time, one BLAS
thread, float32):

* ``time_vs_plain``: the exact window's time over plain accumulation's;
* ``predicted_ratio``: the derivation's time, from the forward (with and
  without a graph) and backward time of each segment between BatchNorm layers
  in a plain window: segment i runs 2L + 1 - i forwards (L - i without a
  graph) and i + 1 backwards (:func:`predicted_ratio`);
* ``untruncated_bound``: ((2L + 1)·F + (L + 1)·B) / (F + B) with F and B the
  measured forward and backward times of one plain window: the cost if every
  pass ran the whole network.  The exact mode stops the statistics passes at
  the BatchNorm layer they gather and the collecting passes' backward at the
  layer they collect, so the measured ratio sits below this bound, the more so
  the lower the BatchNorm layers are in the network;
* ``peak_vs_micro_step``: the exact window's peak memory (tracemalloc) over one
  plain micro-batch step's, and ``peak_vs_plain_window`` over a plain
  accumulated window's: recomputing instead of storing keeps the activation
  memory at one micro-batch's.  The full batch's peak is shown for scale.

Floor checked: the exact window's peak stays within 1.25 times the plain
accumulated window's.
"""
from __future__ import annotations

import sys
import time

import numpy as np

try:
    from . import common
except ImportError:      # run as a script: benchmarks/ is on sys.path
    import common

import minigrad  # noqa: E402  (after common: one BLAS thread)
from minigrad import nn, optim  # noqa: E402
from minigrad.autograd import Function  # noqa: E402

EFFECTIVE_BATCH, K = 512, 8
MEMORY_FLOOR = 1.25


def make_mlp(n_layers: int, width: int = 256):
    """``Linear(64, w) -> [BatchNorm1d -> ReLU -> Linear(w, w)] x L -> Linear(w, 10)``."""
    layers = [nn.Linear(64, width, bias=False)]
    for _ in range(n_layers):
        layers += [nn.BatchNorm1d(width), nn.ReLU(), nn.Linear(width, width, bias=False)]
    return nn.Sequential(*layers, nn.Linear(width, 10))


def make_cnn(channels: int = 8):
    """``Conv2d(1, c, 3) -> BatchNorm2d -> ReLU -> MaxPool2d -> Linear`` on (N, 1, 28, 28)."""
    return nn.Sequential(nn.Conv2d(1, channels, 3, bias=False), nn.BatchNorm2d(channels),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(channels * 13 * 13, 10))


def loss_fn(model, batch):
    x, y = batch
    logits = model(minigrad.tensor(x))
    return nn.functional.cross_entropy(logits, minigrad.tensor(y)), len(y)


def _window(rng, shape, batch):
    x = rng.standard_normal((batch, *shape)).astype(np.float32)
    y = rng.integers(0, 10, batch)
    return [(x[i:i + batch // K], y[i:i + batch // K]) for i in range(0, batch, batch // K)]


def _contenders(make, micro_batches):
    """Zero-argument callables: one plain window, one exact window, their forwards."""
    minigrad.manual_seed(0)
    model = make()
    acc = optim.GradientAccumulator(optim.SGD(model.parameters(), lr=1e-3), K, model=model)

    def plain():
        for mb in micro_batches:
            loss, n = loss_fn(model, mb)
            acc.backward(loss, num_items=n)
            acc.step()

    def forward_only():
        for mb in micro_batches:
            loss_fn(model, mb)

    def exact():
        nn.exact_batchnorm_backward(model, micro_batches, loss_fn, acc)

    return {"plain": plain, "forward": forward_only, "exact": exact}


def _peaks(make, micro_batches):
    """Peak bytes of one micro-batch step, a plain window, an exact window, the full batch."""
    minigrad.manual_seed(0)
    model = make()
    model.train()

    def micro_step():
        loss, _ = loss_fn(model, micro_batches[0])
        loss.backward()
        model.zero_grad()

    c = _contenders(make, micro_batches)
    full = (np.concatenate([x for x, _ in micro_batches]),
            np.concatenate([y for _, y in micro_batches]))

    def full_step():
        loss, _ = loss_fn(model, full)
        loss.backward()
        model.zero_grad()

    c["plain"]()          # allocate the gradients and optimizer state before measuring
    return {"micro_step": common.peak_bytes(micro_step), "plain": common.peak_bytes(c["plain"]),
            "exact": common.peak_bytes(c["exact"]), "full": common.peak_bytes(full_step)}


class _BackwardStamp(Function):
    """Identity whose backward notes the time the gradient passes through."""

    def __init__(self, stamps, index):
        self.stamps, self.index = stamps, index

    def forward(self, x):
        return x

    def backward(self, g):
        self.stamps[self.index] = time.process_time()
        return g


class _Stamp(nn.Module):
    """Identity that notes when the forward reaches it (and the backward, via the Function)."""

    def __init__(self, forward_stamps, backward_stamps, index):
        super().__init__()
        self.f, self.b, self.index = forward_stamps, backward_stamps, index

    def forward(self, x):
        self.f[self.index] = time.process_time()
        return _BackwardStamp(self.b, self.index)(x)


def segment_costs(model, micro_batches, repeats):
    """Forward and backward seconds of each segment of a Sequential, over one window.

    Segment i holds the layers from BatchNorm i up to BatchNorm i + 1 (segment 0:
    the layers below the first BatchNorm; the top segment includes the loss).
    Returns three arrays (L + 1,), medians over ``repeats`` windows: forward with
    a graph, backward, and forward without a graph (as the statistics passes run).
    """
    layers = list(model)
    cuts = [i for i, m in enumerate(layers) if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d))]
    n = len(cuts) + 1
    f, b = [0.0] * n, [0.0] * n
    stamped = []
    for i, m in enumerate(layers):
        if i in cuts:
            stamped.append(_Stamp(f, b, cuts.index(i) + 1))
        stamped.append(m)
    runner = nn.Sequential(*stamped)
    fwd, bwd, fwd_no_grad = [], [], []
    for _ in range(repeats):
        f_sum, b_sum, g_sum = np.zeros(n), np.zeros(n), np.zeros(n)
        for mb in micro_batches:
            with minigrad.no_grad():
                start = time.process_time()
                loss_fn(runner, mb)
                end = time.process_time()
            g_sum += np.diff([start, *f[1:], end])
            start = time.process_time()
            loss, _ = loss_fn(runner, mb)
            end = time.process_time()
            marks = [start, *f[1:], end]
            f_sum += np.diff(marks)
            b_start = time.process_time()
            loss.backward()
            b_end = time.process_time()
            marks = [b_start, *b[1:][::-1], b_end]          # top segment first
            b_sum += np.diff(marks)[::-1]
        model.zero_grad()
        fwd.append(f_sum)
        bwd.append(b_sum)
        fwd_no_grad.append(g_sum)
    return (np.median(fwd, axis=0), np.median(bwd, axis=0),
            np.median(fwd_no_grad, axis=0))


def predicted_ratio(f, b, f_no_grad, plain_seconds):
    """The derivation's time for an exact window over a plain one.

    Segment i runs forward 2L + 1 - i times (L - i of them without a graph, in
    the statistics passes) and backward i + 1 times, instead of once each, so
    the exact window costs the plain one plus
    Σ_i (L - i)·f_no_grad_i + L·f_i + i·b_i.
    """
    n_layers = len(f) - 1
    i = np.arange(n_layers + 1)
    extra = float(np.sum((n_layers - i) * f_no_grad + n_layers * f + i * b))
    return (plain_seconds + extra) / plain_seconds


def measure(name, make, n_layers, micro_batches, repeats):
    minigrad.manual_seed(0)
    passes = nn.exact_batchnorm_backward(make(), micro_batches, loss_fn)
    times = common.interleaved_median(_contenders(make, micro_batches), repeats=repeats)
    forward = times["forward"]
    backward = max(times["plain"] - forward, 1e-12)
    bound = ((2 * n_layers + 1) * forward + (n_layers + 1) * backward) / (forward + backward)
    peaks = _peaks(make, micro_batches)
    minigrad.manual_seed(0)
    f, b, f_no_grad = segment_costs(make(), micro_batches, repeats)
    wall = common.interleaved_median(
        {k: v for k, v in _contenders(make, micro_batches).items() if k != "forward"},
        repeats=repeats, clock=time.perf_counter)
    predicted = predicted_ratio(f, b, f_no_grad, times["plain"])
    return {"model": name, "layers": n_layers,
            "segment_forward_s": f.tolist(), "segment_backward_s": b.tolist(),
            "segment_forward_no_grad_s": f_no_grad.tolist(),
            "predicted_ratio": predicted, "wall_time_vs_plain": wall["exact"] / wall["plain"],
            "measured_vs_predicted": times["exact"] / times["plain"] / predicted,
            "forward_passes": passes.forward_passes, "backward_passes": passes.backward_passes,
            "plain_s": times["plain"], "exact_s": times["exact"],
            "time_vs_plain": times["exact"] / times["plain"], "untruncated_bound": bound,
            "peak_bytes": peaks,
            "peak_vs_micro_step": peaks["exact"] / peaks["micro_step"],
            "peak_vs_plain_window": peaks["exact"] / peaks["plain"],
            "full_peak_vs_micro_step": peaks["full"] / peaks["micro_step"]}


def run(quick: bool = False) -> dict:
    limits = common.one_blas_thread()
    start = time.perf_counter()
    try:
        rng = common.seed_all(0)
        repeats = 3 if quick else 15
        cases = [(f"MLP, L={n}", lambda n=n: make_mlp(n), n,
                  _window(rng, (64,), EFFECTIVE_BATCH)) for n in (1, 2, 3)]
        cases.append(("CNN BatchNorm2d, L=1", make_cnn, 1, _window(rng, (1, 28, 28), 128)))
        results = [measure(name, make, n, mbs, repeats) for name, make, n, mbs in cases]
    finally:
        if limits is not None:
            limits.unregister()
    rows = [[r["model"], f"{r['forward_passes']:g} + {r['backward_passes']:g}",
             1e3 * r["plain_s"], 1e3 * r["exact_s"], r["time_vs_plain"],
             r["wall_time_vs_plain"], r["predicted_ratio"], r["untruncated_bound"]]
            for r in results]
    common.print_table(
        f"Exact BatchNorm: k = {K} micro-batches per window, float32, SGD",
        ["model", "fwd + bwd passes", "plain CPU ms", "exact CPU ms", "CPU time / plain",
         "wall time / plain", "predicted (segments)", "untruncated bound"], rows)
    rows = [[r["model"], common.mib(r["peak_bytes"]["micro_step"]),
             common.mib(r["peak_bytes"]["exact"]), r["peak_vs_micro_step"],
             r["peak_vs_plain_window"], r["full_peak_vs_micro_step"]] for r in results]
    common.print_table("Peak memory (tracemalloc)",
                       ["model", "micro step MiB", "exact window MiB", "exact / micro step",
                        "exact / plain window", "full batch / micro step"], rows)
    worst = max(r["peak_vs_plain_window"] for r in results)
    ok = worst <= MEMORY_FLOOR
    print(f"floor: peak(exact window) / peak(plain window) = {worst:.3f} <= {MEMORY_FLOOR}: "
          f"{'yes' if ok else 'NO'}   ({time.perf_counter() - start:.1f} s)")
    return {"cases": {r["model"]: r for r in results},
            "floor_memory_vs_plain": {"ratio": worst, "floor": MEMORY_FLOOR, "ok": ok}}


if __name__ == "__main__":
    result = run(quick="--quick" in sys.argv[1:])
    sys.exit(0 if result["floor_memory_vs_plain"]["ok"] else 1)
