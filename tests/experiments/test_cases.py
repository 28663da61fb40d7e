"""The verification experiments, each run small: the verdicts, the numbers behind
them, and the machinery that compares two training runs."""
from __future__ import annotations

import json

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.experiments import (DIFFERS, DIFFERS_THRESHOLD, EQUAL, CaseResult, GhostBatchNorm1d,
                                  case_batchnorm, case_char_lm, case_cnn_mnist, case_dropout,
                                  case_forgot_to_divide, case_merged_running_stats,
                                  case_mlp_digits, case_norm_layer, case_unequal_micro_batches,
                                  equal_tolerance, format_table, suite_report)
from minigrad.experiments.common import classification_windows, split_batch
from minigrad.experiments.suite import Case, run_case, verification_cases
from minigrad.experiments.training import items_seen, train

# In float64 every "equal" case agrees to a few roundings; this is 1e4 times
# tighter than the suite's tolerance, so a drift would show here first.
TIGHT = 1e-12


def assert_equal_case(result: CaseResult):
    assert result.expected == EQUAL
    assert result.passed, result
    assert result.max_rel_diff <= TIGHT, result.name
    assert np.all(np.isfinite(result.losses_reference))


def assert_differs_case(result: CaseResult):
    assert result.expected == DIFFERS
    assert result.passed, result
    assert result.max_rel_diff > DIFFERS_THRESHOLD, result.name


# ----------------------------------------------------------------- the cases


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
@pytest.mark.parametrize("batch_size, k", [(32, 8), (24, 3)])
def test_mlp_digits_accumulation_equals_full_batch(device, optimizer, batch_size, k):
    result = case_mlp_digits(batch_size, k, optimizer, updates=3, device=device)
    assert_equal_case(result)
    assert result.updates == 3
    assert result.grad_rel_per_update.shape == (3,)
    # The accumulated window loss is the full batch's loss, update by update.
    np.testing.assert_allclose(result.losses_accumulated, result.losses_reference, rtol=1e-13)


def test_mlp_digits_rejects_uneven_split():
    with pytest.raises(ValueError, match="multiple of accumulation_steps"):
        case_mlp_digits(30, 8)
    with pytest.raises(ValueError, match="unknown optimizer"):
        case_mlp_digits(32, 8, "rmsprop")


def test_unequal_micro_batches(device):
    assert_equal_case(case_unequal_micro_batches("items", updates=3, device=device))
    naive = case_unequal_micro_batches("equal", updates=3, device=device)
    assert_differs_case(naive)
    # Dividing by k changes the first update already, from identical parameters.
    assert naive.grad_rel_per_update[0] > 1e-2


def test_forgot_to_divide_by_k_gives_exactly_k_times(device):
    result = case_forgot_to_divide(accumulation_steps=4, micro_batch=8, windows=2, device=device)
    assert result.passed
    assert result.grad_rel_diff <= TIGHT
    assert result.extras["ratio"] == pytest.approx(4.0, rel=1e-13)
    assert result.param_rel_diff is None        # nothing is updated in this case
    assert "ratio 4.0000" in result.note


def test_char_lm_token_count_vs_micro_batch_mean(device):
    kwargs = dict(micro_batches=4, sequences_per_micro=4, updates=2, device=device)
    tokens = case_char_lm("tokens", **kwargs)
    assert_equal_case(tokens)
    counts = tokens.extras["tokens_per_micro_batch"]
    assert len(counts) == 2 and all(len(window) == 4 for window in counts)
    assert len({c for window in counts for c in window}) > 1      # the sizes really vary
    assert_differs_case(case_char_lm("micro-batch-mean", **kwargs))
    with pytest.raises(ValueError, match="normalization"):
        case_char_lm("per-sequence")


@pytest.mark.parametrize("norm", ["layer", "group"])
def test_layer_and_group_norm_are_exact(device, norm):
    assert_equal_case(case_norm_layer(norm, batch_size=32, accumulation_steps=4, updates=3,
                                      device=device))


