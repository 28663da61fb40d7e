"""The bundled data sets: shapes, dtypes, ranges, known counts, and cache safety."""

import gzip

import numpy as np
import pytest

from minigrad.data import datasets
from minigrad.data import load_digits, load_mnist_test, load_tinyshakespeare

MNIST_CLASS_COUNTS = [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def test_bundled_files_ship_with_the_package():
    names = {p.name for p in datasets.DATA_DIR.iterdir()}
    assert {
        "digits.csv.gz",
        "mnist-t10k-images-idx3-ubyte.gz",
        "mnist-t10k-labels-idx1-ubyte.gz",
        "tinyshakespeare.txt.gz",
        "README.md",
    } <= names


def test_data_path_names_missing_file():
    with pytest.raises(FileNotFoundError, match="no-such-file.gz"):
        datasets.data_path("no-such-file.gz")


# ------------------------------------------------------------------ digits


def test_digits_normalized():
    X, y = load_digits()
    assert X.shape == (1797, 64) and X.dtype == np.float32
    assert y.shape == (1797,) and y.dtype == np.int64
    assert X.min() == 0.0 and X.max() == 1.0
    assert set(np.unique(y).tolist()) == set(range(10))
    # every class is represented roughly equally (174..183 each)
    counts = np.bincount(y, minlength=10)
    assert counts.sum() == 1797 and counts.min() >= 170


def test_digits_raw_values_are_0_to_16():
    X, y = load_digits(normalize=False)
    assert X.dtype == np.uint8 and X.shape == (1797, 64)
    assert X.min() == 0 and X.max() == 16
    Xn, _ = load_digits()
    np.testing.assert_array_equal(Xn * 16, X.astype(np.float32))


def test_digits_first_row_matches_csv():
    with gzip.open(datasets.data_path("digits.csv.gz"), "rt") as f:
        first = [int(v) for v in f.readline().split(",")]
    X, y = load_digits(normalize=False)
    assert X[0].tolist() == first[:64]
    assert y[0] == first[64]


# ------------------------------------------------------------------ MNIST


def test_mnist_test_set_shapes_and_counts():
    X, y = load_mnist_test()
    assert X.shape == (10000, 1, 28, 28) and X.dtype == np.float32
    assert y.shape == (10000,) and y.dtype == np.int64
    assert X.min() == 0.0 and X.max() == 1.0
    assert np.bincount(y, minlength=10).tolist() == MNIST_CLASS_COUNTS


def test_mnist_raw_is_uint8():
    X, y = load_mnist_test(normalize=False)
    assert X.dtype == np.uint8 and X.shape == (10000, 1, 28, 28)
    assert X.max() == 255
    Xn, _ = load_mnist_test()
    np.testing.assert_allclose(Xn[:5], X[:5].astype(np.float32) / 255)


def _write_idx_gz(path, magic, sizes, payload):
    header = np.array([magic, *sizes], dtype=">i4").tobytes()
    with gzip.open(path, "wb") as f:
        f.write(header + bytes(payload))


def test_idx_bad_magic_names_file(tmp_path, monkeypatch):
    _write_idx_gz(tmp_path / "bad.gz", 1234, [2, 2, 2], range(8))
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"bad\.gz.*magic number 1234.*expected 2051"):
        datasets._read_idx("bad.gz", 2051, ndim=3)


def test_idx_truncated_payload_is_an_error(tmp_path, monkeypatch):
    _write_idx_gz(tmp_path / "short.gz", 2049, [10], range(7))
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"short\.gz.*\(10,\).*7 bytes"):
        datasets._read_idx("short.gz", 2049, ndim=1)


def test_idx_roundtrip(tmp_path, monkeypatch):
    _write_idx_gz(tmp_path / "ok.gz", 2051, [2, 3, 4], range(24))
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    arr = datasets._read_idx("ok.gz", 2051, ndim=3)
    assert arr.dtype == np.uint8
    np.testing.assert_array_equal(arr, np.arange(24).reshape(2, 3, 4))


# ------------------------------------------------------------------ text


def test_tinyshakespeare_length_and_alphabet():
    text = load_tinyshakespeare()
    assert isinstance(text, str)
    assert len(text) == 1_115_394
    assert len(set(text)) == 65
    assert text.startswith("First Citizen:")


# ------------------------------------------------------------------ caching


@pytest.mark.parametrize("loader", [load_digits, load_mnist_test])
@pytest.mark.parametrize("normalize", [True, False])
def test_callers_cannot_corrupt_the_cache(loader, normalize):
    X1, y1 = loader(normalize=normalize)
    X1[...] = 7
    y1[...] = -1
    X2, y2 = loader(normalize=normalize)
    assert not np.shares_memory(X1, X2) and not np.shares_memory(y1, y2)
    assert X2.max() != 7 or X2.min() != 7
    assert y2.min() == 0


def test_returned_arrays_are_writeable():
    X, y = load_mnist_test(normalize=False)
    assert X.flags.writeable and y.flags.writeable
