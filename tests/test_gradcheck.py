"""minigrad.gradcheck: it passes correct gradients, catches wrong ones with a
message naming the input, the index and both values, and skips constant inputs."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
from minigrad import Function, GradcheckError


class WrongSquare(Function):
    """x**2 with a wrong backward (3x instead of 2x) at one element."""

    def forward(self, a):
        self.a = a
        return a * a

    def backward(self, g):
        grad = 2 * self.a * g
        grad.reshape(-1)[-1] *= 1.5
        return grad


def _x(data, requires_grad=True):
    return minigrad.tensor(np.asarray(data, dtype=np.float64), requires_grad=requires_grad)


def test_passes_for_a_correct_gradient():
    assert minigrad.gradcheck(lambda a, b: (a * b).tanh(), [_x([[0.1, 0.2]]), _x([0.3, -1.0])])


def test_raises_naming_input_index_and_values():
    with pytest.raises(GradcheckError) as info:
        minigrad.gradcheck(lambda c, x: c * WrongSquare()(x),
                           [_x(1.0, requires_grad=False), _x([[1.0, 2.0], [3.0, 4.0]])])
    message = str(info.value)
    assert "input 1" in message and "index (1, 1)" in message
    assert "analytical" in message and "numerical" in message
    assert isinstance(info.value, AssertionError)


def test_returns_false_when_asked_not_to_raise():
    assert minigrad.gradcheck(WrongSquare(), [_x([1.0, 2.0])], raise_exception=False) is False


def test_checks_in_float64_even_for_float32_inputs():
    x = minigrad.tensor([0.3, 0.7], dtype=np.float32, requires_grad=True)
    assert minigrad.gradcheck(lambda t: t.exp() * t, [x])
    assert x.dtype == np.float32 and x.grad is None      # the caller's tensor is untouched


def test_skips_inputs_that_need_no_gradient_and_non_tensor_arguments():
    calls = []

    def fn(a, scale, b):
        calls.append(scale)
        return a * scale + b

    assert minigrad.gradcheck(fn, [_x([1.0, 2.0]), 3.0, _x([5.0], requires_grad=False)])
    # 1 analytical pass + 2 evaluations per element of the one checked input
    assert len(calls) == 1 + 2 * 2


def test_nothing_to_check_is_an_error():
    with pytest.raises(ValueError, match="no input requires grad"):
        minigrad.gradcheck(lambda a: a * 2, [_x([1.0], requires_grad=False)])


def test_multiple_outputs_and_tolerances():
    def fn(a):
        return a * 2, a.exp()

    assert minigrad.gradcheck(fn, _x([0.5, -0.5]))
    assert minigrad.gradcheck(fn, [_x([0.5, -0.5])], eps=1e-4, atol=1e-6, rtol=1e-6)


def test_an_output_of_the_wrong_dtype_is_reported():
    with pytest.raises(TypeError, match="dtype float32"):
        minigrad.gradcheck(lambda a: a.to(np.float32), [_x([1.0])])


def test_catches_a_gradient_missing_entirely():
    class Detached(Function):
        def forward(self, a):
            return a * 2

        def backward(self, g):
            return None

    with pytest.raises(GradcheckError, match=r"analytical 0.0, numerical 0.25"):
        minigrad.gradcheck(lambda a: Detached()(a), [_x([1.0])])


def test_a_non_contiguous_input_is_perturbed_where_it_lives():
    # A transposed array: gradcheck must perturb the input itself, not a copy.
    data = np.arange(1.0, 7.0).reshape(2, 3).T
    x = minigrad.Tensor(data, requires_grad=True)
    assert minigrad.gradcheck(lambda a: (a * a).sum(), [x])
