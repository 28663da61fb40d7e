"""The figures of chapters 01-03 show what the text says they show."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tools.figures import ch01, ch02, ch03

ROOT = Path(__file__).resolve().parents[2]
# They run the reference's solutions (the order of 1.8, the loss of 2.6, SGD of
# 3.1-3.2), which a student copy has blanked.
pytestmark = pytest.mark.skipif((ROOT / "student.json").is_file(),
                                reason="needs the reference's solutions")


def test_the_diamond_runs_exp_last_after_its_two_uses():
    _, _, order, pending, uses = ch01.diamond()
    names = [type(fn).__name__ for fn in order]
    assert names[0] == "Add" and names[-1] == "Exp", names
    assert sorted(names[1:3]) == ["Mul", "Tanh"], names
    assert [pending[fn] for fn in order] == [0, 1, 1, 2]
    assert [count for count, _ in uses.values()] == [1]      # the leaf x: one use


def test_label_smoothing_subtracts_eps_over_c_from_every_entry():
    p, g = ch02.cross_entropy_gradient([2.0, 1.0, 0.0], 1, label_smoothing=0.1)
    onehot = np.array([0.0, 1.0, 0.0])
    np.testing.assert_allclose(g, p - 0.9 * onehot - 0.1 / 3, atol=1e-12)
    np.testing.assert_allclose(g.sum(), 0.0, atol=1e-12)


def test_momentum_ends_nearer_the_minimum_in_the_valley():
    plain, heavy = ch03.path(), ch03.path(momentum=0.8)
    assert np.linalg.norm(heavy[-1]) < np.linalg.norm(plain[-1]) / 10
