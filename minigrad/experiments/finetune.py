"""Supervised fine-tuning of the GPT with micro-batch 1 × 16, and the 2024 bug.

The setting gradient accumulation is used in today: a model too large for more
than one sequence per forward pass is fine-tuned on prompt/completion pairs
(:mod:`minigrad.data.sft`) with micro-batch 1 and 16 accumulation steps.  Only
completion tokens count, so the 16 micro-batches hold from 2 to 32 tokens each.

* ``num_items`` = completion tokens of each micro-batch: the window's gradient
  is the gradient of the mean over all its completion tokens, the same as one
  padded batch of 16 (equal to rounding, :func:`case_sft`).
* ``num_items=None``: each micro-batch's *token mean* gets the weight 1/16, so
  a token of a 3-token completion counts ten times as much as one of a
  30-token completion: the bug of Hugging Face's trainer (fixed in October
  2024), reproduced and measured here.

:func:`finetune` is what ``python -m minigrad finetune`` runs: the shipped
pre-trained checkpoint, full fine-tuning or LoRA adapters, accumulation.
"""
from __future__ import annotations

import time

import numpy as np

import minigrad
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.data import CharTokenizer, load_tinyshakespeare
from minigrad.data.sft import completion_tokens, make_sft_batch, prompt_completion_pairs
from minigrad.models.gpt import GPT, GPTConfig, lm_loss

from .common import DIFFERS, EQUAL, IGNORE_INDEX, CaseResult, Window, compare_training, to_tensor

#: The model of the verification rows: small enough for ``verify`` to stay fast.
TINY = GPTConfig(vocab_size=65, block_size=64, n_layer=1, n_head=2, n_embd=16)


def sft_pairs(tokenizer=None):
    """(tokenizer, train pairs, validation pairs) as token ids: the pairs of the
    first 90 % of tinyshakespeare train, those of the last 10 % validate."""
    text = load_tinyshakespeare()
    tokenizer = tokenizer or CharTokenizer(text)
    pairs = [(tokenizer.encode(p), tokenizer.encode(c)) for p, c in prompt_completion_pairs(text)]
    cut = int(0.9 * len(pairs))
    return tokenizer, pairs[:cut], pairs[cut:]


def sft_windows(pairs, *, micro_batch: int = 1, accumulation_steps: int = 16,
                updates: int = 20, seed: int = 0) -> list[Window]:
    """``updates`` windows of micro_batch × accumulation_steps pairs in a seeded
    random order: the full batch padded as one, each micro-batch padded alone."""
    order = np.random.default_rng(seed).permutation(len(pairs))
    per_window = micro_batch * accumulation_steps
    if updates * per_window > len(pairs):
        order = np.resize(order, updates * per_window)
    windows = []
    for t in range(updates):
        chosen = [pairs[i] for i in order[t * per_window:(t + 1) * per_window]]
        micro = [make_sft_batch(chosen[j:j + micro_batch], IGNORE_INDEX)
                 for j in range(0, per_window, micro_batch)]
        windows.append((make_sft_batch(chosen, IGNORE_INDEX), micro))
    return windows


def sft_loss(device: str):
    """``loss_fn(model, (inputs, targets)) -> (mean loss over completion tokens,
    number of completion tokens)``."""
    def loss_fn(model, batch):
        inputs, targets = batch
        loss = lm_loss(model(to_tensor(inputs, device=device)), targets, IGNORE_INDEX)
        return loss, completion_tokens(targets, IGNORE_INDEX)
    return loss_fn


