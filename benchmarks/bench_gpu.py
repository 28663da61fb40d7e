"""GPU benchmark: one training step of an MLP 4096-4096-4096-10, batch 1024, float32.

minigrad on the GPU (CuPy) against minigrad on the CPU (NumPy) and against
PyTorch eager on the same GPU, measured side by side in one process (median
of repeats, the GPU synchronized before each clock read).

Floors: the GPU path at least 20x faster than the CPU path, and within
1.5x of PyTorch eager (both reported as ``{"ratio", "floor", "ok"}`` entries,
which ``run_all.py`` checks).  Skips, saying why, when no GPU is usable.
The CPU path uses every BLAS thread the machine offers (``run_all.py`` does
not limit this benchmark to one thread), so the speed-up is against the CPU
at its best.

    python benchmarks/bench_gpu.py
"""
from __future__ import annotations

import statistics
import time

import numpy as np

import minigrad
from minigrad import nn, optim
from minigrad.nn import functional as F

WIDTHS = (4096, 4096, 4096, 10)
BATCH = 1024
SPEEDUP_FLOOR = 20.0      # minigrad cpu time / minigrad cuda time must be >= this
TORCH_FLOOR = 1.5         # minigrad cuda time / torch cuda time must be <= this


def _mlp(device):
    minigrad.manual_seed(0)
    layers = []
    for i in range(len(WIDTHS) - 1):
        layers.append(nn.Linear(WIDTHS[i], WIDTHS[i + 1]))
        if i < len(WIDTHS) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers).to(device)


def _minigrad_step(device):
    model = _mlp(device)
    opt = optim.SGD(model.parameters(), lr=1e-3)
    rng = np.random.default_rng(0)
    x = minigrad.tensor(rng.standard_normal((BATCH, WIDTHS[0])).astype(np.float32),
                        device=device)
    y = minigrad.tensor(rng.integers(0, WIDTHS[-1], BATCH), device=device)

    def step():
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        minigrad.backend.synchronize(device)
    return step


def _torch_step():
    import torch  # noqa: PLC0415
    torch.manual_seed(0)
    layers = []
    for i in range(len(WIDTHS) - 1):
        layers.append(torch.nn.Linear(WIDTHS[i], WIDTHS[i + 1]))
        if i < len(WIDTHS) - 2:
            layers.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, WIDTHS[0], device="cuda")
    y = torch.randint(0, WIDTHS[-1], (BATCH,), device="cuda")

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
        torch.cuda.synchronize()
    return step


def _time(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def run(quick: bool = False) -> dict:
    if not minigrad.cuda.is_available():
        print("bench_gpu: skipped (no usable GPU: CuPy missing or no GPU/driver)")
        return {"skipped": "no usable GPU"}
    repeats = 5 if quick else 20
    gpu = _minigrad_step("cuda")
    cpu = _minigrad_step("cpu")
    steps = {"minigrad cuda": gpu, "minigrad cpu": cpu}
    try:
        steps["torch cuda"] = _torch_step()
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
            times[name].append(_time(fn, 1))
    med = {name: statistics.median(t) for name, t in times.items()}
    result = {f"{name} ms": 1e3 * t for name, t in med.items()}
    speedup = med["minigrad cpu"] / med["minigrad cuda"]
    result["floor_speedup_vs_cpu"] = {"ratio": speedup, "floor": SPEEDUP_FLOOR,
                                      "ok": speedup >= SPEEDUP_FLOOR}
    print(f"\nGPU training step, MLP {'-'.join(map(str, WIDTHS))}, batch {BATCH}, float32")
    for name, t in med.items():
        print(f"  {name:<14} {1e3 * t:10.2f} ms")
    print(f"  GPU speed-up over the CPU path: {speedup:.1f}x (floor {SPEEDUP_FLOOR:g}x)")
    if "torch cuda" in med:
        ratio = med["minigrad cuda"] / med["torch cuda"]
        result["floor_vs_torch"] = {"ratio": ratio, "floor": TORCH_FLOOR,
                                    "ok": ratio <= TORCH_FLOOR}
        print(f"  minigrad / PyTorch on the GPU:  {ratio:.2f}x (floor {TORCH_FLOOR:g}x)")
    return result


if __name__ == "__main__":
    run()
