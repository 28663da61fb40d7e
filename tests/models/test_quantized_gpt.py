"""The GPT on a quantized frozen base (QLoRA): accumulation still exact, the 2024
bug still measured, training resumed from disk mid-window bit for bit, bytes as
planned, the loss close to the float base's."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.experiments.finetune import (TINY, case_sft, quantize_base, sft_loss, sft_pairs,
                                           sft_windows)
from minigrad.experiments.quantized import base_bytes, layer_errors
from minigrad.models import GPT


@pytest.mark.parametrize("scheme,lora_rank", [("nf4", 0), ("nf4-dq", 2), ("int8", 2)])
def test_micro_batch_1x16_with_token_counts_equals_batch_16_on_a_quantized_base(scheme,
                                                                               lora_rank):
    result = case_sft("tokens", quantize=scheme, lora_rank=lora_rank, updates=4)
    assert result.passed and result.updates == 4
    assert result.param_rel_diff < 1e-10 and result.grad_rel_diff < 1e-10


def test_the_2024_bug_still_differs_on_a_quantized_base():
    result = case_sft("micro-batch-mean", quantize="nf4", lora_rank=2, updates=4)
    assert result.passed and result.grad_rel_diff > 0.05


def _qlora_run(seed=0):
    minigrad.manual_seed(seed)
    model = quantize_base(GPT(TINY), "nf4-dq")
    nn.apply_lora(model, 2, 4.0, targets=("c_attn", "c_proj"))
    trainable = [p for p in model.parameters() if p.requires_grad]
    acc = optim.GradientAccumulator(optim.AdamW(trainable, lr=3e-3), 4)
    return model, acc


def test_training_resumed_from_disk_mid_window_is_bit_identical(tmp_path, float64):
    _, train, _ = sft_pairs()
    micro = [m for _, window in sft_windows(train, accumulation_steps=4, updates=3)
             for m in window]
    loss_fn = sft_loss("cpu")

    def feed(model, acc, batches):
        for batch in batches:
            loss, tokens = loss_fn(model, batch)
            acc.backward(loss, num_items=tokens)
            acc.step()

    model, acc = _qlora_run()
    feed(model, acc, micro)
    model1, acc1 = _qlora_run()
    feed(model1, acc1, micro[:6])                               # mid-window: 6 = 4 + 2
    path = minigrad.save({"model": model1.state_dict(), "accumulator": acc1.state_dict()},
                         tmp_path / "run")
    loaded = minigrad.load(path)
    model2, acc2 = _qlora_run(seed=1)                           # other codes, other adapters
    model2.load_state_dict(loaded["model"])
    acc2.load_state_dict(loaded["accumulator"])
    feed(model2, acc2, micro[6:])
    for (name, a), b in zip(model.state_dict().items(), model2.state_dict().values()):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), name
    assert acc2.window_loss == acc.window_loss


def test_tiny_gpt_bytes_equal_the_planners():
    for scheme in ("float32", "int8", "nf4", "nf4-dq"):
        minigrad.manual_seed(0)
        model = GPT(TINY)
        if scheme != "float32":
            quantize_base(model, scheme)
        b = base_bytes(model, scheme)
        # the planner's rounding: per layer, the mean (4 bytes) and a short last
        # block of scales (up to 4 bytes) of double quantization are left out
        slack = 8 * len(nn.quantized_layers(model)) if scheme == "nf4-dq" else 1e-6
        assert 0 <= b["measured"] - b["planned"] <= slack, b
        assert b["parameters"] == GPT(TINY).num_parameters()


def test_errors_per_layer_order_int8_nf4_int4():
    minigrad.manual_seed(0)
    rows = layer_errors(GPT(TINY))
    assert [r["layer"] for r in rows] == ["h.0.attn.c_attn", "h.0.attn.c_proj",
                                          "h.0.mlp.c_fc", "h.0.mlp.c_proj"]
    assert all(r["int8"] < r["nf4"] < r["int4"] for r in rows)


def test_quantized_forward_is_close_to_the_float_gpt():
    minigrad.manual_seed(0)
    model = GPT(TINY)
    x = minigrad.tensor(np.arange(20).reshape(2, 10) % 65)
    y = model(x).numpy()
    for scheme, tol in (("int8", 2e-3), ("nf4", 3e-2)):
        minigrad.manual_seed(0)
        q = quantize_base(GPT(TINY), scheme)
        assert np.abs(q(x).numpy() - y).max() < tol * np.abs(y).max()


def test_lora_on_a_quantized_base_trains_the_adapters_and_merges_into_a_copy(float64):
    minigrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))
    nn.quantize_model(model, "nf4", compress_statistics=True)
    nn.apply_lora(model, 2, 4.0, targets=("0", "2"))
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable == ["0.lora_A.weight", "0.lora_B.weight", "2.lora_A.weight",
                         "2.lora_B.weight"]
    assert model[0].lora_A.weight.dtype == np.float64
    opt = minigrad.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    x = minigrad.tensor(np.random.default_rng(0).normal(size=(5, 8)))
    for _ in range(3):
        opt.zero_grad()
        (model(x) ** 2).mean().backward()
        opt.step()
    y = model(x).data
    with pytest.raises(RuntimeError, match="quantized"):
        model[0].merge()
    nn.merge_and_unload(model)
    assert type(model[0]) is nn.Linear and type(model[2]) is nn.Linear
    np.testing.assert_allclose(model(x).data, y, rtol=1e-10, atol=1e-12)




def test_finetune_command_on_a_quantized_base(tmp_path, capsys):
    from minigrad.__main__ import main
    from minigrad.experiments.pretrain import load_gpt
    out = tmp_path / "gpt.npz"
    assert main(["pretrain", "--n-layer", "1", "--n-head", "2", "--n-embd", "16", "--steps",
                 "2", "--batch-size", "2", "--no-progress", "--out", str(out)]) == 0
    capsys.readouterr()
    assert main(["finetune", "--checkpoint", str(out), "--accumulation-steps", "2",
                 "--updates", "1", "--lora-rank", "2", "--quantize", "nf4", "--checkpointing",
                 "--compare-micro-batch", "--no-progress"]) == 0
    text = capsys.readouterr().out
    assert "on a frozen nf4 base" in text and "bytes measured" in text
    b = [line for line in text.splitlines() if line.startswith("base in nf4")][0]
    assert "0.5625 bytes per quantized weight measured, 0.5625 planned" in b
    saved = tmp_path / "tuned.npz"
    assert main(["finetune", "--checkpoint", str(out), "--accumulation-steps", "2",
                 "--updates", "1", "--quantize", "int8", "--no-progress",
                 "--out", str(saved)]) == 0
    state = minigrad.load(saved)
    assert state["h.0.attn.c_attn.weight"].dtype == np.int8
    model, _, _ = load_gpt(out)
    quantize_base(model, "int8").load_state_dict(state)
