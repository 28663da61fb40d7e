"""A training step of the GPT: minigrad against the same model in PyTorch, CPU, one thread.

The step: forward of a batch of next-character windows, cross-entropy over
every position, zero the gradients, backward, one AdamW update, in float32.
Both frameworks start from the same weights (minigrad's, copied into the
PyTorch model module for module) and the first step's loss is checked to
agree, so the same computation is timed.  PyTorch gets one thread
(``torch.set_num_threads(1)``), NumPy one BLAS thread; the steps are timed in
turn, repeat after repeat, in CPU time (benchmarks/common.py).  Reported: the
time per step, the ratio minigrad / PyTorch (the goal is <= 1.3) and tokens
per second.

A second table measures memory: the peak bytes of one window of 16
prompt/completion pairs (padded to the context, 64 tokens) on the shipped
pre-trained GPT, as one batch of 16 and as micro-batch 1 × 16, with and
without checkpointing every block (:func:`minigrad.memory.peak`, on top of
the parameters; the gradients are part of it), beside the memory planner's
activations in float32 (:func:`minigrad.memory_planner.transformer_activation_bytes`:
Korthikanti et al.'s formula, and with checkpointing the peak of one recomputed
block's backward) plus the gradients.

Run:  python benchmarks/bench_gpt.py [--quick]
"""
from __future__ import annotations

import sys

try:
    from . import common
except ImportError:      # run as a script: benchmarks/ is on sys.path
    import common

import numpy as np  # noqa: E402

import minigrad  # noqa: E402
from minigrad import optim  # noqa: E402
from minigrad.models import GPT, GPTConfig  # noqa: E402
from minigrad.models.gpt import lm_loss  # noqa: E402

#: The pre-training configuration of ``python -m minigrad pretrain``.
CONFIG = GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=128)
BATCH = 32
GOAL = 1.3


def torch_gpt(torch, config):
    """The GPT of :mod:`minigrad.models.gpt` written in PyTorch, module for module
    (nanoGPT's layout, the same parameter names), in float32."""
    nn, F = torch.nn, torch.nn.functional

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
            self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
            self.resid_dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(C, dim=2)
            q, k, v = (t.view(B, T, config.n_head, C // config.n_head).transpose(1, 2)
                       for t in (q, k, v))
            p = config.dropout if self.training else 0.0
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=p)
            return self.resid_dropout(self.c_proj(y.transpose(1, 2).reshape(B, T, C)))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn = nn.LayerNorm(config.n_embd), Attention()
            self.ln_2 = nn.LayerNorm(config.n_embd)
            self.mlp = nn.Sequential()
            self.mlp.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
            self.mlp.gelu = nn.GELU(approximate="tanh")
            self.mlp.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
            self.mlp.dropout = nn.Dropout(config.dropout)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.wpe = nn.Embedding(config.block_size, config.n_embd)
            self.drop = nn.Dropout(config.dropout)
            self.h = nn.ModuleList([Block() for _ in range(config.n_layer)])
            self.ln_f = nn.LayerNorm(config.n_embd)
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.lm_head.weight = self.wte.weight

        def forward(self, idx):
            x = self.drop(self.wte(idx) + self.wpe(torch.arange(idx.shape[1])))
            for block in self.h:
                x = block(x)
            return self.lm_head(self.ln_f(x))

    return Model()


def copy_weights(torch, model, ref):
    """minigrad's weights into the PyTorch model (the tied head follows wte)."""
    state = {k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()}
    ref.load_state_dict(state)
    ref.lm_head.weight = ref.wte.weight


def bench(config, batch, repeats):
    """Median CPU seconds per training step of each framework."""
    import torch  # noqa: PLC0415
    torch.set_num_threads(1)
    rng = common.seed_all(0)
    data = rng.integers(0, config.vocab_size, (batch, config.block_size + 1))
    x, y = data[:, :-1], data[:, 1:]
    model = GPT(config)
    ref = torch_gpt(torch, config)
    copy_weights(torch, model, ref)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    ref_opt = torch.optim.AdamW(ref.parameters(), lr=1e-3)
    tx, ty = torch.tensor(x), torch.tensor(y)
    losses = {}

    def step_minigrad():
        loss = lm_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.setdefault("minigrad", loss.item())

    def step_torch():
        loss = torch.nn.functional.cross_entropy(ref(tx).reshape(-1, config.vocab_size),
                                                 ty.reshape(-1))
        ref_opt.zero_grad()
        loss.backward()
        ref_opt.step()
        losses.setdefault("pytorch", loss.item())

    times = common.interleaved_median({"minigrad": step_minigrad, "pytorch": step_torch},
                                      repeats=repeats, warmup=0)
    if abs(losses["minigrad"] - losses["pytorch"]) > 1e-4 * abs(losses["pytorch"]):
        raise AssertionError(f"first-step losses differ: {losses}")
    return times


