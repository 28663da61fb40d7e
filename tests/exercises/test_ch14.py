"""Exercises of chapter 14 (how many steps: the gradient noise scale)."""
import numpy as np
import pytest

from minigrad.optim.noise_scale import NoiseScaleTracker, unbiased_estimates, window_estimates

from .check import assert_close, rng

G2, TRACE = 2.5, 40.0           # |G|² and tr Σ of a made-up problem


# ------------------------------------------------------------------ 14.1
@pytest.mark.exercise("14.1")
def test_two_batch_estimates_solve_the_two_equations():
    b, big = 4.0, 32.0
    small_sq, big_sq = G2 + TRACE / b, G2 + TRACE / big     # E|g_b|², E|g_B|²
    got = unbiased_estimates(small_sq, b, big_sq, big)
    assert_close(got, [G2, TRACE], "unbiased_estimates(E|g_b|², b, E|g_B|², B)",
                 hints=[([big_sq, TRACE], "|G_B|² alone is not |G|²: it still holds "
                         "tr Σ / B of noise; combine both sizes, (B|G_B|² − b|G_b|²)/(B − b)"),
                        ([small_sq, TRACE], "|G_b|² is biased upward by tr Σ / b; "
                         "(B|G_B|² − b|G_b|²)/(B − b) removes it"),
                        ([G2, (small_sq - big_sq) * (big - b)], "tr Σ divides by "
                         "1/b − 1/B, not multiplies by B − b")])


@pytest.mark.exercise("14.1")
def test_window_estimates_weight_micro_batches_by_their_items():
    """Arbitrary norms (not expectations): only the item-weighted average with
    b = B/k gives these numbers."""
    sq = np.array([9.0, 4.0, 3.0])
    n = np.array([1.0, 5.0, 10.0])
    big_sq, big = 2.8, n.sum()
    item_mean, plain_mean = float(n @ sq) / big, float(sq.mean())
    b_mean, b_harmonic = big / 3, 1.0 / float(np.mean(1.0 / n))

    def two(small, b):
        return [(big * big_sq - b * small) / (big - b), (small - big_sq) / (1 / b - 1 / big)]

    assert_close(window_estimates(sq, n, big_sq), two(item_mean, b_mean),
                 "window_estimates of micro-batches of 1, 5 and 10 items",
                 hints=[(two(plain_mean, b_mean), "the micro-batches are averaged with "
                         "equal weights; weight each |g_j|² by its items n_j / B, as the "
                         "window's gradient weights it (num_items)"),
                        (two(plain_mean, b_harmonic), "each micro-batch gets the weight 1/k "
                         "(per-micro-batch weights); the accumulator weights by items, "
                         "n_j / B, with b = B / k"),
                        (two(item_mean, b_harmonic), "the items are weighted n_j / B but b "
                         "is the harmonic mean of the sizes; with item weights "
                         "E Σ (n_j/B)|g_j|² = |G|² + k tr Σ / B, so b = B / k")])


@pytest.mark.exercise("14.1")
def test_window_estimates_are_unbiased_over_random_windows():
    """Per-item gradients of a made-up population; micro-batches of 2, 3 and 7
    items drawn with replacement; the mean estimate over many windows must hit
    the population's |G|² and tr Σ."""
    g = rng(141)
    population = 1.5 + g.standard_normal((60, 5)) * np.array([3.0, 1.0, 0.5, 2.0, 1.0])
    mean = population.mean(axis=0)
    exact = [mean @ mean, ((population - mean) ** 2).sum() / len(population)]
    sizes = [2, 3, 7]
    estimates = []
    for _ in range(4000):
        parts = [population[g.integers(0, len(population), n)] for n in sizes]
        micro = [p.mean(axis=0) for p in parts]
        window = np.concatenate(parts).mean(axis=0)
        estimates.append(window_estimates([m @ m for m in micro], sizes, window @ window))
    estimates = np.array(estimates)
    avg = estimates.mean(axis=0)
    se = estimates.std(axis=0, ddof=1) / np.sqrt(len(estimates))
    for name, a, s, e in zip(("|G|²", "tr Σ"), avg, se, exact):
        assert abs(a - e) < 4 * s, (f"the mean {name} estimate over 4000 windows is "
                                    f"{a:.4g} ± {s:.2g}, the exact value {e:.4g}: biased")


@pytest.mark.exercise("14.1")
def test_each_term_has_its_own_moving_average():
    tracker = NoiseScaleTracker([], beta=0.5)
    raw = [(4.0, 100.0), (-1.0, 80.0), (2.0, 30.0)]
    for grad_sq, trace in raw:
        tracker.update(grad_sq, trace)
    tracker.close()
    weights = np.array([0.25 * 0.5, 0.5 * 0.5, 0.5]) / (1 - 0.5 ** 3)   # bias-corrected
    g_avg, t_avg = weights @ [r[0] for r in raw], weights @ [r[1] for r in raw]
    assert tracker.windows == 3, f"windows is {tracker.windows}; update counts each window"
    assert_close([tracker.grad_sq, tracker.trace], [g_avg, t_avg],
                 "the smoothed (|G|², tr Σ) after three windows",
                 hints=[([raw[-1][0], raw[-1][1]], "the last window's raw estimates, not "
                         "the moving averages")])
    ratio_avg = weights @ [t / g for g, t in raw]
    assert_close(tracker.noise_scale, t_avg / g_avg, "noise_scale",
                 hints=[(ratio_avg, "the average of the per-window ratios tr Σ / |G|² is "
                         "biased (a noisy |G|² near 0 explodes it): average each term "
                         "separately and divide the averages")])


@pytest.mark.exercise("14.1")
def test_moving_averages_keep_beta_of_the_old_value():
    tracker = NoiseScaleTracker([], beta=0.9)
    tracker.update(10.0, 200.0)
    tracker.update(20.0, 100.0)
    tracker.close()
    # raw averages 0.1·10 → 0.9·1 + 0.1·20 = 2.9; bias correction 1 − 0.9² = 0.19
    expected = [2.9 / 0.19, (0.9 * 20.0 + 0.1 * 100.0) / 0.19]
    swapped = [(0.1 * 9.0 + 0.9 * 20.0) / 0.19, (0.1 * 180.0 + 0.9 * 100.0) / 0.19]
    assert_close([tracker.grad_sq, tracker.trace], expected,
                 "the smoothed (|G|², tr Σ) after two windows with beta = 0.9",
                 hints=[(swapped, "the old average is weighted 1 − beta and the new value "
                         "beta; a moving average keeps beta of the old: "
                         "avg = beta·avg + (1 − beta)·value")])
