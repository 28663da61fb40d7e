"""Gradient checkpointing: activation memory and time against the number of segments.

A deep MLP of 32 blocks (Linear 256→256 + ReLU, float32, batch 512) takes a
forward and backward pass, plainly and through
``minigrad.checkpoint_sequential(model, segments, x)`` for several segment
counts.  For each we measure

* the *activation memory*: the peak bytes of the forward+backward pass above
  what existed before it (the parameters and their gradient buffers, which
  are allocated beforehand and zeroed in place, so they are not counted);
* the median CPU time of the pass, all variants timed in turn, repeat after
  repeat;
* the minor page faults per pass: how often the kernel had to map fresh
  memory.  Arrays this large come straight from the kernel, zeroed page by
  page, whenever the allocator has none free of that size; the count is
  printed beside the time because it moves the time.

The floors.  Theory (Chen et al. 2016, arXiv:1604.06174): with s segments
of L/s blocks the pass keeps s boundary outputs plus one segment's
activations, O(s + L/s), smallest at s = √L; the price is one more forward
pass, about +1/3 of the time.

* The formula, for every segment count: a block keeps one activation (the
  ReLU's output, which the next Linear saves too), so the pass keeps
  stored(s) = (s - 1) boundaries + the last, plain segment's blocks
  (chapter 07), plus the gradients in flight during one block's backward
  (the upstream gradient, the Linear's input gradient and the ReLU's
  product: ``IN_FLIGHT`` = 3 activations).  Floor: peak ≤ (stored(s) +
  IN_FLIGHT) activations, 2 % slack; the plain pass is s = 1.
* Checkpoints every √32 ≈ 5.7 blocks (6 segments) at ≤ 1.5 × the plain
  pass's time, and at ≤ 35 % of its activation memory.  That last ratio was
  set when a plain pass kept 2.25 activations per block (each Function held
  its input Tensors, so the Linear's output lived until backward, and ReLU
  kept a mask); since a graph keeps only what backward saved, the plain pass
  holds half as much, and the best the √L scheme can reach at L = 32 is
  (5 + 7 + 3) / (32 + 3) ≈ 0.43 at 6 segments, (3 + 8 + 3) / 35 = 0.40 at
  4 or 8.  The ratio is printed against 0.35 all the same.

Run:  python benchmarks/bench_checkpoint.py [--quick]
"""
from __future__ import annotations

import math
import sys

try:
    from . import common
except ImportError:      # run as a script: benchmarks/ is on sys.path
    import common

import minigrad  # noqa: E402
from minigrad import nn  # noqa: E402

BLOCKS = 32
WIDTH = 256
BATCH = 512
SEGMENTS = (2, 4, 6, 8, 16)
SQRT_SEGMENTS = round(math.sqrt(BLOCKS))      # 6: a checkpoint every ~5.7 blocks
MEMORY_FLOOR = 0.35
TIME_FLOOR = 1.5
IN_FLIGHT = 3          # activations of gradients alive during one block's backward
SLACK = 1.02


def stored_activations(segments) -> int:
    """Activations a pass keeps at the end of forward: (s - 1) segment
    boundaries + every block of the last segment, which runs plainly
    (``checkpoint_sequential`` gives it the remainder); all L when plain."""
    if segments is None:
        return BLOCKS
    size = BLOCKS // segments
    return (segments - 1) + (BLOCKS - size * (segments - 1))


def make_model():
    minigrad.manual_seed(0)
    return nn.Sequential(*[nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.ReLU())
                           for _ in range(BLOCKS)])


def training_pass(model, x, segments):
    """Forward and backward once; ``segments=None`` runs the model plainly."""
    out = model(x) if segments is None else minigrad.checkpoint_sequential(model, segments, x)
    loss = (out * out).mean()
    del out
    loss.backward()


def activation_peak(model, x, segments, repeats):
    """Peak bytes of one pass, gradient buffers already allocated and zeroed."""
    training_pass(model, x, segments)               # allocate every .grad
    model.zero_grad(set_to_none=False)

    def one():
        training_pass(model, x, segments)
        model.zero_grad(set_to_none=False)
    return common.peak_bytes(one, repeats=repeats)


