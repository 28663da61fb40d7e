"""Embedding: lookup, repeated ids in backward, padding_idx, parity, errors."""
from __future__ import annotations

import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.nn import functional as F
from tests.helpers import check_gradients


def test_lookup_and_repeated_ids_add_up(device):
    emb = nn.Embedding(5, 3, device=device)
    ids = np.array([[1, 1, 4], [1, 0, 4]])
    out = emb(ids)
    assert out.shape == (2, 3, 3) and out.device == device
    np.testing.assert_array_equal(out.numpy()[0, 0], emb.weight.numpy()[1])
    out.sum().backward()
    counts = np.bincount(ids.reshape(-1), minlength=5)
    np.testing.assert_array_equal(emb.weight.grad.numpy(), np.repeat(counts[:, None], 3, 1))


def test_embedding_gradcheck():
    w = np.random.default_rng(0).standard_normal((6, 2))
    ids = np.array([[0, 5, 5], [2, 2, 2]])
    assert check_gradients(lambda t: F.embedding(ids, t), [w])
    t = minigrad.tensor(w, requires_grad=True)
    F.embedding(ids, t, padding_idx=2).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy()[2], 0.0)    # padding row: no gradient
    np.testing.assert_array_equal(t.grad.numpy()[5], 2.0)


def test_embedding_parity(torch, device):
    ref = torch.nn.Embedding(7, 4, padding_idx=3).double()
    emb = nn.Embedding(7, 4, padding_idx=3, dtype=np.float64, device=device)
    emb.load_state_dict({"weight": ref.weight.detach().numpy()})
    ids = np.array([[3, 1, 6], [1, 1, 3]])
    out, ref_out = emb(ids), ref(torch.tensor(ids))
    np.testing.assert_allclose(out.numpy(), ref_out.detach().numpy(), rtol=0, atol=0)
    v = np.random.default_rng(0).standard_normal(out.shape)
    out.backward(minigrad.tensor(v, device=device))
    ref_out.backward(torch.tensor(v))
    np.testing.assert_allclose(emb.weight.grad.numpy(), ref.weight.grad.numpy(),
                               rtol=1e-14, atol=1e-15)


def test_default_init_and_padding_row():
    emb = nn.Embedding(1000, 50, padding_idx=-1)
    w = emb.weight.numpy()
    assert emb.padding_idx == 999 and (w[999] == 0).all()
    assert abs(w[:999].mean()) < 0.01 and abs(w[:999].std() - 1) < 0.01    # N(0, 1)
    assert repr(emb) == "Embedding(1000, 50, padding_idx=999)"


def test_ids_as_tensor_and_list():
    emb = nn.Embedding(4, 2)
    a = emb(minigrad.tensor([0, 3])).numpy()
    np.testing.assert_array_equal(a, emb([0, 3]).numpy())


def test_embedding_errors():
    emb = nn.Embedding(5, 2)
    with pytest.raises(ValueError, match=r"id 5 is out of range.*num_embeddings=5"):
        emb(np.array([0, 5]))
    with pytest.raises(ValueError, match=r"id -1 is out of range"):
        emb(np.array([[0], [-1]]))
    with pytest.raises(TypeError, match="integers"):
        emb(np.array([0.0, 1.0]))
    with pytest.raises(ValueError, match="num_embeddings must be a positive int"):
        nn.Embedding(0, 2)
    with pytest.raises(ValueError, match="padding_idx 5 is out of range"):
        nn.Embedding(5, 2, padding_idx=5)
