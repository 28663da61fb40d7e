"""The GPT against the same model written in PyTorch (weights copied): logits
and every gradient to 1e-10 in float64; generation; checkpointing."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
from minigrad.models import GPT, GPTConfig
from minigrad.models.gpt import lm_loss

from benchmarks.bench_gpt import torch_gpt   # the same GPT in PyTorch, module for module

TINY = GPTConfig(vocab_size=11, block_size=8, n_layer=2, n_head=2, n_embd=8)


def copy_into_torch(torch, model, ref):
    state = {k: torch.tensor(np.asarray(v)) for k, v in model.state_dict().items()}
    missing, unexpected = ref.load_state_dict(state, strict=False)
    assert not unexpected and set(missing) <= {"lm_head.weight"}
    assert ref.lm_head.weight is ref.wte.weight


def test_gpt_matches_torch_forward_and_backward(torch, float64):
    minigrad.manual_seed(3)
    model = GPT(TINY)
    ref = torch_gpt(torch, TINY).double()
    copy_into_torch(torch, model, ref)
    rng = np.random.default_rng(0)
    idx = rng.integers(0, TINY.vocab_size, (3, 8))
    targets = rng.integers(0, TINY.vocab_size, (3, 8))
    targets[0, :5] = -100                              # ignored positions
    logits = model(idx)
    ref_logits = ref(torch.tensor(idx))
    np.testing.assert_allclose(logits.numpy(), ref_logits.detach().numpy(), rtol=1e-10,
                               atol=1e-12)
    lm_loss(logits, targets).backward()
    torch.nn.functional.cross_entropy(ref_logits.reshape(-1, TINY.vocab_size),
                                      torch.tensor(targets).reshape(-1)).backward()
    names = [n for n, _ in model.named_parameters()]
    assert "lm_head.weight" not in names and len(names) == len(list(ref.parameters()))
    for name, p in model.named_parameters():
        np.testing.assert_allclose(p.grad.numpy(), ref.get_parameter(name).grad.numpy(),
                                   rtol=1e-10, atol=1e-13, err_msg=name)


def test_weight_tying_and_parameter_count():
    model = GPT(TINY)
    assert model.lm_head.weight is model.wte.weight
    C, V, L = TINY.n_embd, TINY.vocab_size, TINY.n_layer
    per_block = 2 * 2 * C + (3 * C * C + 3 * C) + (C * C + C) + (8 * C * C + 5 * C)
    assert model.num_parameters() == V * C + TINY.block_size * C + L * per_block + 2 * C


def test_checkpointing_gives_the_same_gradients(float64):
    model = GPT(TINY)
    idx = np.random.default_rng(1).integers(0, TINY.vocab_size, (2, 6))
    grads = []
    for flag in (False, True):
        model.zero_grad()
        model.gradient_checkpointing = flag
        lm_loss(model(idx[:, :-1]), idx[:, 1:]).backward()
        grads.append([p.grad.numpy().copy() for p in model.parameters()])
    for a, b in zip(*grads):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)


def test_generate_shapes_top_k_and_determinism():
    model = GPT(TINY).eval()
    out = model.generate(np.array([[1, 2, 3]]), 10, temperature=0.8, top_k=3,
                         generator=np.random.default_rng(0))
    again = model.generate(np.array([[1, 2, 3]]), 10, temperature=0.8, top_k=3,
                           generator=np.random.default_rng(0))
    assert out.shape == (1, 13) and out.dtype == np.int64
    np.testing.assert_array_equal(out, again)
    np.testing.assert_array_equal(out[:, :3], [[1, 2, 3]])
    greedy = model.generate(np.array([[4]]), 3, top_k=1)
    logits = model(greedy[:, :1]).numpy()[0, -1]
    assert greedy[0, 1] == logits.argmax()
    with pytest.raises(ValueError, match="temperature"):
        model.generate(np.array([[1]]), 1, temperature=0)
    with pytest.raises(ValueError, match="exceeds block_size"):
        model(np.zeros((1, 9), dtype=np.int64))
