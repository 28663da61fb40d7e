"""BatchNorm1d / BatchNorm2d: gradients in training and eval mode, parity with
PyTorch over several steps (running statistics, momentum=None,
num_batches_tracked), exact merged running statistics under accumulation, and
every bad-input error."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn
from minigrad.autograd import recomputing
from minigrad.nn import functional as F
from tests.helpers import check_gradients

# Parity with PyTorch reached (float64, 4 training steps then eval): outputs,
# gradients and running statistics within 1e-12 relative (asserted); float32:
# 1e-5 (asserted).

SHAPES = {"1d": (6, 3), "1d-seq": (4, 3, 5), "2d": (3, 3, 4, 2)}


def _layer_for(shape, **kwargs):
    return (nn.BatchNorm1d if len(shape) < 4 else nn.BatchNorm2d)(shape[1], **kwargs)


# ---------------------------------------------------------------- gradients
@settings(max_examples=15, deadline=None)
@given(shape=st.sampled_from(list(SHAPES.values())), affine=st.booleans(),
       scale=st.sampled_from([1e-2, 1.0, 1e2]))
def test_batch_norm_training_gradcheck(shape, affine, scale):
    rng = np.random.default_rng(0)
    c = shape[1]
    arrays = [rng.standard_normal(shape) * scale + 3.0]
    if affine:
        arrays += [rng.standard_normal(c), rng.standard_normal(c)]
    assert check_gradients(
        lambda x, w=None, b=None: F.batch_norm(x, None, None, w, b, training=True), arrays,
        rtol=1e-4)


@pytest.mark.parametrize("shape", list(SHAPES.values()))
def test_batch_norm_eval_gradcheck(shape, device):
    rng = np.random.default_rng(1)
    c = shape[1]
    mean = minigrad.tensor(rng.standard_normal(c), device=device)
    var = minigrad.tensor(rng.random(c) + 0.5, device=device)
    arrays = [rng.standard_normal(shape), rng.standard_normal(c), rng.standard_normal(c)]
    assert check_gradients(
        lambda x, w, b: F.batch_norm(x, mean, var, w, b, training=False), arrays,
        device=device)


def test_batch_norm_layer_gradcheck_both_modes(device, float64):
    """The layer itself, through its running-statistic updates, in both modes."""
    layer = nn.BatchNorm2d(2).to(device)
    x = np.random.default_rng(2).standard_normal((2, 2, 3, 3))
    for mode in (True, False):
        layer.train(mode)
        assert check_gradients(lambda x, w, b: F.batch_norm(
            x, layer.running_mean, layer.running_var, w, b, training=mode),
            [x, layer.weight.numpy(), layer.bias.numpy()], device=device)


def test_training_output_is_normalized():
    x = minigrad.tensor((np.random.default_rng(3).standard_normal((50, 4)) * 5 + 2)
                        .astype(np.float32))
    y = nn.BatchNorm1d(4)(x).numpy()
    np.testing.assert_allclose(y.mean(axis=0), 0, atol=1e-5)
    np.testing.assert_allclose(y.var(axis=0), 1, atol=1e-3)   # eps=1e-5 shrinks it a bit


# --------------------------------------------------------- parity with PyTorch
def _torch_copy(torch, layer, dtype):
    cls = torch.nn.BatchNorm1d if isinstance(layer, nn.BatchNorm1d) else torch.nn.BatchNorm2d
    ref = cls(layer.num_features, eps=layer.eps, momentum=layer.momentum,
              affine=layer.affine, track_running_stats=layer.track_running_stats,
              dtype=getattr(torch, np.dtype(dtype).name))
    if layer.affine:
        with torch.no_grad():
            ref.weight.copy_(torch.from_numpy(layer.weight.numpy()))
            ref.bias.copy_(torch.from_numpy(layer.bias.numpy()))
    return ref


def _step_both(torch, layer, ref, x, g, device, rtol, atol):
    xm = minigrad.tensor(x, device=device, requires_grad=True)
    xt = torch.tensor(x, requires_grad=True)
    out, out_ref = layer(xm), ref(xt)
    np.testing.assert_allclose(out.numpy(), out_ref.detach().numpy(), rtol=rtol, atol=atol,
                               err_msg="output")
    out.backward(minigrad.tensor(g, device=device))
    out_ref.backward(torch.from_numpy(g))
    np.testing.assert_allclose(xm.grad.numpy(), xt.grad.numpy(), rtol=rtol, atol=atol,
                               err_msg="input gradient")


def _compare_state(layer, ref, rtol, atol):
    if layer.affine:   # gradients added up over the steps on both sides
        np.testing.assert_allclose(layer.weight.grad.numpy(), ref.weight.grad.numpy(),
                                   rtol=rtol, atol=atol, err_msg="weight gradient")
        np.testing.assert_allclose(layer.bias.grad.numpy(), ref.bias.grad.numpy(),
                                   rtol=rtol, atol=atol, err_msg="bias gradient")
    if layer.track_running_stats:
        np.testing.assert_allclose(layer.running_mean.numpy(), ref.running_mean.numpy(),
                                   rtol=rtol, atol=atol, err_msg="running_mean")
        np.testing.assert_allclose(layer.running_var.numpy(), ref.running_var.numpy(),
                                   rtol=rtol, atol=atol, err_msg="running_var")
        assert layer.num_batches_tracked.item() == ref.num_batches_tracked.item()
    else:
        assert layer.running_mean is None and ref.running_mean is None


@pytest.mark.parametrize("kind", list(SHAPES))
@pytest.mark.parametrize("options", [
    {}, {"momentum": None}, {"momentum": 0.3, "eps": 1e-3}, {"affine": False},
    {"track_running_stats": False}])
@pytest.mark.parametrize("dtype, rtol, atol", [(np.float64, 1e-12, 1e-12),
                                               (np.float32, 1e-5, 1e-5)])
def test_batchnorm_matches_pytorch_over_steps(torch, device, kind, options, dtype, rtol,
                                              atol):
    shape = SHAPES[kind]
    rng = np.random.default_rng(4)
    layer = _layer_for(shape, dtype=dtype, **options)
    if layer.affine:
        layer.weight.data[...] = rng.standard_normal(shape[1]).astype(dtype)
        layer.bias.data[...] = rng.standard_normal(shape[1]).astype(dtype)
    ref = _torch_copy(torch, layer, dtype)
    layer.to(device)
    for step in range(4):
        x = (rng.standard_normal(shape) * (step + 1) + step).astype(dtype)
        g = rng.standard_normal(shape).astype(dtype)
        _step_both(torch, layer, ref, x, g, device, rtol, atol)
        _compare_state(layer, ref, rtol, atol)
    layer.eval()
    ref.eval()
    x, g = rng.standard_normal(shape).astype(dtype), rng.standard_normal(shape).astype(dtype)
    _step_both(torch, layer, ref, x, g, device, rtol, atol)
    _compare_state(layer, ref, rtol, atol)


def test_running_stats_by_hand():
    """One step on [1, 2, 4, 8]: mean 3.75 and unbiased variance 28.75/3."""
    layer = nn.BatchNorm1d(1, dtype=np.float64)
    layer(minigrad.tensor(np.array([[1.0], [2.0], [4.0], [8.0]])))
    np.testing.assert_allclose(layer.running_mean.numpy(), [0.375], rtol=1e-15)
    np.testing.assert_allclose(layer.running_var.numpy(), [0.9 + 0.1 * 28.75 / 3],
                               rtol=1e-15)
    assert layer.num_batches_tracked.item() == 1


def test_cumulative_average_with_momentum_none():
    """momentum=None: running_mean is the plain average of the batch means."""
    layer = nn.BatchNorm1d(1, momentum=None, dtype=np.float64)
    means = []
    for shift in (1.0, 5.0, -3.0):
        x = np.array([[shift - 1], [shift + 1]])
        layer(minigrad.tensor(x))
        means.append(shift)
    np.testing.assert_allclose(layer.running_mean.numpy(), [np.mean(means)], rtol=1e-15)
    np.testing.assert_allclose(layer.running_var.numpy(), [2.0], rtol=1e-15)
    assert layer.num_batches_tracked.item() == 3


def test_eval_uses_running_stats_and_does_not_update_them():
    layer = nn.BatchNorm1d(2, dtype=np.float64)
    layer.running_mean.data[...] = [1.0, -1.0]
    layer.running_var.data[...] = [4.0, 0.25]
    layer.eval()
    x = np.array([[3.0, 0.0]])                 # one example is fine in eval
    y = layer(minigrad.tensor(x)).numpy()
    np.testing.assert_allclose(y, [[2 / np.sqrt(4 + 1e-5), 1 / np.sqrt(0.25 + 1e-5)]])
    np.testing.assert_array_equal(layer.running_mean.numpy(), [1.0, -1.0])
    assert layer.num_batches_tracked.item() == 0


def test_buffers_are_state_not_parameters():
    layer = nn.BatchNorm2d(3)
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"]
    state = layer.state_dict()
    assert list(state) == ["weight", "bias", "running_mean", "running_var",
                           "num_batches_tracked"]
    assert state["num_batches_tracked"].dtype == np.int64
    assert list(nn.BatchNorm2d(3, track_running_stats=False).state_dict()) == ["weight",
                                                                               "bias"]
    assert list(nn.BatchNorm2d(3, affine=False).named_parameters()) == []


def test_state_dict_round_trip():
    layer = nn.BatchNorm1d(2)
    layer(minigrad.randn(5, 2))
    other = nn.BatchNorm1d(2)
    other.load_state_dict(layer.state_dict())
    for key, value in layer.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[key], value)


def test_batchnorm2d_allows_one_example_with_several_positions():
    layer = nn.BatchNorm2d(2)
    y = layer(minigrad.randn(1, 2, 2, 2, requires_grad=True))
    assert y.shape == (1, 2, 2, 2)


def test_recomputation_does_not_update_running_stats():
    layer = nn.BatchNorm1d(2)
    x = minigrad.randn(4, 2)
    with recomputing():
        layer(x)
    np.testing.assert_array_equal(layer.running_mean.numpy(), [0.0, 0.0])
    np.testing.assert_array_equal(layer.running_var.numpy(), [1.0, 1.0])
    assert layer.num_batches_tracked.item() == 0
    layer.merge_running_stats = True
    with recomputing():
        layer(x)
    assert layer.get_pending_stats() is None


def test_no_grad_training_forward_still_updates():
    layer = nn.BatchNorm1d(1)
    with minigrad.no_grad():
        layer(minigrad.tensor([[0.0], [2.0]]))
    assert layer.num_batches_tracked.item() == 1
    np.testing.assert_allclose(layer.running_mean.numpy(), [0.1])


# ------------------------------------------- merged running statistics (exact)
WORKED = np.array([[1.0], [2.0], [4.0], [8.0]])


def test_worked_example_merged_vs_per_micro_batch():
    ghost = nn.BatchNorm1d(1, dtype=np.float64)
    merged = nn.BatchNorm1d(1, dtype=np.float64, merge_running_stats=True)
    for part in (WORKED[:2], WORKED[2:]):
        ghost(minigrad.tensor(part))
        merged(minigrad.tensor(part))
    # the merged layer has not moved yet
    np.testing.assert_array_equal(merged.running_mean.numpy(), [0.0])
    assert merged.num_batches_tracked.item() == 0
    assert merged.apply_merged_running_stats() is True
    np.testing.assert_allclose(merged.running_mean.numpy(), [0.375], rtol=1e-15)
    np.testing.assert_allclose(merged.running_var.numpy(), [1.8583333333333333],
                               rtol=1e-15)
    assert merged.num_batches_tracked.item() == 1
    assert merged.apply_merged_running_stats() is False      # nothing pending now
    np.testing.assert_allclose(ghost.running_mean.numpy(), [0.735], rtol=1e-15)
    np.testing.assert_allclose(ghost.running_var.numpy(), [1.655], rtol=1e-15)
    assert ghost.num_batches_tracked.item() == 2


def test_merged_forward_still_uses_micro_batch_statistics():
    plain = nn.BatchNorm1d(1, dtype=np.float64)
    merged = nn.BatchNorm1d(1, dtype=np.float64, merge_running_stats=True)
    part = minigrad.tensor(WORKED[2:])
    np.testing.assert_array_equal(plain(part).numpy(), merged(part).numpy())


@pytest.mark.parametrize("momentum", [0.1, None])
@pytest.mark.parametrize("sizes", [(3, 5, 2), (1, 1, 8), (10,)])
def test_merged_equals_full_batch(device, momentum, sizes):
    """Any split of each window gives the running statistics of full-batch steps."""
    rng = np.random.default_rng(5)
    full = nn.BatchNorm2d(3, momentum=momentum, dtype=np.float64).to(device)
    merged = nn.BatchNorm2d(3, momentum=momentum, dtype=np.float64,
                            merge_running_stats=True).to(device)
    for window in range(3):
        x = rng.standard_normal((sum(sizes), 3, 2, 3)) * (window + 1) + 7.0
        full(minigrad.tensor(x, device=device))
        start = 0
        for n in sizes:
            merged(minigrad.tensor(x[start:start + n], device=device))
            start += n
        assert merged.apply_merged_running_stats()
        np.testing.assert_allclose(merged.running_mean.numpy(), full.running_mean.numpy(),
                                   rtol=1e-12)
        np.testing.assert_allclose(merged.running_var.numpy(), full.running_var.numpy(),
                                   rtol=1e-12)
        assert merged.num_batches_tracked.item() == full.num_batches_tracked.item()


def test_pending_stats_save_and_restore_mid_window():
    rng = np.random.default_rng(6)
    parts = [rng.standard_normal((4, 2)) for _ in range(3)]
    straight = nn.BatchNorm1d(2, dtype=np.float64, merge_running_stats=True)
    for p in parts:
        straight(minigrad.tensor(p))
    straight.apply_merged_running_stats()

    first = nn.BatchNorm1d(2, dtype=np.float64, merge_running_stats=True)
    first(minigrad.tensor(parts[0]))
    saved = first.get_pending_stats()
    assert set(saved) == {"count", "mean", "m2"} and int(saved["count"]) == 4
    assert all(isinstance(v, np.ndarray) for v in saved.values())
    assert saved["mean"].dtype == np.float64
    resumed = nn.BatchNorm1d(2, dtype=np.float64, merge_running_stats=True)
    resumed.load_state_dict(first.state_dict())
    resumed.set_pending_stats(saved)
    for p in parts[1:]:
        resumed(minigrad.tensor(p))
    resumed.apply_merged_running_stats()
    np.testing.assert_array_equal(resumed.running_mean.numpy(), straight.running_mean.numpy())
    np.testing.assert_array_equal(resumed.running_var.numpy(), straight.running_var.numpy())
    resumed.set_pending_stats(None)
    assert resumed.get_pending_stats() is None


@pytest.mark.parametrize("state, words", [
    ({"count": 2, "mean": np.zeros(2)}, "expected keys"),
    ({"count": 2, "mean": np.zeros(3), "m2": np.zeros(2)}, "mean has shape (3,)"),
    ({"count": 1, "mean": np.zeros(2), "m2": np.zeros(2)}, "count must be an integer >= 2"),
])
def test_set_pending_stats_errors(state, words):
    with pytest.raises(ValueError) as info:
        nn.BatchNorm1d(2).set_pending_stats(state)
    assert words in str(info.value)


def test_model_helpers():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3), nn.ReLU(),
                          nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3)))
    layers = nn.batchnorm_layers(model)
    assert layers == [model[1], model[3][1]]
    assert nn.set_merge_running_stats(model) == 2
    assert all(layer.merge_running_stats for layer in layers)
    assert nn.apply_merged_running_stats(model) is False
    model(minigrad.randn(4, 2))
    assert all(layer.num_batches_tracked.item() == 0 for layer in layers)
    assert nn.apply_merged_running_stats(model) is True
    assert all(layer.num_batches_tracked.item() == 1 for layer in layers)
    nn.set_merge_running_stats(model, enabled=False)
    model(minigrad.randn(4, 2))
    assert all(layer.num_batches_tracked.item() == 2 for layer in layers)
    assert nn.batchnorm_layers(nn.Linear(2, 2)) == []


def test_eval_mode_does_not_merge():
    layer = nn.BatchNorm1d(2, merge_running_stats=True).eval()
    layer(minigrad.randn(3, 2))
    assert layer.get_pending_stats() is None and not layer.apply_merged_running_stats()


# ------------------------------------------------------------------- errors
@pytest.mark.parametrize("call, words", [
    (lambda: nn.BatchNorm1d(3)(minigrad.zeros(2, 3, 4, 4)), "2-D (N, C) or 3-D (N, C, L)"),
    (lambda: nn.BatchNorm2d(3)(minigrad.zeros(2, 3, 4)), "4-D (N, C, H, W)"),
    (lambda: nn.BatchNorm1d(3)(minigrad.zeros(2, 4)), "expected 3 channels"),
    (lambda: nn.BatchNorm1d(3)(minigrad.zeros(1, 3)),
     "Expected more than 1 value per channel when training, got input size (1, 3)"),
    (lambda: nn.BatchNorm1d(3)(minigrad.zeros(1, 3, 1)), "more than 1 value per channel"),
    (lambda: nn.BatchNorm2d(3)(minigrad.zeros(1, 3, 1, 1)), "more than 1 value per channel"),
    (lambda: nn.BatchNorm1d(3, track_running_stats=False).eval()(minigrad.zeros(1, 3)),
     "more than 1 value per channel"),
    (lambda: F.batch_norm(minigrad.zeros(1, 3), None, None, training=True),
     "more than 1 value per channel"),
    (lambda: F.batch_norm(minigrad.zeros(4, 3), None, None), "needs running_mean"),
    (lambda: F.batch_norm(minigrad.zeros(4, 3), minigrad.zeros(2), minigrad.ones(2)),
     "running_mean has shape (2,)"),
    (lambda: F.batch_norm(minigrad.zeros(4, 3), None, None, minigrad.ones(4),
                          training=True), "weight has shape (4,)"),
    (lambda: F.batch_norm(minigrad.zeros(4), None, None, training=True), "(N, C)"),
    (lambda: nn.BatchNorm1d(0), "num_features must be a positive int"),
    (lambda: nn.BatchNorm1d(2, momentum=1.5), "momentum must be in [0, 1]"),
])
def test_batchnorm_errors(call, words):
    with pytest.raises(ValueError) as info:
        call()
    assert words in str(info.value)


def test_failed_forward_does_not_count_a_batch():
    layer = nn.BatchNorm1d(3)
    with pytest.raises(ValueError):
        layer(minigrad.zeros(1, 3))
    assert layer.num_batches_tracked.item() == 0
