"""Exercises of chapter 13 (fine-tuning a transformer with accumulation)."""
import numpy as np
import pytest

import minigrad
import minigrad.nn as nn
import minigrad.nn.functional as F
from minigrad.data.sft import completion_tokens, make_sft_batch
from minigrad.functions.attention import attention_reference, causal_mask

from .check import assert_close, rng


# ------------------------------------------------------------------ 13.1
def _softmax(s, axis=-1):
    e = np.exp(s - s.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


@pytest.mark.exercise("13.1")
def test_attention_forward_three_tokens_by_hand():
    q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    k = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    v = np.array([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    scores = q @ k.T / np.sqrt(2)
    out = attention_reference(*(minigrad.tensor(a) for a in (q, k, v)))
    assert_close(out, _softmax(scores) @ v, "attention of 3 tokens",
                 hints=[((q @ k.T) / (q @ k.T).sum(-1, keepdims=True) @ v,
                         "the weights are a softmax of the scores, not the scores "
                         "normalized by their sum"),
                        (_softmax(q @ k.T) @ v,
                         "the scores are multiplied by scale = 1/√E = 1/√2 before the softmax"),
                        (_softmax(scores, axis=0) @ v,
                         "the softmax runs over the keys (the last axis): each query's row of "
                         "weights sums to 1, not each key's column")])


@pytest.mark.exercise("13.1")
def test_attention_forward_masks_and_gradients():
    g = rng(132)
    q, k, v = g.standard_normal((2, 3, 2)), g.standard_normal((2, 4, 2)), g.standard_normal((2, 4, 3))
    mask = np.array([[True, False, True, False]] * 3)
    out = attention_reference(*(minigrad.tensor(a) for a in (q, k, v)), attn_mask=mask)
    s = q @ k.swapaxes(-1, -2) / np.sqrt(2)
    assert_close(out, _softmax(np.where(mask, s, -np.inf)) @ v,
                 "attention with a bool mask (False = may not attend)",
                 hints=[(_softmax(s) @ v, "the mask is not applied: fill the scores where "
                         "the mask is False with -inf (masked_fill takes True = fill)"),
                        (_softmax(np.where(mask, -np.inf, s)) @ v,
                         "the mask is inverted: True means may attend")])
    lower = np.tril(np.ones((3, 3), bool))                   # the causal mask, by hand
    causal = attention_reference(*(minigrad.tensor(a) for a in (q, k[:, :3], v[:, :3])),
                                 attn_mask=lower)
    s3 = s[:, :, :3]
    assert_close(causal, _softmax(np.where(lower, s3, -np.inf)) @ v[:, :3],
                 "attention with a lower-triangular bool mask",
                 hints=[(_softmax(s3) @ v[:, :3], "the bool mask is not applied")])
    additive = g.standard_normal((3, 4))
    assert_close(attention_reference(*(minigrad.tensor(a) for a in (q, k, v)),
                                     attn_mask=minigrad.tensor(additive)),
                 _softmax(s + additive) @ v, "attention with an additive (float) mask",
                 hints=[(_softmax(s) @ v, "a float attn_mask is added to the scores")])
    minigrad.gradcheck(lambda a, b, c: attention_reference(a, b, c, attn_mask=mask),
                       [minigrad.tensor(x, requires_grad=True) for x in (q, k, v)])


@pytest.mark.exercise("13.1")
def test_attention_reference_equals_the_fused_function():
    """Values and gradients of the composition against ScaledDotProductAttention,
    with a lower-triangular mask and with dropout drawn from the same generator."""
    g = rng(137)
    arrays = g.standard_normal((2, 2, 5, 4)), g.standard_normal((2, 2, 5, 4)), \
        g.standard_normal((2, 2, 5, 3))
    upstream = g.standard_normal((2, 2, 5, 3))
    for label, kw in (("a lower-triangular mask", {"attn_mask": np.tril(np.ones((5, 5), bool))}),
                      ("dropout p = 0.4", {"dropout_p": 0.4})):
        results = []
        for fn in (attention_reference, F.scaled_dot_product_attention):
            ts = [minigrad.tensor(a, requires_grad=True) for a in arrays]
            extra = {"generator": np.random.default_rng(7)} if "dropout_p" in kw else {}
            out = fn(*ts, **kw, **extra)
            (out * minigrad.tensor(upstream)).sum().backward()
            results.append([out.numpy()] + [t.grad.numpy() for t in ts])
        for name, mine, fused in zip(("output", "dQ", "dK", "dV"), *results):
            assert_close(mine, fused, f"{name} of attention_reference with {label} against "
                         "the fused Function", hints=[])


# ------------------------------------------------------------------ 13.2
@pytest.mark.exercise("13.2")
def test_causal_mask_is_the_lower_triangle():
    mask = causal_mask(3, 3)
    assert mask.dtype == bool, f"the mask must be bool (True = may attend), got {mask.dtype}"
    expected = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1]], bool)
    assert (mask == expected).all(), \
        f"causal_mask(3, 3) gave\n{mask.astype(int)}\nexpected\n{expected.astype(int)}: query i " \
        "sees keys 0 ... i (the diagonal included)" + (
            "; this is the upper triangle, the future" if (mask == expected.T).all() else "")
    assert causal_mask(2, 4).shape == (2, 4)
    assert (causal_mask(2, 4) == np.tril(np.ones((2, 4), bool))).all(), \
        "for L != S the mask is aligned at the top left (PyTorch's is_causal)"