def page_faults_per_pass(model, x, segments, passes=3):
    """Minor page faults per pass: fresh memory the kernel maps (and zeroes) for us.

    None where the ``resource`` module is missing (Windows).
    """
    try:
        import resource  # noqa: PLC0415
    except ImportError:
        return None
    training_pass(model, x, segments)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    for _ in range(passes):
        training_pass(model, x, segments)
    return (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / passes


def run(quick: bool = False) -> dict:
    """Measure every segment count, print the table, return numbers and floor checks."""
    limits = common.one_blas_thread()
    try:
        rng = common.seed_all(0)
        model = make_model()
        x = minigrad.tensor(rng.standard_normal((BATCH, WIDTH), dtype="float32"))
        variants = [None, *SEGMENTS]
        peaks = {s: activation_peak(model, x, s, repeats=1 if quick else 3)
                 for s in variants}
        times = common.interleaved_median(
            {s: (lambda s=s: training_pass(model, x, s)) for s in variants},
            repeats=3 if quick else 9)
        faults = {s: page_faults_per_pass(model, x, s) for s in variants}
    finally:
        if limits is not None:
            limits.unregister()

    activation_unit = BATCH * WIDTH * 4          # one float32 hidden activation
    rows, table = [], {}
    for s in variants:
        name = "plain" if s is None else str(s)
        table[name] = {"peak_bytes": peaks[s], "memory_vs_plain": peaks[s] / peaks[None],
                       "pass_s": times[s], "time_vs_plain": times[s] / times[None],
                       "page_faults": faults[s]}
        rows.append([name, "-" if s is None else BLOCKS // s, common.mib(peaks[s]),
                     peaks[s] / activation_unit, peaks[s] / peaks[None],
                     1e3 * times[s], times[s] / times[None],
                     "-" if faults[s] is None else round(faults[s])])
    common.print_table(
        f"Checkpointing: {BLOCKS} blocks of Linear({WIDTH}, {WIDTH}) + ReLU, batch {BATCH}, "
        f"float32 (one activation = {common.mib(activation_unit):.2f} MiB)",
        ["segments", "blocks/seg", "act. MiB", "activations", "mem / plain", "CPU ms / pass",
         "time / plain", "page faults"], rows)

    formula = {}
    for s in variants:
        bound = stored_activations(s) + IN_FLIGHT
        measured = peaks[s] / activation_unit
        formula["plain" if s is None else str(s)] = {
            "activations": measured, "formula": bound, "within": measured <= SLACK * bound}
    formula_ok = all(f["within"] for f in formula.values())
    worst = max(f["activations"] / f["formula"] for f in formula.values())
    print(f"floor: every pass <= (stored(s) + {IN_FLIGHT}) activations x {SLACK}: "
          + ", ".join(f"{name} {f['activations']:.2f} <= {f['formula']}"
                      for name, f in formula.items())
          + f": {'yes' if formula_ok else 'NO'}")
    chosen = table[str(SQRT_SEGMENTS)]
    memory_ok = chosen["memory_vs_plain"] <= MEMORY_FLOOR
    time_ok = chosen["time_vs_plain"] <= TIME_FLOOR
    print(f"floor: {SQRT_SEGMENTS} segments at {chosen['time_vs_plain']:.3f} x the plain pass's "
          f"time (<= {TIME_FLOOR}: {'yes' if time_ok else 'NO'}), keeping "
          f"{chosen['memory_vs_plain']:.3f} of its activation memory (<= {MEMORY_FLOOR}: "
          f"{'yes' if memory_ok else 'NO'}; the plain pass keeps one activation per block, "
          "see the module docstring)")
    return {"segments": table,
            "formula_passes": formula,
            "floor_formula": {"ratio": worst, "floor": SLACK, "ok": formula_ok},
            "floor_sqrt_memory": {"segments": SQRT_SEGMENTS, "ratio": chosen["memory_vs_plain"],
                                  "floor": MEMORY_FLOOR, "ok": memory_ok},
            "floor_sqrt_time": {"segments": SQRT_SEGMENTS, "ratio": chosen["time_vs_plain"],
                                "floor": TIME_FLOOR, "ok": time_ok}}


if __name__ == "__main__":
    result = run(quick="--quick" in sys.argv[1:])
    sys.exit(0 if result["floor_formula"]["ok"] and result["floor_sqrt_time"]["ok"]
             else 1)