def case_sft(normalization: str = "tokens", *, lora_rank: int = 0, updates: int = 20,
             micro_batch: int = 1, accumulation_steps: int = 16, device: str = "cpu",
             dtype=np.float64, seed: int = 0, config: GPTConfig = TINY,
             quantize: str | None = None) -> CaseResult:
    """One padded batch of 16 pairs vs 16 micro-batches of 1, AdamW, ``updates`` updates.

    ``normalization="tokens"`` (num_items = completion tokens) is expected
    equal; ``"micro-batch-mean"`` (num_items=None, the 2024 bug) to differ.
    ``lora_rank`` > 0 trains LoRA adapters on ``c_attn`` (base frozen).
    ``quantize`` ("int8", "nf4", "nf4-dq") first stores the blocks' Linear
    weights frozen in that format (:func:`minigrad.nn.quantize_model`); what
    trains is the rest (embeddings, LayerNorms, biases) or the adapters.
    """
    if normalization not in ("tokens", "micro-batch-mean"):
        raise ValueError(f"normalization must be 'tokens' or 'micro-batch-mean', got "
                         f"{normalization!r}")
    tokenizer, train, _ = sft_pairs()
    windows = sft_windows(train, micro_batch=micro_batch, accumulation_steps=accumulation_steps,
                          updates=updates, seed=seed)
    tokens = [[completion_tokens(y) for _, y in micro] for _, micro in windows]
    equal = normalization == "tokens"

    def make_model():
        model = GPT(config)
        if quantize:
            quantize_base(model, quantize)
        return nn.apply_lora(model, lora_rank, 2.0 * lora_rank) if lora_rank else model

    what = f"LoRA r={lora_rank}" if lora_rank else "full"
    if quantize:
        what += f", {quantize} base"
    result = compare_training(
        name=f"gpt sft {micro_batch * accumulation_steps}={accumulation_steps}x{micro_batch} "
             f"{what}, " + ("completion tokens" if equal else "micro-batch mean"),
        expected=EQUAL if equal else DIFFERS, make_model=make_model,
        make_optimizer=lambda params: optim.AdamW(
            [p for p in params if p.requires_grad], lr=3e-3 if lora_rank else 1e-3),
        windows=windows, loss_fn=sft_loss(device), device=device, dtype=dtype, seed=seed,
        weighting="items" if equal else "equal",
        description=f"GPT ({config.n_layer} layer, width {config.n_embd}) fine-tuned on "
                    f"prompt/completion pairs, {updates} AdamW updates, loss on completion "
                    f"tokens, {'num_items=tokens' if equal else 'num_items=None'}",
        note=f"tokens/micro {min(map(min, tokens))}-{max(map(max, tokens))}")
    result.extras["tokens_per_micro_batch"] = tokens
    drift = np.abs(np.asarray(result.losses_accumulated) - np.asarray(result.losses_reference))
    result.extras["loss_drift"] = float(drift.max())       # the logged loss, too, is off
    if not equal:
        result.note += f", loss drift {drift.max():.1e}"
    return result


# ------------------------------------------------------------------ the command

QUANTIZE = ("int8", "nf4", "nf4-dq")


def quantize_base(model, scheme: str):
    """Store ``model``'s untied Linear weights frozen as ``scheme``: "int8"
    (row-wise absmax), "nf4", or "nf4-dq" (NF4 with double quantization)."""
    if scheme not in QUANTIZE:
        raise ValueError(f"quantize must be one of {', '.join(QUANTIZE)}, got {scheme!r}")
    return nn.quantize_model(model, scheme.removesuffix("-dq"),
                             compress_statistics=scheme.endswith("-dq"))

def evaluate_pairs(model, pairs, *, batch: int = 64, device: str = "cpu") -> float:
    """Mean loss per completion token over ``pairs`` (eval mode, no graph)."""
    total, count = 0.0, 0
    was_training = model.training
    model.eval()
    with minigrad.no_grad():
        for i in range(0, len(pairs), batch):
            x, y = make_sft_batch(pairs[i:i + batch], IGNORE_INDEX)
            n = completion_tokens(y)
            total += lm_loss(model(to_tensor(x, device=device)), y).item() * n
            count += n
    model.train(was_training)
    return total / count


def complete(model, tokenizer, prompt: str, length: int = 40, seed: int = 0) -> str:
    """The model's completion of ``prompt``, up to the first newline (top-k 5, T 0.8)."""
    was_training = model.training
    model.eval()
    ids = model.generate(tokenizer.encode(prompt)[None, :], length, temperature=0.8, top_k=5,
                         generator=np.random.default_rng(seed))
    model.train(was_training)
    return tokenizer.decode(ids[0, len(prompt):]).split("\n")[0]


