"""Conv2d forward + backward: minigrad (im2col on NumPy) against PyTorch's CPU Conv2d.

The case measured: input (64, 1, 28, 28) (an MNIST batch), 16 output
channels, 3×3 kernel, padding 1, float32.  One timed call is a forward pass,
a sum, and a backward pass that produces the input, weight and bias gradients.
Both frameworks run in this one process with one thread each
(``torch.set_num_threads(1)``; one BLAS thread through threadpoolctl when it
is installed, else the environment variables set before NumPy is imported),
interleaved repeat after repeat; the ratio of the medians is reported.

Floor: minigrad / PyTorch ≤ 3.

Run:  python benchmarks/bench_conv.py [--quick]
"""
from __future__ import annotations

import sys

try:
    from . import common
except ImportError:      # run as a script: benchmarks/ is on sys.path
    import common

import numpy as np  # noqa: E402

import minigrad  # noqa: E402
from minigrad import nn  # noqa: E402

INPUT_SHAPE = (64, 1, 28, 28)
OUT_CHANNELS, KERNEL, PADDING = 16, 3, 1
FLOOR = 3.0


def _minigrad_step(layer, x):
    def step():
        layer.zero_grad()
        x.grad = None
        layer(x).sum().backward()
    return step


def _torch_step(layer, x):
    def step():
        layer.zero_grad(set_to_none=True)
        x.grad = None
        layer(x).sum().backward()
    return step


def _check_same_maths(layer, ref, x_mg, x_t):
    """Both layers must give the same output and gradients before they are timed."""
    _minigrad_step(layer, x_mg)()
    _torch_step(ref, x_t)()
    np.testing.assert_allclose(x_mg.grad.numpy(), x_t.grad.numpy(), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(layer.weight.grad.numpy(), ref.weight.grad.numpy(),
                               rtol=1e-3, atol=1e-2)
    np.testing.assert_allclose(layer.bias.grad.numpy(), ref.bias.grad.numpy(), rtol=1e-4)


def run(quick: bool = False) -> dict:
    """Time both, print a table, return ``{"minigrad_s", "torch_s", "ratio", "floor",
    "ok"}`` (torch entries and ``ok`` None when PyTorch is not installed: no
    comparison, so no floor is reported as met)."""
    rng = common.seed_all(0)
    x = rng.standard_normal(INPUT_SHAPE).astype(np.float32)
    layer = nn.Conv2d(INPUT_SHAPE[1], OUT_CHANNELS, KERNEL, padding=PADDING)
    x_mg = minigrad.tensor(x, requires_grad=True)
    contenders = {"minigrad": _minigrad_step(layer, x_mg)}
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        torch = None
        print("PyTorch is not installed: timing minigrad alone, no ratio")
    limits = common.one_blas_thread()
    try:
        if torch is not None:
            torch.set_num_threads(1)
            ref = torch.nn.Conv2d(INPUT_SHAPE[1], OUT_CHANNELS, KERNEL, padding=PADDING)
            with torch.no_grad():
                ref.weight.copy_(torch.from_numpy(layer.weight.numpy()))
                ref.bias.copy_(torch.from_numpy(layer.bias.numpy()))
            x_t = torch.tensor(x, requires_grad=True)
            _check_same_maths(layer, ref, x_mg, x_t)
            contenders["pytorch"] = _torch_step(ref, x_t)
        times = common.interleaved_median(contenders, repeats=11 if quick else 51,
                                          warmup=3)
    finally:
        if limits is not None:
            limits.unregister()
    t_mg, t_t = times["minigrad"], times.get("pytorch")
    ratio = None if t_t is None else t_mg / t_t
    result = {"input": INPUT_SHAPE, "out_channels": OUT_CHANNELS, "minigrad_s": t_mg,
              "torch_s": t_t, "ratio": ratio, "floor": FLOOR,
              "ok": None if ratio is None else ratio <= FLOOR}
    common.print_table(
        "Conv2d forward + backward, (64, 1, 28, 28) -> 16 channels, 3x3, padding 1, "
        "float32, one thread",
        ["minigrad ms", "pytorch ms", "ratio", "floor", "ok"],
        [[t_mg * 1e3, "-" if t_t is None else t_t * 1e3,
          "-" if ratio is None else ratio, FLOOR,
          "not compared" if ratio is None else result["ok"]]])
    return result


if __name__ == "__main__":
    sys.exit(1 if run(quick="--quick" in sys.argv[1:])["ok"] is False else 0)
