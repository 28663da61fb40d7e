"""Checkpoints on disk without pickle: arrays in an ``.npz``, the rest as JSON inside it.

``minigrad.save(obj, path)`` writes a state -- a model's ``state_dict()``, an
optimizer's, a scheduler's, a ``GradientAccumulator``'s, or a dict holding
several of them -- and ``minigrad.load(path)`` reads it back (PyTorch's names;
``torch.save`` pickles, minigrad does not).

**The format.**  The file is a NumPy ``.npz`` (a zip archive, uncompressed):
every array is a member ``<name>.npy`` in NumPy's own ``.npy`` format, named
after where it sits in the state (``fc1.weight``, ``optimizer/state/0/exp_avg``),
and one more member, ``minigrad.json``, holds the structure: dicts, lists,
tuples, numbers, strings, booleans and None, with a reference
``{"__array__": name}`` where an array goes.  ``numpy.load(path)`` reads the
arrays of any minigrad checkpoint; a model's file is exactly what
``numpy.savez`` would write plus that JSON member.  Reading never unpickles:
arrays are read with ``allow_pickle=False``, and object arrays are refused
when saving.

**Crash safety.**  :func:`save` writes a temporary file in the same folder,
flushes it to disk (``fsync``) and renames it over the target
(``os.replace``, atomic on POSIX and Windows).  A save that is killed or
raises midway leaves the previous file at ``path`` intact (and no temporary
file behind when it raised).

**Damaged files.**  Every member of the archive carries a CRC-32 that is
checked as it is read, so a truncated or corrupted file raises one error,
:class:`CheckpointError`, naming the file, instead of whatever the zip, JSON
or ``.npy`` readers happened to hit first.

**Paths.**  As with ``numpy.savez``, a path without the ``.npz`` suffix gets
it: ``save(obj, "model")`` writes ``model.npz``, and ``load("model")`` reads
``model.npz`` (or a file named exactly ``model`` if there is no ``model.npz``).
"""
from __future__ import annotations

import hashlib
import json
import numbers
import os
import re
import secrets
import zipfile

import numpy as np

from . import backend
from .tensor import Tensor

__all__ = ["CheckpointError", "save", "load", "checkpoint_path"]

_META = "minigrad.json"
_FORMAT = "minigrad-checkpoint"
_VERSION = 3                 # 2 added "__lowp__"; 3 quantized weights (see _uses_quantized)
_READS = (1, 2, 3)           # files of versions 1 and 2 read as before
_MARKERS = ("__array__", "__scalar__", "__tuple__", "__dict__", "__lowp__")
_NAME_PART_MAX = 64          # characters of one key in a member name (zip allows 65,535 bytes)
_NAME_MAX = 200


class CheckpointError(ValueError):
    """A checkpoint file cannot be read: it is truncated, corrupted, or not a
    minigrad/NumPy ``.npz`` file.  ``path`` is the file's path."""

    def __init__(self, path, reason: str):
        self.path = os.fspath(path)
        super().__init__(f"{self.path}: cannot read this checkpoint, the file is truncated, "
                         f"corrupted or not an .npz file ({reason})")


def checkpoint_path(path) -> str:
    """``path`` with the ``.npz`` suffix added when it lacks it (NumPy's rule)."""
    path = os.fspath(path)
    if not isinstance(path, str):
        path = os.fsdecode(path)
    return path if path.endswith(".npz") else path + ".npz"


