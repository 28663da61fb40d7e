"""In-place arithmetic with PyTorch's meaning, the version counter, and the
checks on an assigned ``.grad``."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
from minigrad import nn, optim

OPS = {   # name: (minigrad, torch), each called as op(target, other)
    "+=": (lambda t, o: t.__iadd__(o), lambda t, o: t.__iadd__(o)),
    "-=": (lambda t, o: t.__isub__(o), lambda t, o: t.__isub__(o)),
    "*=": (lambda t, o: t.__imul__(o), lambda t, o: t.__imul__(o)),
    "/=": (lambda t, o: t.__itruediv__(o), lambda t, o: t.__itruediv__(o)),
    "add_": (lambda t, o: t.add_(o), lambda t, o: t.add_(o)),
    "add_ alpha": (lambda t, o: t.add_(o, alpha=-0.5), lambda t, o: t.add_(o, alpha=-0.5)),
    "sub_": (lambda t, o: t.sub_(o), lambda t, o: t.sub_(o)),
    "sub_ alpha": (lambda t, o: t.sub_(o, alpha=2), lambda t, o: t.sub_(o, alpha=2)),
    "mul_": (lambda t, o: t.mul_(o), lambda t, o: t.mul_(o)),
    "div_": (lambda t, o: t.div_(o), lambda t, o: t.div_(o)),
    "copy_": (lambda t, o: t.copy_(o), lambda t, o: t.copy_(o)),
    "clamp_": (lambda t, o: t.clamp_(-0.2, 0.3), lambda t, o: t.clamp_(-0.2, 0.3)),
    "fill_": (lambda t, o: t.fill_(2.5), lambda t, o: t.fill_(2.5)),
    "zero_": (lambda t, o: t.zero_(), lambda t, o: t.zero_()),
}


def _arrays(dtype=np.float32):
    rng = np.random.default_rng(0)
    return rng.standard_normal((2, 3)).astype(dtype), rng.standard_normal(3).astype(dtype) + 3


@pytest.mark.parametrize("name", OPS)
def test_in_place_under_no_grad_keeps_identity_and_matches_torch(name, torch):
    a, b = _arrays()
    mg_op, th_op = OPS[name]
    t = minigrad.tensor(a, requires_grad=True)
    alias = t
    shared = t.detach()                          # shares the array, as in PyTorch
    with minigrad.no_grad():
        out = mg_op(t, minigrad.tensor(b))
    assert out is alias and t is alias
    tt = torch.tensor(a, requires_grad=True)
    with torch.no_grad():
        th_op(tt, torch.tensor(b))
    np.testing.assert_allclose(t.numpy(), tt.detach().numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(shared.numpy(), t.numpy())
    assert t.dtype == np.float32 and t.is_leaf and t.requires_grad


@pytest.mark.parametrize("name", OPS)
def test_in_place_on_a_leaf_requiring_grad_raises(name, torch):
    a, b = _arrays()
    t = minigrad.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being "
                                           "used in an in-place operation"):
        OPS[name][0](t, minigrad.tensor(b))
    np.testing.assert_array_equal(t.numpy(), a)          # unchanged
    tt = torch.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        OPS[name][1](tt, torch.tensor(b))


@pytest.mark.parametrize("name", [n for n in OPS if n not in ("fill_", "zero_")])
def test_in_place_on_an_interior_tensor_is_recorded(name, torch):
    """h op= other inside a graph: gradients equal PyTorch's, to both operands."""
    a, b = _arrays(np.float64)
    x, o = minigrad.tensor(a, requires_grad=True), minigrad.tensor(b, requires_grad=True)
    h = x * 2
    OPS[name][0](h, o)
    (h * h).sum().backward()
    tx, to = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    th = tx * 2
    OPS[name][1](th, to)
    (th * th).sum().backward()
    np.testing.assert_allclose(h.numpy(), th.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-12, atol=1e-12)
    if to.grad is None:
        assert o.grad is None
    else:
        np.testing.assert_allclose(o.grad.numpy(), to.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_constant_tensor_plus_tensor_requiring_grad_becomes_part_of_the_graph(torch):
    w = minigrad.tensor([1.0, 2.0], requires_grad=True)
    acc = minigrad.zeros(2)
    acc += w * w
    acc.sum().backward()
    assert acc.requires_grad and not acc.is_leaf
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0])


