"""Memory accounting: peak() sees the arrays a block allocates; bytes_of counts state."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

import minigrad
from minigrad import memory, nn, optim

MB = 1_000_000


def test_block_allocating_a_known_array_reports_at_least_its_size(device):
    xp = minigrad.backend.array_module(device)
    with memory.peak(device) as m:
        a = xp.ones(MB // 8)             # 1 MB of float64
    assert m.peak_bytes >= MB
    assert m.current_bytes >= MB         # still alive at the end of the block
    del a


def test_freed_array_counts_at_peak_but_not_at_end():
    with memory.peak() as m:
        a = np.ones(4 * MB // 8)
        del a
        b = np.ones(MB // 8)
    assert m.peak_bytes >= 4 * MB
    assert MB <= m.current_bytes < 2 * MB
    assert m.peak_bytes >= m.current_bytes
    del b


def test_peak_is_measured_above_the_start():
    keep = np.ones(3 * MB // 8)
    with memory.peak() as outer:
        more = np.ones(3 * MB // 8)
        with memory.peak() as inner:
            small = np.ones(MB // 8)
    assert inner.start_bytes >= outer.start_bytes + 3 * MB
    assert MB <= inner.peak_bytes < 2 * MB       # `keep` and `more` are not its own
    del keep, more, small


def test_nested_blocks_report_their_own_peaks():
    with memory.peak() as outer:
        big = np.ones(8 * MB // 8)
        del big                                  # outer's peak: ~8 MB, before inner
        with memory.peak() as inner:
            small = np.ones(2 * MB // 8)
            del small
        after_inner = np.ones(MB // 8)
    assert 2 * MB <= inner.peak_bytes < 3 * MB   # did not see the earlier 8 MB
    assert outer.peak_bytes >= 8 * MB            # the inner reset did not lose it
    assert MB <= outer.current_bytes < 2 * MB
    del after_inner


def test_inner_peak_is_folded_into_the_outer_block():
    with memory.peak() as outer:
        with memory.peak():
            big = np.ones(6 * MB // 8)
            del big
    assert outer.peak_bytes >= 6 * MB


def test_live_reading_inside_the_block():
    with memory.peak() as m:
        a = np.ones(2 * MB // 8)
        assert m.current_bytes >= 2 * MB
        assert m.peak_bytes >= 2 * MB
        del a


def test_tracing_stops_after_the_outermost_block_unless_it_was_on():
    assert not tracemalloc.is_tracing()
    with memory.peak():
        with memory.peak():
            assert tracemalloc.is_tracing()
        assert tracemalloc.is_tracing()
    assert not tracemalloc.is_tracing()

    tracemalloc.start()
    try:
        with memory.peak():
            pass
        assert tracemalloc.is_tracing()          # the user's tracing is left on
    finally:
        tracemalloc.stop()


def test_activation_memory_of_an_mlp_forward_scales_with_batch():
    W1 = minigrad.randn(32, 256, requires_grad=True)
    W2 = minigrad.randn(256, 256, requires_grad=True)
    W3 = minigrad.randn(256, 10, requires_grad=True)

    def forward_peak(batch):
        x = minigrad.randn(batch, 32)
        with memory.peak() as m:
            out = ((x @ W1).relu() @ W2).relu() @ W3
        del out
        return m.current_bytes              # what the graph keeps alive

    small, large = forward_peak(256), forward_peak(1024)
    assert small >= 2 * 256 * 256 * 4            # at least two hidden activations
    assert 3.5 <= large / small <= 4.5           # 4x the batch, 4x the activations


def test_peak_rejects_unknown_device():
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        memory.peak("tpu")


@pytest.mark.skipif(minigrad.cuda.is_available(), reason="checks the no-GPU error")
def test_peak_on_cuda_without_gpu_raises():
    with pytest.raises(RuntimeError, match="no usable GPU"):
        memory.peak("cuda")


# ------------------------------------------------------------ bytes_of

def test_bytes_of_arrays_tensors_and_containers():
    a = np.zeros((10, 10))                        # 800 bytes
    t = minigrad.tensor(np.zeros(25, dtype=np.float32))   # 100 bytes
    assert memory.bytes_of(a) == 800
    assert memory.bytes_of(t) == 100
    assert memory.bytes_of([a, (t, 3), {"x": a}]) == 900   # `a` counted once
    assert memory.bytes_of(None) == 0


def test_bytes_of_module_grads_and_optimizer_state():
    model = nn.Linear(10, 4)                      # 44 float32 parameters
    opt = optim.Adam(model.parameters(), lr=0.1)
    assert memory.bytes_of(model) == 44 * 4
    assert memory.grad_bytes(model) == 0
    assert memory.breakdown(model, opt)["optimizer_state"] == 0

    model(minigrad.randn(3, 10)).sum().backward()
    opt.step()
    parts = memory.breakdown(model, opt)
    assert parts["parameters"] == 44 * 4
    assert parts["gradients"] == 44 * 4
    assert parts["optimizer_state"] >= 2 * 44 * 4       # Adam's two moments
    assert parts["total"] == sum(v for k, v in parts.items() if k != "total")


def test_format_bytes():
    assert memory.format_bytes(512) == "512 B"
    assert memory.format_bytes(1024) == "1.00 KiB"
    assert memory.format_bytes(3_500_000) == "3.34 MiB"
    assert memory.format_bytes(2 * 1024 ** 3) == "2.00 GiB"


@pytest.mark.parametrize("max_grad_norm", [None, 1.0])
def test_the_window_update_allocates_nothing_weight_sized_beyond_grad(max_grad_norm):
    # the finite check and clipping of a window's update: with gradients of
    # 4 MB, the update itself (divide, check, clip, SGD step) stays far below
    # one more gradient's size
    w = minigrad.tensor(np.zeros((1000, 1000), np.float32), requires_grad=True)
    acc = optim.GradientAccumulator(optim.SGD([w], lr=0.1), 1, max_grad_norm=max_grad_norm)
    x = minigrad.tensor(np.ones((1, 1000), np.float32))
    acc.backward((x @ w).sum())
    with memory.peak() as m:
        assert acc.step()
    assert m.peak_bytes < 0.25 * w.data.nbytes, m.peak_bytes
