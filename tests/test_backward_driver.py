"""The backward driver hands each leaf its gradient as soon as the gradient is final.

A leaf's gradient is final when the last Function that uses it has run; it is
then added into ``.grad`` at once, so that accumulating over micro-batches
holds one parameter's gradient beside ``.grad``, not a copy of all of them.
"""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
from minigrad import Function, nn
from minigrad.nn import functional as F


def _leaf(data, device="cpu", dtype=np.float64):
    return minigrad.tensor(np.asarray(data, dtype=dtype), device=device, requires_grad=True)


class Probe(Function):
    """Identity forward; its backward records ``leaf.grad`` at the moment it runs."""

    def __init__(self, leaf, seen):
        self.leaf, self.seen = leaf, seen

    def forward(self, a):
        return a.copy()

    def backward(self, g):
        grad = self.leaf.grad
        self.seen.append(None if grad is None else grad.numpy().copy())
        return g


def test_leaf_grad_is_set_before_earlier_functions_run_backward(device):
    w_late = _leaf([2.0, 3.0], device)       # used by the last op of forward
    w_early = _leaf([5.0, 7.0], device)      # used by the first op of forward
    seen = []
    h = Probe(w_late, seen)(w_early * 1.5)   # Probe runs after w_late's use is over
    (h * w_late).sum().backward()
    np.testing.assert_array_equal(seen[0], [1.5 * 5.0, 1.5 * 7.0])
    np.testing.assert_array_equal(w_early.grad.numpy(), [1.5 * 2.0, 1.5 * 3.0])


def test_leaf_used_twice_waits_for_its_last_use(device):
    w = _leaf([2.0, 3.0], device)
    seen = []
    h = Probe(w, seen)(w * 4.0)              # first use, reached last in backward
    (h * w).sum().backward()                 # second use, reached first
    assert seen == [None]                    # not yet final when the Probe ran
    # d/dw (4w · w) = 8w: the two uses are summed, then added once
    np.testing.assert_array_equal(w.grad.numpy(), [16.0, 24.0])


def test_leaf_of_a_function_that_receives_no_gradient_is_still_finished():
    class FirstOnly(Function):
        def forward(self, a, b):
            return a.copy(), b.copy()

        def backward(self, g1, g2):
            return g1, g2

    class Stop(Function):          # sends no gradient to its input
        def forward(self, a):
            return a.copy()

        def backward(self, g):
            return None

    w = _leaf([1.0, 2.0])
    v = _leaf([3.0, 4.0])
    a, b = FirstOnly()(w, v)
    # v reaches the loss through Stop only: FirstOnly gets a gradient for a, none for b
    (a * 2 + Stop()(b * w)).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 2.0])
    assert v.grad is None


def test_two_passes_add_in_the_same_order_as_one_summed_gradient():
    """The uses of a leaf are summed within a pass, then added into .grad once:
    bit for bit (.grad) + (g1 + g2), as before the change."""
    rng = np.random.default_rng(0)
    w = _leaf(rng.standard_normal(5).astype(np.float32), dtype=np.float32)
    x1 = rng.standard_normal(5).astype(np.float32)
    x2 = rng.standard_normal(5).astype(np.float32)
    for _ in range(2):
        ((w * minigrad.tensor(x1)).tanh() + (w * minigrad.tensor(x2)).exp()).sum().backward()
    w_np = w.numpy()
    t = np.tanh(w_np * x1)
    g = (np.float32(1) - t * t) * x1 + np.exp(w_np * x2) * x2
    np.testing.assert_array_equal(w.grad.numpy(), g + g)


def test_freed_function_on_the_way_raises_before_any_grad_changes():
    w = _leaf([1.0, 2.0])
    h = w.exp()
    h.sum().backward()
    before = w.grad.numpy().copy()
    v = _leaf([3.0, 4.0])
    with pytest.raises(RuntimeError, match="already freed"):
        (h * v).sum().backward()
    assert v.grad is None                           # nothing was half applied
    np.testing.assert_array_equal(w.grad.numpy(), before)


# ------------------------------------------------------------ memory, measured
def _mlp(width):
    minigrad.manual_seed(0)
    return nn.Sequential(nn.Linear(width, width), nn.ReLU(), nn.Linear(width, width),
                         nn.ReLU(), nn.Linear(width, 4))


def _window_peak(model, x, y, k):
    """Peak bytes (tracemalloc) of k micro-batch passes and one SGD step."""
    opt = minigrad.optim.SGD(model.parameters(), lr=0.1)
    with minigrad.memory.peak() as m:
        for j in range(k):
            loss = F.cross_entropy(model(minigrad.tensor(x[j:j + 1])),
                                   minigrad.tensor(y[j:j + 1]))
            loss.backward()
            del loss
        opt.step()
        opt.zero_grad()
    return m.peak_bytes


def test_accumulated_window_peaks_at_one_step_plus_one_gradient():
    """Parameter-dominated regime (micro-batch 1): 8 accumulated passes peak at
    most one plain step's peak + the largest parameter's gradient (+2 %)."""
    width = 384                  # weights larger than one block of the SGD update
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, width)).astype(np.float32)
    y = rng.integers(0, 4, 8)
    model = _mlp(width)
    single = _window_peak(model, x, y, 1)
    window = _window_peak(model, x, y, 8)
    largest = max(p.data.nbytes for p in model.parameters())
    all_grads = sum(p.data.nbytes for p in model.parameters())
    assert window <= 1.02 * (single + largest), (window, single, largest)
    # against the analytic minimum: .grad + one weight's gradient in flight
    # (+ the activations of one example and one block of the SGD update)
    block = minigrad.optim.updates.BLOCK * 4
    assert window <= 1.02 * (all_grads + largest) + block + 32 * width * 4
    # and one plain step holds the gradients, the activations of one example
    # and one block of the SGD update: no temporary the size of a weight
    assert single <= 1.02 * all_grads + block + 32 * width * 4, (single, all_grads)
    assert largest > 2 * block
