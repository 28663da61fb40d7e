"""Gradient checkpointing: same outputs and gradients as the plain run, less memory."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn
from minigrad import random as mg_random
from minigrad.testing import max_rel_diff

TOL = 1e-12   # float64 relative: equal up to rounding


# ---------------------------------------------------------------- helpers

def make_weights(rng, widths, device="cpu"):
    """Leaf weight matrices (requires grad) for a tanh MLP with the given widths."""
    return [minigrad.tensor(rng.standard_normal((a, b)) / np.sqrt(a), device=device,
                            requires_grad=True)
            for a, b in zip(widths[:-1], widths[1:])]


def tanh_layers(weights):
    """One callable per weight: h -> tanh(h @ W)."""
    return [(lambda h, W=W: (h @ W).tanh()) for W in weights]


def run_chain(layers, x):
    for layer in layers:
        x = layer(x)
    return x


def grads_of(tensors):
    return [t.grad.numpy().copy() for t in tensors]


def clear(tensors):
    for t in tensors:
        t.grad = None


def assert_close(a_list, b_list, tol=TOL):
    assert max_rel_diff(a_list, b_list) <= tol


# ------------------------------------------------------------ gradients

@pytest.mark.parametrize("segments", [1, 2, 3, 4, 6])
def test_checkpoint_sequential_matches_plain_run(device, float64, segments):
    rng = np.random.default_rng(1)
    weights = make_weights(rng, [5, 8, 8, 8, 8, 8, 3], device)
    layers = tanh_layers(weights)
    x = minigrad.tensor(rng.standard_normal((4, 5)), device=device, requires_grad=True)
    v = minigrad.tensor(rng.standard_normal((4, 3)), device=device)
    leaves = weights + [x]

    plain = run_chain(layers, x)
    plain.backward(v)
    expected = grads_of(leaves)
    clear(leaves)

    out = minigrad.checkpoint_sequential(layers, segments, x)
    np.testing.assert_array_equal(out.numpy(), plain.numpy())
    out.backward(v)
    assert_close(grads_of(leaves), expected)


@settings(max_examples=15, deadline=None)
@given(depth=st.integers(1, 7), data=st.data())
def test_any_segmentation_matches_plain_run(depth, data):
    minigrad.set_default_dtype(np.float64)
    segments = data.draw(st.integers(1, depth), label="segments")
    rng = np.random.default_rng(depth)
    weights = make_weights(rng, [3] * (depth + 1))
    layers = tanh_layers(weights)
    x = minigrad.tensor(rng.standard_normal((2, 3)), requires_grad=True)

    run_chain(layers, x).sum().backward()
    expected = grads_of(weights + [x])
    clear(weights + [x])
    minigrad.checkpoint_sequential(layers, segments, x).sum().backward()
    assert_close(grads_of(weights + [x]), expected)


def test_mlp_module_matches_plain_run(float64):
    model = nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 16), nn.Tanh(),
                          nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
    x = minigrad.randn(5, 6)
    target = minigrad.tensor(np.arange(5) % 4)
    params = list(model.parameters())

    nn.functional.cross_entropy(model(x), target).backward()
    expected = grads_of(params)
    model.zero_grad()

    out = minigrad.checkpoint_sequential(model, 3, x)
    nn.functional.cross_entropy(out, target).backward()
    for got, want in zip(grads_of(params), expected):
        np.testing.assert_array_equal(got, want)    # same operations, same bits
    assert x.grad is None     # the input did not require grad


def test_weight_shared_across_segments(float64):
    rng = np.random.default_rng(13)
    W = minigrad.tensor(rng.standard_normal((4, 4)) / 2, requires_grad=True)
    layers = tanh_layers([W] * 6)            # one weight in every layer
    x = minigrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)

    run_chain(layers, x).sum().backward()
    expected = grads_of([W, x])
    clear([W, x])
    minigrad.checkpoint_sequential(layers, 3, x).sum().backward()
    assert_close(grads_of([W, x]), expected)


def test_gradcheck_through_checkpoint(float64):
    rng = np.random.default_rng(2)
    W = minigrad.tensor(rng.standard_normal((3, 3)), requires_grad=True)

    def block(h, w):
        return ((h @ w).tanh() @ w).sigmoid()

    x = minigrad.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    assert minigrad.gradcheck(lambda h, w: minigrad.checkpoint(block, h, w), [x, W])


def test_multi_input_fn_with_non_tensor_argument(float64):
    rng = np.random.default_rng(3)
    a = minigrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    b = minigrad.tensor(rng.standard_normal((4,)), requires_grad=True)
    W = minigrad.tensor(rng.standard_normal((4, 4)), requires_grad=True)   # closed over

    def fn(a, scale, b):
        return ((a @ W) * scale + b).tanh()

    fn(a, 3, b).sum().backward()
    expected = grads_of([a, b, W])
    clear([a, b, W])
    out = minigrad.checkpoint(fn, a, 3, b)
    assert out.creator.__class__.__name__ == "CheckpointFunction"
    out.sum().backward()
    assert_close(grads_of([a, b, W]), expected)


def test_multiple_outputs(float64):
    rng = np.random.default_rng(4)
    x = minigrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)
    W = minigrad.tensor(rng.standard_normal((4, 4)), requires_grad=True)

    def fn(x):
        h = (x @ W).tanh()
        return h, (h * h).sum(axis=1)

    def loss(h, s):
        return (h * 2.0).sum() + (s * s).sum()

    loss(*fn(x)).backward()
    expected = grads_of([x, W])
    clear([x, W])
    loss(*minigrad.checkpoint(fn, x)).backward()
    assert_close(grads_of([x, W]), expected)

    # only one of the outputs used: the other's gradient is simply absent
    clear([x, W])
    fn(x)[1].sum().backward()
    expected = grads_of([x, W])
    clear([x, W])
    minigrad.checkpoint(fn, x)[1].sum().backward()
    assert_close(grads_of([x, W]), expected)


def test_inputs_without_grad_still_train_parameters(float64):
    rng = np.random.default_rng(5)
    x = minigrad.tensor(rng.standard_normal((3, 4)))          # data: no grad
    W = minigrad.tensor(rng.standard_normal((4, 2)), requires_grad=True)

    (x @ W).tanh().sum().backward()
    expected = grads_of([W])
    W.grad = None
    out = minigrad.checkpoint(lambda h: (h @ W).tanh(), x)
    assert out.requires_grad
    out.sum().backward()
    assert_close(grads_of([W]), expected)
    assert x.grad is None


def test_input_mixing_grad_and_no_grad(float64):
    rng = np.random.default_rng(6)
    a = minigrad.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    c = minigrad.tensor(rng.standard_normal((2, 3)))
    out = minigrad.checkpoint(lambda a, c: (a * c).exp(), a, c)
    out.sum().backward()
    np.testing.assert_allclose(a.grad.numpy(), (c.numpy() * np.exp(a.numpy() * c.numpy())),
                               rtol=1e-14)
    assert c.grad is None


def test_nested_checkpoints(float64):
    rng = np.random.default_rng(7)
    weights = make_weights(rng, [4, 4, 4, 4, 4])
    layers = tanh_layers(weights)
    x = minigrad.tensor(rng.standard_normal((3, 4)), requires_grad=True)

    def inner(h):
        return minigrad.checkpoint(lambda g: layers[2](layers[1](g)), h)

    def outer(h):
        return layers[3](inner(layers[0](h)))

    outer(x).sum().backward()
    expected = grads_of(weights + [x])
    clear(weights + [x])
    minigrad.checkpoint(outer, x).sum().backward()
    assert_close(grads_of(weights + [x]), expected)


def test_retain_graph_runs_the_recomputation_twice(float64):
    rng = np.random.default_rng(8)
    x = minigrad.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    W = minigrad.tensor(rng.standard_normal((3, 3)), requires_grad=True)
    loss = minigrad.checkpoint(lambda h: (h @ W).tanh(), x).sum()
    loss.backward(retain_graph=True)
    once = grads_of([x, W])
    loss.backward()
    np.testing.assert_allclose(grads_of([x, W])[0], 2 * once[0], rtol=1e-15)
    np.testing.assert_allclose(grads_of([x, W])[1], 2 * once[1], rtol=1e-15)


def test_checkpoint_under_no_grad_records_nothing():
    x = minigrad.randn(2, 3, requires_grad=True)
    with minigrad.no_grad():
        out = minigrad.checkpoint(lambda h: h * 2, x)
    assert not out.requires_grad and out.creator is None


# ------------------------------------------------------- random state

def test_random_draws_are_replayed_and_state_restored(float64):
    x = minigrad.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)

    def noisy(h):
        return h * minigrad.rand(3, 4) + minigrad.randn(3, 4) * h * h

    minigrad.manual_seed(11)
    noisy(x).sum().backward()
    expected = grads_of([x])
    after_plain = minigrad.rand(5).numpy()
    x.grad = None

    minigrad.manual_seed(11)
    out = minigrad.checkpoint(noisy, x)
    out.sum().backward()              # recomputes: draws again from the saved state
    after_checkpoint = minigrad.rand(5).numpy()
    assert_close(grads_of([x]), expected)
    # backward put the state back to where the forward pass left it
    np.testing.assert_array_equal(after_checkpoint, after_plain)


def test_dropout_draws_the_same_masks(float64):
    model = nn.Sequential(nn.Linear(6, 32), nn.ReLU(), nn.Dropout(0.5),
                          nn.Linear(32, 32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 2))
    x = minigrad.randn(8, 6)
    params = list(model.parameters())

    minigrad.manual_seed(3)
    plain = model(x)
    plain.sum().backward()
    expected = grads_of(params)
    model.zero_grad()

    minigrad.manual_seed(3)
    out = minigrad.checkpoint_sequential(model, 2, x)
    np.testing.assert_array_equal(out.numpy(), plain.numpy())
    state_after_forward = mg_random.get_rng_state()
    out.sum().backward()
    assert_close(grads_of(params), expected)
    assert mg_random.get_rng_state()["offset"] == state_after_forward["offset"]


def test_batchnorm_running_stats_updated_once(float64):
    def make():
        minigrad.manual_seed(5)
        return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(),
                             nn.Linear(8, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))

    x = minigrad.tensor(np.random.default_rng(9).standard_normal((16, 4)))
    plain_model, ckpt_model = make(), make()
    plain_model(x).sum().backward()
    minigrad.checkpoint_sequential(ckpt_model, 3, x).sum().backward()

    assert_close(grads_of(list(ckpt_model.parameters())),
                 grads_of(list(plain_model.parameters())))
    for name in ("running_mean", "running_var", "num_batches_tracked"):
        for i in (1, 4):
            np.testing.assert_array_equal(getattr(ckpt_model[i], name).numpy(),
                                          getattr(plain_model[i], name).numpy(),
                                          err_msg=f"layer {i} {name}")
    assert ckpt_model[1].num_batches_tracked.item() == 1


def test_recomputation_is_flagged():
    seen = []

    def fn(h):
        seen.append(minigrad.autograd.is_recomputing())
        return h * 2

    minigrad.checkpoint(fn, minigrad.randn(2, requires_grad=True)).sum().backward()
    assert seen == [False, True]
    assert not minigrad.autograd.is_recomputing()


# ----------------------------------------------------------- memory

def test_checkpointing_keeps_fewer_activations():
    """A 16-layer chain keeps ~16 activations plainly, ~4 + 4 with 4 segments."""
    rng = np.random.default_rng(10)
    weights = make_weights(rng, [64] * 17)
    layers = tanh_layers(weights)
    x = minigrad.tensor(rng.standard_normal((256, 64)))

    def peak(run):
        clear(weights)
        with minigrad.memory.peak() as m:
            run().sum().backward()
        return m.peak_bytes

    plain = peak(lambda: run_chain(layers, x))
    checkpointed = peak(lambda: minigrad.checkpoint_sequential(layers, 4, x))
    assert checkpointed < 0.7 * plain


# ------------------------------------------------------------ parity

def test_parity_with_torch_checkpoint_sequential(torch, float64):
    from torch.utils.checkpoint import checkpoint_sequential as torch_ckpt

    rng = np.random.default_rng(12)
    ws = [rng.standard_normal((6, 6)) / 3 for _ in range(5)]
    x_np = rng.standard_normal((4, 6))

    mg_w = [minigrad.tensor(w, requires_grad=True) for w in ws]
    mg_x = minigrad.tensor(x_np, requires_grad=True)
    out = minigrad.checkpoint_sequential(tanh_layers(mg_w), 2, mg_x)
    out.sum().backward()

    th_w = [torch.tensor(w, requires_grad=True) for w in ws]
    th_x = torch.tensor(x_np, requires_grad=True)
    layers = torch.nn.Sequential(*[_TorchTanhMatmul(torch, w) for w in th_w])
    ref = torch_ckpt(layers, 2, th_x, use_reentrant=False)
    ref.sum().backward()

    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=1e-12)
    for m, t in zip(mg_w + [mg_x], th_w + [th_x]):
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-10, atol=1e-12)


def _TorchTanhMatmul(torch, w):      # noqa: N802 (builds a torch.nn.Module)
    class Block(torch.nn.Module):
        def forward(self, h):
            return torch.tanh(h @ w)
    return Block()


# ------------------------------------------------------------ errors

@pytest.mark.parametrize("segments", [0, -1, 4])
def test_segments_out_of_range(segments):
    layers = [nn.ReLU(), nn.ReLU(), nn.ReLU()]
    with pytest.raises(ValueError, match=r"between 1 and the number of layers \(3\)"):
        minigrad.checkpoint_sequential(layers, segments, minigrad.randn(2))


def test_segments_must_be_an_int():
    with pytest.raises(TypeError, match="segments must be an int"):
        minigrad.checkpoint_sequential([nn.ReLU()], 1.0, minigrad.randn(2))


def test_fn_must_return_tensors():
    x = minigrad.randn(2, requires_grad=True)
    with pytest.raises(TypeError, match="fn must return a Tensor"):
        minigrad.checkpoint(lambda h: h.numpy(), x)
    with pytest.raises(TypeError, match="fn must be callable"):
        minigrad.checkpoint(3, x)