def test_dropout_with_per_example_masks_is_exact(device):
    assert_equal_case(case_dropout(0.5, batch_size=32, accumulation_steps=4, updates=3,
                                   device=device))


def test_batchnorm_train_differs_and_equals_ghost_batch_norm(device):
    kwargs = dict(batch_size=32, accumulation_steps=4, updates=3, device=device)
    train_mode = case_batchnorm("train", **kwargs)
    assert_differs_case(train_mode)
    assert train_mode.extras["gap"] > 1e-2
    assert train_mode.note.startswith("gap ")
    assert_equal_case(case_batchnorm("ghost", **kwargs))
    assert_equal_case(case_batchnorm("eval", **kwargs))


def test_merged_running_statistics(device):
    result = case_merged_running_stats(batch_size=32, accumulation_steps=4, updates=3,
                                       device=device)
    assert result.passed and result.param_rel_diff <= TIGHT
    assert result.param_rel_per_update.shape == (3,)
    # Without merging, the running statistics of one window are clearly different.
    assert result.extras["per_micro_batch_gap"] > 1e-2


def test_cnn_mnist(device):
    kwargs = dict(batch_size=8, accumulation_steps=2, updates=2, device=device)
    assert_differs_case(case_cnn_mnist("train", **kwargs))
    assert_equal_case(case_cnn_mnist("eval", **kwargs))


def test_float32_cases_meet_the_float32_tolerance(device):
    result = case_mlp_digits(32, 8, "adamw", updates=3, device=device, dtype=np.float32)
    assert result.dtype == "float32" and result.tolerance == 1e-4
    assert result.passed
    assert result.max_rel_diff > 0     # float32 rounding is visible, yet small
    assert_differs_case(case_batchnorm("train", batch_size=32, accumulation_steps=4, updates=2,
                                       device=device, dtype=np.float32))


def test_cases_restore_the_default_dtype():
    before = minigrad.get_default_dtype()
    case_mlp_digits(32, 8, updates=1, dtype=np.float64)
    assert minigrad.get_default_dtype() == before


# ----------------------------------------------------------------- ghost batch norm


def test_ghost_batch_norm_gradcheck(float64):
    minigrad.manual_seed(0)
    layer = GhostBatchNorm1d(3, virtual_batch_size=4)
    layer.weight.data = np.array([0.5, -1.5, 2.0])
    layer.bias.data = np.array([0.1, 0.0, -0.3])
    x = minigrad.tensor(np.random.default_rng(1).standard_normal((8, 3)), requires_grad=True)
    w = minigrad.tensor(np.random.default_rng(2).standard_normal((8, 3)))
    assert minigrad.gradcheck(lambda x: (layer(x) * w).sum(), [x], atol=1e-7, rtol=1e-5)


def test_ghost_batch_norm_with_one_group_is_batch_norm(float64):
    rng = np.random.default_rng(0)
    x_data = rng.standard_normal((6, 4)) * 3 + 1
    upstream = rng.standard_normal((6, 4))
    ghost, batch_norm = GhostBatchNorm1d(4, virtual_batch_size=6), nn.BatchNorm1d(4)
    outputs, grads = [], []
    for layer in (ghost, batch_norm):
        x = minigrad.tensor(x_data, requires_grad=True)
        y = layer(x)
        (y * minigrad.tensor(upstream)).sum().backward()
        outputs.append(y.numpy())
        grads.append(x.grad.numpy())
    np.testing.assert_allclose(outputs[0], outputs[1], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)


