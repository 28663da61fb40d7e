"""tools/figures/ch04.py, ch05.py, ch06.py: the numbers the figures draw are the
chapters' numbers, computed by minigrad."""
from __future__ import annotations

import numpy as np

from tools.figures import ch04, ch05, ch06


def test_the_window_figure_is_the_worked_example():
    grads, updated, w_before, w_after, mean = ch04.window_trace(k=4)
    assert grads == [-2.0, -10.0, -22.0, -62.0]          # running sums of 2·x·(x − y)
    assert updated == [False, False, False, True]
    assert (w_before, mean) == (1.0, -15.5)
    assert np.isclose(w_after, 1.155)                     # chapter 04's SGD update


def test_the_update_order_figure_follows_the_accumulator():
    trace, (w, lr) = ch04.update_trace()
    assert [a for a, *_ in trace] == ["window's sum", "divide by N", "clip", "optimizer step",
                                      "scheduler step", "zero .grad"]
    assert trace[0][1] == -62.0 and trace[1][1] == -15.5
    assert np.isclose(trace[2][1], -10.0) and trace[-1][1] is None
    assert np.isclose(trace[-1][2], w) and trace[-1][3] == lr == 0.005


def test_chapter_05_weights_and_clipping():
    by_k, by_items = ch05.item_weights((3, 1))
    np.testing.assert_allclose(by_k, [1 / 6, 1 / 6, 1 / 6, 1 / 2])
    np.testing.assert_allclose(by_items, [0.25] * 4)
    assert ch05.incident_token_counts() == [39, 91, 133, 171]   # the chapter's printed counts
    _, window, per_piece = ch05.clip_vectors()
    np.testing.assert_allclose(window, [2.5, 0.0], atol=1e-6)
    np.testing.assert_allclose(per_piece, [1.5, 0.0], atol=1e-6)


def test_chapter_06_backward_terms_are_minigrads_gradient():
    terms, sigma, formula, grad = ch06.backward_terms()
    np.testing.assert_allclose(formula, grad, rtol=1e-9)
    np.testing.assert_allclose(np.round(grad, 4), [0.313, -0.2683, -0.4025, 0.3578])
    before, after = ch06.digits_activations()
    np.testing.assert_allclose(after.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(after.var(axis=0), before.var(axis=0) / (before.var(axis=0) + 1e-5))
