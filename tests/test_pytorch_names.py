"""PyTorch's names carry PyTorch's meaning: transpose swaps two dims, var is
unbiased, max(dim) returns (values, indices), squeeze of a non-1 dim is a
no-op, losses take their arguments in PyTorch's order, reductions take
dim/keepdim (and NumPy's axis/keepdims), and the method spellings exist."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
import minigrad.nn.functional as F
from tests.helpers import compare_with_torch

X = np.random.default_rng(26).permutation(24).reshape(2, 3, 4) * 0.5 - 5.0


def _cases(torch):
    return {
        "transpose": (lambda t: t.transpose(0, 1), lambda t: t.transpose(0, 1), [X]),
        "transpose-neg": (lambda t: t.transpose(-1, 0), lambda t: t.transpose(-1, 0), [X]),
        "var": (lambda t: t.var(), lambda t: t.var(), [X]),
        "var-dim": (lambda t: t.var(1, keepdim=True), lambda t: t.var(1, keepdim=True), [X]),
        "var-unbiased-false": (lambda t: t.var(2, False), lambda t: t.var(2, False), [X]),
        "var-correction": (lambda t: t.var(dim=(0, 2), correction=2),
                           lambda t: t.var(dim=(0, 2), correction=2), [X]),
        "std": (lambda t: t.std(-1), lambda t: t.std(-1), [X]),
        "max-dim-values": (lambda t: t.max(1)[0], lambda t: t.max(1)[0], [X]),
        "max-dim-keepdim": (lambda t: t.max(dim=2, keepdim=True).values,
                            lambda t: t.max(dim=2, keepdim=True).values, [X]),
        "min-dim-values": (lambda t: t.min(0).values, lambda t: t.min(0).values, [X]),
        "max-all": (lambda t: t.max(), lambda t: t.max(), [X]),
        "max-tensor": (lambda a, b: a.max(b), lambda a, b: a.max(b), [X, X[::-1].copy()]),
        "int-slice-array": (lambda t: t[0, :, [1, 2]], lambda t: t[0, :, [1, 2]], [X]),
        "array-slice-int": (lambda t: t[[1, 0], :, 3], lambda t: t[[1, 0], :, 3], [X]),
        "squeeze-non-1": (lambda t: t.squeeze(1), lambda t: t.squeeze(1), [X]),
        "squeeze-tuple": (lambda t: t.reshape(2, 1, 12, 1).squeeze((1, 2)),
                          lambda t: t.reshape(2, 1, 12, 1).squeeze((1, 2)), [X]),
        "sum-dim-keepdim": (lambda t: t.sum(dim=1, keepdim=True),
                            lambda t: t.sum(dim=1, keepdim=True), [X]),
        "mean-axis-keepdims": (lambda t: t.mean(axis=(0, 2), keepdims=True),
                               lambda t: t.mean(axis=(0, 2), keepdims=True), [X]),
        "flatten": (lambda t: t.flatten(1), lambda t: t.flatten(1), [X]),
        "flatten-range": (lambda t: t.flatten(0, 1), lambda t: t.flatten(0, 1), [X]),
        "permute": (lambda t: t.permute(1, 2, 0), lambda t: t.permute(1, 2, 0), [X]),
        "mT": (lambda t: t.mT, lambda t: t.mT, [X]),
        "matmul": (lambda a, b: a.matmul(b), lambda a, b: a.matmul(b), [X, X[0].T.copy()]),
        "mul-add-sub": (lambda a, b: a.mul(b).add(a, alpha=2).sub(b, alpha=0.5),
                        lambda a, b: a.mul(b).add(a, alpha=2).sub(b, alpha=0.5), [X, X + 1]),
        "div-pow-neg": (lambda a, b: a.div(b).pow(2).neg(),
                        lambda a, b: a.div(b).pow(2).neg(), [X, X + 0.25]),
        "softmax-dim": (lambda t: F.softmax(t, dim=1), lambda t: torch.softmax(t, dim=1), [X]),
        "log_softmax-dim": (lambda t: t.log_softmax(dim=0), lambda t: t.log_softmax(dim=0),
                            [X]),
        "nll-weight-positional": (
            lambda t: F.nll_loss(t[0], [0, 2, 1], np.array([1.0, 2.0, 3.0, 4.0])),
            lambda t: torch.nn.functional.nll_loss(t[0], torch.tensor([0, 2, 1]),
                                                   torch.tensor([1.0, 2.0, 3.0, 4.0],
                                                                dtype=torch.float64)), [X]),
        "ce-weight-positional": (
            lambda t: F.cross_entropy(t[1], [3, 0, 1], np.array([1.0, 2.0, 3.0, 4.0])),
            lambda t: torch.nn.functional.cross_entropy(
                t[1], torch.tensor([3, 0, 1]),
                torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64)), [X]),
        "bce-logits-weight-positional": (
            lambda t: F.binary_cross_entropy_with_logits(t[0], np.ones((3, 4)) * 0.25,
                                                         np.arange(1.0, 5.0)),
            lambda t: torch.nn.functional.binary_cross_entropy_with_logits(
                t[0], torch.ones(3, 4, dtype=torch.float64) * 0.25,
                torch.arange(1.0, 5.0, dtype=torch.float64)), [X]),
        "bce-weight-positional": (
            lambda t: F.binary_cross_entropy(t[0].sigmoid(), np.ones((3, 4)) * 0.25,
                                             np.arange(1.0, 5.0)),
            lambda t: torch.nn.functional.binary_cross_entropy(
                t[0].sigmoid(), torch.ones(3, 4, dtype=torch.float64) * 0.25,
                torch.arange(1.0, 5.0, dtype=torch.float64)), [X]),
        "avg_pool2d-ceil-mode-positional": (
            lambda t: F.avg_pool2d(t[None], 2, 2, 1, True, False),
            lambda t: torch.nn.functional.avg_pool2d(t[None], 2, 2, 1, True, False), [X]),
    }


NAMES = sorted(_cases(None))


@pytest.mark.parametrize("name", NAMES)
def test_parity_with_torch(name, torch):
    mg_fn, th_fn, arrays = _cases(torch)[name]
    compare_with_torch(torch, mg_fn, th_fn, arrays)


def test_max_dim_returns_values_and_indices_like_torch(torch):
    for name in ("max", "min"):
        for dim, keepdim in ((0, False), (-1, True), (1, False)):
            out = getattr(minigrad.tensor(X), name)(dim, keepdim)
            ref = getattr(torch.tensor(X), name)(dim, keepdim)
            values, indices = out
            assert type(out).__name__ == name and out.values is values
            np.testing.assert_array_equal(values.numpy(), ref.values.numpy())
            np.testing.assert_array_equal(indices.numpy(), ref.indices.numpy())
            assert indices.dtype == np.int64
    assert minigrad.tensor(X).max().shape == ()


def test_argmax_argmin_like_torch(torch):
    for dim in (None, 0, -1):
        for keepdim in (False, True):
            for name in ("argmax", "argmin"):
                got = getattr(minigrad.tensor(X), name)(dim, keepdim)
                want = getattr(torch.tensor(X), name)(dim, keepdim)
                assert got.shape == tuple(want.shape)
                np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_var_is_unbiased_by_default():
    x = minigrad.tensor([1.0, 2.0, 4.0])
    assert x.var().item() == pytest.approx(7 / 3)
    assert x.var(correction=0).item() == pytest.approx(14 / 9)
    assert x.var(unbiased=False).item() == pytest.approx(14 / 9)


def test_dtype_conversions_and_type_names():
    x = minigrad.tensor([1.5, -2.5])
    assert x.long().dtype == np.int64 and x.int().dtype == np.int32
    assert x.double().dtype == np.float64 and x.long().float().dtype == np.float32
    assert x.half().dtype == np.float16 and x.bool().dtype == np.bool_
    assert x.type() == "minigrad.FloatTensor" and x.long().type() == "minigrad.LongTensor"
    assert x.type(np.float64).dtype == np.float64
    assert x.dim() == 1 and x.clone().numpy().tolist() == [1.5, -2.5]


def test_transpose_out_of_range_names_the_dimension():
    with pytest.raises(IndexError, match="transpose: dimension 3 is out of range"):
        minigrad.ones(2, 3).transpose(0, 3)
    assert minigrad.transpose(minigrad.ones(2, 3), 0, 1).shape == (3, 2)
    assert minigrad.permute(minigrad.ones(2, 3, 4), 2, 0, 1).shape == (4, 2, 3)


def test_max_with_several_dims_points_to_amax():
    with pytest.raises(TypeError, match="amax"):
        minigrad.ones(2, 3).max(dim=(0, 1))


def test_complex_numbers_and_clamp_without_bounds_are_clear_errors():
    x = minigrad.tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="no complex dtype.*1j"):
        x * 1j
    with pytest.raises(ValueError, match="at least one of min and max"):
        x.clip(None, None)
    with pytest.raises(ValueError, match="at least one of min and max"):
        x.clamp()
