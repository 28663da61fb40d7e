"""In-place updates without full-size temporaries equal the one-line NumPy update bit for bit."""
from __future__ import annotations

import math

import numpy as np
import pytest

import minigrad
from minigrad.optim import updates


@pytest.mark.parametrize("shape", [(3,), (7, 5), (3 * updates.BLOCK + 11,), (300, 400)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sub_scaled_equals_p_minus_lr_g_bit_for_bit(shape, dtype):
    rng = np.random.default_rng(0)
    p = rng.standard_normal(shape).astype(dtype)
    g = rng.standard_normal(shape).astype(dtype)
    expected = p - 0.1 * g
    updates.sub_scaled_(p, 0.1, g)
    np.testing.assert_array_equal(p, expected)
    assert p.dtype == dtype


def test_sub_scaled_on_a_non_contiguous_parameter_updates_it():
    rng = np.random.default_rng(1)
    base = rng.standard_normal((400, 400)).astype(np.float32)
    p = base.T                                    # a view, not C-contiguous
    g = rng.standard_normal((400, 400)).astype(np.float32)
    expected = p - 0.5 * g
    updates.sub_scaled_(p, 0.5, g)
    np.testing.assert_array_equal(base.T, expected)


def test_sgd_step_allocates_no_temporary_the_size_of_a_weight():
    w = minigrad.tensor(np.ones((512, 512), np.float32), requires_grad=True)
    w.grad = minigrad.tensor(np.ones((512, 512), np.float32))
    opt = minigrad.optim.SGD([w], lr=0.5)
    with minigrad.memory.peak() as m:
        opt.step()
    assert m.peak_bytes < w.data.nbytes // 4
    assert np.all(w.numpy() == 0.5)


def test_gpu_update_kernels_match_the_numpy_lines(device):
    if device == "cpu":
        pytest.skip("the fused kernels run on the GPU only")
    rng = np.random.default_rng(2)
    p, m, v, g = (rng.standard_normal(1000).astype(np.float32) for _ in range(4))
    v = np.abs(v)
    xp = minigrad.backend.array_module(device)
    p_d, m_d, v_d, g_d = (xp.asarray(a) for a in (p, m, v, g))
    updates.adam_update_gpu(p_d, m_d, v_d, g_d, 0.9, 0.999, 1e-3, 0.5, 1e-8)
    m_ref = m + (1 - 0.9) * (g - m)
    v_ref = v * 0.999 + (1 - 0.999) * (g * g)
    p_ref = p - 1e-3 * m_ref / (np.sqrt(v_ref) / 0.5 + 1e-8)
    for got, ref in ((m_d, m_ref), (v_d, v_ref), (p_d, p_ref)):
        np.testing.assert_allclose(minigrad.backend.asnumpy(got), ref, rtol=1e-5, atol=1e-7)
    q_d = xp.asarray(p)
    updates.sub_scaled_(q_d, 0.1, g_d)
    np.testing.assert_allclose(minigrad.backend.asnumpy(q_d), p - 0.1 * g, rtol=1e-6,
                               atol=1e-7)


def test_adam_on_cache_blocks_is_bit_for_bit_the_whole_array_update():
    """updates.cache_blocks runs Adam's lines on views of CACHE_BLOCK numbers:
    every element sees the same operations, so the same bits."""
    rng = np.random.default_rng(0)
    n = 3 * updates.CACHE_BLOCK + 123                  # several blocks and a remainder
    p = minigrad.nn.Parameter(rng.standard_normal(n).astype(np.float32))
    ref = p.data.copy()
    opt = minigrad.optim.AdamW([p], lr=1e-2)
    m, v = np.zeros_like(ref), np.zeros_like(ref)
    for t in (1, 2, 3):
        g = rng.standard_normal(n).astype(np.float32)
        p.grad = minigrad.tensor(g)
        opt.step()
        ref *= 1 - 1e-2 * 0.01
        m += (1 - 0.9) * (g - m)
        v *= 0.999
        v += (1 - 0.999) * (g * g)
        denom = np.sqrt(v) / math.sqrt(1 - 0.999 ** t) + 1e-8
        ref -= 1e-2 / (1 - 0.9 ** t) * m / denom
    np.testing.assert_array_equal(p.data, ref)
