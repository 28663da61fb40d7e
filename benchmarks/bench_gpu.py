"""GPU benchmark: one SGD training step of an MLP, float32, at four sizes.

Sizes (widths, batch): 64-128-128-10 b32 (per-kernel overhead dominates),
784-256-256-10 b128, 4096-4096-4096-10 b1024, 8192-8192-8192-10 b4096 (the
matrix products dominate).  At every size minigrad on the GPU (CuPy) runs
against PyTorch eager on the same GPU, side by side in one process (median
of interleaved repeats, the GPU synchronized before each clock read); at
4096 also against minigrad on the CPU (NumPy).  For the small MLP the
number of allocations from CuPy's memory pool per step is counted too (a
memory hook), since on the GPU every temporary array is one.

Floors (``{"ratio", "floor", "ok"}`` entries, which ``run_all.py`` checks):
minigrad / PyTorch <= 1.2 at every size, and the GPU path >= 50x faster than
the CPU path at 4096.  Skips, saying why, when no GPU is usable.  The CPU
path uses every BLAS thread the machine offers (``run_all.py`` does not
limit this benchmark to one thread), so the speed-up is against the CPU at
its best.

    python benchmarks/bench_gpu.py [--quick]
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import minigrad
from minigrad import nn, optim
from minigrad.nn import functional as F

SIZES = (("64-128-128-10", (64, 128, 128, 10), 32),
         ("784-256-256-10", (784, 256, 256, 10), 128),
         ("4096-4096-4096-10", (4096, 4096, 4096, 10), 1024),
         ("8192-8192-8192-10", (8192, 8192, 8192, 10), 4096))
CPU_SIZE = "4096-4096-4096-10"     # the size where the CPU path is also timed
SPEEDUP_FLOOR = 50.0      # minigrad cpu time / minigrad cuda time must be >= this
TORCH_FLOOR = 1.2         # minigrad cuda time / torch cuda time must be <= this


def _mlp(widths, device):
    minigrad.manual_seed(0)
    layers = []
    for i in range(len(widths) - 1):
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).to(device)


def _minigrad_step(widths, batch, device):
    model = _mlp(widths, device)
    opt = optim.SGD(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = minigrad.tensor(rng.standard_normal((batch, widths[0])).astype(np.float32),
                        device=device)
    y = minigrad.tensor(rng.integers(0, widths[-1], batch), device=device)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        minigrad.backend.synchronize(device)
    return step


def _torch_step(widths, batch):
    import torch  # noqa: PLC0415
    torch.manual_seed(0)
    layers = []
    for i in range(len(widths) - 1):
        layers.append(torch.nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(batch, widths[0], device="cuda")
    y = torch.randint(0, widths[-1], (batch,), device="cuda")

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        torch.cuda.synchronize()
    return step


def _time(fn):
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def allocations_per_step(step) -> int:
    """Allocations from CuPy's memory pool during one call of ``step`` (a memory hook)."""
    import cupy  # noqa: PLC0415  (only reached with a usable GPU)

    class _Count(cupy.cuda.MemoryHook):
        name = "minigrad_bench_allocation_count"

        def __init__(self):
            self.count = 0

        def malloc_postprocess(self, **kwargs):
            self.count += 1

    hook = _Count()
    with hook:
        step()
    return hook.count


def run_size(label, widths, batch, repeats) -> dict:
    """Median step times of the contenders at one size, and its floors."""
    steps = {"minigrad cuda": _minigrad_step(widths, batch, "cuda")}
    if label == CPU_SIZE:
        steps["minigrad cpu"] = _minigrad_step(widths, batch, "cpu")
    try:
        steps["torch cuda"] = _torch_step(widths, batch)
    except ImportError:
        pass
    for fn in steps.values():      # warm-up: CuPy compiles kernels, BLAS spins up
        fn()
        fn()
    times = {name: [] for name in steps}
    for _ in range(repeats):       # interleaved, so drift hits every contender alike
        for name, fn in steps.items():
            if name == "minigrad cpu" and len(times[name]) >= max(3, repeats // 4):
                continue           # the CPU step takes seconds; a few repeats suffice
            times[name].append(_time(fn))
    med = {name: statistics.median(t) for name, t in times.items()}
    result = {f"{name} ms": 1e3 * t for name, t in med.items()}
    print(f"\nGPU training step, MLP {label}, batch {batch}, float32")
    for name, t in med.items():
        print(f"  {name:<14} {1e3 * t:10.3f} ms")
    if "minigrad cpu" in med:
        speedup = med["minigrad cpu"] / med["minigrad cuda"]
        result["floor_speedup_vs_cpu"] = {"ratio": speedup, "floor": SPEEDUP_FLOOR,
                                          "ok": speedup >= SPEEDUP_FLOOR}
        print(f"  GPU speed-up over the CPU path: {speedup:.1f}x (floor {SPEEDUP_FLOOR:g}x)")
    if "torch cuda" in med:
        ratio = med["minigrad cuda"] / med["torch cuda"]
        result["floor_vs_torch"] = {"ratio": ratio, "floor": TORCH_FLOOR,
                                    "ok": ratio <= TORCH_FLOOR}
        print(f"  minigrad / PyTorch on the GPU:  {ratio:.2f}x (floor {TORCH_FLOOR:g}x)")
    if label == SIZES[0][0]:
        result["allocations_per_step"] = allocations_per_step(steps["minigrad cuda"])
        print(f"  CuPy pool allocations per step: {result['allocations_per_step']}")
    return result


def run(quick: bool = False) -> dict:
    if not minigrad.cuda.is_available():
        print("bench_gpu: skipped (no usable GPU: CuPy missing or no GPU/driver)")
        return {"skipped": "no usable GPU"}
    repeats = 5 if quick else 21
    return {label: run_size(label, widths, batch, repeats) for label, widths, batch in SIZES}


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
