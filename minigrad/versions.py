"""The in-place version counter: PyTorch's "modified by an inplace operation" check.

One global count advances with every in-place write (:mod:`minigrad.inplace`,
an optimizer's step).  Overwriting an array stamps its memory (the array that
owns it, so views count as the same memory) with the count; every recorded
Function remembers the count when it was recorded (``Function._recorded_at``).
When backward reaches a Function recorded before the latest write, it calls
:func:`check_saved_arrays`, which raises if an array the Function saved for
its backward was stamped after that.  So the hot path costs one integer
comparison per Function, and nothing when no in-place write happened.
"""
from __future__ import annotations

import weakref


counter = 0                 # advances with every in-place write
_array_stamps = {}          # id(root array) -> (weak reference to it, count)
_MAX_STAMPS = 100_000       # the table keeps at most this many stamps
_prune_at = 1024            # table size at which dead entries are next dropped


def bump_version() -> int:
    """Advance the in-place counter and return its new value."""
    global counter
    counter += 1
    return counter


def _root(array):
    """The array that owns the memory ``array`` views (``array`` itself if none)."""
    while getattr(array, "base", None) is not None and hasattr(array.base, "dtype"):
        array = array.base
    return array


def mark_modified(array) -> int:
    """Stamp the memory of ``array`` as overwritten in place now; returns the count.

    Entries are keyed by ``id`` of the memory's owner.  An id reused by a
    later array cannot raise a false error: that array was made after the
    stamp, so every Function that saved it was recorded after the stamp too.
    Entries of arrays that no longer exist are dropped now and then, and the
    table keeps at most the newest ``_MAX_STAMPS`` stamps.
    """
    global _prune_at
    count = bump_version()
    root = _root(array)
    try:
        ref = weakref.ref(root)
    except TypeError:                   # an array type without weak references
        ref = None
    _array_stamps[id(root)] = (ref, count)
    if len(_array_stamps) > _prune_at:
        for key in [k for k, (r, _) in _array_stamps.items() if r is not None and r() is None]:
            del _array_stamps[key]
        if len(_array_stamps) > _MAX_STAMPS:
            newest = sorted(_array_stamps.items(), key=lambda kv: kv[1][1])[-_MAX_STAMPS // 2:]
            _array_stamps.clear()
            _array_stamps.update(newest)
        _prune_at = max(1024, 2 * len(_array_stamps))
    return count


def _stamp(array) -> int:
    entry = _array_stamps.get(id(_root(array)))
    return 0 if entry is None else entry[1]


def _saved_arrays(fn):
    """The arrays ``fn`` keeps for backward (attributes, and inside tuples/lists);
    a Function that keeps more than one backward reads names them in
    ``arrays_read()`` (``Mul``: w * x with x constant never reads w)."""
    if hasattr(fn, "arrays_read"):
        yield from fn.arrays_read()
        return
    for value in list(fn.__dict__.values()):
        for v in (value if isinstance(value, (tuple, list)) else (value,)):
            if hasattr(v, "dtype") and hasattr(v, "shape") and hasattr(v, "base"):
                yield v


def check_saved_arrays(fn) -> None:
    """Raise when an array ``fn`` reads in backward was overwritten in place
    after ``fn`` was recorded.  (An input re-recorded in the graph since is
    no problem: ``fn`` keeps an :class:`~minigrad.autograd.Edge` to the Function that made the
    value it used, not the tensor.)"""
    recorded = fn._recorded_at
    for a in _saved_arrays(fn):
        if _stamp(a) > recorded:
            raise RuntimeError(f"backward: one of the variables needed for gradient "
                               f"computation has been modified by an inplace operation: "
                               f"an array of shape {list(a.shape)} and dtype {a.dtype} it "
                               f"saved for {type(fn).__name__}; compute with a copy, or "
                               "change the tensor in place only after backward")


# ------------------------------------------------------------------ aliases
# Tensors whose array shares another array's memory: views made by indexing,
# reshape, transpose... (their array has a ``base``) and ``detach()``.  A
# recorded in-place write gives its target a new array; an alias would keep
# the old values, so :func:`minigrad.inplace.apply` refuses the write while
# one is alive.
_aliases = {}               # id(root array) -> [weak references to Tensors]
_alias_prune_at = 1024


def register_alias(tensor) -> None:
    """Note that ``tensor``'s array shares the memory of the array it views."""
    global _alias_prune_at
    _aliases.setdefault(id(_root(tensor._data)), []).append(weakref.ref(tensor))
    if len(_aliases) > _alias_prune_at:
        for key in [k for k, refs in _aliases.items() if all(r() is None for r in refs)]:
            del _aliases[key]
        _alias_prune_at = max(1024, 2 * len(_aliases))


def live_aliases(tensor) -> list:
    """The other live Tensors whose arrays share ``tensor``'s memory."""
    root = _root(tensor._data)
    refs = _aliases.get(id(root), ())
    found = [r() for r in refs]
    return [t for t in found if t is not None and t is not tensor and _root(t._data) is root]
