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


class _FakeArray(np.ndarray):
    """An array of the stand-in GPU module below."""


class _FakeCupy:
    """A stand-in for CuPy on a machine without one: its arrays are NumPy arrays
    of another class, so device_of tells them apart."""
    ndarray = _FakeArray

    @staticmethod
    def asarray(x):
        return np.array(x).view(_FakeArray)

    @staticmethod
    def asnumpy(x):
        return np.array(x).view(np.ndarray)


@pytest.fixture
def fake_gpu(monkeypatch):
    """A usable "cuda" device whose module is _FakeCupy."""
    monkeypatch.setattr(backend, "_cupy", _FakeCupy)
    monkeypatch.setattr(backend, "_cupy_tried", True)
    monkeypatch.setattr(backend, "_cuda_usable", True)
    return _FakeCupy


@pytest.mark.exercise("9.1")
def test_array_module_gives_the_gpu_module_when_a_gpu_is_usable(fake_gpu):
    got = backend.array_module("cuda")
    assert got is fake_gpu, f"array_module('cuda') with a usable GPU gave {got!r}, not the " \
                            "CuPy module"


@pytest.mark.exercise("9.1")
def test_array_module_refuses_cupy_without_a_usable_gpu(fake_gpu, monkeypatch):
    monkeypatch.setattr(backend, "_cuda_usable", False)     # CuPy imports, no GPU allocates
    with pytest.raises(RuntimeError, match="no usable GPU"):
        got = backend.array_module("cuda")
        pytest.fail(f"array_module('cuda') gave {got!r} where CuPy imports but no GPU can "
                    "allocate: ask cuda_is_available(), not whether CuPy imported")


@pytest.mark.exercise("9.2")
@pytest.mark.parametrize("source, target", [("cpu", "cuda"), ("cuda", "cpu")])
def test_to_device_sends_the_gradient_back_to_the_source(fake_gpu, source, target):
    a = backend.to_device(np.array([1.0, 2.0]), source)
    fn = ToDevice(target)
    out = fn.forward(a)
    assert backend.device_of(out) == target, \
        f"ToDevice({target!r}).forward of a {source} array gave a {backend.device_of(out)} array"
    gx = fn.backward(backend.to_device(np.array([0.5, -1.0]), target))
    assert backend.device_of(gx) == source, \
        f"the input came from {source}, its gradient must go back there, got " \
        f"{backend.device_of(gx)}: record the source device in forward, copy g back to it"
    assert np.array_equal(backend.asnumpy(gx), [0.5, -1.0])
