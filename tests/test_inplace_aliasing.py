"""In-place operations whose target shares memory: views of another tensor,
broadcast views, read-only arrays, and the target as its own operand
(``h += h``), compared with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad


_VIEWS = {
    "slice": lambda h: h[0:1],
    "row": lambda h: h[1],
    "reshape": lambda h: h.reshape(6),
    "transpose": lambda h: h.T,
}
_VIEW_OPS = {
    "+=": lambda v: v.__iadd__(10.0),
    "mul_": lambda v: v.mul_(2.0),
    "fill_": lambda v: v.fill_(0.0),
    "setitem": lambda v: v.__setitem__(0, 7.0),
}


@pytest.mark.parametrize("view", _VIEWS)
@pytest.mark.parametrize("op", _VIEW_OPS)
def test_recorded_in_place_on_a_view_raises_instead_of_losing_the_change(view, op, torch):
    """PyTorch writes through a view into its base (and rebases the base's
    graph); minigrad, which gives a recorded in-place result a new array,
    would leave the base with its old values and gradient, so it refuses."""
    a = np.arange(6.0).reshape(2, 3)
    th = torch.tensor(a, requires_grad=True) * 1
    _VIEW_OPS[op](_VIEWS[view](th))
    assert not np.array_equal(th.detach().numpy(), a)      # PyTorch changed the base
    h = minigrad.tensor(a, requires_grad=True) * 1
    with pytest.raises(RuntimeError, match="view"):
        _VIEW_OPS[op](_VIEWS[view](h))
    np.testing.assert_array_equal(h.numpy(), a)              # nothing half-done
    leaf = minigrad.tensor(a, requires_grad=True)             # PyTorch raises here too
    with pytest.raises(RuntimeError, match="view|leaf"):
        _VIEW_OPS[op](_VIEWS[view](leaf))
    with minigrad.no_grad():                                  # not recorded: writes through
        _VIEW_OPS[op](_VIEWS[view](h))
    with torch.no_grad():
        t2 = torch.tensor(a)
        _VIEW_OPS[op](_VIEWS[view](t2))
    np.testing.assert_array_equal(h.numpy(), t2.numpy())


@pytest.mark.xfail(strict=True, reason="minigrad does not track views: a view taken before "
                   "a recorded in-place change of its base keeps the old values")
def test_view_taken_before_a_recorded_change_of_its_base_sees_the_new_values(torch):
    a = np.arange(3.0)
    h = minigrad.tensor(a, requires_grad=True) * 1
    v = h[0:2]
    h *= 2
    np.testing.assert_array_equal(v.numpy(), [0.0, 2.0])     # PyTorch: the view follows


_SELF_OPS = {
    "+=": lambda h: h.__iadd__(h),
    "-=": lambda h: h.__isub__(h),
    "copy_": lambda h: h.copy_(h),
    "add_ alpha": lambda h: h.add_(h, alpha=2),
    "sub_ alpha": lambda h: h.sub_(h, alpha=0.5),
}


@pytest.mark.parametrize("name", _SELF_OPS)
def test_recorded_in_place_op_with_the_target_as_operand_matches_torch(name, torch):
    a = np.array([1.0, -2.0, 3.0])
    x, tx = minigrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    h, th = x * 2, tx * 2
    _SELF_OPS[name](h)
    _SELF_OPS[name](th)
    (h * h).sum().backward()
    (th * th).sum().backward()
    np.testing.assert_allclose(h.numpy(), th.detach().numpy())
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


def test_recorded_square_in_place_uses_the_old_value():
    """``h *= h`` is h_new = h_old ** 2 (PyTorch raises at backward here, having
    saved the overwritten h; minigrad keeps the old array in the graph)."""
    a = np.array([1.0, -2.0, 3.0])
    x = minigrad.tensor(a, requires_grad=True)
    h = x * 2
    h *= h
    h.sum().backward()
    np.testing.assert_allclose(h.numpy(), (2 * a) ** 2)
    np.testing.assert_allclose(x.grad.numpy(), 8 * a)       # d(4 x^2)/dx


@pytest.mark.parametrize("case", ["h[0] = h[1] * 2", "h += h.sum()", "h -= h.mean()",
                                  "h.add_(h.exp().sum())"])
def test_in_place_op_whose_operand_was_computed_from_the_target_matches_torch(case, torch):
    a = np.array([1.0, 2.0, 3.0])
    x, tx = minigrad.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    for h in (tx * 2, x * 2):                     # torch first: it must succeed
        exec(case, {"h": h})
        (h * h).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy())


@pytest.mark.parametrize("op", _VIEW_OPS)
def test_in_place_on_a_broadcast_view_raises_a_clear_error(op, torch):
    """One memory location standing for several elements cannot be written
    element by element: PyTorch's RuntimeError, not NumPy's "assignment
    destination is read-only"; a read-only array is named as such.  (PyTorch
    lets fill_ and a row assignment through, since every alias gets one value;
    minigrad's broadcast views are read-only NumPy views, so it refuses those
    too.)"""
    if op in ("+=", "mul_"):
        with pytest.raises(RuntimeError, match="single memory location"):
            _VIEW_OPS[op](torch.tensor([1.0, 2.0, 3.0]).expand(2, 3))
    x = minigrad.tensor([1.0, 2.0, 3.0])
    with pytest.raises(RuntimeError, match="single memory location"):
        _VIEW_OPS[op](x.broadcast_to(2, 3))
    np.testing.assert_array_equal(x.numpy(), [1.0, 2.0, 3.0])
    frozen = np.ones((2, 3))
    frozen.flags.writeable = False
    with pytest.raises(RuntimeError, match="read-only"):
        _VIEW_OPS[op](minigrad.Tensor(frozen))
