"""Prompt/completion pairs from tinyshakespeare, for supervised fine-tuning.

The play text is a sequence of speeches, ``NAME:\\nline\\nline\\n\\n``.  A pair
asks the model to continue a conversation:

    prompt      = the last line of one speech (its end) + "\\n\\n" + the next speaker + ":\\n"
    completion  = the first line of that next speech + "\\n"

The model sees ``prompt + completion`` and is trained to predict only the
completion's characters: the targets of the prompt's positions, and of the
padding that makes a batch rectangular, are ``ignore_index``.  A pair holds
between 2 and ``max_completion`` completion tokens, so micro-batches of one
pair hold very different numbers of tokens, which is what the
normalization of the loss under accumulation must get right.
"""
from __future__ import annotations

import numpy as np

__all__ = ["prompt_completion_pairs", "make_sft_batch", "completion_tokens"]


def prompt_completion_pairs(text: str, max_prompt: int = 32,
                            max_completion: int = 32) -> list[tuple[str, str]]:
    """Every (prompt, completion) of consecutive speeches in ``text`` (see the
    module docstring), in order.  The prompt keeps at most ``max_prompt``
    characters (the tail of the previous line is cut from the left); pairs
    whose completion is longer than ``max_completion`` characters are left out.

    Raises ValueError when no pair fits."""
    speeches = [s.split("\n") for s in text.split("\n\n") if ":\n" in s]
    pairs = []
    for previous, current in zip(speeches, speeches[1:]):
        speaker, first_line = current[0], current[1] if len(current) > 1 else ""
        if not speaker.endswith(":") or not first_line:
            continue
        prompt = (previous[-1] + "\n\n" + speaker + "\n")[-max_prompt:]
        completion = first_line + "\n"
        if len(completion) <= max_completion:
            pairs.append((prompt, completion))
    if not pairs:
        raise ValueError(f"prompt_completion_pairs: no pair with a completion of at most "
                         f"{max_completion} characters")
    return pairs


def make_sft_batch(pairs_ids, ignore_index: int = -100, pad_id: int = 0):
    """Inputs and targets (B, T) for pairs of token ids ``[(prompt, completion), ...]``.

    Row b is ``prompt + completion`` without its last token (inputs) and
    without its first (targets); targets at the prompt's positions are
    ``ignore_index``, so only completion tokens count.  Rows are padded on the
    right to the longest (inputs with ``pad_id``, targets with
    ``ignore_index``): with causal attention a real token never sees the
    padding after it, so a pair's logits do not depend on the batch it is in.

    Returns int64 arrays (B, T).  Raises ValueError for a pair with an empty
    prompt or completion.
    """
    rows = []
    for prompt, completion in pairs_ids:
        if len(prompt) == 0 or len(completion) == 0:
            raise ValueError("make_sft_batch: every pair needs a non-empty prompt and "
                             "completion")
        # BEGIN SOLUTION ch13.4
        seq = np.concatenate([prompt, completion]).astype(np.int64)
        target = seq[1:].copy()
        target[:len(prompt) - 1] = ignore_index          # predicting the prompt: not trained
        # END SOLUTION
        rows.append((seq[:-1], target))
    T = max(len(x) for x, _ in rows)
    inputs = np.full((len(rows), T), pad_id, dtype=np.int64)
    targets = np.full((len(rows), T), ignore_index, dtype=np.int64)
    for b, (x, y) in enumerate(rows):
        inputs[b, :len(x)], targets[b, :len(y)] = x, y
    return inputs, targets


def completion_tokens(targets, ignore_index: int = -100) -> int:
    """The number of targets that count (not ``ignore_index``): the ``num_items``
    of a micro-batch."""
    # BEGIN SOLUTION ch13.4
    return int((np.asarray(targets) != ignore_index).sum())
    # END SOLUTION
