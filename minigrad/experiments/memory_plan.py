"""The memory planner checked against measured peaks, and the course's 13B example.

Validation: for a model (an MLP, and the character model of chapter 8), the
activation bytes per item are *measured* once, at the smallest micro-batch,
as the peak of one forward + backward minus the gradients it creates
(:func:`minigrad.memory.peak`).  :func:`minigrad.memory.plan` then predicts
the peak of real training (Adam, an accumulator of k = 2, two windows, so the
optimizer state exists while the second window runs) at every micro-batch
size, with and without checkpointing, and the prediction is compared with
the peak measured around that training.

The 13B example: a 13-billion-parameter transformer (width 5120, 40 layers,
40 heads, like LLaMA-13B) fine-tuned on sequences of 2048 tokens, 16
accumulation steps, on a 24 GB GPU.
"""
from __future__ import annotations

import numpy as np

import minigrad
from minigrad import memory, nn
from minigrad.checkpointing import checkpoint_sequential
from minigrad.nn import functional as F
from minigrad.optim import Adam, GradientAccumulator

from .char_lm import make_bigram_lm, shakespeare_ids

GB = 1e9


# ------------------------------------------------------------------ the models
def make_mlp(widths=(256,) * 17 + (10,)):
    """``Linear -> Tanh -> ... -> Linear`` with the given widths (seeded by the caller).

    The default has 16 blocks ``Linear(256, 256) -> Tanh`` and a last
    ``Linear(256, 10)``.  Each block keeps one activation for backward (the
    Tanh's output, which the next Linear saves as its input), so checkpointing
    in s segments keeps about (s - 1) + 16 / s of them instead of 16: fewest at
    s = 4 (:data:`CHECKPOINT_SEGMENTS`, chapter 07).  A shallow MLP gains
    nothing: 3 blocks in 3 segments keep 3 boundaries, as many arrays as the
    plain run keeps.
    """
    layers = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(nn.Linear(a, b))
        if i < len(widths) - 2:
            layers.append(nn.Tanh())
    return nn.Sequential(*layers)


def _mlp_batch(rng, items):
    return (minigrad.tensor(rng.standard_normal((items, 256), dtype=np.float32)),
            minigrad.tensor(rng.integers(0, 10, items)))


_SEQ_LEN = 64


_IDS = []


def _char_batch(rng, items):
    if not _IDS:                                     # tinyshakespeare, loaded once
        _IDS.append(shakespeare_ids()[1])
    ids = _IDS[0]
    starts = rng.integers(0, len(ids) - _SEQ_LEN - 1, items)
    window = ids[starts[:, None] + np.arange(_SEQ_LEN + 1)]
    return (minigrad.tensor(window[:, :-1].reshape(-1)),
            minigrad.tensor(window[:, 1:].reshape(-1)))


MODELS = {
    # name: (make the model, make a micro-batch of `items` items, items are ...)
    "mlp": (make_mlp, _mlp_batch, "examples"),
    "char": (lambda: make_bigram_lm(65), _char_batch, f"sequences of {_SEQ_LEN} chars"),
}


# The segments each model is checkpointed in when the planner is checked
# (the tests and notebook 12): sqrt(L) for the MLP's 16 one-array blocks.
CHECKPOINT_SEGMENTS = {"mlp": 4, "char": 2}


def _loss(model, batch, segments):
    x, y = batch
    out = model(x) if segments is None else checkpoint_sequential(model, segments, x)
    return F.cross_entropy(out, y)


def _num_params(model) -> int:
    return int(sum(p.numel() for p in model.parameters()))


# ------------------------------------------------------------------ measuring
def activation_bytes_per_item(name: str, items: int, *, segments=None, seed: int = 0) -> float:
    """Measured: the peak bytes of one forward + backward on top of the resident
    state, per item.

    The gradients already exist when the block starts (one backward runs
    before it), as they do for every micro-batch of a window but the first;
    what the block adds is the activations kept for backward, the gradients
    flowing back through them, and the micro-batch's data.
    """
    make_model, make_batch, _ = MODELS[name]
    minigrad.manual_seed(seed)
    model = make_model()
    rng = np.random.default_rng(seed)
    _loss(model, make_batch(rng, items), segments).backward()      # gradients allocated
    with memory.peak() as m:
        _loss(model, make_batch(rng, items), segments).backward()
    return m.peak_bytes / items


