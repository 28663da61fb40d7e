"""sample_text: bad arguments are clear errors; the seeded default is reproducible."""
import numpy as np
import pytest

import minigrad
from minigrad.data.text import CharTokenizer
from minigrad.experiments.char_lm import make_bigram_lm, sample_text


@pytest.mark.parametrize("kwargs, message", [
    (dict(prompt="", length=3), "at least one character"),
    (dict(prompt="a", length=-1), "length must be an int >= 0"),
    (dict(prompt="a", length=2.5), "length must be an int >= 0"),
    (dict(prompt="a", length=3, temperature=0.0), "temperature must be > 0"),
])
def test_bad_arguments_are_named(kwargs, message):
    tok = CharTokenizer("ab")
    with pytest.raises(ValueError, match=message):
        sample_text(make_bigram_lm(2, 4, 4), tok, **kwargs)


def test_seeded_sampling_is_reproducible_and_restores_the_mode():
    tok = CharTokenizer("hello world")
    model = make_bigram_lm(tok.vocab_size, 4, 8)
    minigrad.manual_seed(3)
    first = sample_text(model, tok, "h", 30)
    minigrad.manual_seed(3)
    assert sample_text(model, tok, "h", 30) == first
    assert len(first) == 31 and first[0] == "h" and set(first) <= set(tok.vocab)
    assert model.training, "the model's training mode is restored"
    assert sample_text(model, tok, "he", 0, rng=np.random.default_rng(0)) == "he"
