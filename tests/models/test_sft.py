"""Fine-tuning on prompt/completion pairs: the batches, the equality of
micro-batch 1 x 16 with one batch of 16, and the 2024 bug measured."""
from __future__ import annotations

import numpy as np
import pytest

from minigrad.data.sft import completion_tokens, make_sft_batch, prompt_completion_pairs
from minigrad.experiments.finetune import case_sft, sft_pairs, sft_windows


def test_pairs_from_the_play():
    text = "A:\nHello there.\n\nB:\nWho goes?\nFriend.\n\nC:\n\n"
    assert prompt_completion_pairs(text, max_prompt=12) == [(" there.\n\nB:\n", "Who goes?\n")]
    _, train, val = sft_pairs()
    assert len(train) > 2000 and len(val) > 200
    assert all(1 <= len(c) <= 32 and len(p) <= 32 for p, c in train)


def test_batch_masks_prompt_and_padding():
    x, y = make_sft_batch([(np.array([1, 2, 3]), np.array([4, 5])),
                           (np.array([6]), np.array([7]))])
    np.testing.assert_array_equal(x, [[1, 2, 3, 4], [6, 0, 0, 0]])
    np.testing.assert_array_equal(y, [[-100, -100, 4, 5], [7, -100, -100, -100]])
    assert completion_tokens(y) == 3
    with pytest.raises(ValueError, match="non-empty"):
        make_sft_batch([(np.array([], dtype=np.int64), np.array([1]))])


def test_windows_hold_micro_batches_of_one_with_varied_token_counts():
    _, train, _ = sft_pairs()
    windows = sft_windows(train, micro_batch=1, accumulation_steps=16, updates=3)
    full, micro = windows[0]
    assert len(micro) == 16 and full[0].shape[0] == 16
    counts = [completion_tokens(y) for _, y in micro]
    assert sum(counts) == completion_tokens(full[1]) and max(counts) > 3 * min(counts)


def test_micro_batch_1x16_with_token_counts_equals_batch_16():
    """20 AdamW updates of a tiny GPT in float64: equal to 1e-10."""
    result = case_sft("tokens", updates=20)
    assert result.passed and result.updates == 20
    assert result.param_rel_diff < 1e-10 and result.grad_rel_diff < 1e-10


def test_mean_of_micro_batch_means_is_the_2024_bug():
    result = case_sft("micro-batch-mean", updates=20)
    assert result.passed and result.grad_rel_diff > 0.05 and result.param_rel_diff > 1e-3


def test_lora_micro_batch_1x16_equals_batch_16():
    assert case_sft("tokens", lora_rank=2, updates=5).passed
