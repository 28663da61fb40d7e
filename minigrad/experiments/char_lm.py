"""A character-level language model on tinyshakespeare, with variable-length sequences.

Each update sees 128 sequences of random lengths (8 to 48 characters), as
8 micro-batches of 16. Every micro-batch is padded to its own longest
sequence, the full batch to the longest of all 128; padded targets are
``ignore_index`` (-100) and do not count. The mean loss of a batch is the mean
over its *real* tokens, so micro-batches hold different numbers of them, and
the exact accumulated gradient weighs micro-batch j by its token count:

* ``accumulator.backward(loss_j, num_items=tokens_j)``: equal to the full batch;
* the per-micro-batch mean (``num_items=None``, weight 1/8): every token of a
  short micro-batch weighs more than a token of a long one, so it differs.

The model is a bigram model: ``Embedding(V, 16) -> Linear(16, 32) -> Tanh ->
Linear(32, V)`` predicts the next character from the current one (V = 65).
It is small on purpose: the point is the normalization of the loss, and it
does not depend on how the model mixes positions.
"""
from __future__ import annotations

import numpy as np

import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.data import CharTokenizer, load_tinyshakespeare, make_lm_batch
from minigrad.data.text import sample_variable_length_sequences

from .common import DIFFERS, EQUAL, IGNORE_INDEX, CaseResult, Window, compare_training, to_tensor


def make_bigram_lm(vocab_size: int = 65, embedding_dim: int = 16, hidden: int = 32):
    """``Embedding(V, d) -> Linear(d, h) -> Tanh -> Linear(h, V)``, on flat token ids (N,)."""
    return nn.Sequential(nn.Embedding(vocab_size, embedding_dim), nn.Linear(embedding_dim, hidden),
                         nn.Tanh(), nn.Linear(hidden, vocab_size))


def shakespeare_ids() -> tuple[CharTokenizer, np.ndarray]:
    """The tokenizer of tinyshakespeare and the whole text as int64 ids."""
    text = load_tinyshakespeare()
    tokenizer = CharTokenizer(text)
    return tokenizer, tokenizer.encode(text)


def lm_windows(ids: np.ndarray, *, micro_batches: int = 8, sequences_per_micro: int = 16,
               updates: int = 10, min_len: int = 8, max_len: int = 48,
               seed: int = 0) -> list[Window]:
    """Windows of variable-length next-character batches.

    Each window's full batch is ``make_lm_batch`` of all its sequences (inputs
    and targets of shape (B, T), T from the longest); micro-batch j is
    ``make_lm_batch`` of its own ``sequences_per_micro`` sequences only.
    """
    rng = np.random.default_rng(seed)
    per_window = micro_batches * sequences_per_micro
    windows = []
    for _ in range(updates):
        seqs = sample_variable_length_sequences(ids, per_window, min_len, max_len, rng)
        micro = [make_lm_batch(seqs[j:j + sequences_per_micro], IGNORE_INDEX)
                 for j in range(0, per_window, sequences_per_micro)]
        windows.append((make_lm_batch(seqs, IGNORE_INDEX), micro))
    return windows


def token_loss(device: str):
    """Loss function of LM windows: mean cross-entropy over real tokens, items = tokens."""
    def loss_fn(model, batch):
        inputs, targets = batch
        flat_targets = targets.reshape(-1)
        logits = model(to_tensor(inputs.reshape(-1), device=device))       # (B*T, V)
        # BEGIN SOLUTION ch05.2
        loss = nn.functional.cross_entropy(logits, to_tensor(flat_targets, device=device),
                                           ignore_index=IGNORE_INDEX)
        return loss, int((flat_targets != IGNORE_INDEX).sum())
        # END SOLUTION
    return loss_fn