def test_sgd_loop_written_by_hand_updates_the_model():
    model = nn.Linear(3, 2)
    before = [p.numpy().copy() for p in model.parameters()]
    x = minigrad.tensor(np.ones((4, 3), dtype=np.float32))
    model(x).sum().backward()
    with minigrad.no_grad():
        for w in model.parameters():
            w -= 0.1 * w.grad
    for p, b in zip(model.parameters(), before):
        np.testing.assert_allclose(p.numpy(), b - 0.1 * p.grad.numpy(), rtol=1e-6)
        assert p.dtype == np.float32 and p.is_leaf and p.requires_grad


def test_optimizers_still_exact_after_in_place_updates(torch):
    a = np.random.default_rng(1).standard_normal(4)
    p = nn.Parameter(a.copy())
    tp = torch.nn.Parameter(torch.tensor(a.copy()))
    opt, topt = optim.Adam([p], lr=0.1), torch.optim.Adam([tp], lr=0.1)
    for _ in range(3):
        (p * p * p).sum().backward()
        (tp * tp * tp).sum().backward()
        opt.step(), topt.step()
        opt.zero_grad(), topt.zero_grad()
        with minigrad.no_grad():
            p.mul_(0.5)
        with torch.no_grad():
            tp.mul_(0.5)
    np.testing.assert_allclose(p.numpy(), tp.detach().numpy(), rtol=1e-12)


def test_dtype_and_shape_rules(torch):
    t = minigrad.tensor(np.zeros((2, 3), dtype=np.float32))
    t += minigrad.tensor(np.ones(3))                         # float64 into float32: cast
    assert t.dtype == np.float32
    t *= 2
    np.testing.assert_array_equal(t.numpy(), 2.0)
    i = minigrad.tensor(np.arange(3))
    i += 2
    assert i.dtype == np.int64 and i.tolist() == [2, 3, 4]
    with pytest.raises(RuntimeError, match="can't be cast"):
        i += 0.5
    with pytest.raises(RuntimeError, match="can't be cast"):
        i /= 2
    ti = torch.arange(3)
    with pytest.raises(RuntimeError, match="can't be cast"):
        ti += 0.5
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        minigrad.zeros(3).add_(minigrad.zeros((2, 3)))
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        torch.zeros(3).add_(torch.zeros(2, 3))
    c = minigrad.tensor(np.zeros(3, dtype=np.int32))
    c.copy_(minigrad.tensor([1.7, -2.2, 3.0]))               # copy_ casts, as PyTorch
    assert c.dtype == np.int32 and c.tolist() == [1, -2, 3]


def test_modified_saved_input_raises_at_backward(torch):
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    c = minigrad.tensor([3.0, 4.0])
    y = x * c
    c += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    tx, tc = torch.tensor([1.0, 2.0], requires_grad=True), torch.tensor([3.0, 4.0])
    ty = tx * tc
    tc += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.sum().backward()


def test_modified_saved_parameter_raises_at_backward():
    w = minigrad.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    with minigrad.no_grad():
        w -= 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()


def test_modified_saved_output_raises_at_backward(torch):
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    y = x.exp()
    with minigrad.no_grad():
        y.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()
    tx = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = tx.exp()
    with torch.no_grad():
        ty.mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.sum().backward()


def test_input_not_saved_may_change(torch):
    """Add keeps no array, so changing its input afterwards is harmless (PyTorch too)."""
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    c = minigrad.tensor([3.0, 4.0])
    y = x + c
    c += 1
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


