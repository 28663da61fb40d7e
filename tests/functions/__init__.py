"""Tests of the differentiable functions, one file per family.

This module holds the hypothesis strategies they share: small shapes (0-d
included), pairs of shapes that broadcast (size-1 axes, missing leading axes),
axis arguments (None, an int, negative, a tuple), and float64 arrays whose
values keep finite differences away from kinks and ties.
"""
from __future__ import annotations

import numpy as np
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

# Small and few: the whole suite must stay fast on two cores.
FAST = settings(max_examples=15, deadline=None)

shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3)
nonempty_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=3)


def values(shape, low=-2.0, high=2.0):
    """float64 arrays of ``shape`` with values in [low, high]."""
    return hnp.arrays(np.float64, shape,
                      elements=st.floats(low, high, allow_nan=False, allow_infinity=False))


def away_from_zero(shape, low=0.1, high=2.0):
    """float64 arrays with |x| in [low, high] (for functions with a kink at 0)."""
    magnitude = st.floats(low, high)
    return hnp.arrays(np.float64, shape,
                      elements=st.tuples(st.sampled_from([-1.0, 1.0]), magnitude)
                      .map(lambda sm: sm[0] * sm[1]))


def positive(shape, low=0.2, high=3.0):
    """float64 arrays with values in [low, high] (log, sqrt, a base of pow)."""
    return values(shape, low, high)


@st.composite
def broadcast_pair(draw, elements=values):
    """Two float64 arrays whose shapes broadcast together (0-d, size 1, missing axes)."""
    pair = draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3,
                                                  max_side=3))
    a_shape, b_shape = pair.input_shapes
    return draw(elements(a_shape)), draw(elements(b_shape))


@st.composite
def distinct_values(draw, shape):
    """float64 array of ``shape`` with all entries distinct (at least 0.1 apart):
    max / min / maximum are differentiable there."""
    size = int(np.prod(shape, dtype=np.int64))
    seed = draw(st.integers(0, 2**16))
    order = np.random.default_rng(seed).permutation(size).astype(np.float64)
    return (order * 0.3 - 0.5 * size * 0.3).reshape(shape)


@st.composite
def shape_and_axis(draw, shape_strategy=nonempty_shapes):
    """A shape and an ``axis`` argument for it: None, an int (maybe negative), or a tuple."""
    shape = draw(shape_strategy)
    ndim = len(shape)
    kind = draw(st.sampled_from(["none", "int", "tuple"]))
    if kind == "none":
        return shape, None
    if kind == "int":
        return shape, draw(st.integers(-ndim, ndim - 1))
    chosen = draw(st.lists(st.integers(0, ndim - 1), min_size=1, max_size=ndim, unique=True))
    # Negative spellings of the same axes, half the time.
    signs = draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    return shape, tuple(a - ndim if neg else a for a, neg in zip(chosen, signs))
