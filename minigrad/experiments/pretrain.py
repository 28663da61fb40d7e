"""Pre-training the GPT on tinyshakespeare, character by character.

The recipe (nanoGPT's ``shakespeare_char``, made small enough for a CPU):
the text's first 90 % trains, the last 10 % validates; every step draws
``batch_size`` windows of ``block_size + 1`` characters at random offsets,
the model predicts each next character (cross-entropy over all positions),
and AdamW takes one step, its rate rising linearly over the first
``warmup`` steps and then annealed along a cosine from ``lr`` to ``lr / 10``.  The random offsets come from ``numpy.random.default_rng(seed)``
and the initial weights from ``minigrad.manual_seed(seed)``, so a run is
reproducible step for step.

:func:`pretrain` returns the model and writes a checkpoint with
``minigrad.save``: ``{"config", "vocab", "model", "meta"}``;
:func:`load_gpt` reads one back.  The package ships the checkpoint that
``python -m minigrad pretrain`` writes with its defaults
(``minigrad/models/files/gpt_shakespeare_char.npz``; its command, seed, losses
and a sample are in the JSON beside it).
"""
from __future__ import annotations

import dataclasses
import json
import time
from importlib import resources
from pathlib import Path

import numpy as np

import minigrad
import minigrad.optim as optim
from minigrad.data import CharTokenizer, load_tinyshakespeare
from minigrad.models.gpt import GPT, GPTConfig, lm_loss

#: The shipped checkpoint and its record (command, seed, losses, sample).
CHECKPOINT = "gpt_shakespeare_char.npz"
RECORD = "gpt_shakespeare_char.json"

DEFAULTS = dict(n_layer=4, n_head=4, n_embd=128, block_size=64, batch_size=32, steps=600,
                lr=2e-3, warmup=30, seed=1337, eval_batches=16)


def shakespeare_splits():
    """(tokenizer, train ids, validation ids): the first 90 % / last 10 %."""
    text = load_tinyshakespeare()
    tokenizer = CharTokenizer(text)
    ids = tokenizer.encode(text)
    cut = int(0.9 * len(ids))
    return tokenizer, ids[:cut], ids[cut:]


def random_windows(ids, batch_size, block_size, rng):
    """Inputs and next-character targets (batch_size, block_size) at random offsets."""
    starts = rng.integers(0, len(ids) - block_size - 1, batch_size)
    rows = np.stack([ids[s:s + block_size + 1] for s in starts])
    return rows[:, :-1], rows[:, 1:]


@minigrad.no_grad()
def evaluate(model, ids, *, block_size, batch_size=32, batches=16, seed=0, device="cpu"):
    """Mean next-character loss over ``batches`` fixed random windows of ``ids``."""
    was_training = model.training
    model.eval()
    rng = np.random.default_rng(seed)
    losses = [lm_loss(model(_to(x, device)), y).item()
              for x, y in (random_windows(ids, batch_size, block_size, rng)
                           for _ in range(batches))]
    model.train(was_training)
    return float(np.mean(losses))


