"""The fused GPU kernels compute what the NumPy lines compute; the CPU path never imports CuPy."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import minigrad
from minigrad.nn import functional as F


def test_cpu_training_step_does_not_import_cupy():
    code = ("import sys, minigrad\n"
            "from minigrad import nn, optim\n"
            "from minigrad.nn import functional as F\n"
            "m = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))\n"
            "for opt in (optim.SGD(m.parameters(), lr=0.1), optim.Adam(m.parameters())):\n"
            "    F.cross_entropy(m(minigrad.randn(3, 4)), [0, 1, 1]).backward()\n"
            "    opt.step()\n"
            "assert 'cupy' not in sys.modules, 'the CPU path imported CuPy'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize("ignore", [False, True])
def test_cross_entropy_gradient_same_on_every_device(device, smoothing, ignore):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((6, 5)).astype(np.float32)
    target = rng.integers(0, 5, 6)
    if ignore:
        target[::2] = -100
    grads = []
    for dev in ("cpu", device):
        z = minigrad.tensor(logits, device=dev, requires_grad=True)
        F.cross_entropy(z, minigrad.tensor(target, device=dev),
                        label_smoothing=smoothing).backward()
        grads.append(z.grad.numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-7)


def test_relu_same_on_every_device(device):
    x = np.array([-2.0, -0.0, 0.0, 3.0, np.nan, -np.inf, np.inf], dtype=np.float32)
    outs = []
    for dev in ("cpu", device):
        t = minigrad.tensor(x, device=dev, requires_grad=True)
        y = t.relu()
        y.backward(minigrad.tensor(np.ones_like(x), device=dev))
        outs.append((y.numpy(), t.grad.numpy()))
    np.testing.assert_array_equal(outs[1][0], outs[0][0])      # nan stays nan
    np.testing.assert_array_equal(outs[1][1], outs[0][1])
    np.testing.assert_array_equal(outs[0][0], [0, 0, 0, 3, np.nan, 0, np.inf])
