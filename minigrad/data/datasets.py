"""Real data sets shipped inside the package (no download, ever).

Three small, real data sets live in ``minigrad/data/files/`` (their sources and
licences are in ``files/README.md``):

- ``load_digits``: UCI optical digits, 1797 images of 8x8 pixels, 10 classes.
- ``load_mnist_test``: the MNIST test set, 10000 images of 28x28 pixels, read from
  the original IDX files by hand (a big-endian header, then raw bytes).
- ``load_tinyshakespeare``: about 1.1 million characters of Shakespeare, for
  character-level language models.

Each file is parsed once per process (``functools.lru_cache``); the public
functions hand out *copies* of the cached arrays, so a caller that scales or
shuffles its data in place cannot change what the next caller gets.
"""

from __future__ import annotations

import functools
import gzip
from pathlib import Path

import numpy as np

__all__ = [
    "DATA_DIR",
    "data_path",
    "load_digits",
    "load_mnist_test",
    "load_tinyshakespeare",
]

#: Folder holding the bundled data files.
DATA_DIR = Path(__file__).resolve().parent / "files"

# IDX magic numbers: 0x00000803 (unsigned byte, 3 dimensions) for images and
# 0x00000801 (unsigned byte, 1 dimension) for labels. See
# Y. LeCun et al., "THE MNIST DATABASE of handwritten digits", file formats section.
_IDX_IMAGES_MAGIC = 2051
_IDX_LABELS_MAGIC = 2049


def data_path(name: str) -> Path:
    """Return the path of the bundled data file ``name``.

    Raises:
        FileNotFoundError: if no such file ships with the package; the message
            lists the files that do.
    """
    path = DATA_DIR / name
    if not path.is_file():
        available = sorted(p.name for p in DATA_DIR.glob("*") if p.is_file())
        raise FileNotFoundError(
            f"minigrad data file {name!r} not found in {DATA_DIR}; "
            f"available: {', '.join(available)}"
        )
    return path


# --------------------------------------------------------------------------- digits


@functools.lru_cache(maxsize=None)
def _read_digits() -> tuple[np.ndarray, np.ndarray]:
    """Parse ``digits.csv.gz`` once: 1797 rows of 64 pixels (0..16) then the label."""
    path = data_path("digits.csv.gz")
    with gzip.open(path, "rt", encoding="ascii") as f:
        table = np.loadtxt(f, delimiter=",", dtype=np.int64)
    if table.ndim != 2 or table.shape[1] != 65:
        raise ValueError(
            f"{path.name}: expected rows of 65 integers (64 pixels and a label), "
            f"got an array of shape {table.shape}"
        )
    pixels = table[:, :64].astype(np.uint8)
    labels = table[:, 64].astype(np.int64)
    pixels.flags.writeable = False
    labels.flags.writeable = False
    return pixels, labels


def load_digits(normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The UCI optical handwritten digits (test part), as flat 8x8 images.

    Args:
        normalize: if True (the default) scale pixels from 0..16 to [0, 1].

    Returns:
        ``(X, y)`` where
        ``X`` has shape (1797, 64): float32 in [0, 1] when ``normalize``, else the
        raw uint8 pixel values 0..16; row ``i`` is image ``i`` read row by row
        (``X[i].reshape(8, 8)`` gives the picture);
        ``y`` has shape (1797,), int64 class labels 0..9.

    Both arrays are fresh copies: changing them does not affect later calls.
    """
    pixels, labels = _read_digits()
    if normalize:
        X = pixels.astype(np.float32) / np.float32(16.0)
    else:
        X = pixels.copy()
    return X, labels.copy()


# --------------------------------------------------------------------------- MNIST


def _read_idx(name: str, expected_magic: int, ndim: int) -> np.ndarray:
    """Read a gzipped IDX file of unsigned bytes with ``ndim`` dimensions.

    The header is big-endian: a 4-byte magic number, then one 4-byte size per
    dimension; the payload is ``prod(sizes)`` unsigned bytes in C order.

    Raises:
        ValueError: naming the file, when the magic number is not
            ``expected_magic`` or the payload length does not match the header.
    """
    path = data_path(name)
    with gzip.open(path, "rb") as f:
        raw = f.read()
    header_bytes = 4 * (1 + ndim)
    if len(raw) < header_bytes:
        raise ValueError(
            f"{path.name}: file is {len(raw)} bytes long, too short for an IDX "
            f"header of {header_bytes} bytes"
        )
    header = np.frombuffer(raw, dtype=">i4", count=1 + ndim)
    magic, sizes = int(header[0]), tuple(int(s) for s in header[1:])
    if magic != expected_magic:
        raise ValueError(
            f"{path.name}: bad IDX magic number {magic}, expected {expected_magic} "
            f"(unsigned bytes in {ndim} dimension{'s' if ndim > 1 else ''}); "
            "is this the right file, and is it gzipped IDX?"
        )
    payload = np.frombuffer(raw, dtype=np.uint8, offset=header_bytes)
    expected = int(np.prod(sizes))
    if payload.size != expected:
        raise ValueError(
            f"{path.name}: header announces shape {sizes} ({expected} bytes) "
            f"but the file holds {payload.size} bytes of data"
        )
    return payload.reshape(sizes)


@functools.lru_cache(maxsize=None)
def _read_mnist_test() -> tuple[np.ndarray, np.ndarray]:
    """Parse the two MNIST test-set IDX files once."""
    images = _read_idx("mnist-t10k-images-idx3-ubyte.gz", _IDX_IMAGES_MAGIC, ndim=3)
    labels = _read_idx("mnist-t10k-labels-idx1-ubyte.gz", _IDX_LABELS_MAGIC, ndim=1)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(
            f"MNIST test set: {images.shape[0]} images but {labels.shape[0]} labels"
        )
    images = images[:, None, :, :].copy()  # (N, 1, 28, 28): one channel, like PyTorch
    labels = labels.astype(np.int64)
    images.flags.writeable = False
    labels.flags.writeable = False
    return images, labels


def load_mnist_test(normalize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The MNIST test set (10000 handwritten digits), parsed from the IDX files.

    Args:
        normalize: if True (the default) scale pixels from 0..255 to [0, 1].

    Returns:
        ``(X, y)`` where
        ``X`` has shape (10000, 1, 28, 28) in (N, C, H, W) layout: float32 in
        [0, 1] when ``normalize``, else the raw uint8 pixel values 0..255;
        ``y`` has shape (10000,), int64 class labels 0..9.

    Both arrays are fresh copies: changing them does not affect later calls.

    Raises:
        ValueError: naming the file, if a file's IDX magic number is not 2051
            (images) or 2049 (labels), or its size disagrees with its header.
    """
    images, labels = _read_mnist_test()
    if normalize:
        X = images.astype(np.float32) / np.float32(255.0)
    else:
        X = images.copy()
    return X, labels.copy()


# --------------------------------------------------------------------------- text


@functools.lru_cache(maxsize=None)
def load_tinyshakespeare() -> str:
    """The tiny-Shakespeare corpus as one string.

    Returns:
        ``str`` of 1,115,394 characters drawn from 65 distinct characters
        (letters, punctuation, space and newline). Strings are immutable, so
        the cached value is returned directly.
    """
    with gzip.open(data_path("tinyshakespeare.txt.gz"), "rt", encoding="utf-8") as f:
        return f.read()
