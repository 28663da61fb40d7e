"""minigrad.testing reads values, never a ``.data`` attribute that happens to exist.

On a NumPy array ``.data`` is a memoryview of the buffer (which NumPy accepts, so
a CPU run cannot see the mistake); on a CuPy array it is a device pointer.  The
array type below behaves like the CuPy case on the CPU: its ``.data`` is not the
values.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
from minigrad.experiments.common import snapshot
from minigrad.testing import max_abs_diff, max_rel_diff, to_numpy


class PointerData(np.ndarray):
    """An ndarray whose ``.data`` is an opaque handle, like a CuPy device pointer."""

    @property
    def data(self):
        return object()


def _pointer_array(values):
    return np.asarray(values, dtype=np.float64).view(PointerData)


def test_arrays_whose_data_attribute_is_not_their_values():
    a = _pointer_array([1.0, 2.0, 3.0])
    b = _pointer_array([1.0, 2.5, 3.0])
    assert max_abs_diff([a], [b]) == 0.5
    assert max_rel_diff([a], [b]) == pytest.approx(0.5 / 3.0)
    np.testing.assert_array_equal(to_numpy(a), [1.0, 2.0, 3.0])


def test_snapshot_of_raw_arrays_and_tensors():
    raw = _pointer_array([[1.0, 2.0]])
    t = minigrad.tensor([3.0, 4.0])
    copies = snapshot([raw, t])
    np.testing.assert_array_equal(copies[0], [[1.0, 2.0]])
    np.testing.assert_array_equal(copies[1], [3.0, 4.0])
    copies[1][0] = 100.0                      # copies, not views
    assert t.numpy()[0] == 3.0


def test_every_accepted_kind(device):
    xp = minigrad.backend.array_module(device)
    for x in (minigrad.tensor([1.0, 2.0], device=device), xp.asarray([1.0, 2.0]),
              [1.0, 2.0], (1.0, 2.0)):
        out = to_numpy(x)
        assert type(out) is np.ndarray
        np.testing.assert_array_equal(out, [1.0, 2.0])
    assert to_numpy(np.float32(2.5)) == 2.5 and to_numpy(3) == 3


def test_an_object_with_a_data_attribute_is_refused():
    class Wrapper:
        data = np.ones(2)

    with pytest.raises(TypeError, match="got Wrapper"):
        max_abs_diff([Wrapper()], [np.ones(2)])