@pytest.mark.parametrize("later", ["h += 1", "h *= 3", "h[0] = 5.0", "h.clamp_(0, 1.5)"])
def test_an_earlier_use_of_a_re_recorded_tensor_keeps_its_old_value(later, torch):
    # y used h before the in-place change: y's gradient goes to h's old value,
    # and the later uses of h to the new one (PyTorch's result, no error).
    # (y = h * h would save h: PyTorch then raises, since it overwrites h's
    # memory; minigrad gives h a new array and computes the right gradient.)
    a = np.array([1.0, 2.0])
    x, tx = minigrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for h in (tx * 2.0, x * 2.0):
        y = (h * 3).exp()         # uses h's old value; saves only its own output
        exec(later, {"h": h})
        (y + 2 * h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_change_after_backward_is_fine():
    w = minigrad.tensor([1.0, 2.0], requires_grad=True)
    (w * w).sum().backward()
    with minigrad.no_grad():
        w -= 0.5 * w.grad
    (w * w).sum().backward()
    np.testing.assert_array_equal(w.numpy(), [0.0, 0.0])


@pytest.mark.parametrize("bad, error, match", [
    (lambda: minigrad.ones(1), RuntimeError, "the same size"),
    (lambda: minigrad.ones((3, 1)), RuntimeError, "the same size"),
    (lambda: minigrad.tensor(np.ones(3, dtype=np.float64)), RuntimeError, "dtype 'float64'"),
    (lambda: np.ones(3, dtype=np.float32), TypeError, "expected to be a Tensor"),
])
def test_assigned_grad_is_checked(bad, error, match, torch):
    p = nn.Parameter(np.zeros(3, dtype=np.float32))
    with pytest.raises(error, match=match):
        p.grad = bad()
    assert p.grad is None
    tp = torch.nn.Parameter(torch.zeros(3))
    with pytest.raises(RuntimeError, match="the same size"):
        tp.grad = torch.ones(1)


def test_good_grad_assignment_reaches_the_optimizer_and_accumulator():
    p = nn.Parameter(np.zeros(3, dtype=np.float32))
    p.grad = minigrad.tensor(np.ones(3, dtype=np.float32))
    optim.SGD([p], lr=0.5).step()
    np.testing.assert_array_equal(p.numpy(), -0.5)
    p.grad = None
    q = nn.Parameter(np.zeros(2, dtype=np.float32))
    acc = optim.GradientAccumulator(optim.SGD([q], lr=1.0), 1)
    acc.backward((q * 2).sum())
    with pytest.raises(RuntimeError, match="the same size"):
        q.grad = minigrad.ones(1)          # a wrong grad never reaches the update
    assert acc.step()
    np.testing.assert_array_equal(q.numpy(), -2.0)


def test_in_place_and_grad_checks_on_device(device):
    t = minigrad.zeros(3, device=device, requires_grad=True)
    with minigrad.no_grad():
        t += minigrad.ones(3, device=device)
        t.mul_(3)
    assert t.device == device
    np.testing.assert_array_equal(t.numpy(), 3.0)
    if device != "cpu":
        with pytest.raises(RuntimeError, match="different device|located on device"):
            t.grad = minigrad.zeros(3)
        with pytest.raises(RuntimeError, match="expected the other operand on"):
            with minigrad.no_grad():
                t += minigrad.ones(3)


@pytest.mark.parametrize("view", [lambda t: t[0:1], lambda t: t.reshape(2, 1),
                                  lambda t: t.detach(), lambda t: t.T])
def test_change_through_a_view_of_a_saved_tensor_raises(view, torch):
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    c = minigrad.tensor([3.0, 4.0])
    y = x * c
    with minigrad.no_grad():
        view(c).mul_(2)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_changed_index_tensor_raises():
    x = minigrad.tensor([1.0, 2.0, 3.0], requires_grad=True)
    i = minigrad.tensor(np.array([0, 0]))
    y = x[i]
    i += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_checkpointed_segment_input_changed_before_backward_raises():
    x = minigrad.tensor([1.0, 2.0], requires_grad=True)
    h = x * 1
    c = minigrad.tensor([1.0, 1.0])
    out = minigrad.checkpoint(lambda a, b: a * b, h, c)
    c += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_setitem_under_no_grad_updates_the_parameter(torch):
    emb = nn.Embedding(4, 3)
    with minigrad.no_grad():
        emb.weight[0] = 0
        emb.weight[[1, 2], 1:] = minigrad.tensor(np.full((2, 2), 5.0, dtype=np.float32))
    w = emb.weight.numpy()
    np.testing.assert_array_equal(w[0], 0.0)
    np.testing.assert_array_equal(w[1:3, 1:], 5.0)
    assert emb.weight.is_leaf and emb.weight.requires_grad
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        emb.weight[0] = 1


def test_setitem_in_a_graph_matches_torch(torch):
    a = np.arange(6.0).reshape(2, 3)
    v = np.array([10.0, 20.0, 30.0])
    x, val = minigrad.tensor(a, requires_grad=True), minigrad.tensor(v, requires_grad=True)
    h = x * 2
    h[1] = val
    h[0, [0, 0]] = val[:1] * 3
    (h * h).sum().backward()
    tx, tv = torch.tensor(a, requires_grad=True), torch.tensor(v, requires_grad=True)
    th = tx * 2
    th[1] = tv
    th[0, [0, 0]] = tv[:1] * 3
    (th * th).sum().backward()
    np.testing.assert_allclose(h.numpy(), th.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())
    np.testing.assert_allclose(val.grad.numpy(), tv.grad.numpy())


def test_setitem_on_integer_and_bool_tensors():
    i = minigrad.tensor([1, 2, 3])
    i[0] = 1.9                          # cast as PyTorch does
    assert i.dtype == np.int64 and i.tolist() == [1, 2, 3]
    m = minigrad.tensor(np.zeros(3, dtype=bool))
    m[minigrad.tensor([2])] = True
    assert m.tolist() == [False, False, True]
    with pytest.raises(IndexError):
        i[5] = 0


def test_stamps_of_freed_arrays_are_forgotten():
    from minigrad import versions
    for _ in range(3000):
        t = minigrad.zeros(2)
        t += 1
    assert len(versions._array_stamps) <= 2048


_SEQ_OPS = ["add_", "sub_", "mul_", "div_", "+=", "-=", "*=", "/=", "clamp_", "copy_"]


@settings(max_examples=25, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_SEQ_OPS), st.booleans()), min_size=1, max_size=6),
       st.integers(0, 2**16))
