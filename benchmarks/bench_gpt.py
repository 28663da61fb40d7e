"""A training step of the GPT: minigrad against the same model in PyTorch, CPU, one thread.

The step: forward of a batch of next-character windows, cross-entropy over
every position, zero the gradients, backward, one AdamW update.  PyTorch runs
nanoGPT's ``model.py`` structure written out below with ``torch.nn``
(:func:`torch_gpt`, module for module, the same parameter names, the tanh
GELU); both start from the same weights (minigrad's, copied) and the first
step's losses are checked to agree, so the same computation is timed.
PyTorch gets one thread (``torch.set_num_threads(1)``), NumPy one BLAS
thread.  The two steps alternate, repeat after repeat, each read in CPU time
(:func:`common.paired_ratios`); the reported ratio is the *median of the
paired ratios* minigrad / PyTorch, which cancels a slow patch of a shared
machine that hits both steps of a pair alike.

The configurations (:data:`CONFIGS`): 4 layers with 4 heads, width 64,
context 64, and 4 layers with 8 heads, width 256, context 128, each at batch
1 and 16 in float32 and at batch 16 in float64.  The goal is a ratio of at
most :data:`GOAL` in every row.  The ratios are also written to
``benchmarks/results/gpt_step.json`` with the machine and the versions.

A second table measures memory: the peak bytes of one window of 16
prompt/completion pairs (padded to the context, 64 tokens) on the shipped
pre-trained GPT, as one batch of 16 and as micro-batch 1 × 16, with and
without checkpointing every block (:func:`minigrad.memory.peak`, on top of
the parameters; the gradients are part of it), beside the memory planner's
activations in float32 (:func:`minigrad.memory_planner.transformer_activation_bytes`:
Korthikanti et al.'s formula, and with checkpointing the peak of one recomputed
block's backward) plus the gradients.

Run:  python benchmarks/bench_gpt.py [--quick] [--no-memory]
"""
from __future__ import annotations

import json
import os
import platform
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

SMALL = GPTConfig(vocab_size=65, block_size=64, n_layer=4, n_head=4, n_embd=64)
LARGE = GPTConfig(vocab_size=65, block_size=128, n_layer=4, n_head=8, n_embd=256)
#: (label, config, dtype, batch, repeats): the rows of the table.
CONFIGS = [
    ("width 64", SMALL, "float32", 1, 41),
    ("width 64", SMALL, "float32", 16, 21),
    ("width 256", LARGE, "float32", 1, 31),
    ("width 256", LARGE, "float32", 16, 11),
    ("width 64", SMALL, "float64", 16, 21),
    ("width 256", LARGE, "float64", 16, 11),
]
GOAL = 1.15
RESULTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                       "gpt_step.json")


def torch_gpt(torch, config):
    """The GPT of :mod:`minigrad.models.gpt` written in PyTorch, module for module
    (nanoGPT's ``model.py`` layout, the same parameter names), in float32;
    ``.to(torch.float64)`` for float64."""
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


def bench(config, dtype, batch, repeats, warmup=2):
    """Time minigrad's and PyTorch's training step in turn; returns
    :func:`common.paired_ratios`'s dict (``ratio``: the median of the paired
    ratios minigrad / PyTorch, ``median_s``: each one's median CPU seconds)."""
    import torch  # noqa: PLC0415
    torch.set_num_threads(1)
    rng = common.seed_all(0)
    data = rng.integers(0, config.vocab_size, (batch, config.block_size + 1))
    x, y = data[:, :-1], data[:, 1:]
    default = minigrad.get_default_dtype()
    minigrad.set_default_dtype(np.dtype(dtype))
    try:
        model = GPT(config)
    finally:
        minigrad.set_default_dtype(default)
    ref = torch_gpt(torch, config).to(getattr(torch, dtype))
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

    result = common.paired_ratios(step_minigrad, step_torch, repeats=repeats, warmup=warmup)
    if abs(losses["minigrad"] - losses["pytorch"]) > 1e-4 * abs(losses["pytorch"]):
        raise AssertionError(f"first-step losses differ: {losses}")
    return result


def time_table(quick=False):
    """Every configuration of :data:`CONFIGS`: print the table, return the rows."""
    rows = []
    for label, config, dtype, batch, repeats in CONFIGS:
        r = bench(config, dtype, batch, repeats=max(5, repeats // 4) if quick else repeats)
        tokens = batch * config.block_size
        rows.append({"model": f"{config.n_layer} layers, {config.n_head} heads, {label}, "
                              f"context {config.block_size}",
                     "dtype": dtype, "batch": batch, "repeats": r["repeats"],
                     "minigrad_ms": 1e3 * r["median_s"][0],
                     "pytorch_ms": 1e3 * r["median_s"][1],
                     "tokens_per_s": tokens / r["median_s"][0],
                     "ratio": r["ratio"], "ratio_quartiles": r["ratio_quartiles"],
                     "floor": GOAL, "ok": r["ratio"] <= GOAL})
    common.print_table(
        "GPT training step (forward, backward, AdamW), CPU, one thread each, CPU time; "
        "ratio: median of the paired ratios minigrad / PyTorch",
        ["model", "dtype", "batch", "minigrad ms", "PyTorch ms", "ratio", "quartiles",
         f"<= {GOAL}"],
        [[r["model"], r["dtype"], r["batch"], r["minigrad_ms"], r["pytorch_ms"], r["ratio"],
          "{:.2f}-{:.2f}".format(*r["ratio_quartiles"]), r["ok"]] for r in rows])
    return rows


def machine() -> dict:
    """What the numbers were measured on: CPU, cores, Python, NumPy, PyTorch."""
    import torch  # noqa: PLC0415
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f
                       if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "torch": torch.__version__,
            "minigrad": getattr(minigrad, "__version__", "?")}


def write_results(rows, path=RESULTS):
    """The time table and the machine, as JSON under benchmarks/results/."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump({"machine": machine(), "goal": GOAL, "rows": rows}, f, indent=1)


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


def run(quick: bool = False, memory: bool = True) -> dict:
    """Time every configuration, print the tables, write the ratios to
    ``benchmarks/results/gpt_step.json``; return the numbers (``ok``: ratio <= goal)."""
    try:
        import torch  # noqa: F401, PLC0415
    except ImportError:
        print("bench_gpt: PyTorch is not installed; skipped")
        return {"skipped": "PyTorch is not installed"}
    limits = common.one_blas_thread()
    try:
        rows = time_table(quick)
    finally:
        if limits is not None:
            limits.unregister()
    write_results(rows)
    print(f"ratios written to {os.path.relpath(RESULTS)}")
    result = {"steps": {f"{r['model']}, {r['dtype']}, batch {r['batch']}": r for r in rows},
              "machine": machine()}
    if memory:
        result["memory"] = memory_table()
    return result


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:], memory="--no-memory" not in sys.argv[1:])
