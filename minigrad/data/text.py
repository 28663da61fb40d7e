"""Character-level text: a tokenizer, padding, and language-model batches.

These helpers work on plain NumPy integer arrays; wrap the results with
``minigrad.tensor`` (or a ``DataLoader``) to train on them.

A language-model batch of variable-length sequences is where gradient
accumulation stops being trivial: with ``ignore_index`` padding, the mean loss of
a batch is an average over *real* tokens, and k micro-batches hold different
numbers of them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "CharTokenizer",
    "pad_sequences",
    "make_lm_batch",
    "sample_variable_length_sequences",
]


class CharTokenizer:
    """Maps characters to integer ids and back; the vocabulary is sorted.

    Args:
        text: the text that defines the vocabulary (every distinct character
            in it gets an id, in sorted order: id 0 is the smallest code point).

    Attributes:
        vocab: list of the ``vocab_size`` characters, ``vocab[i]`` has id ``i``.
        vocab_size: number of distinct characters.

    Raises:
        ValueError: if ``text`` is empty.

    Example:
        >>> tok = CharTokenizer("hello")
        >>> tok.vocab
        ['e', 'h', 'l', 'o']
        >>> tok.encode("hole").tolist()
        [1, 3, 2, 0]
        >>> tok.decode([1, 0, 2, 2, 3])
        'hello'
    """

    def __init__(self, text: str):
        if not isinstance(text, str):
            raise TypeError(f"CharTokenizer: text must be a str, got {type(text).__name__}")
        if not text:
            raise ValueError("CharTokenizer: cannot build a vocabulary from an empty text")
        self.vocab: list[str] = sorted(set(text))
        self.vocab_size: int = len(self.vocab)
        self._stoi = {ch: i for i, ch in enumerate(self.vocab)}
        # Sorted code points, for a vectorized encode with np.searchsorted.
        self._codes = np.array([ord(ch) for ch in self.vocab], dtype=np.uint32)

    def __len__(self) -> int:
        return self.vocab_size

    def __repr__(self) -> str:
        return f"CharTokenizer(vocab_size={self.vocab_size})"

    def encode(self, text: str) -> np.ndarray:
        """Turn ``text`` into ids.

        Returns:
            int64 array of shape (len(text),).

        Raises:
            ValueError: if a character is not in the vocabulary; the message
                names the character, its code point and its position.
        """
        if not isinstance(text, str):
            raise TypeError(f"CharTokenizer.encode: expected a str, got {type(text).__name__}")
        # BEGIN SOLUTION ch08.1
        codes = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        ids = np.searchsorted(self._codes, codes)
        found = ids < self.vocab_size
        found[found] = self._codes[ids[found]] == codes[found]
        if not found.all():
            pos = int(np.argmin(found))
            ch = text[pos]
            raise ValueError(
                f"CharTokenizer.encode: character {ch!r} (U+{ord(ch):04X}) at position "
                f"{pos} is not in the vocabulary of {self.vocab_size} characters"
            )
        return ids.astype(np.int64)
        # END SOLUTION

    def decode(self, ids) -> str:
        """Turn ids back into text.

        Args:
            ids: a 1-D sequence or array of integers in ``[0, vocab_size)``
                (a minigrad Tensor works too, through ``.numpy()``).

        Returns:
            ``str`` of length ``len(ids)``.

        Raises:
            ValueError: if ``ids`` is not 1-D, not integer, or holds an id
                outside ``[0, vocab_size)`` (the message names it and its position).
        """
        if hasattr(ids, "numpy") and not isinstance(ids, np.ndarray):
            ids = ids.numpy()
        arr = np.asarray(ids)
        if arr.size == 0:
            return ""
        if arr.ndim != 1:
            raise ValueError(f"CharTokenizer.decode: expected a 1-D sequence of ids, got shape {arr.shape}")
        if not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"CharTokenizer.decode: ids must be integers, got dtype {arr.dtype}")
        bad = (arr < 0) | (arr >= self.vocab_size)
        if bad.any():
            pos = int(np.argmax(bad))
            raise ValueError(
                f"CharTokenizer.decode: id {int(arr[pos])} at position {pos} is out of "
                f"range [0, {self.vocab_size})"
            )
        # BEGIN SOLUTION ch08.1
        return "".join(self.vocab[i] for i in arr.tolist())
        # END SOLUTION


def _as_int_sequences(seqs, name: str) -> list[np.ndarray]:
    """Validate a non-empty list of 1-D integer sequences; return int64 arrays."""
    if isinstance(seqs, np.ndarray) and seqs.ndim == 2:
        seqs = list(seqs)
    if len(seqs) == 0:
        raise ValueError(f"{name}: got no sequences")
    out = []
    for i, seq in enumerate(seqs):
        arr = np.asarray(seq)
        if arr.ndim != 1:
            raise ValueError(f"{name}: sequence {i} must be 1-D, got shape {arr.shape}")
        if arr.size and not np.issubdtype(arr.dtype, np.integer):
            raise ValueError(f"{name}: sequence {i} must hold integers, got dtype {arr.dtype}")
        out.append(arr.astype(np.int64))
    return out


def pad_sequences(seqs: Sequence[Sequence[int]], pad_value: int, length: int | None = None) -> np.ndarray:
    """Stack variable-length integer sequences into one right-padded array.

    Args:
        seqs: B sequences (lists or 1-D arrays of integers), lengths L_1..L_B.
        pad_value: integer written after the end of each shorter sequence.
        length: T, the padded length; defaults to ``max(L_i)``.

    Returns:
        int64 array of shape (B, T); row i is ``seqs[i]`` then ``pad_value``.

    Raises:
        ValueError: if ``seqs`` is empty, a sequence is not 1-D integers, or
            ``length`` is shorter than the longest sequence.
    """
    arrays = _as_int_sequences(seqs, "pad_sequences")
    longest = max(a.size for a in arrays)
    T = longest if length is None else int(length)
    if T < longest:
        raise ValueError(f"pad_sequences: length={T} is shorter than the longest sequence ({longest})")
    out = np.full((len(arrays), T), pad_value, dtype=np.int64)
    for i, a in enumerate(arrays):
        out[i, : a.size] = a
    return out


def make_lm_batch(sequences: Sequence[Sequence[int]], ignore_index: int = -100) -> tuple[np.ndarray, np.ndarray]:
    """Build next-token-prediction inputs and targets from variable-length sequences.

    For a sequence ``s`` of length L the model reads ``s[:-1]`` and must predict
    ``s[1:]``: position t of the inputs is paired with target ``s[t + 1]``.

    Args:
        sequences: B integer sequences, each of length >= 2.
        ignore_index: target value at padded positions, so that
            ``cross_entropy(..., ignore_index=ignore_index)`` skips them.

    Returns:
        ``(inputs, targets)``, both int64 of shape (B, T) with ``T = max(L_i) - 1``:
        ``inputs[i, :L_i - 1] = s_i[:-1]`` then 0 (a valid id, never scored);
        ``targets[i, :L_i - 1] = s_i[1:]`` then ``ignore_index``.
        ``(targets != ignore_index).sum()`` is the number of scored tokens,
        ``sum(L_i - 1)``.

    Raises:
        ValueError: if ``sequences`` is empty or a sequence is shorter than 2
            (the message names its index and length).
    """
    arrays = _as_int_sequences(sequences, "make_lm_batch")
    for i, a in enumerate(arrays):
        if a.size < 2:
            raise ValueError(
                f"make_lm_batch: sequence {i} has length {a.size}; each sequence needs "
                "at least 2 tokens (one input and its next-token target)"
            )
    # BEGIN SOLUTION ch05.4
    inputs = pad_sequences([a[:-1] for a in arrays], pad_value=0)
    targets = pad_sequences([a[1:] for a in arrays], pad_value=ignore_index)
    return inputs, targets
    # END SOLUTION


def sample_variable_length_sequences(
    ids, num_sequences: int, min_len: int, max_len: int, rng: np.random.Generator
) -> list[np.ndarray]:
    """Draw random windows of random length from a token array.

    Each window's length L is drawn uniformly from ``[min_len, max_len]``
    (both ends included), then its start uniformly from ``[0, len(ids) - L]``.

    Args:
        ids: 1-D integer array of token ids (e.g. ``CharTokenizer.encode(text)``).
        num_sequences: how many windows to draw (>= 1).
        min_len, max_len: bounds on the window length, ``1 <= min_len <= max_len <= len(ids)``.
        rng: a ``numpy.random.Generator`` (e.g. ``numpy.random.default_rng(0)``);
            the same generator state gives the same windows.

    Returns:
        list of ``num_sequences`` int64 arrays (copies), lengths in ``[min_len, max_len]``.

    Raises:
        TypeError: if ``rng`` is not a ``numpy.random.Generator``.
        ValueError: if ``ids`` is not 1-D integers, or the counts/lengths are out
            of range (the message gives the numbers).
    """
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            "sample_variable_length_sequences: rng must be a numpy.random.Generator "
            f"(e.g. numpy.random.default_rng(0)), got {type(rng).__name__}"
        )
    ids = np.asarray(ids)
    if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
        raise ValueError(
            "sample_variable_length_sequences: ids must be a 1-D integer array, "
            f"got shape {ids.shape} and dtype {ids.dtype}"
        )
    if num_sequences < 1:
        raise ValueError(f"sample_variable_length_sequences: num_sequences must be >= 1, got {num_sequences}")
    if not 1 <= min_len <= max_len <= ids.size:
        raise ValueError(
            "sample_variable_length_sequences: need 1 <= min_len <= max_len <= len(ids), "
            f"got min_len={min_len}, max_len={max_len}, len(ids)={ids.size}"
        )
    lengths = rng.integers(min_len, max_len, size=num_sequences, endpoint=True)
    starts = rng.integers(0, ids.size - lengths, endpoint=True)
    return [ids[s : s + n].astype(np.int64) for s, n in zip(starts.tolist(), lengths.tolist())]