def memory_table():
    """Peak MiB of one window of 16 pairs: batch 16 vs 1 x 16, checkpointing off/on,
    measured and planned; returns the rows as dicts."""
    from minigrad.experiments.finetune import sft_loss, sft_pairs, sft_windows  # noqa: PLC0415
    from minigrad.experiments.pretrain import load_gpt  # noqa: PLC0415
    from minigrad.memory import peak  # noqa: PLC0415
    from minigrad.memory_planner import transformer_activation_bytes  # noqa: PLC0415
    model, tokenizer, _ = load_gpt()
    c = model.config
    _, train, _ = sft_pairs(tokenizer)
    full, micro = sft_windows(train, updates=1)[0]
    loss_fn, grads = sft_loss("cpu"), sum(4 * p.numel() for p in model.parameters())
    rows = []
    for checkpointing in (False, True):
        model.gradient_checkpointing = checkpointing
        for name, batches in (("batch 16", [full]), ("1 x 16", micro)):
            model.zero_grad()
            with peak() as m:
                for x, y in batches:
                    loss, _ = loss_fn(model, _padded(x, y, c.block_size))
                    loss.backward()
            planned = grads + transformer_activation_bytes(
                c.block_size, c.n_embd, c.n_layer, c.n_head, micro_batch=len(batches[0][0]),
                activation_bytes=4, checkpointing=checkpointing)
            rows.append({"window": name, "checkpointing": "on" if checkpointing else "off",
                         "measured_mib": m.peak_bytes / 2 ** 20,
                         "planned_mib": planned / 2 ** 20,
                         "planned_over_measured": planned / m.peak_bytes})
    common.print_table(
        "GPT fine-tuning window of 16 pairs (context 64), float32: peak memory on top of "
        "the parameters",
        ["window", "checkpointing", "measured MiB", "planner MiB", "planner / measured"],
        [[r["window"], r["checkpointing"], r["measured_mib"], r["planned_mib"],
          r["planned_over_measured"]] for r in rows])
    return rows


def _padded(x, y, length):
    """Inputs and targets padded on the right to ``length`` positions."""
    xx = np.zeros((len(x), length), dtype=np.int64)
    yy = np.full((len(x), length), -100, dtype=np.int64)
    xx[:, :x.shape[1]], yy[:, :y.shape[1]] = x, y
    return xx, yy


def run(quick: bool = False) -> dict:
    """Time the step, print the table, return the numbers (``ok``: ratio <= goal)."""
    try:
        import torch  # noqa: F401, PLC0415
    except ImportError:
        print("bench_gpt: PyTorch is not installed; skipped")
        return {"skipped": "PyTorch is not installed"}
    limits = common.one_blas_thread()
    try:
        times = bench(CONFIG, BATCH, repeats=3 if quick else 9)
    finally:
        if limits is not None:
            limits.unregister()
    tokens = BATCH * CONFIG.block_size
    ratio = times["minigrad"] / times["pytorch"]
    common.print_table(
        f"GPT training step ({CONFIG.n_layer} layers, {CONFIG.n_head} heads, width "
        f"{CONFIG.n_embd}, context {CONFIG.block_size}, batch {BATCH}), float32, AdamW, "
        "CPU, one thread",
        ["framework", "CPU ms / step", "tokens / s", "time / PyTorch"],
        [[name, 1e3 * t, tokens / t, t / times["pytorch"]] for name, t in times.items()])
    print(f"minigrad / PyTorch = {ratio:.2f} (goal <= {GOAL})")
    memory = memory_table()
    return {"memory": memory, "minigrad_s": times["minigrad"], "pytorch_s": times["pytorch"],
            "tokens_per_s": {k: tokens / t for k, t in times.items()},
            "ratio_vs_pytorch": {"ratio": ratio, "floor": GOAL, "ok": ratio <= GOAL}}


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
