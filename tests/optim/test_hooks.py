"""Step hooks: run around every optimizer step, once per accumulation window."""
import numpy as np

import minigrad
from minigrad.optim import SGD, AdamW, GradientAccumulator


def test_pre_and_post_hooks_run_in_order_and_can_be_removed():
    p = minigrad.tensor([1.0, 2.0], requires_grad=True)
    opt = AdamW([p], lr=0.1)
    calls = []
    pre = opt.register_step_pre_hook(lambda o, a, k: calls.append(("pre", p.data.copy())))
    opt.register_step_post_hook(lambda o, a, k: calls.append(("post", p.data.copy())))
    (p * p).sum().backward()
    opt.step()
    assert [c[0] for c in calls] == ["pre", "post"]
    np.testing.assert_array_equal(calls[0][1], [1.0, 2.0])      # before the update
    assert not np.array_equal(calls[1][1], [1.0, 2.0])           # after it
    pre.remove()
    opt.step()
    assert [c[0] for c in calls] == ["pre", "post", "post"]


def test_pre_hook_sees_the_window_gradient_once_per_update(float64):
    p = minigrad.tensor([3.0], requires_grad=True)
    opt = SGD([p], lr=0.0)
    seen = []
    opt.register_step_pre_hook(lambda o, a, k: seen.append(p.grad.numpy().copy()))
    acc = GradientAccumulator(opt, accumulation_steps=4)
    for c in [1.0, 2.0, 3.0, 6.0]:                  # mean loss c*p: gradient c
        acc.backward((p * c).sum(), num_items=1)
        acc.step()
    assert len(seen) == 1                            # one update for four micro-batches
    np.testing.assert_allclose(seen[0], [3.0], rtol=1e-15)   # (1+2+3+6)/4
