"""Differences found by running tinygrad's operator suite against minigrad
(tools/tinygrad_suite), each with its expected value; compared with PyTorch
too when it is installed."""
import importlib
import os
import sys

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F

try:
    import torch
except ImportError:  # the student's normal case
    torch = None

STANDIN = os.path.join(os.path.dirname(__file__), os.pardir, "tools", "tinygrad_suite")


def test_div_trunc_of_integers_stays_integer():
    a = minigrad.tensor(np.array([5, 6, 7, 0, -5, -6, -7], np.int32))
    b = minigrad.tensor(np.array([-3], np.int32))
    got = a.div(b, rounding_mode="trunc")
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got.numpy(), [-1, -2, -2, 0, 1, 2, 2])
    assert a.div(2, rounding_mode="trunc").dtype == np.int32
    assert a.div(2.0, rounding_mode="trunc").dtype == np.float32
    if torch is not None:
        want = torch.tensor([5, 6, 7, 0, -5, -6, -7], dtype=torch.int32).div(
            torch.tensor([-3], dtype=torch.int32), rounding_mode="trunc")
        assert str(want.dtype) == "torch.int32"
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_div_trunc_float_gradient_is_zero():
    x = minigrad.tensor([7.0, -7.0], requires_grad=True)
    y = x.div(2, rounding_mode="trunc")
    np.testing.assert_array_equal(y.numpy(), [3.0, -3.0])
    (y * x).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, -3.0])


def test_bilinear_uint8_rounds_as_pytorch_fixed_point():
    # PyTorch mixes uint8 images with 16-bit fixed-point weights, width first:
    # 15.5 and 52.5 (the exact means) come out as 16 and 53
    x = (np.arange(2 * 1 * 4 * 4).reshape(2, 1, 4, 4) * 7 % 256).astype(np.uint8)
    got = F.interpolate(minigrad.tensor(x), size=(3, 5), mode="bilinear").numpy()
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got[0, 0], [[5, 10, 16, 21, 26], [42, 47, 53, 58, 63],
                                              [79, 84, 90, 95, 100]])
    if torch is not None:
        rng = np.random.default_rng(0)
        for size, ac in [((10, 10), False), ((7, 13), True), ((3, 2), False)]:
            img = rng.integers(0, 256, (2, 3, 9, 11)).astype(np.uint8)
            want = torch.nn.functional.interpolate(torch.tensor(img), size=size,
                                                   mode="bilinear", align_corners=ac)
            have = F.interpolate(minigrad.tensor(img), size=size, mode="bilinear",
                                 align_corners=ac)
            np.testing.assert_array_equal(have.numpy(), want.numpy())


@pytest.fixture
def tinygrad_standin():
    sys.path.insert(0, STANDIN)
    saved = {k: v for k, v in sys.modules.items() if k == "tinygrad" or
             k.startswith("tinygrad.")}
    for k in saved:
        del sys.modules[k]
    try:
        yield importlib.import_module("tinygrad")
    finally:
        sys.path.remove(STANDIN)
        for k in [k for k in sys.modules if k == "tinygrad" or k.startswith("tinygrad.")]:
            del sys.modules[k]
        sys.modules.update(saved)


def test_standin_translates_tinygrad_spellings(tinygrad_standin):
    Tensor = tinygrad_standin.Tensor
    x = Tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    np.testing.assert_array_equal(x.max(axis=1).numpy(), [2, 5])
    np.testing.assert_array_equal(x.pad(((1, 0), None)).shape, (3, 3))
    assert x.argmax(axis=1).dtype == tinygrad_standin.dtypes.int32
    (gx,) = (x * x).sum().gradient(x)
    np.testing.assert_array_equal(gx.numpy(), 2 * np.arange(6).reshape(2, 3))
    assert Tensor.stack(x, x, dim=0).shape == (2, 2, 3)


@pytest.mark.skipif(torch is None or not os.path.exists(os.environ.get("TINYGRAD_TEST_OPS", "")),
                    reason="needs torch and TINYGRAD_TEST_OPS=path of tinygrad's test_ops.py")
def test_tinygrad_suite_subset_has_no_wrong_case():
    from tools.tinygrad_suite.run import run
    counts, _ = run(os.environ["TINYGRAD_TEST_OPS"], pattern="interpolate")
    assert counts["wrong"] == 0 and counts["pass"] > 0
