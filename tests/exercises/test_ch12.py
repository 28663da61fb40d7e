"""Exercises of chapter 12 (precision and memory)."""
import numpy as np
import pytest

import minigrad
from minigrad.memory_planner import plan
from minigrad.optim import SGD, GradientAccumulator, GradScaler
from minigrad.optim.buffers import kahan_add

from .check import assert_close, rng

N = 1_000_000


# ------------------------------------------------------------------ 12.1
@pytest.mark.exercise("12.1")
def test_kahan_add_keeps_the_ones_that_float16_rounds_away():
    total, c = kahan_add(np.float16(2048), np.float16(0), np.float16(1))
    assert np.asarray(total).dtype == np.float16 and np.asarray(c).dtype == np.float16, \
        f"kahan_add(float16, float16, float16) returned ({np.asarray(total).dtype}, " \
        f"{np.asarray(c).dtype}); every operation must stay in the arrays' dtype (float16)"
    assert total == 2048, \
        f"2048 + 1 in float16 gave a total of {total}; float16's spacing at 2048 is 2, so " \
        "the rounded sum t = total + y is 2048 (the 1 is lost, to be kept in c)"
    assert c == -1, \
        f"after 2048 + 1 the compensation is {c}, expected -1: c = (t - total) - y is " \
        "what the rounding lost, with the sign that y = value - c adds back next time"
    total, c = kahan_add(total, c, np.float16(1))
    assert total == 2050, \
        f"2048 + 1 + 1 in float16 with compensation gave {total}, expected 2050" + (
            ": that is plain float16 addition; the next term must be corrected first, "
            "y = value - c = 1 - (-1) = 2" if total == 2048 else "")
    assert c == 0, f"after 2048 + 1 + 1 the compensation is {c}, expected 0 (2 was exact)"


@pytest.mark.exercise("12.1")
def test_kahan_sum_of_many_small_float16_terms_is_nearly_exact():
    values = (rng(12).uniform(0.5, 1.5, size=(3000, 4))).astype(np.float16)
    exact = values.astype(np.float64).sum(axis=0)
    plain = np.zeros(4, np.float16)
    total, c = np.zeros(4, np.float16), np.zeros(4, np.float16)
    for v in values:
        plain = plain + v
        total, c = kahan_add(total, c, v)
    assert np.asarray(total).dtype == np.float16, \
        f"the Kahan total is {np.asarray(total).dtype}; kahan_add must compute in float16"
    rounded_once = exact.astype(np.float16).astype(np.float64)
    err_once = np.max(np.abs(rounded_once - exact))
    err_plain = np.max(np.abs(plain.astype(np.float64) - exact))
    err = np.max(np.abs(np.asarray(total, dtype=np.float64) - exact))
    assert err <= 2 * err_once + 1e-12, \
        f"the Kahan sum of 3000 float16 terms is off by {err:.3g} (plain float16 " \
        f"addition: {err_plain:.3g}; rounding the exact sum once: {err_once:.3g})" + (
            ": it equals plain addition, so the compensation is never fed back "
            "(y = value - c)" if np.array_equal(np.asarray(total), plain) else
            ": the compensation must be c = (t - total) - y, in that order of operations")


# ------------------------------------------------------------------ 12.2
def _sgd_with_grads(grads, dtype=np.float32):
    params = [minigrad.tensor(np.zeros_like(g, dtype=dtype), requires_grad=True) for g in grads]
    for p, g in zip(params, grads):
        if g is not None:
            p.grad = minigrad.tensor(np.asarray(g, dtype=dtype))
    return params, SGD(params, lr=1.0)


@pytest.mark.exercise("12.2")
def test_unscale_divides_every_gradient_by_the_scale_in_place():
    g = [np.array([8.0, -16.0, 24.0]), np.array([[4.0, 2.0], [0.5, -1.0]])]
    params, opt = _sgd_with_grads(g, np.float16)
    frozen = minigrad.tensor(np.ones(2, np.float16), requires_grad=True)   # no gradient
    opt.param_groups[0]["params"].append(frozen)
    before = [p.grad for p in params]
    scaler = GradScaler(init_scale=8.0)
    scaler.unscale_(opt)
    for i, (p, gi) in enumerate(zip(params, g)):
        assert p.grad is before[i], \
            f"unscale_ replaced parameter {i}'s .grad; it must divide it in place"
        assert p.grad.data.dtype == np.float16, \
            f"parameter {i}'s gradient became {p.grad.data.dtype}; in place keeps float16"
        assert_close(p.grad, gi / 8, f"parameter {i}'s gradient after unscale_ with S = 8", [
            (gi, "the gradients still carry the scale: multiply each by 1/S"),
            (gi * 8, "the gradients were multiplied by S; unscaling multiplies by 1/S")])
    assert frozen.grad is None, "a parameter whose .grad is None has no gradient to unscale"
    assert scaler.found_inf(opt) is False, \
        "no gradient holds inf or nan, yet found_inf(optimizer) is not False"


