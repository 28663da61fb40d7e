"""The array-module shim: device names, moving arrays, scatter-add, GPU detection."""
import importlib.util
import subprocess
import sys

import numpy as np
import pytest

import minigrad
from minigrad import backend


def test_is_available_is_a_bool_and_never_raises():
    first = minigrad.cuda.is_available()
    assert isinstance(first, bool)
    assert minigrad.cuda.is_available() is first          # cached, same answer


@pytest.mark.skipif(importlib.util.find_spec("cupy") is None,
                    reason="CuPy is not installed: the no-driver path cannot be exercised")
def test_is_available_is_false_without_a_gpu_even_when_cupy_imports():
    # CuPy installs and imports on machines without a GPU; it fails only at the
    # first allocation.  Run in a fresh interpreter so nothing is cached.
    code = ("import minigrad, cupy; "
            "ok = True\n"
            "try:\n    cupy.zeros(1)\nexcept Exception:\n    ok = False\n"
            "assert minigrad.cuda.is_available() is ok, (minigrad.cuda.is_available(), ok)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cuda_without_a_gpu_is_a_clear_error():
    if minigrad.cuda.is_available():
        pytest.skip("a GPU is usable here")
    with pytest.raises(RuntimeError, match="no usable GPU"):
        minigrad.tensor([1.0], device="cuda")
    with pytest.raises(RuntimeError, match="no usable GPU"):
        minigrad.zeros(2, device="cuda")


@pytest.mark.parametrize("name, expected", [("cpu", "cpu"), (None, "cpu"), ("cuda", "cuda"),
                                            ("cuda:0", "cuda")])
def test_normalize_device(name, expected):
    assert backend.normalize_device(name) == expected


@pytest.mark.parametrize("bad", ["gpu", "tpu", "CPU", 0])
def test_unknown_device_names_are_rejected(bad):
    with pytest.raises(ValueError, match="unknown device"):
        backend.normalize_device(bad)


def test_device_of_and_array_module(device):
    xp = backend.array_module(device)
    a = xp.arange(3.0)
    assert backend.device_of(a) == device
    assert backend.get_array_module(a) is xp
    np.testing.assert_array_equal(backend.asnumpy(a), [0.0, 1.0, 2.0])
    assert isinstance(backend.asnumpy(a), np.ndarray)


def test_to_device_round_trip(device):
    a = np.arange(6.0).reshape(2, 3)
    moved = backend.to_device(a, device)
    assert backend.device_of(moved) == device
    np.testing.assert_array_equal(backend.asnumpy(moved), a)
    assert backend.to_device(a, "cpu") is a                 # no copy when already there


def test_scatter_add_adds_repeated_indices(device):
    xp = backend.array_module(device)
    target = xp.zeros(4)
    backend.scatter_add(target, xp.asarray([0, 2, 2, 2]), xp.asarray([1.0, 1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(backend.asnumpy(target), [1.0, 0.0, 6.0, 0.0])


def test_gpu_memory_stats_shape():
    stats = backend.gpu_memory_stats()
    assert set(stats) >= {"used", "total"}
    if not minigrad.cuda.is_available():
        assert stats == {"used": 0, "total": 0}


# CuPy wraps an out-of-bounds integer index around; the GPU paths check first
# with backend.check_index_bounds, whose verdict must be NumPy's on every index.
_INDEX_PARTS = [0, 2, -3, 3, -4, slice(None), slice(1, None), None, Ellipsis,
                np.array([0, 2]), np.array([[1], [-3]]), np.array([3]), np.array([-4, 0]),
                np.array([True, False, True])]


@pytest.mark.parametrize("seed", range(30))
def test_check_index_bounds_agrees_with_numpy(seed):
    rng = np.random.default_rng(seed)
    a = np.zeros((3, 3, 3))
    for _ in range(40):
        picks = rng.integers(0, len(_INDEX_PARTS), int(rng.integers(1, 4)))
        index = tuple(_INDEX_PARTS[i] for i in picks)
        if sum(p is Ellipsis for p in index) > 1:
            continue
        try:
            a[index]
            numpy_error = None
        except IndexError as error:
            numpy_error = error
        except ValueError:           # shape mismatch of broadcast arrays: not a bound
            continue
        if numpy_error is None:
            backend.check_index_bounds(index, a.shape)
        elif "out of bounds" in str(numpy_error) or "too many indices" in str(numpy_error):
            with pytest.raises(IndexError) as ours:
                backend.check_index_bounds(index, a.shape)
            if "out of bounds" in str(numpy_error):
                assert "out of bounds" in str(ours.value)


def test_check_index_bounds_names_the_index_axis_and_size():
    with pytest.raises(IndexError, match="index 7 is out of bounds for axis 1 with size 3"):
        backend.check_index_bounds((slice(None), np.array([0, 7])), (2, 3))
    with pytest.raises(IndexError, match="index -5 is out of bounds for axis 0 with size 4"):
        backend.check_index_bounds(np.array([-5]), (4,))


class _DeviceArray:
    """Stands in for a CuPy array where no GPU is: like CuPy's, its implicit
    conversion to NumPy raises."""

    def __init__(self, array):
        self.array = array
        self.dtype, self.shape = array.dtype, array.shape

    def __array__(self, *args, **kwargs):
        raise TypeError("Implicit conversion to a NumPy array is not allowed")

    def astype(self, dtype, copy=True):
        return _DeviceArray(self.array.astype(dtype, copy=copy))


def test_as_array_keeps_a_device_array_on_its_device(monkeypatch):
    monkeypatch.setattr(backend, "is_cupy_array", lambda x: isinstance(x, _DeviceArray))
    gpu = _DeviceArray(np.arange(3))
    assert backend.as_array(gpu) is gpu
    cast = backend.as_array(gpu, np.float32)
    assert isinstance(cast, _DeviceArray) and cast.dtype == np.float32
    with pytest.raises(TypeError, match="Implicit conversion"):
        np.asarray(gpu)                                  # what the old paths did
    assert backend.as_array([1, 2], np.float64).dtype == np.float64


@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_all_finite_finds_any_non_finite_entry_in_any_array(bad):
    arrays = [np.zeros((2, 3)), np.ones(4, dtype=np.float32), np.empty(0)]
    assert backend.all_finite(arrays) and backend.all_finite([])
    arrays[1][2] = bad
    assert not backend.all_finite(arrays)
    assert not backend.all_finite([np.array(bad, dtype=np.float16)])   # 0-d, float16