def pretrain(*, n_layer=4, n_head=4, n_embd=128, block_size=64, batch_size=32, steps=600,
             lr=2e-3, warmup=30, seed=1337, eval_batches=16, stop_after=None, device="cpu",
             dtype=np.float32, out=None, on_step=None, command=None):
    """Train a GPT from scratch; return ``(model, record)``.

    Args:
        n_layer, n_head, n_embd, block_size: the model (:class:`GPTConfig`).
        batch_size, steps, lr, warmup, seed: the schedule is planned for ``steps``.
        stop_after: stop after this many steps (a shortened run that follows
            the same schedule, for tests); default all ``steps``.
        out: write the checkpoint there (``minigrad.save``), and the record
            as JSON beside it (same name, ``.json``).
        on_step: ``on_step(step, loss)`` after every step (progress bars).
        command: the command line to record beside the checkpoint.

    Returns:
        The model and a dict with the per-step losses, the validation loss
        (:func:`evaluate` on ``eval_batches`` fixed windows) and the seconds.
    """
    tokenizer, train_ids, val_ids = shakespeare_splits()
    config = GPTConfig(vocab_size=tokenizer.vocab_size, block_size=block_size,
                       n_layer=n_layer, n_head=n_head, n_embd=n_embd)
    previous = minigrad.get_default_dtype()
    minigrad.set_default_dtype(dtype)
    try:
        minigrad.manual_seed(seed)
        model = GPT(config).to(device)
    finally:
        minigrad.set_default_dtype(previous)
    optimizer = optim.AdamW(model.parameters(), lr=lr, weight_decay=0.1)
    scheduler = optim.lr_scheduler.LambdaLR(optimizer, lambda s: warmup_cosine(s, warmup, steps))
    rng = np.random.default_rng(seed)
    losses, start = [], time.perf_counter()
    for step in range(steps if stop_after is None else min(stop_after, steps)):
        x, y = random_windows(train_ids, batch_size, block_size, rng)
        loss = lm_loss(model(_to(x, device)), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        losses.append(loss.item())
        if on_step is not None:
            on_step(step, losses[-1])
    record = {"command": command, "config": dataclasses.asdict(config), "seed": seed,
              "steps": steps, "batch_size": batch_size, "lr": lr, "warmup": warmup, "dtype": np.dtype(dtype).name,
              "train_losses": losses, "seconds": time.perf_counter() - start,
              "val_loss": evaluate(model, val_ids, block_size=block_size,
                                   batches=eval_batches, device=device)}
    if out is not None:
        save_gpt(model, tokenizer, record, out)
    return model, record


def warmup_cosine(step, warmup, steps):
    """The learning-rate factor at ``step``: linear warm-up to 1 over ``warmup``
    steps, then a cosine down to 0.1 at ``steps`` (Loshchilov & Hutter 2017)."""
    if step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, steps - warmup))
    return float(0.1 + 0.9 * 0.5 * (1.0 + np.cos(np.pi * progress)))


def save_gpt(model, tokenizer, record, path) -> str:
    """Write ``{"config", "vocab", "model", "meta"}`` with ``minigrad.save`` and
    the record as JSON beside it; returns the checkpoint's path."""
    state = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}  # tied
    written = minigrad.save({"config": dataclasses.asdict(model.config),
                             "vocab": "".join(tokenizer.vocab), "model": state,
                             "meta": record}, path)
    Path(written).with_suffix(".json").write_text(json.dumps(record, indent=1) + "\n")
    return written


def load_gpt(path=None, *, device="cpu", dtype=None):
    """A GPT and its tokenizer from a checkpoint of :func:`save_gpt` (default:
    the one shipped in the package).  Returns ``(model, tokenizer, meta)``."""
    if path is None:
        path = resources.files("minigrad.models") / "files" / CHECKPOINT
    state = minigrad.load(str(path))
    dtype = np.dtype(dtype or state["model"]["wte.weight"].dtype)
    previous = minigrad.get_default_dtype()
    minigrad.set_default_dtype(dtype)
    try:
        model = GPT(GPTConfig(**state["config"]))
    finally:
        minigrad.set_default_dtype(previous)
    weights = dict(state["model"], **{"lm_head.weight": state["model"]["wte.weight"]})
    model.load_state_dict(weights)
    return model.to(device), CharTokenizer(state["vocab"]), state["meta"]


def sample(model, tokenizer, prompt="\n", length=200, temperature=0.8, top_k=None, seed=0):
    """``prompt`` continued by ``length`` characters from the model (eval mode)."""
    was_training = model.training
    model.eval()
    ids = model.generate(tokenizer.encode(prompt)[None, :], length, temperature=temperature,
                         top_k=top_k, generator=np.random.default_rng(seed))
    model.train(was_training)
    return tokenizer.decode(ids[0])


def _to(x, device):
    return minigrad.tensor(x, device=device)