def sample_text(model, tokenizer: CharTokenizer, prompt: str, length: int, *,
                temperature: float = 1.0, rng=None, device: str = "cpu") -> str:
    """Continue ``prompt`` by ``length`` characters drawn from a next-character model.

    ``model`` maps ids of shape (N,) to logits of shape (N, V), as the bigram
    model of :func:`make_bigram_lm`: each new character is drawn from
    softmax(logits / temperature) of the last one (Bengio et al. 2003 for the
    model; the temperature as in Hinton et al. 2015, "Distilling the Knowledge
    in a Neural Network").  Runs under ``no_grad``.

    Args:
        model: the model; it is put in eval mode for the sampling and back.
        tokenizer: the tokenizer of the training text.
        prompt: at least one character of the vocabulary.
        length: number of characters to add, >= 0.
        temperature: > 0; below 1 sharpens the distribution, above 1 flattens it.
        rng: a ``numpy.random.Generator`` (default: minigrad's generator, which
            ``minigrad.manual_seed`` resets).
        device: where the model lives.

    Returns:
        ``prompt`` followed by ``length`` sampled characters.

    Raises:
        ValueError: empty prompt, ``length < 0`` or ``temperature <= 0``.
    """
    import minigrad  # noqa: PLC0415
    from minigrad import random as mg_random  # noqa: PLC0415
    if not prompt:
        raise ValueError("sample_text: the prompt needs at least one character")
    if isinstance(length, bool) or not isinstance(length, (int, np.integer)) or length < 0:
        raise ValueError(f"sample_text: length must be an int >= 0, got {length!r}")
    if not temperature > 0:
        raise ValueError(f"sample_text: temperature must be > 0, got {temperature!r}")
    rng = rng if rng is not None else mg_random.default_generator()
    ids = list(tokenizer.encode(prompt))
    was_training = model.training
    model.eval()
    try:
        with minigrad.no_grad():
            for _ in range(length):
                logits = model(to_tensor(np.asarray(ids[-1:]), device=device)).numpy()[-1]
                # BEGIN SOLUTION ch08.2
                z = logits.astype(np.float64) / temperature
                p = np.exp(z - z.max())
                ids.append(int(rng.choice(p.size, p=p / p.sum())))
                # END SOLUTION
    finally:
        model.train(was_training)
    return tokenizer.decode(np.asarray(ids, dtype=np.int64))


def case_char_lm(normalization: str = "tokens", *, micro_batches: int = 8,
                 sequences_per_micro: int = 16, updates: int = 10, device: str = "cpu",
                 dtype=np.float64, seed: int = 0) -> CaseResult:
    """Token-count normalization (equal) vs per-micro-batch mean (differs), AdamW.

    Args:
        normalization: ``"tokens"`` (``num_items`` = real tokens; expected
            equal) or ``"micro-batch-mean"`` (``num_items=None``; expected to differ).
        micro_batches, sequences_per_micro: k and the sequences per micro-batch
            (8 x 16 = 128 by default).
        updates, device, dtype, seed: as in the other cases.
    """
    if normalization not in ("tokens", "micro-batch-mean"):
        raise ValueError("normalization must be 'tokens' or 'micro-batch-mean', "
                         f"got {normalization!r}")
    tokenizer, ids = shakespeare_ids()
    windows = lm_windows(ids, micro_batches=micro_batches, sequences_per_micro=sequences_per_micro,
                         updates=updates, seed=seed)
    tokens = [[int((t != IGNORE_INDEX).sum()) for _, t in micro] for _, micro in windows]
    equal = normalization == "tokens"
    batch = micro_batches * sequences_per_micro
    result = compare_training(
        name=f"char-lm {batch}={micro_batches}x{sequences_per_micro}, "
             + ("token count" if equal else "micro-batch mean"),
        expected=EQUAL if equal else DIFFERS,
        make_model=lambda: make_bigram_lm(tokenizer.vocab_size),
        make_optimizer=lambda params: optim.AdamW(params, lr=1e-2),
        windows=windows, loss_fn=token_loss(device), device=device, dtype=dtype, seed=seed,
        weighting="items" if equal else "equal",
        description=f"bigram LM on tinyshakespeare, {updates} AdamW updates, sequences of "
                    f"8-48 chars, {'num_items=tokens' if equal else 'num_items=None'}",
        note=f"tokens/micro {min(map(min, tokens))}-{max(map(max, tokens))}")
    result.extras["tokens_per_micro_batch"] = tokens
    return result
