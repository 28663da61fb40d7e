"""Attention: masked_fill, tril/triu, scaled_dot_product_attention and
nn.MultiheadAttention, each gradchecked in float64 and compared with PyTorch."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad
import minigrad.nn as nn
import minigrad.nn.functional as F
from tests.helpers import check_gradients, compare_with_torch

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.standard_normal(shape)


# ------------------------------------------------------------ masked_fill, tril, triu
def test_masked_fill_values_and_gradient():
    x = minigrad.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    mask = np.array([[True, False], [False, True]])
    y = x.masked_fill(mask, -5.0)
    np.testing.assert_array_equal(y.numpy(), [[-5.0, 2.0], [3.0, -5.0]])
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [[0.0, 1.0], [1.0, 0.0]])


def test_masked_fill_broadcast_mask_and_errors():
    x = minigrad.tensor(randn(2, 3, 4), requires_grad=True)
    row = np.array([True, False, False, True])
    check_gradients(lambda t: minigrad.masked_fill(t, row, float("-inf")).exp(),
                    [randn(2, 3, 4)])
    with pytest.raises(TypeError, match="mask must be bool"):
        x.masked_fill(np.ones(4), 0.0)
    with pytest.raises(ValueError, match="does not broadcast"):
        x.masked_fill(np.ones((5, 4), dtype=bool), 0.0)


@pytest.mark.parametrize("diagonal", [-1, 0, 1])
def test_tril_triu_gradcheck(diagonal):
    check_gradients(lambda t: minigrad.tril(t, diagonal) * 2, [randn(2, 3, 4)])
    check_gradients(lambda t: t.triu(diagonal) * 2, [randn(3, 5)])
    with pytest.raises(ValueError, match="at least 2 axes"):
        minigrad.tril(minigrad.tensor([1.0, 2.0]))


def test_masks_match_torch(torch):
    a = randn(2, 4, 5)
    mask = rng.random((4, 5)) > 0.5
    compare_with_torch(torch, lambda t: t.masked_fill(mask, 3.0) * t,
                       lambda t: t.masked_fill(torch.tensor(mask), 3.0) * t, [a])
    for d in (-2, 0, 1):
        compare_with_torch(torch, lambda t: minigrad.tril(t, d), lambda t: torch.tril(t, d), [a])
        compare_with_torch(torch, lambda t: minigrad.triu(t, d), lambda t: torch.triu(t, d), [a])


# ------------------------------------------------------------ scaled_dot_product_attention
def test_attention_by_hand_three_tokens():
    """One query row checked by hand: weights = softmax(q·k / √E)."""
    q = minigrad.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    k = minigrad.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    v = minigrad.tensor([[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]])
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True).numpy()
    np.testing.assert_allclose(out[0], [1.0, 0.0])          # the first token sees only itself
    s = np.array([0.0, 1.0]) / np.sqrt(2)                    # second query against keys 0, 1
    w = np.exp(s) / np.exp(s).sum()
    np.testing.assert_allclose(out[1], w @ v.numpy()[:2])


@settings(max_examples=15, deadline=None)
@given(batch=st.sampled_from([(), (2,), (2, 3), (1, 2)]), L=st.integers(1, 4),
       S=st.integers(1, 4), E=st.integers(1, 3), mode=st.sampled_from(
           ["none", "causal", "bool", "float"]))
def test_sdpa_gradcheck(batch, L, S, E, mode):
    q, k, v = randn(*batch, L, E), randn(*batch, S, E), randn(*batch, S, 2)
    extra, kwargs = [], {}
    if mode == "causal":
        kwargs["is_causal"] = True
    elif mode == "bool":
        m = rng.random((L, S)) > 0.3
        m[:, 0] = True                       # every query sees at least one key
        kwargs["attn_mask"] = m
    elif mode == "float":
        extra = [randn(L, S)]                # an additive mask with a gradient

    def fn(q, k, v, *mask):
        return F.scaled_dot_product_attention(q, k, v, *mask, **kwargs)
    check_gradients(fn, [q, k, v, *extra])


@pytest.mark.parametrize("mode", ["none", "causal", "bool", "float", "broadcast", "scale"])
def test_sdpa_matches_torch(torch, mode):
    q, k, v = randn(2, 3, 5, 4), randn(2, 3, 6, 4), randn(2, 3, 6, 3)
    arrays, kwargs, th_kwargs = [q, k, v], {}, {}
    if mode == "causal":
        kwargs = th_kwargs = {"is_causal": True}
    elif mode == "bool":
        m = rng.random((5, 6)) > 0.4
        m[2] = False                          # a query that may attend to nothing
        kwargs, th_kwargs = {"attn_mask": m}, {"attn_mask": torch.tensor(m)}
    elif mode == "float":
        arrays.append(randn(2, 1, 5, 6))
    elif mode == "broadcast":
        arrays = [q, randn(1, 3, 6, 4), randn(3, 6, 3)]
    elif mode == "scale":
        kwargs = th_kwargs = {"scale": 0.3}
    compare_with_torch(torch, lambda *t: F.scaled_dot_product_attention(*t, **kwargs),
                       lambda *t: torch.nn.functional.scaled_dot_product_attention(
                           *t, **th_kwargs), arrays)


def test_sdpa_dropout_is_inverted_dropout_of_the_weights():
    q, k, v = (minigrad.tensor(randn(2, 6, 3), requires_grad=True) for _ in range(3))
    g = np.random.default_rng(5)
    out = F.scaled_dot_product_attention(q, k, v, dropout_p=0.5, generator=g)
    keep = np.random.default_rng(5).random((2, 6, 6)) >= 0.5
    s = q.numpy() @ k.numpy().swapaxes(-1, -2) / np.sqrt(3)
    w = np.exp(s - s.max(-1, keepdims=True))
    w /= w.sum(-1, keepdims=True)
    np.testing.assert_allclose(out.numpy(), (w * keep * 2.0) @ v.numpy(), rtol=1e-6)
    check_gradients(lambda q, k, v: F.scaled_dot_product_attention(
        q, k, v, dropout_p=0.3, generator=np.random.default_rng(1)), [randn(2, 4, 3),
                                                                     randn(2, 4, 3),
                                                                     randn(2, 4, 2)])


def test_sdpa_errors():
    q = minigrad.tensor(randn(2, 3, 4))
    with pytest.raises(ValueError, match="query's last axis 4 != key's 5"):
        F.scaled_dot_product_attention(q, minigrad.tensor(randn(2, 3, 5)), q)
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.ones((3, 3), bool), is_causal=True)
    with pytest.raises(ValueError, match="dropout_p"):
        F.scaled_dot_product_attention(q, q, q, dropout_p=1.0)
    with pytest.raises(ValueError, match="does not broadcast"):
        F.scaled_dot_product_attention(q, q, q, attn_mask=np.ones((4, 4), bool))
    with pytest.raises(TypeError, match="one floating dtype"):
        F.scaled_dot_product_attention(q, q.to(dtype=np.float32), q)


def test_split_and_merge_heads_are_inverse():
    x = randn(2, 5, 12)
    check_gradients(lambda t: [h * h for h in nn.attention.A.split_heads(t, 2, chunks=3)],
                    [x])
    t = minigrad.tensor(x)
    h = nn.attention.A.split_heads(t, 3)
    np.testing.assert_array_equal(h.numpy()[1, 2, 3], x[1, 3, 8:12])
    np.testing.assert_array_equal(nn.attention.A.merge_heads(h).numpy(), x)


# ------------------------------------------------------------ nn.MultiheadAttention
def _torch_mha(torch, mha, batch_first):
    ref = torch.nn.MultiheadAttention(mha.embed_dim, mha.num_heads, batch_first=batch_first,
                                      dtype=torch.float64)
    ref.load_state_dict({k: torch.tensor(np.asarray(v)) for k, v in mha.state_dict().items()})
    return ref


def test_mha_parameter_names_and_shapes():
    mha = nn.MultiheadAttention(8, 2)
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "in_proj_bias",
                                                      "out_proj.weight", "out_proj.bias"]
    assert mha.in_proj_weight.shape == (24, 8)
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()
    with pytest.raises(ValueError, match="multiple of num_heads"):
        nn.MultiheadAttention(10, 3)


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("masks", ["none", "causal", "padding", "float"])
def test_mha_matches_torch(torch, float64, batch_first, masks):
    mha = nn.MultiheadAttention(8, 2, batch_first=batch_first)
    with minigrad.no_grad():
        mha.in_proj_bias.data[...] = randn(24)
        mha.out_proj.bias.data[...] = randn(8)
    ref = _torch_mha(torch, mha, batch_first)
    N, L, S = 3, 4, 5
    shape_q, shape_kv = ((N, L, 8), (N, S, 8)) if batch_first else ((L, N, 8), (S, N, 8))
    q, k, v = randn(*shape_q), randn(*shape_kv), randn(*shape_kv)
    kw, th_kw = {}, {}
    if masks == "causal":
        m = np.triu(np.ones((L, S), bool), 1)
        kw, th_kw = dict(attn_mask=m, is_causal=True), dict(attn_mask=torch.tensor(m),
                                                           is_causal=True)
    elif masks == "padding":
        m = np.zeros((N, S), bool)
        m[0, 3:] = m[2, 1:] = True
        kw, th_kw = dict(key_padding_mask=m), dict(key_padding_mask=torch.tensor(m))
    elif masks == "float":
        m = randn(N * 2, L, S)
        kw, th_kw = dict(attn_mask=m), dict(attn_mask=torch.tensor(m))
    for average in (True, False):
        mg_in = [minigrad.tensor(a, requires_grad=True) for a in (q, k, v)]
        th_in = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
        out, w = mha(*mg_in, average_attn_weights=average, **kw)
        ref_out, ref_w = ref(*th_in, average_attn_weights=average, **th_kw)
        np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), rtol=1e-10,
                                   atol=1e-12)
        np.testing.assert_allclose(w.numpy(), ref_w.detach().numpy(), rtol=1e-10, atol=1e-12)
        gv = randn(*out.shape)
        (out * minigrad.tensor(gv)).sum().backward()
        (ref_out * torch.tensor(gv)).sum().backward()
        for a, b in zip(mg_in, th_in):
            np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-10, atol=1e-12)
        for name, p in mha.named_parameters():
            np.testing.assert_allclose(p.grad.numpy(), ref.get_parameter(name).grad.numpy(),
                                       rtol=1e-10, atol=1e-12, err_msg=name)
        mha.zero_grad()
        ref.zero_grad()


def test_mha_unbatched_and_need_weights_false(torch, float64):
    mha = nn.MultiheadAttention(6, 3)
    ref = _torch_mha(torch, mha, False)
    x = randn(4, 6)
    out, w = mha(*(minigrad.tensor(x),) * 3, need_weights=False)
    ref_out, _ = ref(*(torch.tensor(x),) * 3, need_weights=False)
    assert w is None
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), rtol=1e-10, atol=1e-12)


def test_mha_gradcheck_with_dropout_in_eval_and_errors(float64):
    mha = nn.MultiheadAttention(4, 2, dropout=0.5, batch_first=True).eval()
    check_gradients(lambda x: mha(x, x, x, attn_mask=np.triu(np.ones((3, 3), bool), 1))[0],
                    [randn(2, 3, 4)])
    x = minigrad.tensor(randn(2, 3, 4))
    with pytest.raises(ValueError, match="needs attn_mask"):
        mha(x, x, x, is_causal=True)
    with pytest.raises(ValueError, match="key_padding_mask must have shape"):
        mha(x, x, x, key_padding_mask=np.zeros((3, 3), bool))
    with pytest.raises(ValueError, match="width 5, expected embed_dim=4"):
        mha(minigrad.tensor(randn(2, 3, 5)), x, x)


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"scale": 0.3}])
def test_grouped_query_attention_matches_torch(torch, kwargs):
    """enable_gqa: 6 query heads share 2 key/value heads (3 each)."""
    rng = np.random.default_rng(7)
    arrays = [rng.standard_normal((2, 6, 4, 5)), rng.standard_normal((2, 2, 4, 5)),
              rng.standard_normal((2, 2, 4, 3))]
    compare_with_torch(
        torch, lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True,
                                                              **kwargs),
        lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(
            q, k, v, enable_gqa=True, **kwargs), arrays)


def test_grouped_query_attention_errors():
    q, kv = minigrad.randn(1, 4, 3, 2), minigrad.randn(1, 3, 3, 2)
    with pytest.raises(ValueError, match="query's 4 heads to be a multiple of the key's 3"):
        F.scaled_dot_product_attention(q, kv, kv, enable_gqa=True)


def test_a_row_holding_nan_gives_nan_weights_throughout():
    """As PyTorch: a NaN score makes its whole row of weights NaN; a row that may
    attend to nothing gives zeros; the other rows are untouched."""
    from minigrad.functions.attention import _softmax_rows
    scores = np.array([[1.0, np.nan, 2.0], [-np.inf, -np.inf, -np.inf], [1.0, 2.0, 3.0]])
    weights = _softmax_rows(scores.copy())
    assert np.isnan(weights[0]).all()
    np.testing.assert_array_equal(weights[1], 0.0)
    e = np.exp(np.array([1.0, 2.0, 3.0]) - 3.0)
    np.testing.assert_allclose(weights[2], e / e.sum(), rtol=1e-15)


def test_a_bool_mask_with_more_leading_axes_broadcasts_the_output():
    """The mask is written into the scores in place only when it fits their shape;
    a mask with more leading axes broadcasts the output, as where() does."""
    rng = np.random.default_rng(0)
    q = minigrad.tensor(rng.standard_normal((5, 4)), requires_grad=True)
    mask = rng.random((2, 1, 5, 5)) > 0.3
    mask[..., 0] = True                                   # every query sees a key
    out = F.scaled_dot_product_attention(q, q, q, attn_mask=mask)
    assert out.shape == (2, 1, 5, 4)
    ref = F.scaled_dot_product_attention(q, q, q, attn_mask=minigrad.tensor(
        np.where(mask, 0.0, -np.inf)))
    np.testing.assert_allclose(out.numpy(), ref.numpy(), rtol=1e-12)