def test_random_in_place_sequences_match_torch(ops, seed):
    """A chain of in-place ops on an interior tensor (recorded) and on a copy
    under no_grad: values and gradients equal PyTorch's."""
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((2, 3))
    others = [rng.standard_normal(3) + 3 for _ in ops]
    x, tx = minigrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    ws = [minigrad.tensor(o, requires_grad=True) for o in others]
    tws = [torch.tensor(o, requires_grad=True) for o in others]
    h, th = x * 1.5, tx * 1.5
    for (name, use_grad), w, tw in zip(ops, ws, tws):
        mg_op, th_op = OPS[name]
        o, to = (w, tw) if use_grad else (minigrad.tensor(w.numpy()), tw.detach().clone())
        mg_op(h, o)
        th_op(th, to)
    (h * h).sum().backward()
    (th * th).sum().backward()
    np.testing.assert_allclose(h.numpy(), th.detach().numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    for w, tw in zip(ws, tws):
        if tw.grad is None:
            assert w.grad is None
        else:
            np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    with minigrad.no_grad():
        c = minigrad.tensor(a)
        for (name, _), w in zip(ops, others):
            OPS[name][0](c, minigrad.tensor(w))
    tc = torch.tensor(a)
    for (name, _), w in zip(ops, others):
        OPS[name][1](tc, torch.tensor(w))
    np.testing.assert_allclose(c.numpy(), tc.numpy(), rtol=1e-12, atol=1e-12)


def test_an_optimizer_step_counts_as_an_in_place_change(torch):
    """A graph saved before opt.step() must not backpropagate with the new
    weights: PyTorch raises "modified by an inplace operation", so does minigrad."""
    from minigrad.optim import SGD
    w = minigrad.tensor([1.0, 2.0], requires_grad=True)
    y = (w * w).sum()
    y.backward(retain_graph=True)
    SGD([w], lr=0.5).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.backward()
    tw = torch.tensor([1.0, 2.0], requires_grad=True)
    ty = (tw * tw).sum()
    ty.backward(retain_graph=True)
    torch.optim.SGD([tw], lr=0.5).step()
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        ty.backward()


def test_assignment_with_dropped_leading_ones_gets_the_value_its_gradient(torch):
    # x[0:2] = v with v of shape (1, 2, 3): the write drops v's leading 1
    w = minigrad.tensor(np.zeros((3, 3)), requires_grad=True)
    v = minigrad.tensor(np.arange(6.0).reshape(1, 2, 3), requires_grad=True)
    x = w * 1
    x[0:2] = v
    (x * x).sum().backward()
    tw = torch.zeros((3, 3), dtype=torch.float64, requires_grad=True)
    tv = torch.arange(6.0, dtype=torch.float64).reshape(1, 2, 3).requires_grad_()
    tx = tw * 1
    tx[0:2] = tv
    (tx * tx).sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), tv.grad.numpy())
    np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())


