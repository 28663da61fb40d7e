"""Exercises of chapter 4 (gradient accumulation)."""
import numpy as np
import pytest

import minigrad
from minigrad.autograd import _accumulate_leaf
from minigrad.data.loader import split_micro_batches
from minigrad.optim import SGD, GradientAccumulator

from .check import assert_close, rng

X = rng(1).standard_normal((8, 3))


def _model():
    return minigrad.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)


def _mean_loss(w, x):
    """Mean over the rows of x of (x·w)²: a micro-batch's mean loss."""
    y = minigrad.tensor(x) @ w
    return (y * y).mean()


def _grad_of_sum(w, x):
    """d/dw Σ_rows (x·w)² = 2 xᵀ(x w)."""
    return 2 * x.T @ (x @ w)


@pytest.mark.exercise("4.1")
def test_accumulate_leaf_adds_into_grad():
    leaf = minigrad.tensor(np.zeros(3), requires_grad=True)
    g1, g2 = np.array([1.0, 2.0, 3.0]), np.array([10.0, 20.0, 30.0])
    _accumulate_leaf(leaf, g1, owned=False)
    assert leaf.grad is not None, "the first gradient must become leaf.grad (it was None)"
    assert leaf.grad.data is not g1, \
        "owned=False: g may be shared with someone else, so leaf.grad must hold a copy"
    _accumulate_leaf(leaf, g2, owned=True)
    assert_close(leaf.grad, g1 + g2, "leaf.grad after two gradients",
                 [(g2, "backward adds into .grad (PyTorch's rule); it must not replace it")])
    assert_close(g1, [1.0, 2.0, 3.0], "the caller's first gradient array (must not change)")


@pytest.mark.exercise("4.2")
def test_split_micro_batches_sizes_follow_array_split():
    x, y = np.arange(10).reshape(10, 1), np.arange(10)
    parts = split_micro_batches((x, y), 3)
    sizes = [len(p[1]) for p in parts]
    assert sizes == [4, 3, 3], \
        f"10 samples in 3 micro-batches gave sizes {sizes}; expected [4, 3, 3]: the first " \
        "n % k parts get one sample more (numpy.array_split's rule)"
    assert np.array_equal(np.concatenate([p[0] for p in parts]), x), \
        "concatenating the micro-batches must give the batch back, in order"
    assert all(isinstance(p, tuple) and len(p) == 2 for p in parts)
    assert [len(p) for p in split_micro_batches(np.arange(6), 6)] == [1] * 6


@pytest.mark.exercise("4.3")
def test_accumulator_backward_weights_by_item_count():
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=2)
    acc.backward(_mean_loss(w, X[:5]), num_items=5)
    expected = _grad_of_sum(w.numpy(), X[:5])
    assert_close(w.grad, expected, "w.grad after backward(mean loss of 5 items, num_items=5)",
                 [(expected / 5, "backward must weight the micro-batch's mean loss by its "
                                 "item count: num_items × grad(mean) = grad(sum)")])
    assert acc.micro_step == 0, "backward does not count micro-batches; step() does"


@pytest.mark.exercise("4.4")
def test_step_counts_the_window():
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=3)
    before = w.numpy().copy()
    for j in range(2):
        acc.backward(_mean_loss(w, X[j:j + 2]), num_items=2)
        updated = acc.step()
        assert updated is False, f"step() of micro-batch {j + 1} of 3 returned {updated}; " \
                                 "only the k-th step() of a window updates (returns True)"
        assert acc.micro_step == j + 1, f"micro_step is {acc.micro_step} after {j + 1} steps"
    assert np.array_equal(w.numpy(), before), "the parameters moved before the window ended"


