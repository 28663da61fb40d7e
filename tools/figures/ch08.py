"""Chapter 08's figures: the embedding's backward as counts, the 8 x 16 window of sequences and
its tokens, sampling temperature, and the model's training curve against the counted bound.

Everything is computed here with minigrad on the bundled tinyshakespeare: the window is the first
one of ``lm_windows(seed=0)`` (notebook 08's), the curve is notebook 08's accumulated run (the
same seed, model, optimizer and 200 windows, in float64).
"""
from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import ListedColormap

from tools.figures import save

IGNORE_INDEX = -100


def first_window():
    from minigrad.experiments.char_lm import lm_windows, shakespeare_ids
    _, ids = shakespeare_ids()
    train_ids = ids[:int(0.9 * len(ids))]                   # notebook 08's training text
    (full, micro), = lm_windows(train_ids, micro_batches=8, sequences_per_micro=16, updates=1, seed=0)
    return full, micro


def figure_embedding_rows():
    """One-hot rows of "to be or not to be" and the gradient each row of W receives."""
    import minigrad
    from minigrad import nn
    from minigrad.data import CharTokenizer
    text = "to be or not to be"
    tok = CharTokenizer(text)
    ids = tok.encode(text)
    emb = nn.Embedding(tok.vocab_size, 2)
    emb(minigrad.tensor(ids)).sum().backward()
    row_grad = emb.weight.grad.numpy().sum(axis=1)          # 2 x the count of each id
    onehot = np.eye(tok.vocab_size)[ids]
    names = [repr(c) for c in tok.vocab]
    fig, (ax_hot, ax_grad) = plt.subplots(1, 2, figsize=(7.2, 3.6),
                                          gridspec_kw={"width_ratios": [1.1, 1]})
    ax_hot.imshow(onehot, cmap="Greys", aspect="auto")
    ax_hot.set_xticks(range(tok.vocab_size), names, fontsize=8)
    ax_hot.set_yticks(range(len(ids)), [repr(c) for c in text], fontsize=7)
    ax_hot.set_xlabel("row of W (id)")
    ax_hot.set_ylabel("position in the text")
    ax_hot.set_title("one-hot(id) per position", fontsize=10)
    ax_grad.bar(range(tok.vocab_size), row_grad / 2, color="tab:blue")
    ax_grad.set_xticks(range(tok.vocab_size), names, fontsize=8)
    ax_grad.set_ylabel("gradient into the row (per entry)")
    ax_grad.set_title("backward of sum(): column sums", fontsize=10)
    for i, v in enumerate(row_grad / 2):
        ax_grad.text(i, v + 0.05, f"{v:g}", ha="center", fontsize=8)
    return save(fig, "08_embedding_rows.png")


def figure_window():
    """The 128 sequences of one window: real tokens, padding inside a micro-batch, and the
    extra padding only the full batch would need."""
    full, micro = first_window()
    width = full[1].shape[1]
    grid = np.zeros((128, width))                # 0: padding only in the full batch
    counts = []
    for j, (_, target) in enumerate(micro):
        rows = slice(16 * j, 16 * (j + 1))
        grid[rows, :target.shape[1]] = 1         # 1: padding of the micro-batch
        grid[rows, :target.shape[1]][target != IGNORE_INDEX] = 2   # 2: a real token
        counts.append(int((target != IGNORE_INDEX).sum()))
    fig, ax = plt.subplots(figsize=(7.2, 4.6))
    ax.imshow(grid, cmap=ListedColormap(["white", "#d0d0d0", "tab:blue"]), aspect="auto",
              interpolation="nearest", vmin=0, vmax=2)
    for j, n in enumerate(counts):
        if j:
            ax.axhline(16 * j - 0.5, color="black", linewidth=0.8)
        ax.text(width + 0.5, 16 * j + 8, f"{n} tokens", va="center", fontsize=8)
    ax.axvline(width - 0.5, color="black", linestyle="--", linewidth=1)
    ax.set_xlim(-0.5, width + 7)
    ax.set_xlabel(f"position (target); dashed: the full batch's {width} positions")
    ax.set_ylabel("sequence (8 micro-batches of 16)")
    ax.set_title(f"One window: {sum(counts)} real tokens (blue), padding (gray); "
                 f"white: padding only the full batch needs", fontsize=9)
    return save(fig, "08_window_8x16.png")


