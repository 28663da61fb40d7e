"""The newer parts of nn.functional and their layers: selu, celu,
hardsigmoid; l1_loss, smooth_l1_loss, huber_loss, kl_div; avg_pool1d,
max_pool1d, adaptive average pooling, interpolate(mode="area"); unfold and
fold; negative padding; unbatched inputs to convolution and pooling.
Each case is gradchecked in float64 and compared with PyTorch when it is
installed; the tests after the table state expected values without it."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import minigrad
import minigrad.nn as nn
import minigrad.nn.functional as F
from tests.helpers import check_gradients, compare_with_torch

# kl_div's reduction="mean" warns (in PyTorch too): it is not the divergence
pytestmark = pytest.mark.filterwarnings("ignore:.*batchmean:UserWarning")

RNG = np.random.default_rng(3801)
X = RNG.standard_normal((2, 3, 5))
Y = RNG.standard_normal((2, 3, 5))
IMG = RNG.standard_normal((2, 2, 5, 6))
ONE = RNG.standard_normal((2, 5, 6))             # unbatched (C, H, W)
VOL = RNG.standard_normal((1, 2, 3, 4, 5))
W2 = RNG.standard_normal((3, 2, 2, 3))
W1 = RNG.standard_normal((3, 2, 3))
WT = RNG.standard_normal((2, 3, 2, 2))
P = RNG.dirichlet(np.ones(5), size=(2, 3))       # probabilities along the last axis
LOGQ = np.log(RNG.dirichlet(np.ones(5), size=(2, 3)))
WEIGHT = RNG.uniform(0.5, 2.0, (2, 3, 5))
COLS = RNG.standard_normal((2, 2 * 2 * 3, 12))   # (N, C·KH·KW, L) for fold


def _cases(th):
    tf = None if th is None else th.nn.functional
    wt = None if th is None else th.tensor(WEIGHT)
    return {
        "selu": (lambda x: F.selu(x), lambda x: tf.selu(x), [X * 3]),
        "celu": (lambda x: F.celu(x, 0.5), lambda x: tf.celu(x, 0.5), [X * 3]),
        # PyTorch's gradient multiplies by 1.0f / 6.0f, a float32 constant, also in
        # float64; minigrad's is 1/6 to the last bit (gradcheck above)
        "hardsigmoid": (lambda x: F.hardsigmoid(x), lambda x: tf.hardsigmoid(x), [X * 4],
                        {"rtol": 1e-7}),
        "l1_loss": (lambda x, y: F.l1_loss(x, y), lambda x, y: tf.l1_loss(x, y), [X, Y]),
        "l1_loss-sum": (lambda x, y: F.l1_loss(x, y, reduction="sum"),
                        lambda x, y: tf.l1_loss(x, y, reduction="sum"), [X, Y]),
        "l1_loss-weight": (lambda x, y: F.l1_loss(x, y, weight=WEIGHT),
                           lambda x, y: tf.l1_loss(x, y, weight=wt), [X, Y]),
        "smooth_l1_loss": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.5),
                           lambda x, y: tf.smooth_l1_loss(x, y, beta=0.5), [X, Y]),
        "smooth_l1_loss-none": (lambda x, y: F.smooth_l1_loss(x, y, reduction="none"),
                                lambda x, y: tf.smooth_l1_loss(x, y, reduction="none"), [X, Y]),
        "smooth_l1_loss-beta-0": (lambda x, y: F.smooth_l1_loss(x, y, beta=0.0),
                                  lambda x, y: tf.smooth_l1_loss(x, y, beta=0.0), [X, Y]),
        "huber_loss": (lambda x, y: F.huber_loss(x, y, delta=0.7),
                       lambda x, y: tf.huber_loss(x, y, delta=0.7), [X, Y]),
        "huber_loss-weight-sum": (lambda x, y: F.huber_loss(x, y, "sum", 0.4, WEIGHT),
                                  lambda x, y: tf.huber_loss(x, y, "sum", 0.4, wt), [X, Y]),
        "kl_div": (lambda x, p: F.kl_div(x, p), lambda x, p: tf.kl_div(x, p), [LOGQ, P]),
        "kl_div-batchmean": (lambda x, p: F.kl_div(x, p, reduction="batchmean"),
                             lambda x, p: tf.kl_div(x, p, reduction="batchmean"), [LOGQ, P]),
        "kl_div-log-target-none": (
            lambda x, p: F.kl_div(x, p, reduction="none", log_target=True),
            lambda x, p: tf.kl_div(x, p, reduction="none", log_target=True), [LOGQ, np.log(P)]),
        "avg_pool1d": (lambda x: F.avg_pool1d(x, 2), lambda x: tf.avg_pool1d(x, 2), [X]),
        "avg_pool1d-options": (lambda x: F.avg_pool1d(x, 3, 2, 1, True, False),
                               lambda x: tf.avg_pool1d(x, 3, 2, 1, True, False), [X]),
        "avg_pool1d-unbatched": (lambda x: F.avg_pool1d(x, 2, 1), lambda x: tf.avg_pool1d(x, 2, 1),
                                 [X[0]]),
        "max_pool1d": (lambda x: F.max_pool1d(x, 2), lambda x: tf.max_pool1d(x, 2), [X]),
        "max_pool1d-options": (lambda x: F.max_pool1d(x, 2, 1, 1, 2),
                               lambda x: tf.max_pool1d(x, 2, 1, 1, 2), [X]),
        "max_pool1d-unbatched-ceil": (lambda x: F.max_pool1d(x, 2, ceil_mode=True),
                                      lambda x: tf.max_pool1d(x, 2, ceil_mode=True), [X[1]]),
        "adaptive_avg_pool2d": (lambda x: F.adaptive_avg_pool2d(x, (3, 4)),
                                lambda x: tf.adaptive_avg_pool2d(x, (3, 4)), [IMG]),
        "adaptive_avg_pool2d-none-unbatched": (lambda x: F.adaptive_avg_pool2d(x, (None, 4)),
                                               lambda x: tf.adaptive_avg_pool2d(x, (None, 4)),
                                               [ONE]),
        "adaptive_avg_pool2d-up": (lambda x: F.adaptive_avg_pool2d(x, 7),
                                   lambda x: tf.adaptive_avg_pool2d(x, 7), [IMG]),
        "adaptive_avg_pool1d": (lambda x: F.adaptive_avg_pool1d(x, 3),
                                lambda x: tf.adaptive_avg_pool1d(x, 3), [X]),
        "interpolate-area": (lambda x: F.interpolate(x, size=(3, 4), mode="area"),
                             lambda x: tf.interpolate(x, size=(3, 4), mode="area"), [IMG]),
        "interpolate-area-scale-1d": (lambda x: F.interpolate(x, scale_factor=0.5, mode="area"),
                                      lambda x: tf.interpolate(x, scale_factor=0.5, mode="area"),
                                      [X]),
        "interpolate-area-3d": (lambda x: F.interpolate(x, size=(2, 3, 3), mode="area"),
                                lambda x: tf.interpolate(x, size=(2, 3, 3), mode="area"), [VOL]),
        "unfold": (lambda x: F.unfold(x, (2, 3)), lambda x: tf.unfold(x, (2, 3)), [IMG]),
        "unfold-options": (lambda x: F.unfold(x, 2, dilation=(1, 2), padding=1, stride=(2, 1)),
                           lambda x: tf.unfold(x, 2, dilation=(1, 2), padding=1, stride=(2, 1)),
                           [IMG]),
        "unfold-unbatched": (lambda x: F.unfold(x, 3), lambda x: tf.unfold(x, 3), [ONE]),
        "fold": (lambda c: F.fold(c, (4, 6), (2, 3), stride=1),
                 lambda c: tf.fold(c, (4, 6), (2, 3), stride=1), [COLS]),
        "fold-options": (lambda c: F.fold(c, (5, 6), (2, 3), dilation=(2, 1), padding=1,
                                          stride=2),
                         lambda c: tf.fold(c, (5, 6), (2, 3), dilation=(2, 1), padding=1,
                                           stride=2), [COLS[:, :, :9]]),
        "fold-unbatched": (lambda c: F.fold(c, (4, 6), (2, 3)),
                           lambda c: tf.fold(c, (4, 6), (2, 3)), [COLS[0]]),
        "pad-negative": (lambda x: F.pad(x, (-1, 2, 1, -2)), lambda x: tf.pad(x, (-1, 2, 1, -2)),
                         [IMG]),
        "pad-negative-value": (lambda x: F.pad(x, (0, -3), value=1.5),
                               lambda x: tf.pad(x, (0, -3), value=1.5), [X]),
        "conv2d-unbatched": (lambda x, w: F.conv2d(x, w, padding=1, stride=(2, 1)),
                             lambda x, w: tf.conv2d(x, w, padding=1, stride=(2, 1)), [ONE, W2]),
        "conv1d-unbatched": (lambda x, w: F.conv1d(x, w, padding=1),
                             lambda x, w: tf.conv1d(x, w, padding=1), [X[0, :2], W1]),
        "conv_transpose2d-unbatched": (lambda x, w: F.conv_transpose2d(x, w, stride=2),
                                       lambda x, w: tf.conv_transpose2d(x, w, stride=2),
                                       [ONE, WT]),
        "max_pool2d-unbatched": (lambda x: F.max_pool2d(x, 2, 1), lambda x: tf.max_pool2d(x, 2, 1),
                                 [ONE]),
        "avg_pool2d-unbatched": (lambda x: F.avg_pool2d(x, 2, padding=1),
                                 lambda x: tf.avg_pool2d(x, 2, padding=1), [ONE]),
    }


NAMES = sorted(_cases(None))


@pytest.mark.parametrize("name", NAMES)
def test_gradients(name):
    fn, _, arrays, *_ = _cases(None)[name]
    assert check_gradients(fn, arrays)


@pytest.mark.parametrize("name", NAMES)
def test_parity_with_torch(name, torch):
    mg_fn, th_fn, arrays, *tolerance = _cases(torch)[name]
    compare_with_torch(torch, mg_fn, th_fn, arrays, **(tolerance[0] if tolerance else {}))


LAYERS = [
    ("SELU", (), {}, X), ("CELU", (0.7,), {}, X), ("Hardsigmoid", (), {}, X * 4),
    ("AvgPool1d", (2,), {"stride": 1}, X), ("MaxPool1d", (3,), {"padding": 1}, X),
    ("AdaptiveAvgPool1d", (4,), {}, X), ("AdaptiveAvgPool2d", ((2, 3),), {}, IMG),
    ("Unfold", ((2, 2),), {"stride": 2}, IMG), ("Fold", ((4, 6), (2, 3)), {}, COLS),
]


@pytest.mark.parametrize("name, args, kwargs, x", LAYERS, ids=[row[0] for row in LAYERS])
def test_layers_match_torch(name, args, kwargs, x, torch):
    mine = getattr(nn, name)(*args, **kwargs)(minigrad.tensor(x))
    theirs = getattr(torch.nn, name)(*args, **kwargs)(torch.tensor(x))
    np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["L1Loss", "SmoothL1Loss", "HuberLoss", "KLDivLoss"])
def test_loss_layers_match_torch(name, torch):
    for reduction in ("mean", "sum", "none"):
        mine = getattr(nn, name)(reduction=reduction)(minigrad.tensor(LOGQ), minigrad.tensor(P))
        theirs = getattr(torch.nn, name)(reduction=reduction)(torch.tensor(LOGQ),
                                                               torch.tensor(P))
        np.testing.assert_allclose(mine.numpy(), theirs.numpy(), rtol=1e-12, atol=1e-12)


# ----------------------------------------------------------- stated values
def test_activation_values():
    x = minigrad.tensor([-3.0, -1.0, 0.0, 2.0, 3.0], dtype=np.float64)
    np.testing.assert_allclose(F.hardsigmoid(x).numpy(), [0.0, 1 / 3, 0.5, 5 / 6, 1.0])
    alpha, scale = 1.6732632423543772, 1.0507009873554805
    np.testing.assert_allclose(F.selu(x).numpy(),
                               scale * np.array([alpha * (np.exp(-3) - 1), alpha * (np.exp(-1)
                                                 - 1), 0.0, 2.0, 3.0]))
    np.testing.assert_allclose(F.celu(x, 2.0).numpy(),
                               [2 * (np.exp(-1.5) - 1), 2 * (np.exp(-0.5) - 1), 0.0, 2.0, 3.0])
    x.requires_grad = True
    F.hardsigmoid(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), [0.0, 1 / 6, 1 / 6, 1 / 6, 0.0])  # 0 at ±3
    with pytest.raises(ValueError, match="alpha must not be 0"):
        F.celu(x, 0.0)
    assert [type(m).__name__ for m in (nn.SELU(), nn.CELU(), nn.Hardsigmoid())] == \
        ["SELU", "CELU", "Hardsigmoid"]


def test_loss_values():
    x = minigrad.tensor([0.0, 1.0, 4.0], requires_grad=True)
    y = minigrad.tensor([0.0, 0.5, 1.0])
    assert F.l1_loss(x, y).item() == pytest.approx(3.5 / 3)
    F.l1_loss(x, y, reduction="sum").backward()
    assert x.grad.tolist() == [0.0, 1.0, 1.0]                      # 0 where equal
    # smooth L1, beta 1: 0, 0.5·0.25, 3 - 0.5
    assert F.smooth_l1_loss(x, y, reduction="none").tolist() == [0.0, 0.125, 2.5]
    # Huber, delta 2: 0, 0.5·0.25, 2·(3 - 1)
    assert F.huber_loss(x, y, reduction="none", delta=2.0).tolist() == [0.0, 0.125, 4.0]
    assert F.l1_loss(x, y, weight=np.array([1.0, 2.0, 1.0])).item() == pytest.approx(4 / 4)
    p = minigrad.tensor([[0.5, 0.5, 0.0]])
    logq = minigrad.tensor([[np.log(0.25), np.log(0.25), np.log(0.5)]])
    assert F.kl_div(logq, p, reduction="sum").item() == pytest.approx(np.log(2.0))
    assert F.kl_div(logq, p, reduction="batchmean").item() == pytest.approx(np.log(2.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        F.l1_loss(minigrad.ones(3, 1), minigrad.ones(3))
    assert any("differs from input shape" in str(w.message) for w in caught)
    with pytest.warns(UserWarning, match="'batchmean' divides by the batch size only"):
        F.kl_div(logq, p)
    with pytest.raises(ValueError, match="reduction must be 'mean', 'batchmean'"):
        F.kl_div(logq, p, reduction="avg")
    with pytest.raises(ValueError, match="delta must be > 0"):
        F.huber_loss(x, y, delta=0.0)
    with pytest.raises(ValueError, match="beta must be >= 0"):
        F.smooth_l1_loss(x, y, beta=-1.0)


def test_pooling_values():
    x = minigrad.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]], dtype=np.float64)
    assert F.avg_pool1d(x, 2).tolist() == [[[2.0, 3.5]]]
    out, idx = F.max_pool1d(x, 2, return_indices=True)
    assert out.tolist() == [[[3.0, 5.0]]] and idx.tolist() == [[[1, 3]]]
    assert F.max_pool1d(x[0], 2).tolist() == [[3.0, 5.0]]           # unbatched (C, L)
    # adaptive windows of 5 -> 3: [0, 2), [1, 4), [3, 5)
    np.testing.assert_allclose(F.adaptive_avg_pool1d(x, 3).numpy(), [[[2.0, 10 / 3, 4.5]]])
    np.testing.assert_allclose(F.interpolate(x, size=3, mode="area").numpy(),
                               [[[2.0, 10 / 3, 4.5]]])
    img = minigrad.arange(16.0).reshape(1, 1, 4, 4)
    assert F.adaptive_avg_pool2d(img, 2).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
    assert F.adaptive_avg_pool2d(img[0], 1).shape == (1, 1, 1)
    with pytest.raises(ValueError, match="3-D \\(unbatched\\) or 4-D"):
        F.adaptive_avg_pool2d(img[0, 0], 2)
    with pytest.raises(ValueError, match="align_corners"):
        F.interpolate(x, size=3, mode="area", align_corners=False)


def test_unfold_fold_values():
    x = minigrad.arange(9.0).reshape(1, 1, 3, 3)
    cols = F.unfold(x, 2)
    assert cols.shape == (1, 4, 4)
    assert cols[0, :, 0].tolist() == [0.0, 1.0, 3.0, 4.0]           # the top-left block
    back = F.fold(cols, (3, 3), 2)
    counts = [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]   # blocks covering a pixel
    assert back[0, 0].tolist() == (np.arange(9.0).reshape(3, 3) * counts).tolist()
    with pytest.raises(ValueError, match="fits 2 x 2 = 4"):
        F.fold(cols[:, :, :3], (3, 3), 2)
    with pytest.raises(ValueError, match="divisible by the kernel's size"):
        F.fold(minigrad.ones(1, 3, 4), (3, 3), 2)
    with pytest.raises(ValueError, match="larger than the padded input"):
        F.unfold(x, 4)


def test_negative_padding_crops():
    x = minigrad.tensor([[1.0, 2.0, 3.0, 4.0]], requires_grad=True)
    out = F.pad(x, (-1, 1))
    assert out.tolist() == [[2.0, 3.0, 4.0, 0.0]]
    out.sum().backward()
    assert x.grad.tolist() == [[0.0, 1.0, 1.0, 1.0]]
    assert F.pad(x, (-2, -2)).shape == (1, 0)
    with pytest.raises(ValueError, match="negative output size"):
        F.pad(x, (-3, -2))
    with pytest.raises(ValueError, match="negative padding"):
        F.pad(x, (-1, 1), mode="reflect")


def test_unbatched_layers_match_batched():
    conv = nn.Conv2d(2, 3, 3, padding=1)
    x = minigrad.tensor(ONE, dtype=np.float32)
    np.testing.assert_allclose(conv(x).numpy(), conv(x[None]).numpy()[0], rtol=1e-6)
    pool = nn.MaxPool2d(2, return_indices=True)
    values, indices = pool(x)
    assert values.shape == (2, 2, 3) and indices.shape == (2, 2, 3)
    assert nn.AvgPool2d(2)(x).shape == (2, 2, 3)
    assert nn.Conv1d(2, 4, 3)(x[:, 0]).shape == (4, 4)


def test_kl_div_gradient_at_a_zero_target_is_finite():
    # target·log(target) counts as 0 with gradient 0 where target = 0, so the
    # target's gradient there is -input (PyTorch: nan, a documented difference)
    x = minigrad.tensor([[-1.0, -2.0]], dtype=np.float64)
    p = minigrad.tensor([[1.0, 0.0]], dtype=np.float64, requires_grad=True)
    F.kl_div(x, p, reduction="sum").backward()
    assert p.grad.tolist() == [[0.0 + 1.0 + 1.0, 2.0]]     # log 1 + 1 - (-1); -(-2)


def test_adaptive_pooling_refuses_integers_as_pytorch():
    image = minigrad.zeros(1, 1, 4, 4, dtype=np.uint8)
    with pytest.raises(TypeError, match="needs a floating input, got dtype uint8"):
        F.adaptive_avg_pool2d(image, 2)
    with pytest.raises(TypeError, match="needs a floating input"):
        F.interpolate(image, size=2, mode="area")