@pytest.mark.exercise("4.5")
def test_one_update_per_window_equals_the_full_batch():
    w, w_full = _model(), _model()
    lr = 0.1
    acc = GradientAccumulator(SGD([w], lr=lr), accumulation_steps=4)
    sizes = [1, 2, 2, 3]
    start = 0
    for n in sizes:
        acc.backward(_mean_loss(w, X[start:start + n]), num_items=n)
        updated = acc.step()
        start += n
    assert updated is True, "the 4th step() of a window of 4 must update and return True"
    full_grad = _grad_of_sum(w_full.numpy(), X) / len(X)
    expected = w_full.numpy() - lr * full_grad
    assert_close(w, expected, "the parameters after one window of 4 micro-batches (8 items)",
                 [(w_full.numpy() - lr * 8 * full_grad,
                   "the accumulated gradient is 8.00 × the full-batch gradient: did you "
                   "divide by the window's item count?"),
                  (w_full.numpy() - lr * 2 * full_grad,
                   "the accumulated gradient is 2.00 × the full-batch gradient: divide by "
                   "the window's item count (8), not by the number of micro-batches (4)")])
    assert w.grad is None, "after the update the gradients are zeroed for the next window"
    assert acc.updates == 1, f"updates is {acc.updates} after one window"


@pytest.mark.exercise("4.5")
def test_update_clips_the_window_gradient():
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=1.0), accumulation_steps=2, max_grad_norm=0.5)
    before = w.numpy().copy()
    for j in range(2):
        acc.backward(_mean_loss(w, X[2 * j:2 * j + 2]), num_items=2)
        acc.step()
    full = _grad_of_sum(before, X[:4]) / 4
    norm = np.linalg.norm(full)
    assert acc.last_grad_norm == pytest.approx(norm), \
        f"last_grad_norm is {acc.last_grad_norm}; expected the norm of the window's mean " \
        f"gradient {norm:.4f} (clip after dividing by the item count)"
    assert_close(w, before - full * 0.5 / (norm + 1e-6), "the parameters after a clipped update")


@pytest.mark.exercise("4.3")
def test_accumulator_backward_multiplies_the_seed_by_the_loss_scale():
    from minigrad.optim import GradScaler
    w = _model()
    scaled = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=2,
                                 scaler=GradScaler(init_scale=8.0))
    scaled.backward(_mean_loss(w, X[:5]), num_items=5)
    expected = 8.0 * _grad_of_sum(w.numpy(), X[:5])
    assert_close(w.grad, expected, "w.grad after backward(mean loss of 5 items, num_items=5) "
                 "with a GradScaler of scale 8",
                 [(expected / 8, "with a scaler, the seed is num_items × the loss scale "
                                 "(scaler.get_scale()): the window's update unscales it")])
    # (The window's update unscales it once: exercise 12.2, tested in chapter 12.)


@pytest.mark.exercise("4.3")
@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_a_non_finite_loss_is_not_back_propagated_and_marks_the_window(bad):
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=2)
    with np.errstate(invalid="ignore", over="ignore"):
        acc.backward(_mean_loss(w, X[:2]) * bad, num_items=2)
    assert w.grad is None or np.all(w.grad.numpy() == 0), (
        f"a {bad} loss is not back-propagated: w.grad is {w.grad}")
    assert acc.window.nonfinite, (
        f"a {bad} loss marks the window non-finite (window.nonfinite = True), so that its "
        "update is skipped (the skip itself is exercise 5.3's)")
    assert acc.window.item_total == 2, (
        f"the {bad} micro-batch's items still count: window.item_total is "
        f"{acc.window.item_total}, expected 2")


@pytest.mark.exercise("4.3")
def test_a_micro_batch_counts_its_items_and_its_loss_times_its_items():
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.0), accumulation_steps=2)
    loss = _mean_loss(w, X[1:4])
    acc.backward(loss, num_items=3)
    assert acc.window.item_total == 3, (
        f"window.item_total is {acc.window.item_total} after a micro-batch of 3 items")
    assert acc.window.loss_sum == pytest.approx(3 * loss.item(), rel=1e-12), (
        f"window.loss_sum is {acc.window.loss_sum}; expected n_j·L_j = 3 × {loss.item()}"
        + (" (L_j alone: count n_j·L_j)" if acc.window.loss_sum == pytest.approx(loss.item())
           else ""))


def _micro_batches_of_1_and_3_items(accumulation_steps):
    """An accumulator (lr 0) after micro-batches of 1 and 3 items, each followed by
    step(); and their item-weighted mean loss (1·L1 + 3·L2) / 4."""
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.0), accumulation_steps=accumulation_steps)
    losses = []
    for rows in (X[:1], X[1:4]):
        loss = _mean_loss(w, rows)
        losses.append(loss.item())
        acc.backward(loss, num_items=len(rows))
        acc.step()
    return acc, (1 * losses[0] + 3 * losses[1]) / 4