# ------------------------------------------------------------------------- save
def save(obj, path) -> str:
    """Write ``obj`` to the ``.npz`` file ``path``, atomically.

    Args:
        obj: a state: dicts (any keys of str, int, float, bool or None),
            lists, tuples, None, bool, int, float, str, NumPy/CuPy arrays,
            Tensors (saved as their arrays) and NumPy scalars, nested freely.
        path: the file to write; ``.npz`` is appended when missing.

    Returns:
        The path written (with its ``.npz``).

    Raises:
        TypeError: something in ``obj`` is none of the above (e.g. a function
            or an object array); nothing is written.
        OSError: the folder does not exist or is not writable; the previous
            file, if any, is untouched.
    """
    target = checkpoint_path(path)
    arrays: dict = {}
    root = _encode(obj, [], arrays)
    version = 3 if _uses_quantized(root) else 2 if _uses_lowp(root) else 1
    meta = {"format": _FORMAT, "version": version, "root": root}
    text = json.dumps(meta, allow_nan=True)
    folder = os.path.dirname(os.path.abspath(target))
    temporary = os.path.join(folder, f".{os.path.basename(target)}.{secrets.token_hex(6)}.tmp")
    # O_EXCL: a new file of our own; mode 0o666 less the umask, as open() would give
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                 0o666)
    try:
        with os.fdopen(fd, "wb") as file:
            with zipfile.ZipFile(file, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
                for name, array in arrays.items():
                    with archive.open(name + ".npy", "w", force_zip64=True) as member:
                        np.lib.format.write_array(member, array, allow_pickle=False)
                archive.writestr(_META, text)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        raise
    _fsync_folder(folder)
    return target


def _fsync_folder(folder) -> None:
    """Make the rename itself durable (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _lowp_name(dtype):
    """The name of an ``ml_dtypes`` dtype (bfloat16, float8_e4m3fn, ...), which
    NumPy's ``.npy`` format cannot describe; None for every other dtype."""
    if dtype.kind != "V" or type(dtype).__module__.split(".")[0] != "ml_dtypes":
        return None
    return dtype.name


def _uses_lowp(node) -> bool:
    if isinstance(node, dict):
        return "__lowp__" in node or any(_uses_lowp(v) for v in node.values())
    if isinstance(node, list):
        return any(_uses_lowp(v) for v in node)
    return False


#: The state keys of a quantized weight's scales (minigrad.nn.quantized): a file
#: holding them is version 3, so that a minigrad that cannot dequantize them (it
#: reads versions 1 and 2) refuses the file instead of loading codes as numbers.
_QUANTIZED_KEYS = ("weight_absmax",)


def _uses_quantized(node) -> bool:
    if isinstance(node, dict):
        return any(isinstance(k, str) and k.rsplit(".", 1)[-1] in _QUANTIZED_KEYS
                   for k in node) or any(_uses_quantized(v) for v in node.values())
    if isinstance(node, list):
        return any(_uses_quantized(v) for v in node)
    return False


def _lowp_dtype(name, target):
    try:
        import ml_dtypes
    except ImportError:
        raise CheckpointError(target, f"it holds a {name} array, which needs the ml_dtypes "
                              "package: pip install 'minigrad[lowp]'") from None
    dtype = getattr(ml_dtypes, str(name), None)
    if dtype is None:
        raise CheckpointError(target, f"unknown low-precision dtype {name!r}")
    return np.dtype(dtype)


def _where(path) -> str:
    return "the top level" if not path else "/".join(str(p) for p in path)


def _array_name(path, arrays) -> str:
    """A member name from the array's place in the state: the keys joined by
    "/", each reduced to letters, digits, "_", "." and "-" (zip cuts names at
    a NUL, and a name should be safe to extract); "~2", "~3"... when taken.
    A long key is cut to 64 characters and a long name to 200, with a hash of
    the whole name appended (the name only labels the member: the JSON says
    where it belongs)."""
    parts = [re.sub(r"[^\w.\-]", "_", str(p)) for p in path]
    parts = ["_" if p in ("", ".", "..") else p for p in parts]
    name = "/".join(p[:_NAME_PART_MAX] for p in parts) or "array"
    if len(name) > _NAME_MAX or any(len(p) > _NAME_PART_MAX for p in parts):
        digest = hashlib.sha256("/".join(parts).encode("utf-8", "surrogatepass")).hexdigest()
        name = f"{name[:_NAME_MAX]}~{digest[:12]}"
    candidate, n = name, 1
    while candidate in arrays:
        n += 1
        candidate = f"{name}~{n}"
    return candidate


def _encode(value, path, arrays):
    """The JSON form of ``value``; its arrays go into ``arrays`` (name -> array)."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, Tensor):
        value = value.data
    if isinstance(value, np.generic):         # before float: numpy.float64 is a float
        if value.dtype.kind in "OV":
            raise TypeError(f"save: cannot store a {value.dtype} scalar at {_where(path)}")
        name = _array_name(path, arrays)
        arrays[name] = np.asarray(value)
        return {"__scalar__": name}
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if backend.is_array(value):
        array = backend.asnumpy(value)
        lowp = _lowp_name(array.dtype)
        if lowp is not None:              # bfloat16 & co.: their bits, as unsigned ints
            name = _array_name(path, arrays)
            arrays[name] = array.view(f"u{array.dtype.itemsize}")
            return {"__lowp__": [name, lowp]}
        if array.dtype.hasobject or array.dtype.kind == "V":
            raise TypeError(f"save: the array at {_where(path)} has dtype {array.dtype}; "
                            "only arrays of numbers, booleans or strings can be saved "
                            "(no pickle)")
        name = _array_name(path, arrays)
        arrays[name] = array
        return {"__array__": name}
    if isinstance(value, tuple):
        return {"__tuple__": [_encode(v, path + [i], arrays) for i, v in enumerate(value)]}
    if isinstance(value, list):
        return [_encode(v, path + [i], arrays) for i, v in enumerate(value)]
    if isinstance(value, dict):
        for key in value:
            if not (key is None or isinstance(key, (bool, str, numbers.Integral, float))):
                raise TypeError(f"save: dict key {key!r} at {_where(path)} is a "
                                f"{type(key).__name__}; keys must be str, int, float, bool "
                                "or None")
        plain = all(isinstance(k, str) for k in value) and not (
            len(value) == 1 and next(iter(value)) in _MARKERS)
        if plain:
            return {k: _encode(v, path + [k], arrays) for k, v in value.items()}
        # A NumPy scalar key (np.int64(3)) is stored as an array like any
        # scalar, so its member must go into ``arrays`` too.
        return {"__dict__": [[_encode(k, path + [f"key {k}"], arrays),
                              _encode(v, path + [k], arrays)] for k, v in value.items()]}
    raise TypeError(f"save: cannot store a {type(value).__name__} at {_where(path)}; a "
                    "checkpoint holds dicts, lists, tuples, numbers, strings, None and "
                    "arrays (no pickle)")


# ------------------------------------------------------------------------- load
def _existing_path(path) -> str:
    raw = os.fspath(path)
    raw = raw if isinstance(raw, str) else os.fsdecode(raw)
    target = checkpoint_path(raw)
    if os.path.isdir(target) or (target == raw and os.path.isdir(raw)):
        raise IsADirectoryError(f"{target!r} is a folder; load() reads a checkpoint file "
                                "written by minigrad.save (a .npz)")
    if os.path.exists(target):
        return target
    if target != raw and os.path.isfile(raw):
        return raw
    if target != raw and os.path.isdir(raw):
        raise IsADirectoryError(f"{raw!r} is a folder (and there is no {target!r}); load() "
                                "reads a checkpoint file written by minigrad.save (a .npz)")
    if target == raw:
        raise FileNotFoundError(f"no checkpoint file {raw!r}")
    raise FileNotFoundError(f"no checkpoint file {target!r} (nor {raw!r})")


def load(path):
    """Read a file written by :func:`save` (or by ``numpy.savez``).

    Args:
        path: the file; ``.npz`` is appended when missing (and ``path`` itself
            is tried when that file does not exist).

    Returns:
        The saved state with NumPy arrays in place of arrays and Tensors (a
        plain ``.npz`` without minigrad's JSON member gives a dict from names
        to arrays, in the file's order).

    Raises:
        FileNotFoundError: no such file.
        CheckpointError: the file is truncated, corrupted, holds pickled
            objects, or is not an ``.npz`` (a ValueError naming the file).
    """
    target = _existing_path(path)
    try:
        with zipfile.ZipFile(target) as archive:
            names = archive.namelist()
            strange = [n for n in names if n != _META and not n.endswith(".npy")]
            if strange or len(set(names)) != len(names):
                raise CheckpointError(target, f"unexpected members {strange or names}")
            _check_directory(archive, target)
            if _META not in names:
                return {name[:-4]: _read_array(archive, name) for name in names}
            meta = json.loads(archive.read(_META).decode("utf-8"))
            if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
                raise CheckpointError(target, f"{_META} is not minigrad's")
            if meta.get("version") not in _READS:
                raise CheckpointError(target, f"format version {meta.get('version')!r}, "
                                      "written by a newer minigrad; this one reads versions "
                                      f"{_READS}: upgrade minigrad to read it")
            unread = {n for n in names if n != _META}
            state = _decode(meta["root"], archive, unread, target)
            if unread:
                raise CheckpointError(target, f"members {sorted(unread)} belong to nothing")
            return state
    except (CheckpointError, FileNotFoundError, IsADirectoryError, PermissionError):
        raise
    except Exception as error:      # BadZipFile, EOFError, zlib.error, ValueError, ...
        raise CheckpointError(target, f"{type(error).__name__}: {error}") from error


def _check_directory(archive, target) -> None:
    """Catch a damaged zip directory that zipfile itself accepts: minigrad and
    NumPy write no comments, and the end record counts the members."""
    if archive.comment or any(info.comment for info in archive.infolist()):
        raise CheckpointError(target, "the zip directory holds comments minigrad never "
                              "writes (a damaged length field?)")
    archive.fp.seek(0, os.SEEK_END)
    size = archive.fp.tell()
    archive.fp.seek(max(size - 22, 0))
    end = archive.fp.read(22)
    if len(end) == 22 and end[:4] == b"PK\x05\x06":
        count = int.from_bytes(end[10:12], "little")
        if count != 0xFFFF and count != len(archive.infolist()):
            raise CheckpointError(target, f"the zip directory lists "
                                  f"{len(archive.infolist())} members, its end record {count}")


def _read_array(archive, member):
    with archive.open(member) as file:
        array = np.lib.format.read_array(file, allow_pickle=False)
        if file.read(1):                        # reading to the end checks the CRC
            raise ValueError(f"member {member} has bytes after its array")
    return array


def _decode(value, archive, names, target):
    if isinstance(value, list):
        return [_decode(v, archive, names, target) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        (key, inner), = value.items()
        if key in ("__array__", "__scalar__"):
            member = f"{inner}.npy"
            if member not in names:
                raise CheckpointError(target, f"the array {inner!r} is missing")
            names.discard(member)
            array = _read_array(archive, member)
            return array[()] if key == "__scalar__" else array
        if key == "__lowp__" and isinstance(inner, list) and len(inner) == 2:
            name, dtype = inner
            array = _decode({"__array__": name}, archive, names, target)
            return array.view(_lowp_dtype(dtype, target))
        if key == "__tuple__":
            return tuple(_decode(v, archive, names, target) for v in inner)
        if key == "__dict__":
            return {_decode(k, archive, names, target): _decode(v, archive, names, target)
                    for k, v in inner}
    return {k: _decode(v, archive, names, target) for k, v in value.items()}
