"""The numerics of low-precision accumulation (minigrad.experiments.precision), seeded."""
import numpy as np
import pytest

from minigrad.experiments import precision as P

pytest.importorskip("ml_dtypes", reason="bfloat16 needs ml_dtypes (the lowp extra)")


@pytest.fixture(scope="module")
def table():
    return P.error_table(ks=(1, 4, 16, 64, 256, 1024, 4096))


def _at(table, name, k):
    return table[name][table["k"].index(k)]


def test_adding_one_stalls_at_2048_in_float16_and_256_in_bfloat16():
    assert P.stall_point("float16") == 2048
    assert P.stall_point("bfloat16") == 256
    with pytest.raises(ValueError, match="still grows"):
        P.stall_point("float32", limit=1000)


def test_error_at_k_1024_by_buffer_dtype(table):
    assert _at(table, "float32", 1024) <= 1e-6
    assert _at(table, "float16", 1024) <= 5e-3
    assert _at(table, "bfloat16", 1024) >= 0.1


def test_one_pass_table_equals_a_window_of_its_own():
    assert P.error_table(ks=(16,), d=500)["float16"][0] == \
        P.window_mean_error("float16", 16, d=500)


def test_kahan_stays_within_1_5x_of_rounding_the_exact_mean_once(table):
    for dtype in ("float16", "bfloat16"):
        ratios = np.array(table[f"{dtype} + Kahan"]) / np.array(table[f"{dtype} once"])
        assert ratios.max() <= 1.5, (dtype, ratios)


def test_plain_error_grows_like_sqrt_k_u_before_it_stalls(table):
    # between k = 16 and k = 256 (16x more terms) the float16 error grows ~4x = sqrt(16)
    growth = _at(table, "float16", 256) / _at(table, "float16", 16)
    assert 2.0 <= growth <= 8.0


def test_dividing_each_loss_by_k_flushes_gradients_to_zero_in_float16():
    at_1 = P.underflow_fraction(1)
    before = P.underflow_fraction(64, divide="before")
    after = P.underflow_fraction(64, divide="after")
    assert before >= 0.05
    assert at_1 <= 0.005 and after == at_1
    with pytest.raises(ValueError, match="'before' or 'after'"):
        P.underflow_fraction(4, divide="never")
