"""What all-or-nothing state and crash-safe checkpoints cost.

1. The checks an optimizer runs before its first write (``Optimizer._check_step``:
   every group's hyperparameters, every gradient's shape, dtype and device).
   Timed side by side with the same optimizer whose checks are switched off:
   one ``step()`` alone, and one whole training step (forward, backward, step)
   of a 3-layer ReLU MLP.  Floor: the whole training step with checks costs at
   most 1.10 times the one without (small MLP, batch 32, where per-call costs
   weigh most).
2. ``minigrad.save`` / ``minigrad.load`` of a model's state dict against
   ``numpy.savez`` / ``numpy.load`` of the same arrays.  minigrad writes a
   temporary file, fsyncs it and renames it, and checks every CRC when it
   reads; NumPy does neither.  Reported, without a floor: fsync's cost is
   the disk's.

Run:  python benchmarks/bench_state.py [--quick]
(or ``python benchmarks/run_all.py --only bench_state``).  One BLAS thread
(see ``benchmarks/common.py``); CPU time for (1), wall-clock time for (2)
(the disk's time is the point there).
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

try:
    from . import common
except ImportError:      # run as a script: benchmarks/ is on sys.path
    import common

import numpy as np  # noqa: E402

import minigrad  # noqa: E402
from minigrad import nn, optim  # noqa: E402
from minigrad.nn import functional as F  # noqa: E402

CASES = [
    # (name, widths, batch)
    ("small", (64, 128, 128, 10), 32),
    ("large", (1024, 1024, 1024, 10), 256),
]
OPTIMIZERS = {"SGD+momentum": lambda ps: optim.SGD(ps, lr=1e-3, momentum=0.9),
              "Adam": lambda ps: optim.Adam(ps, lr=1e-3)}
FLOOR = 1.10            # whole training step, small MLP: with checks / without


def _mlp(widths):
    minigrad.manual_seed(0)
    layers = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
    return nn.Sequential(*layers[:-1])


class _Unchecked:
    """A context in which optimizers skip their pre-step checks."""

    def __enter__(self):
        self.saved = optim.Optimizer._check_step
        optim.Optimizer._check_step = lambda self: None

    def __exit__(self, *exc):
        optim.Optimizer._check_step = self.saved


def _timed_pair(fn, repeats):
    """Median CPU seconds of ``fn`` with and without the checks, interleaved."""
    def unchecked():
        with _Unchecked():
            fn()
    times = common.interleaved_median({"checked": fn, "unchecked": unchecked}, repeats)
    return times["checked"], times["unchecked"]


def bench_checks(quick):
    rows, results = [], {}
    rng = common.seed_all(0)
    for name, widths, batch in CASES:
        x = minigrad.tensor(rng.standard_normal((batch, widths[0]), dtype=np.float32))
        y = minigrad.tensor(rng.integers(0, widths[-1], batch))
        for opt_name, make in OPTIMIZERS.items():
            model = _mlp(widths)
            opt = make(model.parameters())

            def train_step():
                F.cross_entropy(model(x), y).backward()
                opt.step()
                opt.zero_grad()

            train_step()                                   # state allocated
            F.cross_entropy(model(x), y).backward()        # a gradient for step()
            repeats = (21 if name == "small" else 5) if quick else \
                (201 if name == "small" else 21)
            step_on, step_off = _timed_pair(opt.step, repeats)
            opt.zero_grad()
            train_on, train_off = _timed_pair(train_step, repeats)
            ratio = train_on / train_off
            key = f"{name} {opt_name}"
            results[key] = {"step_us": step_on * 1e6, "step_unchecked_us": step_off * 1e6,
                            "train_step_ratio": ratio}
            if name == "small":
                results[key].update({"ratio": ratio, "floor": FLOOR, "ok": ratio <= FLOOR})
            rows.append([key, step_on * 1e6, step_off * 1e6, (step_on - step_off) * 1e6,
                         ratio])
    common.print_table("Pre-step checks: one step() and one whole training step, with the "
                       "checks and without (CPU time, one BLAS thread)",
                       ["case", "step us", "unchecked us", "checks us",
                        "train step ratio"], rows)
    return results


def bench_files(quick):
    model = _mlp(CASES[1][1])
    state = model.state_dict()
    size = sum(a.nbytes for a in state.values())
    repeats = 3 if quick else 9
    results, rows = {}, []
    with tempfile.TemporaryDirectory() as folder:
        ours, theirs = os.path.join(folder, "ours"), os.path.join(folder, "theirs.npz")
        times = common.interleaved_median(
            {"minigrad.save": lambda: minigrad.save(state, ours),
             "numpy.savez": lambda: np.savez(theirs, **state)}, repeats,
            clock=time.perf_counter)
        loads = common.interleaved_median(
            {"minigrad.load": lambda: minigrad.load(ours),
             "numpy.load": lambda: dict(np.load(theirs, allow_pickle=False))}, repeats,
            clock=time.perf_counter)
    results["save"] = {"minigrad_s": times["minigrad.save"], "numpy_s": times["numpy.savez"],
                       "save_ratio": times["minigrad.save"] / times["numpy.savez"]}
    results["load"] = {"minigrad_s": loads["minigrad.load"], "numpy_s": loads["numpy.load"],
                       "load_ratio": loads["minigrad.load"] / loads["numpy.load"]}
    rows.append(["save", times["minigrad.save"] * 1e3, times["numpy.savez"] * 1e3,
                 results["save"]["save_ratio"]])
    rows.append(["load", loads["minigrad.load"] * 1e3, loads["numpy.load"] * 1e3,
                 results["load"]["load_ratio"]])
    common.print_table(f"Checkpoint files: a {common.mib(size):.1f} MiB state dict "
                       "(wall-clock time; minigrad fsyncs and renames, NumPy does not)",
                       ["", "minigrad ms", "numpy ms", "ratio"], rows)
    return results


def run(quick: bool = False) -> dict:
    limits = common.one_blas_thread()
    try:
        return {"checks": bench_checks(quick), "files": bench_files(quick)}
    finally:
        if limits is not None:
            limits.unregister()


if __name__ == "__main__":
    out = run(quick="--quick" in sys.argv[1:])
    sys.exit(0 if all(r.get("ok", True) for r in out["checks"].values()) else 1)