@pytest.mark.exercise("13.2")
def test_causal_attention_never_looks_ahead():
    q, k, v = (minigrad.tensor(rng(13).standard_normal((1, 4, 3))) for _ in range(3))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    v2 = v.numpy().copy()
    v2[0, 3] += 100.0                                    # change the last token's value
    out2 = F.scaled_dot_product_attention(q, k, minigrad.tensor(v2), is_causal=True).numpy()
    assert_close(out2[0, :3], out[0, :3], "the outputs of positions 0-2 after changing "
                 "token 3", hints=[])


# ------------------------------------------------------------------ 13.3
@pytest.mark.exercise("13.3")
def test_lora_forward_adds_the_scaled_low_rank_update():
    minigrad.set_default_dtype(np.float64)
    layer = nn.LoRALinear(nn.Linear(4, 3), r=2, lora_alpha=6.0)
    layer.lora_B.weight.data[...] = rng(133).standard_normal((3, 2))
    x = rng(134).standard_normal((5, 4))
    W, b = layer.base_layer.weight.numpy(), layer.base_layer.bias.numpy()
    A, B = layer.lora_A.weight.numpy(), layer.lora_B.weight.numpy()
    assert_close(layer(minigrad.tensor(x)), x @ W.T + b + 3.0 * x @ A.T @ B.T,
                 "LoRALinear(x) with alpha/r = 3",
                 hints=[(x @ W.T + b + x @ A.T @ B.T, "scale the update by alpha / r = 3"),
                        (x @ W.T + b, "the adapter's update x Aᵀ Bᵀ is missing")])


@pytest.mark.exercise("13.3")
def test_lora_merge_folds_the_update_into_the_weight():
    minigrad.set_default_dtype(np.float64)
    layer = nn.LoRALinear(nn.Linear(4, 3), r=2, lora_alpha=4.0)
    layer.lora_B.weight.data[...] = rng(135).standard_normal((3, 2))
    W = layer.base_layer.weight.numpy().copy()
    A, B = layer.lora_A.weight.numpy(), layer.lora_B.weight.numpy()
    layer.merge()
    assert_close(layer.base_layer.weight, W + 2.0 * B @ A, "the merged weight W + (α/r) B A",
                 hints=[(W + B @ A, "scale B A by α / r = 2")])
    x = minigrad.tensor(rng(136).standard_normal((2, 4)))
    layer.unmerge()
    before = layer(x).numpy()
    layer.merge()
    assert_close(layer(x), before, "the merged layer's output (it must equal the unmerged one)")


# ------------------------------------------------------------------ 13.4
@pytest.mark.exercise("13.4")
def test_only_completion_tokens_are_targets():
    x, y = make_sft_batch([(np.array([1, 2, 3]), np.array([4, 5]))])
    assert x.tolist() == [[1, 2, 3, 4]], f"inputs are prompt + completion without the last " \
                                        f"token: expected [[1, 2, 3, 4]], got {x.tolist()}"
    assert y.tolist() == [[-100, -100, 4, 5]], \
        f"targets: expected [[-100, -100, 4, 5]] (position 2 already predicts the first " \
        f"completion token), got {y.tolist()}"


@pytest.mark.exercise("13.4")
def test_completion_tokens_of_a_padded_window():
    pairs = [(np.array([1, 2]), np.array([3, 4, 5])), (np.array([6, 7, 8, 9]), np.array([1]))]
    x, y = make_sft_batch(pairs)
    assert completion_tokens(y) == 4, \
        f"2 pairs with completions of 3 and 1 tokens hold 4 completion tokens, got " \
        f"{completion_tokens(y)} (padding and prompt positions do not count)"
    assert completion_tokens(make_sft_batch(pairs[:1])[1]) == 3


@pytest.mark.exercise("13.4")
def test_completion_tokens_honors_its_ignore_index():
    targets = np.array([[-1, -1, 4, 5], [-1, 7, -100, -1]])
    got = completion_tokens(targets, ignore_index=-1)
    assert got == 4, \
        f"completion_tokens(targets, ignore_index=-1) gave {got}, expected 4 (4 targets are " \
        "not -1); compare with the ignore_index given, not with -100"


class _DropEverything(nn.Module):
    """A stand-in for the LoRA dropout: records the shapes it sees, drops all."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(tuple(x.shape))
        return x * 0.0


@pytest.mark.exercise("13.3")
def test_lora_dropout_drops_the_adapter_s_input():
    minigrad.set_default_dtype(np.float64)
    layer = nn.LoRALinear(nn.Linear(4, 3), r=2, lora_alpha=2.0, lora_dropout=0.5)
    layer.lora_B.weight.data[...] = rng(138).standard_normal((3, 2))
    layer.lora_dropout = _DropEverything()
    x = rng(139).standard_normal((5, 4))
    out = layer(minigrad.tensor(x))
    assert layer.lora_dropout.seen == [(5, 4)], \
        f"the LoRA dropout was called on shapes {layer.lora_dropout.seen}, expected once on " \
        "the input x (5, 4): PEFT drops out the adapter's INPUT, B A dropout(x), not its " \
        "output, and not the base layer's"
    W, b = layer.base_layer.weight.numpy(), layer.base_layer.bias.numpy()
    assert_close(out, x @ W.T + b, "LoRALinear(x) when the dropout drops every input of the "
                 "adapter (only the base layer remains)", hints=[])