@pytest.mark.exercise("4.4")     # two micro-batches need step(); k = 3 keeps the window open
def test_the_window_loss_is_the_item_weighted_mean():
    acc, expected = _micro_batches_of_1_and_3_items(accumulation_steps=3)
    mean = acc.window.loss_sum / acc.window.item_total
    assert mean == pytest.approx(expected, rel=1e-12), \
        f"window.loss_sum / window.item_total is {mean}; expected the item-weighted mean " \
        f"(1·L1 + 3·L2) / 4 = {expected}" + (
            " (that is the plain mean of the two losses: count n_j·L_j, not L_j)"
            if mean == pytest.approx(sum(losses) / 2) else "")


@pytest.mark.exercise("4.3")
def test_count_micro_batch_moves_the_gradient_into_the_buffer():
    """``_count_micro_batch`` is called after a backward run elsewhere too (the
    stages of chapter 11 run their own): it is the method that moves ``.grad``
    into the window's buffer, and that counts the micro-batch."""
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=2, compensated=True)
    loss = _mean_loss(w, X[:3])
    loss.backward(np.full((), 3.0))             # a backward of its own, seeded with n_j
    grad = w.grad.numpy().copy()
    acc._count_micro_batch(3, "items", loss.item())
    assert w.grad is None, (
        "after _count_micro_batch with a buffer (compensated=True), .grad must be moved "
        "into it (self.buffer.add(self.optimizer._params())): _count_micro_batch, not "
        "_weighted_backward, holds that line, since code of chapter 11 calls it alone")
    assert_close(acc.buffer.sums[0], grad, "the buffer's sum after one micro-batch")
    assert acc.window.item_total == 3 and acc.window.loss_sum == pytest.approx(3 * loss.item())


@pytest.mark.exercise("4.1")
def test_accumulate_leaf_adds_in_place_and_leaves_a_shared_gradient_alone():
    leaf = minigrad.tensor(np.zeros(3, dtype=np.float32), requires_grad=True)
    _accumulate_leaf(leaf, np.array([1.0, 2.0, 3.0], dtype=np.float32), owned=True)
    grad, array = leaf.grad, leaf.grad.data
    shared = np.array([10.0, 20.0, 30.0], dtype=np.float32)
    _accumulate_leaf(leaf, shared, owned=False)
    assert_close(leaf.grad, [11.0, 22.0, 33.0], "leaf.grad after two gradients")
    assert leaf.grad is grad and leaf.grad.data is array, (
        "a later gradient is added in place into the existing .grad array "
        "(leaf._grad._data += g): .grad must stay the same Tensor holding the same array, "
        "not a new one")
    assert_close(shared, [10.0, 20.0, 30.0],
                 "the second gradient, passed with owned=False (must not change)",
                 [([11.0, 22.0, 33.0], "the sum was written into g, an array that someone "
                                       "else may hold: add g into .grad, not .grad into g")])


def _record_skips(acc):
    """Replace ``acc._skip_window`` (exercise 5.3, chapter 5) by a recorder of the
    window losses it is called with."""
    skips = []
    acc._skip_window = lambda window_loss, *args, **kwargs: skips.append(window_loss)
    return skips


@pytest.mark.exercise("4.5")      # step() (4.4) returns what _update (4.5) returns
def test_step_returns_false_when_the_window_is_skipped():
    w = _model()
    before = w.numpy().copy()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=2)
    skips = _record_skips(acc)
    acc.backward(_mean_loss(w, X[:2]), num_items=2)
    assert acc.step() is False
    with np.errstate(invalid="ignore"):
        acc.backward(_mean_loss(w, X[2:4]) * float("nan"), num_items=2)
    updated = acc.step()
    assert len(skips) == 1, "the k-th step() of a window with a nan loss skips it (_update)"
    assert updated is False, (
        f"the k-th step() of a window that was skipped returned {updated}: step() returns "
        "what _update() returns, False when no update was made")
    assert np.array_equal(w.numpy(), before) and acc.updates == 0


