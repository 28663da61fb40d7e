"""The activations SiLU, LeakyReLU, ELU, Softplus, Hardtanh, ReLU6, Mish,
Hardswish, LogSigmoid, the LogSoftmax / Softmin modules, F.pad,
F.one_hot and F.normalize: gradchecks in float64 and parity with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import minigrad
import minigrad.nn.functional as F
from minigrad import nn
from tests.functions import FAST, away_from_zero, nonempty_shapes
from tests.helpers import check_gradients, compare_with_torch

RNG = np.random.default_rng(7)
# a spread with the kinks and thresholds in it: 0, ±1, ±3, 6, and beyond 20
X = np.concatenate([RNG.standard_normal(12) * 3, [0.0, 1.0, -1.0, 3.0, -3.0, 6.0, 25.0,
                                                  -30.0, 0.5, 7.0]]).reshape(2, 11)

ACTIVATIONS = {
    "silu": (F.silu, nn.SiLU(), "silu", (), "SiLU"),
    "leaky_relu": (lambda t: F.leaky_relu(t, 0.2), nn.LeakyReLU(0.2), "leaky_relu", (0.2,),
                   "LeakyReLU"),
    "elu": (lambda t: F.elu(t, 0.7), nn.ELU(0.7), "elu", (0.7,), "ELU"),
    "softplus": (lambda t: F.softplus(t, 2.0, 10.0), nn.Softplus(2.0, 10.0), "softplus",
                 (2.0, 10.0), "Softplus"),
    "hardtanh": (lambda t: F.hardtanh(t, -2.0, 1.0), nn.Hardtanh(-2.0, 1.0), "hardtanh",
                 (-2.0, 1.0), "Hardtanh"),
    "relu6": (F.relu6, nn.ReLU6(), "relu6", (), "ReLU6"),
    "mish": (F.mish, nn.Mish(), "mish", (), "Mish"),
    "hardswish": (F.hardswish, nn.Hardswish(), "hardswish", (), "Hardswish"),
    "logsigmoid": (F.logsigmoid, nn.LogSigmoid(), "logsigmoid", (), "LogSigmoid"),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_functional_parity_with_torch(name, torch):
    fn, _, th_name, args, _ = ACTIVATIONS[name]
    th_fn = getattr(torch.nn.functional, th_name)
    compare_with_torch(torch, fn, lambda t: th_fn(t, *args), [X])


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_module_parity_with_torch(name, torch):
    _, module, _, args, th_class = ACTIVATIONS[name]
    th_module = getattr(torch.nn, th_class)(*args)
    compare_with_torch(torch, module, th_module, [X])


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
@FAST
@given(data=st.data())
def test_activation_gradcheck(name, data):
    # |x| in [0.2, 0.9]: away from the kinks at 0, ±1, -2, ±3 and 6
    x = data.draw(nonempty_shapes.flatmap(lambda s: away_from_zero(s, 0.1, 0.45))) * 2.0
    fn = ACTIVATIONS[name][0]
    assert check_gradients(fn, [x])


def test_softmax_family_modules(torch):
    compare_with_torch(torch, nn.LogSoftmax(dim=1), torch.nn.LogSoftmax(dim=1), [X])
    compare_with_torch(torch, nn.Softmin(dim=0), torch.nn.Softmin(dim=0), [X])
    compare_with_torch(torch, lambda t: F.softmin(t, 1), lambda t: torch.nn.functional
                       .softmin(t, 1), [X])
    assert check_gradients(nn.Softmin(dim=1), [X[:, :4]])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
@pytest.mark.parametrize("pad", [(1, 2), (2, 1, 0, 2), (1, 1, 2, 0, 1, 1)])
def test_pad_parity_with_torch(mode, pad, torch):
    x = RNG.standard_normal((2, 3, 4, 5))
    if mode != "constant" and len(pad) == 2:
        x = x[0]             # PyTorch's copying modes pad 1 dim of a 2-D or 3-D input
    kwargs = {"value": 1.5} if mode == "constant" else {}
    compare_with_torch(torch, lambda t: F.pad(t, pad, mode=mode, **kwargs),
                       lambda t: torch.nn.functional.pad(t, pad, mode=mode, **kwargs), [x])


@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_gradcheck(mode):
    x = RNG.standard_normal((2, 3, 4))
    assert check_gradients(lambda t: F.pad(t, (2, 3, 1, 0), mode=mode) ** 2, [x])


def test_pad_errors():
    x = minigrad.ones(1, 2, 3)
    with pytest.raises(ValueError, match="reflect padding 3 must be smaller"):
        F.pad(x, (3, 0), mode="reflect")
    with pytest.raises(ValueError, match="even length"):
        F.pad(x, (1, 2, 3))
    with pytest.raises(ValueError, match="mode must be one of"):
        F.pad(x, (1, 1), mode="mirror")


def test_one_hot_and_normalize_match_torch(torch):
    ids = np.array([[0, 3], [2, 2]])
    np.testing.assert_array_equal(F.one_hot(minigrad.tensor(ids)).numpy(),
                                  torch.nn.functional.one_hot(torch.tensor(ids)).numpy())
    np.testing.assert_array_equal(F.one_hot(ids, 6).numpy(),
                                  torch.nn.functional.one_hot(torch.tensor(ids), 6).numpy())
    assert F.one_hot(ids).dtype == np.int64
    with pytest.raises(ValueError, match=r"one_hot: class ids must lie in \[0, 3\)"):
        F.one_hot(ids, 3)
    for p, dim in ((2.0, 1), (1.0, 0), (3.0, -1)):
        compare_with_torch(torch, lambda t: F.normalize(t, p, dim),
                           lambda t: torch.nn.functional.normalize(t, p, dim), [X])
    zero = np.zeros((2, 3))
    compare_with_torch(torch, F.normalize, torch.nn.functional.normalize, [zero])
    assert check_gradients(lambda t: F.normalize(t, dim=0), [X[:, :3]])