def test_ghost_batch_norm_matches_torch_per_group(torch, float64):
    rng = np.random.default_rng(3)
    x_data = rng.standard_normal((12, 5))
    weight, bias = rng.standard_normal(5), rng.standard_normal(5)
    upstream = rng.standard_normal((12, 5))
    layer = GhostBatchNorm1d(5, virtual_batch_size=4)
    layer.weight.data, layer.bias.data = weight.copy(), bias.copy()
    x = minigrad.tensor(x_data, requires_grad=True)
    y = layer(x)
    (y * minigrad.tensor(upstream)).sum().backward()

    tx = torch.tensor(x_data, requires_grad=True)
    tw = torch.tensor(weight, requires_grad=True)
    tb = torch.tensor(bias, requires_grad=True)
    ty = torch.cat([torch.nn.functional.batch_norm(chunk, None, None, tw, tb, training=True)
                    for chunk in tx.split(4)])
    (ty * torch.tensor(upstream)).sum().backward()
    np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(layer.weight.grad.numpy(), tw.grad.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(layer.bias.grad.numpy(), tb.grad.numpy(), rtol=1e-10, atol=1e-12)


def test_ghost_batch_norm_rejects_bad_shapes():
    layer = GhostBatchNorm1d(4, virtual_batch_size=3)
    with pytest.raises(ValueError, match=r"expected \(N, 4\) with N a multiple of 3"):
        layer(minigrad.zeros(5, 4))
    with pytest.raises(ValueError, match="got shape"):
        layer(minigrad.zeros(6, 3))


# ----------------------------------------------------------------- results and suite


def test_verdicts():
    def row(expected, rel):
        return CaseResult("x", expected, tolerance=1e-3, grad_rel_diff=rel, param_rel_diff=0.0)
    assert row(EQUAL, 1e-4).passed and not row(EQUAL, 2e-3).passed
    assert row(DIFFERS, 2e-3).passed and not row(DIFFERS, 1e-4).passed
    assert not row(EQUAL, float("nan")).passed and not row(DIFFERS, float("nan")).passed
    assert not row(EQUAL, float("inf")).passed
    # A row with nothing measured cannot pass either.
    assert not CaseResult("x", EQUAL, tolerance=1.0).passed
    with pytest.raises(ValueError, match="expected must be"):
        CaseResult("x", "same", tolerance=1.0)


def test_equal_tolerance():
    assert equal_tolerance(np.float64) == 1e-10 and equal_tolerance("float32") == 1e-4
    with pytest.raises(ValueError, match="float64 or float32"):
        equal_tolerance(np.float16)


def test_result_rows_are_json_with_the_documented_keys():
    result = case_forgot_to_divide(accumulation_steps=2, micro_batch=4, windows=1)
    row = result.to_dict()
    for key in ("name", "expected", "max_abs_diff", "max_rel_diff", "tolerance", "passed"):
        assert key in row
    assert row["param_rel_diff"] is None          # not measured: null
    assert json.loads(json.dumps(CaseResult("y", EQUAL, 1.0, grad_rel_diff=float("nan"))
                                 .to_dict(), allow_nan=False))["max_rel_diff"] is None
    text = json.dumps(suite_report([result], device="cpu"), allow_nan=False)
    assert json.loads(text)["passed"] is True


def test_a_case_that_raises_becomes_a_failed_row():
    def broken(**kwargs):
        raise RuntimeError("boom")
    result = run_case(Case("broken", EQUAL, broken, {}), device="cpu", dtype=np.float64)
    assert not result.passed
    assert "RuntimeError: boom" in result.note and "traceback" in result.extras
    assert "FAIL" in format_table([result])


def test_suite_lists_every_required_case():
    titles = [c.title for c in verification_cases()]
    assert len(titles) == len(set(titles)) == 25
    expected = {c.title: c.expected for c in verification_cases()}
    assert expected["weighted CE 32=8x4, weight sum"] == EQUAL
    assert expected["weighted CE 32=8x4, mean of micro-batch means"] == DIFFERS
    assert expected["BatchNorm train"] == DIFFERS and expected["BatchNorm = ghost BN"] == EQUAL
    assert expected["char-lm, micro-batch mean"] == DIFFERS
    assert expected["BatchNorm train exact (multi-pass)"] == EQUAL
    assert expected["cnn-mnist BatchNorm train exact (multi-pass)"] == EQUAL
    assert expected["gpt sft 16=16x1, completion tokens"] == EQUAL
    assert expected["gpt sft 16=16x1, micro-batch mean (2024 bug)"] == DIFFERS
    assert expected["gpt sft LoRA r=2, completion tokens"] == EQUAL
    assert [c.title for c in verification_cases(quick=True)] == titles


def test_format_table_aligns_rows():
    rows = [CaseResult("a", EQUAL, 1e-10, grad_abs_diff=1e-17, grad_rel_diff=2e-16),
            CaseResult("bb", DIFFERS, 1e-3, grad_rel_diff=0.5, note="gap 5.00e-01")]
    lines = format_table(rows).splitlines()
    assert lines[0].startswith("case") and "verdict" in lines[0]
    assert "<= 1e-10" in lines[2] and "ok" in lines[2]
    assert "> 1e-03" in lines[3] and lines[3].endswith("gap 5.00e-01")


def test_classification_windows_cycle_through_epochs():
    X, y = np.arange(10.0)[:, None], np.arange(10)
    windows = classification_windows(X, y, batch_size=4, micro_sizes=[3, 1], updates=5, seed=0)
    assert len(windows) == 5
    (full_x, full_y), micro = windows[0]
    assert [len(m[1]) for m in micro] == [3, 1]
    np.testing.assert_array_equal(np.concatenate([m[1] for m in micro]), full_y)
    seen = np.concatenate([w[0][1] for w in windows])
    assert sorted(seen[:10].tolist()) == list(range(10))    # first epoch: each example once
    with pytest.raises(ValueError, match="do not add up"):
        split_batch((X,), [3, 3])


# ----------------------------------------------------------------- training


def test_train_accumulated_equals_full_batch(device):
    result = train("digits", micro_batch=50, accumulation_steps=3, epochs=1, optimizer="sgd",
                   device=device, dtype=np.float64, compare_full_batch=True)
    assert len(result.losses) == 10                       # 1500 examples / 150
    assert result.max_loss_gap <= 1e-12
    assert result.metric == pytest.approx(result.full_batch_metric, abs=1e-12)
    assert 0.0 <= result.metric <= 1.0 and result.metric_name == "accuracy"


@pytest.mark.slow
def test_train_short_last_window_and_shakespeare():
    # 2048 sequences in windows of 3 x 200 = 600: the last window holds 248, 2 micro-batches.
    updates = []
    result = train("shakespeare", micro_batch=200, accumulation_steps=3, epochs=1,
                   compare_full_batch=True, dtype=np.float64,
                   on_update=lambda run, u, e, loss, skipped: updates.append((run, u)))
    assert len(result.losses) == 4 and result.max_loss_gap <= 1e-12
    assert updates.count(("accumulated", 4)) == 1 and updates.count(("full-batch", 4)) == 1
    assert result.metric_name == "per-token loss" and 1.0 < result.metric < 5.0


def test_train_compare_micro_batch_takes_k_times_the_updates():
    result = train("digits", micro_batch=100, accumulation_steps=5, epochs=1,
                   compare_micro_batch=True, dtype=np.float64)
    assert len(result.losses) == 3 and len(result.micro_batch_losses) == 15
    assert result.full_batch_losses is None and result.max_loss_gap is None
    assert 0.0 <= result.micro_batch_metric <= 1.0


def test_items_seen_counts_short_last_batches():
    np.testing.assert_array_equal(items_seen(5, 4, 2, 10), [4, 8, 10, 14, 18])


def test_train_rejects_bad_settings():
    with pytest.raises(ValueError, match="accumulation_steps must be >= 1"):
        train("digits", accumulation_steps=0)
    with pytest.raises(ValueError, match="unknown dataset"):
        train("cifar", epochs=0)
    with pytest.raises(ValueError, match="unknown optimizer"):
        train("digits", optimizer="lion", epochs=0)


@pytest.mark.parametrize("weighting, expected", [("weight-sum", EQUAL),
                                                 ("micro-batch-mean", DIFFERS)])
def test_weighted_cross_entropy_case(weighting, expected):
    from minigrad.experiments.class_weights import case_weighted_cross_entropy
    result = case_weighted_cross_entropy(weighting, updates=2)
    assert result.expected == expected and result.passed, result.note
    if expected == EQUAL:
        assert result.max_rel_diff <= 1e-12
    else:
        assert result.grad_rel_diff > 0.1