@pytest.mark.exercise("12.2")
def test_unscale_records_inf_and_nan_so_the_step_is_skipped():
    for bad in (np.inf, np.nan):
        params, opt = _sgd_with_grads([np.array([1.0, 2.0]), np.array([3.0, bad])])
        scaler = GradScaler(init_scale=4.0)
        scaler.unscale_(opt)
        assert scaler.found_inf(opt) is True, \
            f"a gradient holds {bad}, but unscale_ recorded found_inf = " \
            f"{scaler.found_inf(opt)}: check every gradient of every group with isfinite"
        result = scaler.step(opt)
        assert result is None and all(np.all(p.numpy() == 0) for p in params), \
            f"a gradient holds {bad}, yet scaler.step() updated the parameters"


@pytest.mark.exercise("12.2")
def test_unscale_covers_every_parameter_group():
    a = minigrad.tensor(np.zeros(2, np.float32), requires_grad=True)
    b = minigrad.tensor(np.zeros(2, np.float32), requires_grad=True)
    opt = SGD([{"params": [a]}, {"params": [b], "lr": 0.1}], lr=1.0)
    a.grad = minigrad.tensor(np.array([4.0, 8.0], np.float32))
    b.grad = minigrad.tensor(np.array([12.0, -4.0], np.float32))
    scaler = GradScaler(init_scale=4.0)
    scaler.unscale_(opt)
    assert_close(b.grad, np.array([3.0, -1.0]), "the second group's gradient after unscale_ "
                 "with S = 4", [(np.array([12.0, -4.0]), "only the first parameter group was "
                                "unscaled: loop over every group of optimizer.param_groups")])
    b.grad = minigrad.tensor(np.array([1.0, np.inf], np.float32))
    scaler.update()
    scaler.unscale_(opt)
    assert scaler.found_inf(opt) is True, \
        "the second parameter group's gradient holds inf, but found_inf is not True: " \
        "check the gradients of every group"


@pytest.mark.exercise("12.2")
def test_the_window_update_uses_the_unscaled_full_batch_gradient():
    x = rng(3).standard_normal((6, 3))
    w = minigrad.tensor(np.array([0.5, -1.0, 2.0]), requires_grad=True)
    w0 = w.numpy().copy()
    acc = GradientAccumulator(SGD([w], lr=0.01), accumulation_steps=2,
                              scaler=GradScaler(init_scale=2.0 ** 8))
    for part in (x[:4], x[4:]):
        y = minigrad.tensor(part) @ w
        acc.backward((y * y).mean(), num_items=len(part))
        acc.step()
    assert acc.updates == 1, f"the window of 2 micro-batches made {acc.updates} updates"
    full_grad = 2 * x.T @ (x @ w0) / len(x)
    assert_close(w.numpy() - w0, -0.01 * full_grad,
                 "the update of one window (loss scale S = 256)",
                 [(-0.01 * 256 * full_grad, "the gradients were not divided by S before the "
                                            "step")])


# ------------------------------------------------------------------ 12.3
@pytest.mark.parametrize("optimizer, dtype, master, parts", [
    ("sgd", "float32", False, (4, 4, 0)),             # value + gradient: 8
    ("sgd-momentum", "float32", False, (4, 4, 4)),    # + momentum: 12
    ("adam", "float32", False, (4, 4, 8)),            # + two moments: 16
    ("adam", "float16", True, (2 + 4, 2, 8)),         # 2 + master 4, 2, moments 8: 16
])
@pytest.mark.exercise("12.3")
def test_plan_counts_the_bytes_per_parameter(optimizer, dtype, master, parts):
    p = plan(N, param_dtype=dtype, master_weights=master, optimizer=optimizer,
             state_dtype="float32", activation_bytes_per_item=0)
    got = tuple(v / N for v in (p.parameters, p.gradients, p.optimizer_state))
    names = ("parameters", "gradients", "optimizer state")
    why = {"parameters": "the values in param_dtype" + (
               ", plus a float32 master copy (4 bytes) when master_weights" if master else ""),
           "gradients": f"one gradient per trainable value, in grad_dtype ({dtype} here)",
           "optimizer state": f"{parts[2] // 4} float32 buffer(s) per parameter for "
                              f"{optimizer!r} (OPTIMIZER_STATES × state_dtype's bytes)"}
    for name, g, want in zip(names, got, parts):
        assert g == want, \
            f"{optimizer}, {dtype}, master_weights={master}: {name} take {g:g} bytes per " \
            f"parameter, expected {want}: {why[name]}"
    assert p.resident == sum(parts) * N