@pytest.mark.exercise("4.5")
def test_the_window_loss_is_the_mean_over_the_items():
    acc, expected = _micro_batches_of_1_and_3_items(accumulation_steps=2)
    assert acc.window_loss == pytest.approx(expected, rel=1e-12), (
        f"window_loss after a window of 1 + 3 items is {acc.window_loss}; expected "
        f"(1·L1 + 3·L2) / 4 = {expected}, the loss sum divided by the item total" + (
            " (that is the loss sum divided by k = 2)"
            if acc.window_loss == pytest.approx(2 * expected) else ""))


@pytest.mark.exercise("4.5")
@pytest.mark.parametrize("where", ["loss", "gradient"])
def test_a_non_finite_window_is_not_stepped(where):
    w = minigrad.tensor(np.array([0.0, 1.0, 2.0]), requires_grad=True)
    before = w.numpy().copy()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=1)
    skips = _record_skips(acc)
    with np.errstate(all="ignore"):
        if where == "loss":             # a nan loss: not back-propagated, .grad stays finite
            loss = (w * w).sum() * float("nan")
        else:                           # a finite loss 0 whose gradient is inf at w = 0
            loss = (w.sqrt() * 0.0).sum()
        acc.backward(loss, num_items=1)
        updated = acc.step()
    assert len(skips) == 1, (
        f"a window with a non-finite {where} must be handed to _skip_window (called "
        f"{len(skips)} times): check both the window's nonfinite flag (a nan loss is not "
        "back-propagated) and the gradients (all_finite)")
    expected = "nan" if where == "loss" else 0.0
    assert (np.isnan(skips[0]) if where == "loss" else skips[0] == 0.0), (
        f"_skip_window got the window loss {skips[0]}, expected {expected} "
        "(the loss sum divided by the item total)")
    assert updated is False and np.array_equal(w.numpy(), before), \
        f"a window with a non-finite {where} moved the parameters"


@pytest.mark.exercise("4.5")
def test_a_float16_gradient_is_divided_by_a_large_item_total():
    """80,000 items: as a float16 number the count is inf (float16 ends at 65,504)."""
    w = minigrad.tensor(np.array([0.5, -1.0, 2.0], dtype=np.float16), requires_grad=True)
    acc = GradientAccumulator(SGD([w], lr=1000.0), accumulation_steps=2)
    x = np.full((1, 3), 1e-4, dtype=np.float16)
    for _ in range(2):      # each: .grad gains 40,000 × 1e-4 = 4 per entry
        acc.backward((minigrad.tensor(x) @ w).sum(), num_items=40_000)
        acc.step()
    # the mean gradient is 8 / 80,000 = 1e-4 per entry: lr × 1e-4 = 0.1
    assert_close(w, np.array([0.4, -1.1, 1.9], dtype=np.float16),
                 "float16 parameters after a window of 80,000 items",
                 [(np.array([0.5, -1.0, 2.0], dtype=np.float16),
                               "the gradient became 0: divide by "
                               "backend.count_as(total, g), not by the Python number (in a "
                               "float16 division 80,000 is inf)")], rtol=1e-2, atol=1e-3)


@pytest.mark.exercise("4.3")
def test_a_loss_of_shape_1_is_seeded_in_its_own_shape():
    w = _model()
    acc = GradientAccumulator(SGD([w], lr=0.1), accumulation_steps=2)
    loss = _mean_loss(w, X[:3]).reshape(1)      # a one-element loss of shape (1,)
    try:
        acc.backward(loss, num_items=3)
    except ValueError as e:
        pytest.fail(f"backward(loss of shape (1,), num_items=3) raised {e}: seed backward "
                    "with an array of the loss's own shape and dtype, filled with n_j times "
                    "the loss scale, not with a bare number", pytrace=False)
    w0 = np.array([0.5, -1.0, 2.0])
    expected = 3 * 2 * X[:3].T @ (X[:3] @ w0) / 3       # n_j times the mean loss's gradient
    assert_close(w.grad, expected, ".grad after one micro-batch of 3 items (loss of shape (1,))")
