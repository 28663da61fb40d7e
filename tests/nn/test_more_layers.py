"""conv1d / Conv1d, conv_transpose2d / ConvTranspose2d, interpolate (nearest,
nearest-exact, linear, bilinear, bicubic, trilinear), cross-entropy against class probabilities, and max_pool2d on
integer tensors: gradchecks in float64 and parity with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from minigrad import nn
from tests.helpers import check_gradients, compare_with_torch

RNG = np.random.default_rng(11)
X1 = RNG.standard_normal((2, 4, 9))                 # (N, C, L)
W1 = RNG.standard_normal((6, 2, 3))                 # groups=2: (C_out, C_in/2, K)
X2 = RNG.standard_normal((2, 4, 5, 4))              # (N, C, H, W)
X3 = RNG.standard_normal((2, 2, 3, 4, 3))           # (N, C, D, H, W)
WT = RNG.standard_normal((4, 3, 3, 2))              # (C_in, C_out/G, KH, KW)
B3, B6 = RNG.standard_normal(3), RNG.standard_normal(6)


def _cases(torch):
    tf = None if torch is None else torch.nn.functional
    return {
        "conv1d": (lambda x, w: F.conv1d(x, w[:, :1].repeat(1, 4, 1)[:, :4]),
                   lambda x, w: tf.conv1d(x, w[:, :1].repeat(1, 4, 1)[:, :4]), [X1, W1]),
        "conv1d-groups-bias": (lambda x, w, b: F.conv1d(x, w, b, 2, 1, 1, 2),
                               lambda x, w, b: tf.conv1d(x, w, b, 2, 1, 1, 2), [X1, W1, B6]),
        "conv1d-dilation-same": (lambda x, w: F.conv1d(x, w, padding="same", dilation=2,
                                                       groups=2),
                                 lambda x, w: tf.conv1d(x, w, padding="same", dilation=2,
                                                        groups=2), [X1, W1]),
        "conv_transpose2d": (lambda x, w: F.conv_transpose2d(x, w),
                             lambda x, w: tf.conv_transpose2d(x, w), [X2, WT]),
        "conv_transpose2d-stride-pad": (
            lambda x, w, b: F.conv_transpose2d(x, w, b, 2, 1, 1),
            lambda x, w, b: tf.conv_transpose2d(x, w, b, 2, 1, 1), [X2, WT, B3]),
        "conv_transpose2d-groups-dilation": (
            lambda x, w: F.conv_transpose2d(x, w[:, :1], None, (1, 2), (0, 1), (0, 1), 2,
                                            (2, 1)),
            lambda x, w: tf.conv_transpose2d(x, w[:, :1], None, (1, 2), (0, 1), (0, 1), 2,
                                             (2, 1)), [X2, WT]),
        "interpolate-nearest-size": (lambda x: F.interpolate(x, size=(7, 3)),
                                     lambda x: tf.interpolate(x, size=(7, 3)), [X2]),
        "interpolate-nearest-scale": (lambda x: F.interpolate(x, scale_factor=2),
                                      lambda x: tf.interpolate(x, scale_factor=2), [X2]),
        "interpolate-nearest-1d": (lambda x: F.interpolate(x, size=4),
                                   lambda x: tf.interpolate(x, size=4), [X1]),
        "interpolate-bilinear": (lambda x: F.interpolate(x, size=(8, 9), mode="bilinear"),
                                 lambda x: tf.interpolate(x, size=(8, 9), mode="bilinear"),
                                 [X2]),
        "interpolate-bilinear-down": (
            lambda x: F.interpolate(x, scale_factor=0.5, mode="bilinear"),
            lambda x: tf.interpolate(x, scale_factor=0.5, mode="bilinear"), [X2]),
        "interpolate-bilinear-corners": (
            lambda x: F.interpolate(x, size=(3, 7), mode="bilinear", align_corners=True),
            lambda x: tf.interpolate(x, size=(3, 7), mode="bilinear", align_corners=True),
            [X2]),
        "interpolate-linear": (lambda x: F.interpolate(x, size=13, mode="linear"),
                               lambda x: tf.interpolate(x, size=13, mode="linear"), [X1]),
        "interpolate-linear-down-corners": (
            lambda x: F.interpolate(x, scale_factor=0.5, mode="linear", align_corners=True),
            lambda x: tf.interpolate(x, scale_factor=0.5, mode="linear", align_corners=True),
            [X1]),
        "interpolate-bicubic": (lambda x: F.interpolate(x, size=(9, 7), mode="bicubic"),
                                lambda x: tf.interpolate(x, size=(9, 7), mode="bicubic"), [X2]),
        "interpolate-bicubic-down": (
            lambda x: F.interpolate(x, size=(3, 2), mode="bicubic"),
            lambda x: tf.interpolate(x, size=(3, 2), mode="bicubic"), [X2]),
        "interpolate-bicubic-corners": (
            lambda x: F.interpolate(x, scale_factor=1.7, mode="bicubic", align_corners=True),
            lambda x: tf.interpolate(x, scale_factor=1.7, mode="bicubic", align_corners=True),
            [X2]),
        "interpolate-trilinear": (lambda x: F.interpolate(x, size=(4, 3, 5), mode="trilinear"),
                                  lambda x: tf.interpolate(x, size=(4, 3, 5), mode="trilinear"),
                                  [X3]),
        "interpolate-nearest-3d": (lambda x: F.interpolate(x, scale_factor=(2, 0.5, 1.5)),
                                   lambda x: tf.interpolate(x, scale_factor=(2, 0.5, 1.5)),
                                   [X3]),
        "interpolate-nearest-exact": (
            lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest-exact"),
            lambda x: tf.interpolate(x, scale_factor=1.5, mode="nearest-exact"), [X1]),
        "interpolate-bilinear-recompute": (
            lambda x: F.interpolate(x, scale_factor=1.7, mode="bilinear",
                                    recompute_scale_factor=True),
            lambda x: tf.interpolate(x, scale_factor=1.7, mode="bilinear",
                                     recompute_scale_factor=True), [X2]),
        "cross_entropy-probabilities": (
            lambda x, p: F.cross_entropy(x, p), lambda x, p: tf.cross_entropy(x, p),
            [X2[:, :, 0, 0].copy(), RNG.dirichlet(np.ones(4), 2)]),
        "cross_entropy-probabilities-spatial": (
            lambda x, p: F.cross_entropy(x, p, reduction="none"),
            lambda x, p: tf.cross_entropy(x, p, reduction="none"),
            [X2, RNG.dirichlet(np.ones(4), (2, 5, 4)).transpose(0, 3, 1, 2).copy()]),
        "cross_entropy-probabilities-weight-smoothing": (
            lambda x, p: F.cross_entropy(x, p, np.array([1.0, 2.0, 0.5, 1.0]),
                                         reduction="sum", label_smoothing=0.1),
            lambda x, p: tf.cross_entropy(x, p, torch.tensor([1.0, 2.0, 0.5, 1.0],
                                                             dtype=torch.float64),
                                          reduction="sum", label_smoothing=0.1),
            [X2[:, :, 0, 0].copy(), RNG.dirichlet(np.ones(4), 2)]),
    }


NAMES = sorted(_cases(None))


@pytest.mark.parametrize("name", NAMES)
def test_parity_with_torch(name, torch):
    mg_fn, th_fn, arrays = _cases(torch)[name]
    compare_with_torch(torch, mg_fn, th_fn, arrays)


@pytest.mark.parametrize("name", NAMES)
def test_gradcheck(name):
    mg_fn, _, arrays = _cases(None)[name]
    small = [a[:1] if a.ndim >= 3 and a is not W1 and a is not WT else a for a in arrays]
    if name.startswith("cross_entropy"):
        small = arrays
    assert check_gradients(mg_fn, small)


def test_layers_match_torch_layers(torch):
    minigrad.manual_seed(0)
    for mine, make_theirs, x in (
            (nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2),
             lambda: torch.nn.Conv1d(4, 6, 3, stride=2, padding=1, groups=2), X1),
            (nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1, output_padding=1,
                                groups=2),
             lambda: torch.nn.ConvTranspose2d(4, 6, (3, 2), stride=2, padding=1,
                                              output_padding=1, groups=2), X2)):
        theirs = make_theirs()          # float32, as minigrad's default
        assert tuple(theirs.weight.shape) == mine.weight.shape
        with torch.no_grad():
            theirs.weight.copy_(torch.tensor(mine.weight.numpy()))
            theirs.bias.copy_(torch.tensor(mine.bias.numpy()))
        out = mine(minigrad.tensor(x, dtype=np.float32))
        ref = theirs(torch.tensor(x, dtype=torch.float32))
        np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-5, atol=1e-5)
        # PyTorch's initialization bound: 1/sqrt(fan_in), fan_in from the weight's shape
        fan_in = int(np.prod(mine.weight.shape[1:]))
        assert np.abs(mine.weight.numpy()).max() <= 1 / np.sqrt(fan_in) + 1e-7


def test_max_pool2d_on_integers_with_padding_matches_torch(torch):
    x = RNG.integers(-50, 50, (1, 2, 5, 5))
    for dtype in (np.int64, np.int32, np.uint8):
        xi = (x + 60).astype(dtype) if dtype == np.uint8 else x.astype(dtype)
        got = F.max_pool2d(minigrad.tensor(xi), 3, 2, padding=1)
        want = torch.nn.functional.max_pool2d(torch.tensor(xi), 3, 2, padding=1)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_errors_name_the_shapes():
    with pytest.raises(ValueError, match=r"conv1d: expected a 2-D \(unbatched\) or 3-D input"):
        F.conv1d(minigrad.ones(3), minigrad.ones(1, 3, 1))
    with pytest.raises(ValueError, match=r"conv_transpose2d: input of shape \(1, 2, 3, 3\)"):
        F.conv_transpose2d(minigrad.ones(1, 2, 3, 3), minigrad.ones(3, 1, 2, 2))
    with pytest.raises(ValueError, match="output_padding .* must be smaller"):
        F.conv_transpose2d(minigrad.ones(1, 2, 3, 3), minigrad.ones(2, 1, 2, 2),
                           output_padding=1)
    with pytest.raises(ValueError, match="exactly one of size and scale_factor"):
        F.interpolate(minigrad.ones(1, 1, 2, 2))
    with pytest.raises(ValueError, match="bilinear needs a 4-D input"):
        F.interpolate(minigrad.ones(1, 1, 2), size=3, mode="bilinear")
    with pytest.raises(ValueError, match="linear needs a 3-D input"):
        F.interpolate(minigrad.ones(1, 1, 2, 2), size=3, mode="linear")
    with pytest.raises(ValueError, match="mode must be one of 'nearest', 'nearest-exact', "
                                         "'area', 'linear', 'bilinear', 'bicubic', "
                                         "'trilinear', got 'cubic'"):
        F.interpolate(minigrad.ones(1, 1, 2, 2), size=3, mode="cubic")
    with pytest.raises(ValueError, match="align_corners only applies"):
        F.interpolate(minigrad.ones(1, 1, 2), size=3, align_corners=True)
    with pytest.raises(ValueError, match="antialias=True is not supported"):
        F.interpolate(minigrad.ones(1, 1, 2, 2), size=1, mode="bilinear", antialias=True)


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize("padding, stride, dilation", [(1, 1, 1), ((2, 1), 2, 1),
                                                       ("same", 1, 2)])
def test_conv2d_padding_modes_match_torch(torch, mode, padding, stride, dilation):
    mine = nn.Conv2d(4, 3, 3, stride, padding, dilation, padding_mode=mode, dtype=np.float64)
    theirs = torch.nn.Conv2d(4, 3, 3, stride, padding, dilation, padding_mode=mode,
                             dtype=torch.float64)
    with torch.no_grad():
        theirs.weight.copy_(torch.tensor(mine.weight.numpy()))
        theirs.bias.copy_(torch.tensor(mine.bias.numpy()))
    compare_with_torch(torch, mine, theirs, [X2])
    if padding == 1:
        mine1 = nn.Conv1d(4, 6, 3, padding=2, padding_mode=mode, dtype=np.float64)
        theirs1 = torch.nn.Conv1d(4, 6, 3, padding=2, padding_mode=mode, dtype=torch.float64)
        with torch.no_grad():
            theirs1.weight.copy_(torch.tensor(mine1.weight.numpy()))
            theirs1.bias.copy_(torch.tensor(mine1.bias.numpy()))
        compare_with_torch(torch, mine1, theirs1, [X1])
        assert f"padding_mode={mode!r}" in repr(mine)


def test_padding_mode_errors():
    with pytest.raises(ValueError, match="padding_mode must be one of 'zeros', 'reflect'"):
        nn.Conv2d(1, 1, 3, padding_mode="mirror")
    with pytest.raises(ValueError, match="only padding_mode='zeros' is supported"):
        nn.ConvTranspose2d(1, 1, 3, padding_mode="reflect")