@pytest.mark.exercise("12.3")
def test_plan_gives_a_frozen_base_no_gradient_and_no_state():
    p = plan(N, trainable=1000, frozen_dtype="4bit", param_dtype="float16",
             master_weights=True, activation_bytes_per_item=0)
    expected = (N - 1000) * 0.5 + 1000 * (2 + 4)
    assert p.parameters == expected, \
        f"parameters take {p.parameters:g} bytes, expected {expected:g}: the frozen " \
        "999,000 in frozen_dtype (4 bits = 0.5 byte), the 1000 trainable in param_dtype " \
        "(2) plus their float32 master copy (4); the frozen base has no master copy"
    assert p.gradients == 1000 * 2, \
        f"gradients take {p.gradients:g} bytes, expected {1000 * 2}: only the 1000 " \
        "trainable parameters get a gradient"
    assert p.optimizer_state == 1000 * 8, \
        f"the optimizer state takes {p.optimizer_state:g} bytes, expected {1000 * 8}: " \
        "Adam keeps two float32 moments for the trainable parameters only"


# ------------------------------------------------------------------ 12.4
from minigrad.quantization import NF4_LEVELS, dequantize_4bit, quantize_4bit  # noqa: E402


def _nibbles(packed):
    """The codes in stored order (high nibble of each byte first)."""
    packed = np.asarray(packed, dtype=np.uint8)
    return np.stack([packed >> 4, packed & 15], axis=1).reshape(-1)


@pytest.mark.exercise("12.4")
def test_nf4_codes_are_the_nearest_level_of_each_block():
    # two blocks of 4 with very different scales; every value sits near a level
    w = np.array([0.55, -0.25, 0.03, 1.0, 100.0, 7.0, -50.0, -100.0], np.float32)
    packed, absmax = quantize_4bit(w, "nf4", blocksize=4)
    absmax = np.asarray(absmax)
    assert absmax.shape == (2,), \
        f"absmax has shape {absmax.shape}, expected (2,): one scale per block of " \
        "blocksize numbers, not one for the whole tensor"
    assert absmax.tolist() == [1.0, 100.0], \
        f"absmax = {absmax.tolist()}, expected [1.0, 100.0]: the largest |w| of each block" \
        + (" (100 for both: the absmax of the whole tensor, not of each block)"
           if absmax.tolist() == [100.0, 100.0] else "")
    codes = _nibbles(packed)
    expected = [13, 4, 7, 15, 15, 8, 2, 0]
    swapped = [4, 13, 15, 7, 8, 15, 0, 2]
    assert codes.tolist() != swapped, \
        "the codes of each pair are in the wrong nibbles: element 2j goes to the HIGH " \
        "nibble of byte j (code << 4) and element 2j+1 to the low nibble"
    nearest_level_below = [12, 4, 7, 15, 15, 7, 2, 0]
    assert codes.tolist() != nearest_level_below, \
        "some values were rounded down to the level below them; round to the NEAREST " \
        "level (compare with the midpoints between neighboring levels)"
    assert codes.tolist() == expected, \
        f"codes {codes.tolist()}, expected {expected}: code k means NF4_LEVELS[k]; each " \
        "value is divided by its block's absmax and rounded to the nearest level " \
        f"(0.55 -> level {NF4_LEVELS[13]:.4f}, -0.25 -> {NF4_LEVELS[4]:.4f}, " \
        f"0.07 -> {NF4_LEVELS[8]:.4f})"


@pytest.mark.exercise("12.4")
def test_nf4_zero_stays_exact_and_an_odd_count_is_padded_with_it():
    w = np.array([0.0, 0.8, 0.0], np.float32)
    packed, absmax = quantize_4bit(w, "nf4", blocksize=64)
    packed = np.asarray(packed)
    assert packed.dtype == np.uint8 and packed.shape == (2,), \
        f"3 codes packed into {packed.shape} {packed.dtype}; expected 2 bytes (uint8): " \
        "two 4-bit codes per byte, the odd one padded"
    assert _nibbles(packed)[[0, 2, 3]].tolist() == [7, 7, 7], \
        f"the codes of 0.0 (and of the padding) are {_nibbles(packed)[[0, 2, 3]].tolist()}, " \
        "expected 7: NF4_LEVELS[7] is exactly 0, so a zero weight must decode to 0"
    back = np.asarray(dequantize_4bit(packed, absmax, "nf4", blocksize=64, stop=3))
    assert back[0] == 0 and back[2] == 0, \
        f"zeros came back as {back[[0, 2]].tolist()}; NF4 has an exact zero (code 7)"