def finetune(*, micro_batch=1, accumulation_steps=16, updates=30, lr=None, lora_rank=0,
             lora_alpha=None, checkpointing=False, normalization="tokens", seed=0,
             device="cpu", dtype=np.float32, checkpoint=None, compare_micro_batch=False,
             on_update=None, val_pairs=256, quantize=None):
    """Fine-tune the pre-trained GPT (the shipped checkpoint unless ``checkpoint``
    names another) and return a dict: window losses, validation loss per
    completion token before and after, trainable parameter count, a sample
    completion before and after, seconds, and the model.

    ``compare_micro_batch`` also trains copies on the same pairs with plain
    batches of ``micro_batch`` (one update each, ``accumulation_steps`` = k
    times as many updates): one at the same learning rate, whose k times as
    many steps of the same size make it a comparison of learning rates, not of
    gradient noise, and one at lr/√k (the square-root scaling rule for Adam:
    k steps whose summed noise variance matches one accumulated step's).  It adds
    the same-lr run's losses averaged over the pairs of each window, weighted by
    completion tokens as a window's loss is, and its final validation loss
    (``micro_batch_losses``, ``micro_batch_val_loss``), and the scaled run's
    (``micro_batch_scaled_losses``, ``micro_batch_scaled_val_loss``,
    ``micro_batch_scaled_lr``).  Chapter 14 compares batch sizes fairly.
    The validation losses are over the first ``val_pairs`` held-out pairs.

    ``quantize`` ("int8", "nf4", "nf4-dq") stores the base's Linear weights
    frozen in that format before fine-tuning (QLoRA with ``lora_rank``); the
    result then also holds ``val_loss_float`` (the float base's validation
    loss) and ``base_bytes`` (:func:`minigrad.experiments.quantized.base_bytes`:
    measured and planned).
    """
    from .pretrain import load_gpt  # noqa: PLC0415
    model, tokenizer, _ = load_gpt(checkpoint, device=device, dtype=dtype)
    _, train, val = sft_pairs(tokenizer)
    val = val[:val_pairs]
    prompt = tokenizer.decode(val[0][0])
    extra, parameters = {}, model.num_parameters()      # counted before any quantization
    if quantize:
        from .quantized import base_bytes  # noqa: PLC0415
        extra["val_loss_float"] = evaluate_pairs(model, val, device=device)
        quantize_base(model, quantize)
        extra["base_bytes"] = base_bytes(model, quantize)
    before = {"val_loss": evaluate_pairs(model, val, device=device),
              "sample": complete(model, tokenizer, prompt)}
    windows = sft_windows(train, micro_batch=micro_batch, accumulation_steps=accumulation_steps,
                          updates=updates, seed=seed)
    start = time.perf_counter()
    losses, _ = _train(model, windows, accumulation_steps, lr, lora_rank, lora_alpha,
                       checkpointing, normalization, seed, device, on_update)
    result = {"model": model, "tokenizer": tokenizer, "window_losses": losses,
              "val_loss_before": before["val_loss"],
              "val_loss_after": evaluate_pairs(model, val, device=device),
              "sample_before": before["sample"],
              "sample_after": complete(model, tokenizer, prompt), "prompt": prompt,
              "trainable_parameters": sum(p.numel() for p in model.parameters()
                                          if p.requires_grad),
              "parameters": parameters, "seconds": time.perf_counter() - start, **extra}
    if compare_micro_batch:
        per_update = [(m, [m]) for _, micro in windows for m in micro]   # one update each
        base_lr = _fine_tuning_lr(lr, lora_rank)
        shape = (updates, accumulation_steps)      # token-weighted, as a window's loss is
        for key, rate in (("micro_batch", base_lr),
                          ("micro_batch_scaled", base_lr / np.sqrt(accumulation_steps))):
            plain, _, _ = load_gpt(checkpoint, device=device, dtype=dtype)
            if quantize:
                quantize_base(plain, quantize)
            plain_losses, tokens = _train(plain, per_update, 1, rate, lora_rank, lora_alpha,
                                          checkpointing, normalization, seed, device, None)
            weighted = np.reshape(np.multiply(plain_losses, tokens), shape).sum(axis=1)
            result[f"{key}_losses"] = (weighted / np.reshape(tokens, shape).sum(axis=1)).tolist()
            result[f"{key}_val_loss"] = evaluate_pairs(plain, val, device=device)
            result[f"{key}_lr"] = float(rate)
    return result


def _fine_tuning_lr(lr, lora_rank):
    """The AdamW rate: ``lr`` when given, else 3e-3 for adapters, 3e-4 for the whole model."""
    return lr or (3e-3 if lora_rank else 3e-4)


def _train(model, windows, accumulation_steps, lr, lora_rank, lora_alpha, checkpointing,
           normalization, seed, device, on_update):
    """AdamW through a GradientAccumulator over ``windows``; the window losses and
    the completion tokens of each window."""
    minigrad.manual_seed(seed)
    if lora_rank:
        nn.apply_lora(model, lora_rank, lora_alpha or 2.0 * lora_rank,
                      targets=("c_attn", "c_proj"))
    model.gradient_checkpointing = checkpointing
    trainable = [p for p in model.parameters() if p.requires_grad]
    lr = _fine_tuning_lr(lr, lora_rank)
    accumulator = optim.GradientAccumulator(optim.AdamW(trainable, lr=lr), accumulation_steps)
    loss_fn, losses, counts = sft_loss(device), [], []
    for update, (_, micro_batches) in enumerate(windows):
        counts.append(0)
        for batch in micro_batches:
            loss, tokens = loss_fn(model, batch)
            accumulator.backward(loss, num_items=tokens if normalization == "tokens" else None)
            accumulator.step()
            counts[-1] += tokens
        losses.append(float(accumulator.window_loss))
        if on_update is not None:
            on_update(update, losses[-1])
    return losses, counts

