"""LoRA adapters: frozen base, trained A and B, merge, the adapter saved alone."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
import minigrad.nn as nn
import minigrad.optim as optim
from minigrad.models import GPT, GPTConfig
from minigrad.models.gpt import lm_loss
from tests.helpers import check_gradients

TINY = GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8)


def test_lora_linear_forward_is_base_plus_scaled_low_rank_update(float64):
    base = nn.Linear(5, 3)
    layer = nn.LoRALinear(base, r=2, lora_alpha=4.0)
    assert layer.scaling == 2.0 and not base.weight.requires_grad
    assert [n for n, p in layer.named_parameters() if p.requires_grad] == [
        "lora_A.weight", "lora_B.weight"]
    x = np.random.default_rng(0).standard_normal((4, 5))
    np.testing.assert_array_equal(layer(minigrad.tensor(x)).numpy(),
                                  base(minigrad.tensor(x)).numpy())      # B starts at 0
    layer.lora_B.weight.data[...] = np.random.default_rng(1).standard_normal((3, 2))
    A, B = layer.lora_A.weight.numpy(), layer.lora_B.weight.numpy()
    expected = x @ base.weight.numpy().T + base.bias.numpy() + 2.0 * x @ A.T @ B.T
    np.testing.assert_allclose(layer(minigrad.tensor(x)).numpy(), expected, rtol=1e-12)
    check_gradients(lambda t: layer(t), [x])


def test_merge_and_unmerge(float64):
    layer = nn.LoRALinear(nn.Linear(4, 6), r=3, lora_alpha=3.0)
    layer.lora_B.weight.data[...] = np.random.default_rng(2).standard_normal((6, 3))
    x = minigrad.tensor(np.random.default_rng(3).standard_normal((2, 4)))
    W = layer.base_layer.weight.numpy().copy()
    before = layer(x).numpy()
    layer.merge()
    np.testing.assert_allclose(layer(x).numpy(), before, rtol=1e-12, atol=1e-14)
    with pytest.raises(RuntimeError, match="already merged"):
        layer.merge()
    layer.unmerge()
    np.testing.assert_allclose(layer.base_layer.weight.numpy(), W, rtol=1e-12, atol=1e-15)
    with pytest.raises(TypeError, match="nn.Linear"):
        nn.LoRALinear(nn.ReLU(), 2)
    with pytest.raises(ValueError, match="rank r"):
        nn.LoRALinear(nn.Linear(2, 2), 0)


def test_apply_lora_trains_only_adapters_then_merges(float64, tmp_path):
    model = GPT(TINY)
    base_state = {k: np.array(v) for k, v in model.state_dict().items()}
    nn.apply_lora(model, r=2, alpha=4.0, targets=("c_attn", "c_proj"))
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    assert len(names) == 2 * 3 * TINY.n_layer     # A, B of attn.c_attn, attn.c_proj, mlp.c_proj
    assert all(".lora_A." in n or ".lora_B." in n for n in names)
    C = TINY.n_embd
    per_layer = 2 * (C + 3 * C) + 2 * (C + C) + 2 * (4 * C + C)    # attn.c_attn, attn.c_proj, mlp.c_proj
    assert sum(p.numel() for p in model.parameters() if p.requires_grad) == TINY.n_layer * per_layer
    idx = np.random.default_rng(0).integers(0, TINY.vocab_size, (2, 7))
    opt = optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    for _ in range(3):
        opt.zero_grad()
        lm_loss(model(idx[:, :-1]), idx[:, 1:]).backward()
        opt.step()
    for name, value in model.state_dict().items():               # the base is untouched
        if "lora_" not in name:
            np.testing.assert_array_equal(value, base_state[name.replace(".base_layer", "")])
    tuned = model(idx).numpy()

    path = minigrad.save(nn.lora_state_dict(model), tmp_path / "adapter")
    adapter = minigrad.load(path)
    assert set(adapter) == set(names)
    fresh = GPT(TINY)
    fresh.load_state_dict(base_state)
    nn.apply_lora(fresh, r=2, alpha=4.0, targets=("c_attn", "c_proj"))
    nn.load_lora_state_dict(fresh, adapter)
    np.testing.assert_allclose(fresh(idx).numpy(), tuned, rtol=1e-12, atol=1e-14)

    nn.merge_and_unload(fresh)
    assert not nn.lora_layers(fresh) and isinstance(fresh.h[0].attn.c_attn, nn.Linear)
    np.testing.assert_allclose(fresh(idx).numpy(), tuned, rtol=1e-10, atol=1e-12)
    with pytest.raises(KeyError, match="missing adapter entries"):
        nn.load_lora_state_dict(nn.apply_lora(GPT(TINY), 2, targets=("c_fc",)), adapter)
    with pytest.raises(ValueError, match="no Linear layer named"):
        nn.apply_lora(GPT(TINY), 2, targets=("q_proj",))