def test_a_mask_assignment_of_the_wrong_shape_names_the_shapes():
    x = minigrad.tensor(np.zeros((3, 3)), requires_grad=True) * 1
    mask = minigrad.tensor(np.array([[True, False, True]] * 3))
    with pytest.raises(ValueError, match=r"(?s)value of shape \(1, 2\).*selected shape \(6,\)"):
        x[mask] = minigrad.ones((1, 2))


def test_a_recorded_write_into_a_tensor_with_a_live_view_is_refused():
    w = minigrad.tensor([0.0, 1.0, 2.0], requires_grad=True)
    for make_alias in (lambda a: a[0:2], lambda a: a.reshape(3, 1), lambda a: a.detach()):
        a = w * 1
        alias = make_alias(a)
        with pytest.raises(RuntimeError, match="a view of this tensor"):
            a += 10
        np.testing.assert_array_equal(alias.numpy().ravel()[:2], [0.0, 1.0])
        del alias
        a += 10                                  # no view left: recorded as usual
        np.testing.assert_array_equal(a.numpy(), [10.0, 11.0, 12.0])
    with minigrad.no_grad():                     # not recorded: the memory itself changes
        a = w * 1
        view = a[0:2]
        a += 10
        np.testing.assert_array_equal(view.numpy(), [10.0, 11.0])


def test_mul_and_div_keep_only_what_backward_reads():
    # y = (w * x).sum() needs x for w's gradient, not w: changing w is harmless
    w = minigrad.tensor([1.0, 2.0], requires_grad=True)
    x = minigrad.tensor([3.0, 4.0])
    y = (w * x).sum()
    z = (w / x).sum()
    with minigrad.no_grad():
        w += 1
    y.backward()
    z.backward()
    np.testing.assert_allclose(w.grad.numpy(), [3.0 + 1 / 3, 4.0 + 1 / 4])
    y2 = (x / w).sum()                           # d/dw = -x / w²: x and w are read
    with minigrad.no_grad():
        x += 1
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y2.backward()


@pytest.mark.parametrize("dtype", [object, str, "datetime64[s]"])
def test_to_refuses_dtypes_a_tensor_cannot_hold(dtype):
    with pytest.raises(TypeError, match="booleans, integers or floats"):
        minigrad.ones(2).to(dtype=dtype)


def test_clamp_in_place_needs_a_bound():
    with pytest.raises(ValueError, match="at least one of min and max"):
        minigrad.ones(2).clamp_(None, None)