@pytest.mark.exercise("12.4")
def test_nf4_dequantize_reads_high_nibble_first_and_scales_by_the_block():
    packed = np.array([0xF0, 0x7D, 0x0F], np.uint8)      # codes 15, 0, 7, 13, 0, 15
    absmax = np.array([2.0, 10.0], np.float32)
    got = np.asarray(dequantize_4bit(packed, absmax, "nf4", blocksize=4, dtype=np.float64))
    expected = np.array([2.0, -2.0, 0.0, 2 * NF4_LEVELS[13], -10.0, 10.0], np.float64)
    assert_close(got, expected, "dequantize_4bit([0xF0, 0x7D, 0x0F])", rtol=1e-6, hints=[
        (np.array([-2.0, 2.0, 2 * NF4_LEVELS[13], 0.0, 10.0, -10.0]),
         "the nibbles are read in the wrong order: the HIGH nibble (byte >> 4) is the "
         "element with the even index"),
        (np.array([2.0, -2.0, 0.0, 2 * NF4_LEVELS[13], -2.0, 2.0]),
         "the last two numbers use the first block's absmax: element i belongs to block "
         "i // blocksize")])
    part = np.asarray(dequantize_4bit(packed, absmax, "nf4", blocksize=4, dtype=np.float64,
                                      start=3, stop=5))
    assert_close(part, expected[3:5], "dequantize_4bit(..., start=3, stop=5)", rtol=1e-6)


@pytest.mark.exercise("12.4")
def test_nf4_round_trip_error_on_normal_weights():
    w = rng(124).normal(0, 0.02, size=(64, 96)).astype(np.float32)
    packed, absmax = quantize_4bit(w, "nf4")
    back = np.asarray(dequantize_4bit(packed, absmax, "nf4", stop=w.size)).reshape(w.shape)
    error = np.linalg.norm(back - w) / np.linalg.norm(w)
    assert error < 0.11, \
        f"relative error of the NF4 round trip is {error:.3f}; with blocks of 64 and the " \
        "nearest of 16 normal-quantile levels it is about 0.09"


@pytest.mark.exercise("12.4")
def test_nf4_an_all_zero_block_gets_the_code_of_zero():
    w = np.array([0.0, 0.0, 0.0, 0.0, -2.0, 1.0, 0.0, 0.5], np.float32)
    with np.errstate(all="raise"):
        try:
            packed, absmax = quantize_4bit(w, "nf4", blocksize=4)
        except FloatingPointError as error:
            pytest.fail(f"quantize_4bit on a block of zeros raised {error!r}: an all-zero block "
                        "has absmax 0; divide by 1 there instead of 0", pytrace=False)
    codes = _nibbles(packed).tolist()
    assert codes[:4] == [7, 7, 7, 7], \
        f"the block of zeros got codes {codes[:4]}, expected [7, 7, 7, 7] (NF4_LEVELS[7] = 0): " \
        "its absmax is 0, so divide by 1 there, not by 0 (0/0 is NaN)"
    assert np.asarray(absmax).tolist() == [0.0, 2.0], \
        f"absmax = {np.asarray(absmax).tolist()}, expected [0.0, 2.0]: the largest MAGNITUDE " \
        "|w| of each block (-2.0 dominates the second block), not its largest value"
    assert codes[4:] == [0, 12, 7, 10], \
        f"the second block [-2, 1, 0, 0.5] got codes {codes[4:]}, expected [0, 12, 7, 10]: " \
        "divided by absmax 2 it is [-1, 0.5, 0, 0.25], nearest to levels 0, 12, 7 and 10"


@pytest.mark.exercise("12.4")
def test_nf4_a_value_halfway_between_two_levels_takes_the_lower():
    from minigrad.quantization import nearest_level
    levels = NF4_LEVELS.astype(np.float64)
    halfway = (levels[1:] + levels[:-1]) / 2
    got = np.asarray(nearest_level(halfway, NF4_LEVELS)).tolist()
    assert got == list(range(15)), \
        f"the midpoints between levels k and k+1 got codes {got}, expected {list(range(15))}: " \
        "a value exactly halfway takes the LOWER level (bitsandbytes compares with > the " \
        "midpoints: searchsorted(midpoints, x, side='left'))"
