"""Exercises of chapter 8 (the character model)."""
import numpy as np
import pytest

import minigrad
from minigrad import nn
from minigrad.data.text import CharTokenizer
from minigrad.experiments.char_lm import sample_text


@pytest.mark.exercise("8.1")
def test_char_tokenizer_round_trip():
    tok = CharTokenizer("hello world")
    assert tok.vocab == [" ", "d", "e", "h", "l", "o", "r", "w"]
    ids = tok.encode("hold ore")
    assert ids.tolist() == [3, 5, 4, 1, 0, 5, 6, 2], \
        f"encode('hold ore') gave {ids.tolist()}; id i is the i-th character of the " \
        "sorted vocabulary"
    assert ids.dtype == np.int64
    assert tok.decode(ids) == "hold ore", "decode(encode(text)) must give the text back"
    with pytest.raises(ValueError, match="'z'"):
        tok.encode("hz")


class _Table(nn.Module):
    """Logits of the next character given the current one: a fixed table."""

    def __init__(self, table):
        super().__init__()
        self.table = np.asarray(table, dtype=np.float64)

    def forward(self, ids):
        return minigrad.tensor(self.table[ids.numpy()])


@pytest.mark.exercise("8.2")
def test_sampling_follows_the_model():
    tok = CharTokenizer("abc")
    certain = 50.0 * np.roll(np.eye(3), 1, axis=1)         # a -> b -> c -> a, surely
    text = sample_text(_Table(certain), tok, "a", 7, rng=np.random.default_rng(0))
    assert text == "abcabcab", \
        f"sample_text gave {text!r}; a model sure of the next character gives 'abcabcab'"


@pytest.mark.exercise("8.2")
def test_sampling_draws_from_the_softmax_with_temperature():
    tok = CharTokenizer("ab")
    logits = np.log([[1.0, 3.0], [1.0, 3.0]])                # p(b) = 3/4 after any char
    text = sample_text(_Table(logits), tok, "a", 4000, rng=np.random.default_rng(1))
    share = text[1:].count("b") / 4000
    assert abs(share - 0.75) < 0.03, \
        f"'b' was drawn {share:.3f} of the time; softmax of the logits gives 0.75" + \
        (": sample from the distribution, do not take the argmax" if share == 1.0 else "")
    hot = sample_text(_Table(logits), tok, "a", 4000, temperature=2.0,
                      rng=np.random.default_rng(2))
    share = hot[1:].count("b") / 4000
    expected = np.sqrt(3) / (1 + np.sqrt(3))                 # softmax(logits / 2)
    assert abs(share - expected) < 0.03, \
        f"with temperature 2, 'b' was drawn {share:.3f} of the time; softmax(logits / T) " \
        f"gives {expected:.3f}"


@pytest.mark.exercise("8.1")
@pytest.mark.parametrize("text, unknown, pos", [("dab", "a", 1), ("ow!", "!", 2), ("hex", "x", 2)])
def test_encode_names_an_unknown_character_and_its_position(text, unknown, pos):
    tok = CharTokenizer("hello world")          # " dehlorw": 'a' and '!' sort among them
    with pytest.raises(ValueError) as info:
        ids = tok.encode(text)
        pytest.fail(f"encode({text!r}) gave {ids.tolist()}; {unknown!r} is not in the "
                    "vocabulary: searchsorted gives the id where it would go, check that the "
                    "character there is the same one")
    assert repr(unknown) in str(info.value) and f"position {pos}" in str(info.value), \
        f"encode({text!r}) raised {info.value}; it must name {unknown!r} and its position {pos}"


@pytest.mark.exercise("8.1")
def test_encode_and_decode_non_ascii_characters():
    tok = CharTokenizer("héllo wörld ✓")
    ids = tok.encode("wö✓é")
    assert ids.tolist() == [tok.vocab.index(c) for c in "wö✓é"], \
        f"encode('wö✓é') gave {ids.tolist()}: one id per character (code point), not per " \
        "UTF-8 byte"
    assert tok.decode(ids) == "wö✓é"


@pytest.mark.exercise("8.2")
def test_sampling_survives_large_logits():
    tok = CharTokenizer("ab")
    logits = np.array([[1000.0, 1000.0 + np.log(3)]] * 2)    # p(b) = 3/4, exp overflows
    try:
        with np.errstate(all="ignore"):
            text = sample_text(_Table(logits), tok, "a", 400, rng=np.random.default_rng(3))
    except ValueError as e:
        pytest.fail(f"sample_text with logits near 1000 raised {e}: exp(1000) is inf and "
                    "inf / inf is nan; subtract the largest logit before exp")
    share = text[1:].count("b") / 400
    assert abs(share - 0.75) < 0.1, \
        f"with logits near 1000 'b' was drawn {share:.3f} of the time, not about 0.75: " \
        "subtract the largest logit before exp (exp(1000) is inf)"


@pytest.mark.exercise("8.2")
def test_sampling_draws_from_the_rng_given():
    tok = CharTokenizer("ab")
    logits = np.zeros((2, 2))
    texts = {sample_text(_Table(logits), tok, "a", 60, rng=np.random.default_rng(7))
             for _ in range(3)}
    assert len(texts) == 1, \
        "three samples with np.random.default_rng(7) differ: draw with the rng argument, " \
        "not with a global generator"