def training_peak(name: str, items: int, *, segments=None, seed: int = 0) -> int:
    """Measured: peak bytes of building the model and training it with Adam, k = 2, two windows."""
    make_model, make_batch, _ = MODELS[name]
    minigrad.manual_seed(seed)
    rng = np.random.default_rng(seed)
    make_batch(np.random.default_rng(seed), 1)       # loads the data set before measuring
    with memory.peak() as m:
        model = make_model()
        acc = GradientAccumulator(Adam(model.parameters(), lr=1e-3), 2)
        for _ in range(4):
            acc.backward(_loss(model, make_batch(rng, items), segments), num_items=items)
            acc.step()
        del model, acc
    return m.peak_bytes


def validate(name: str, sizes, *, segments=None, seed: int = 0) -> list[dict]:
    """Plan vs measured peak at each micro-batch size (activations measured at ``sizes[0]``).

    Returns one dict per size: ``items``, ``planned``, ``measured`` (bytes) and
    ``error`` (planned / measured - 1).
    """
    make_model, _, _ = MODELS[name]
    minigrad.manual_seed(seed)
    n = _num_params(make_model())
    per_item = activation_bytes_per_item(name, sizes[0], segments=segments, seed=seed)
    rows = []
    for items in sizes:
        planned = memory.plan(n, optimizer="adam", micro_batch=items,
                              activation_bytes_per_item=per_item,
                              checkpointing=segments is not None).total
        measured = training_peak(name, items, segments=segments, seed=seed)
        rows.append({"model": name, "checkpointing": segments is not None, "items": items,
                     "planned": planned, "measured": measured,
                     "error": planned / measured - 1})
    return rows


# ------------------------------------------------------------------ the course's example
LLAMA_13B = dict(params=13_000_000_000, seq_len=2048, width=5120, depth=40, heads=40)
# LoRA adapters of rank 16 on the four attention projections of 40 layers:
# 40 * 4 * 2 * 5120 * 16 = 26 214 400 parameters (0.2 % of the model).
ADAPTER_PARAMS = 40 * 4 * 2 * 5120 * 16


def course_example(memory_bytes="24GB", accumulation_steps=16) -> dict:
    """The planner's verdicts on fine-tuning 13B parameters on one 24 GB GPU.

    Returns ``{label: MemoryPlan}`` for: full fine-tuning in mixed precision
    (float16 values and gradients, float32 master weights and Adam moments)
    at micro-batch 1 with and without checkpointing; the same at micro-batch
    1 with k = 1 (accumulation changes nothing resident); and a frozen base in
    16, 8 and 4 bits with rank-16 adapters trained in mixed precision, at
    micro-batch 1 with checkpointing (and 4-bit without it, and at micro-batch 4).
    """
    shape = {k: v for k, v in LLAMA_13B.items() if k != "params"}
    mixed = dict(param_dtype="float16", grad_dtype="float16", master_weights=True,
                 optimizer="adam", state_dtype="float32", memory=memory_bytes)
    p = LLAMA_13B["params"]
    a = ADAPTER_PARAMS

    def one(**kw):
        kw = {**mixed, "accumulation_steps": accumulation_steps, "micro_batch": 1, **kw}
        return memory.plan(p, **shape, **kw)
    return {
        "full, mb 1, checkpointing": one(checkpointing=True),
        "full, mb 1, no checkpointing": one(),
        "full, mb 1, checkpointing, k=1": one(checkpointing=True, accumulation_steps=1),
        "16-bit base + adapters, mb 1, ckpt": one(trainable=a, frozen_dtype="float16",
                                                  checkpointing=True),
        "8-bit base + adapters, mb 1, ckpt": one(trainable=a, frozen_dtype="8bit",
                                                 checkpointing=True),
        "4-bit base + adapters, mb 1, ckpt": one(trainable=a, frozen_dtype="4bit",
                                                 checkpointing=True),
        "4-bit base + adapters, mb 1, no ckpt": one(trainable=a, frozen_dtype="4bit"),
        "4-bit base + adapters, mb 4, ckpt": one(trainable=a, frozen_dtype="4bit",
                                                 checkpointing=True, micro_batch=4),
    }


def smallest_full_finetune(memory_bytes="24GB") -> float:
    """Resident bytes of full mixed-precision fine-tuning of 13B: no activations at all
    (micro-batch 1 is the least there is), so no micro-batch size can fit if this does not."""
    plan = course_example(memory_bytes)["full, mb 1, checkpointing"]
    return plan.resident


__all__ = ["MODELS", "CHECKPOINT_SEGMENTS", "make_mlp", "activation_bytes_per_item",
           "training_peak", "validate", "LLAMA_13B", "ADAPTER_PARAMS", "course_example", "smallest_full_finetune"]
