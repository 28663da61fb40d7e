"""Exercises of chapter 9 (the GPU)."""
import numpy as np
import pytest

import minigrad
from minigrad import backend
from minigrad.tensor import ToDevice


@pytest.mark.exercise("9.1")
def test_array_module_is_the_one_door():
    assert backend.array_module("cpu") is np
    if minigrad.cuda.is_available():
        import cupy
        assert backend.array_module("cuda") is cupy
        assert backend.array_module("cuda:0") is cupy
    else:
        with pytest.raises(RuntimeError) as info:
            backend.array_module("cuda")
        assert type(info.value) is RuntimeError and "no usable GPU" in str(info.value), \
            f"array_module('cuda') without a GPU must raise RuntimeError saying no usable " \
            f"GPU was found, got {type(info.value).__name__}: {info.value}"


@pytest.mark.exercise("9.2")
def test_to_device_moves_the_tensor_and_its_gradient_back(device):
    x = minigrad.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    fn = ToDevice(device)
    y = fn(x)
    assert y.device == device, f"ToDevice({device!r}) gave a tensor on {y.device}"
    assert np.array_equal(y.numpy(), [1.0, 2.0, 3.0])
    g = backend.to_device(np.array([0.5, -1.0, 2.0]), device)
    gx = fn.backward(g)
    assert backend.device_of(gx) == "cpu", \
        "the gradient goes back to the device the input came from (cpu)"
    assert np.array_equal(backend.asnumpy(gx), [0.5, -1.0, 2.0])