def figure_tokens_per_micro_batch():
    """Tokens per micro-batch in one 8 x 16 window of the bundled Shakespeare."""
    _, micro = first_window()
    counts = [int((target != IGNORE_INDEX).sum()) for _, target in micro]
    fig, ax = plt.subplots(figsize=(6.0, 3.2))
    ax.bar(range(1, 9), counts, color="tab:blue")
    ax.axhline(np.mean(counts), color="tab:orange", linestyle="--",
               label=f"mean {np.mean(counts):.0f} tokens")
    ax.set_xlabel("micro-batch of 16 sequences")
    ax.set_ylabel("real (non-padding) tokens")
    ax.set_title(f"One window of 8 x 16 sequences: {sum(counts)} tokens")
    ax.legend(fontsize=8)
    return save(fig, "08_tokens_per_micro_batch.png")


def training_curve(updates: int = 200):
    """Notebook 08's accumulated run: window losses of 200 AdamW updates of 8 x 16 sequences,
    and the counted bigram entropy of the training text (nats per character)."""
    import minigrad
    from minigrad import optim
    from minigrad.experiments.char_lm import (lm_windows, make_bigram_lm, shakespeare_ids,
                                              token_loss)
    previous = minigrad.get_default_dtype()
    minigrad.set_default_dtype(np.float64)
    try:
        tokenizer, ids = shakespeare_ids()
        train_ids = ids[:int(0.9 * len(ids))]
        windows = lm_windows(train_ids, micro_batches=8, sequences_per_micro=16,
                             updates=updates, seed=0)
        minigrad.manual_seed(0)
        model = make_bigram_lm(tokenizer.vocab_size)
        accumulator = optim.GradientAccumulator(optim.AdamW(model.parameters(), lr=1e-2), 8)
        lm_loss = token_loss("cpu")
        losses = []
        for _, micro_batches in windows:
            for batch in micro_batches:
                loss, tokens = lm_loss(model, batch)
                accumulator.backward(loss, num_items=tokens)
                accumulator.step()
            losses.append(accumulator.window_loss)
    finally:
        minigrad.set_default_dtype(previous)
    counts = np.zeros((tokenizer.vocab_size, tokenizer.vocab_size))
    np.add.at(counts, (train_ids[:-1], train_ids[1:]), 1)
    p_next = counts / np.maximum(counts.sum(axis=1, keepdims=True), 1)
    entropy = -(counts * np.log(np.where(counts > 0, p_next, 1.0))).sum() / counts.sum()
    return np.array(losses), float(entropy), tokenizer.vocab_size


def figure_loss_curve():
    losses, entropy, vocab = training_curve()
    fig, ax = plt.subplots(figsize=(7.0, 3.4))
    ax.plot(np.arange(1, len(losses) + 1), losses, color="tab:blue",
            label="window loss, 8 x 16, num_items = tokens")
    ax.axhline(np.log(vocab), color="tab:red", linestyle=":",
               label=f"uniform guess, log {vocab} = {np.log(vocab):.3f}")
    ax.axhline(entropy, color="black", linestyle="--",
               label=f"best bigram model (counted) = {entropy:.3f}")
    ax.set_xlabel("update")
    ax.set_ylabel("loss (nats per character)")
    ax.set_title("Training the bigram model: from uniform down toward the counted bound")
    ax.legend(fontsize=8)
    return save(fig, "08_loss_curve.png")


def figure_temperature():
    """softmax((2, 1, 0) / tau) for tau = 0.5, 1, 2."""
    import minigrad
    import minigrad.nn.functional as F
    logits = minigrad.tensor([[2.0, 1.0, 0.0]], dtype=np.float64)
    taus = (0.5, 1.0, 2.0)
    fig, ax = plt.subplots(figsize=(6.0, 3.0))
    for i, tau in enumerate(taus):
        probs = F.softmax(logits / tau, axis=-1).numpy()[0]
        ax.bar(np.arange(3) + 0.27 * (i - 1), probs, width=0.27, label=f"τ = {tau:g}")
    ax.set_xticks(range(3), ["logit 2", "logit 1", "logit 0"])
    ax.set_ylabel("probability")
    ax.set_title("Dividing the logits by τ: sharper below 1, flatter above")
    ax.legend(fontsize=8)
    return save(fig, "08_temperature.png")


def draw_all():
    return [figure_embedding_rows(), figure_window(), figure_tokens_per_micro_batch(),
            figure_loss_curve(), figure_temperature()]
