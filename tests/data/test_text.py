"""Character tokenizer, padding, language-model batches, window sampling."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from minigrad.data import (
    CharTokenizer,
    load_tinyshakespeare,
    make_lm_batch,
    pad_sequences,
    sample_variable_length_sequences,
)

# ------------------------------------------------------------------ CharTokenizer


def test_vocab_is_sorted_and_ids_follow_it():
    tok = CharTokenizer("hello world")
    assert tok.vocab == [" ", "d", "e", "h", "l", "o", "r", "w"]
    assert tok.vocab_size == len(tok) == 8
    ids = tok.encode("hold")
    assert ids.dtype == np.int64 and ids.shape == (4,)
    assert ids.tolist() == [3, 5, 4, 1]


def test_shakespeare_roundtrip():
    text = load_tinyshakespeare()
    tok = CharTokenizer(text)
    assert tok.vocab_size == 65
    ids = tok.encode(text)
    assert ids.shape == (1_115_394,) and ids.min() == 0 and ids.max() == 64
    assert tok.decode(ids) == text


@given(st.text(min_size=1, max_size=200))
def test_roundtrip_any_text(text):
    tok = CharTokenizer(text)
    ids = tok.encode(text)
    assert tok.decode(ids) == text
    assert tok.decode(ids.tolist()) == text
    assert ((0 <= ids) & (ids < tok.vocab_size)).all()


def test_unknown_character_is_named():
    tok = CharTokenizer("abc")
    with pytest.raises(ValueError, match=r"'z' \(U\+007A\) at position 2"):
        tok.encode("abz")
    # a character past the largest in the vocabulary and one below the smallest
    with pytest.raises(ValueError, match="position 0"):
        tok.encode("A")


def test_decode_rejects_out_of_range_ids():
    tok = CharTokenizer("abc")
    with pytest.raises(ValueError, match=r"id 3 at position 1 is out of range \[0, 3\)"):
        tok.decode([0, 3])
    with pytest.raises(ValueError, match="out of range"):
        tok.decode(np.array([-1]))
    with pytest.raises(ValueError, match="integers"):
        tok.decode(np.array([0.0, 1.0]))


def test_empty_inputs():
    with pytest.raises(ValueError, match="empty"):
        CharTokenizer("")
    tok = CharTokenizer("ab")
    assert tok.encode("").shape == (0,)
    assert tok.decode([]) == ""


# ------------------------------------------------------------------ padding and LM batches


def test_pad_sequences():
    out = pad_sequences([[1, 2, 3], [4], []], pad_value=-1)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, [[1, 2, 3], [4, -1, -1], [-1, -1, -1]])
    assert pad_sequences([[1]], pad_value=0, length=3).tolist() == [[1, 0, 0]]
    with pytest.raises(ValueError, match="shorter than the longest"):
        pad_sequences([[1, 2, 3]], pad_value=0, length=2)
    with pytest.raises(ValueError, match="no sequences"):
        pad_sequences([], pad_value=0)


def test_make_lm_batch_known_values():
    inputs, targets = make_lm_batch([[5, 6, 7, 8], [9, 10]], ignore_index=-100)
    assert inputs.dtype == targets.dtype == np.int64
    np.testing.assert_array_equal(inputs, [[5, 6, 7], [9, 0, 0]])
    np.testing.assert_array_equal(targets, [[6, 7, 8], [10, -100, -100]])


def test_make_lm_batch_rejects_short_sequences():
    with pytest.raises(ValueError, match="sequence 1 has length 1"):
        make_lm_batch([[1, 2], [3]])


@given(st.lists(st.lists(st.integers(0, 50), min_size=2, max_size=12), min_size=1, max_size=6),
       st.integers(-200, -1))
def test_make_lm_batch_properties(seqs, ignore_index):
    inputs, targets = make_lm_batch(seqs, ignore_index=ignore_index)
    T = max(len(s) for s in seqs) - 1
    assert inputs.shape == targets.shape == (len(seqs), T)
    assert (targets != ignore_index).sum() == sum(len(s) - 1 for s in seqs)
    for i, s in enumerate(seqs):
        n = len(s) - 1
        assert inputs[i, :n].tolist() == s[:-1] and (inputs[i, n:] == 0).all()
        assert targets[i, :n].tolist() == s[1:] and (targets[i, n:] == ignore_index).all()


# ------------------------------------------------------------------ window sampling


def test_sample_windows_are_reproducible_and_in_bounds():
    ids = np.arange(1000, dtype=np.int64)
    a = sample_variable_length_sequences(ids, 50, 3, 17, np.random.default_rng(0))
    b = sample_variable_length_sequences(ids, 50, 3, 17, np.random.default_rng(0))
    assert len(a) == 50
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
        assert x.dtype == np.int64 and 3 <= len(x) <= 17
        # a window of consecutive tokens
        np.testing.assert_array_equal(np.diff(x), 1)
    lengths = {len(x) for x in a}
    assert len(lengths) > 1  # lengths vary


def test_sample_windows_cover_both_length_bounds_and_whole_array():
    ids = np.arange(5)
    out = sample_variable_length_sequences(ids, 200, 1, 5, np.random.default_rng(1))
    lengths = {len(x) for x in out}
    assert lengths == {1, 2, 3, 4, 5}
    assert any(x.tolist() == [0, 1, 2, 3, 4] for x in out)


def test_sample_windows_return_copies():
    ids = np.arange(10)
    out = sample_variable_length_sequences(ids, 3, 2, 4, np.random.default_rng(0))
    out[0][:] = -1
    assert ids.min() == 0


def test_sample_windows_validation():
    ids = np.arange(10)
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="Generator"):
        sample_variable_length_sequences(ids, 3, 2, 4, rng=0)
    with pytest.raises(ValueError, match="max_len=11, len\\(ids\\)=10"):
        sample_variable_length_sequences(ids, 3, 2, 11, rng)
    with pytest.raises(ValueError, match="min_len=5, max_len=4"):
        sample_variable_length_sequences(ids, 3, 5, 4, rng)
    with pytest.raises(ValueError, match="num_sequences"):
        sample_variable_length_sequences(ids, 0, 2, 4, rng)
    with pytest.raises(ValueError, match="1-D integer"):
        sample_variable_length_sequences(ids.astype(float), 3, 2, 4, rng)


def test_sampled_windows_feed_make_lm_batch():
    text = load_tinyshakespeare()[:5000]
    tok = CharTokenizer(text)
    seqs = sample_variable_length_sequences(tok.encode(text), 8, 2, 33, np.random.default_rng(3))
    inputs, targets = make_lm_batch(seqs)
    assert inputs.shape[0] == 8 and inputs.shape[1] == max(map(len, seqs)) - 1
    assert tok.decode(targets[0][targets[0] != -100]) == tok.decode(seqs[0][1:])
