"""The numbers the chapters state, recorded where the notebooks compute them.

A notebook calls ``record("07", "b_over_a", slope / intercept, rtol=None)`` on a
number its chapter quotes.  The value goes to ``notebooks/results/07.json``,
which is committed, and ``tests/docs/test_prose_numbers.py`` checks every
number the chapter's prose states against that file, with a stated tolerance.
So a number in the text cannot drift from what the code computes: change the
code and the notebook's recorded value changes; change the text and it must
still agree.

Two modes, chosen by the environment variable ``MINIGRAD_RESULTS``:

* ``write`` (``make notebooks`` sets it: tools/execute_notebooks.py): the value
  is stored in the results file; the first value a process records for a
  chapter starts the file afresh, so the file holds exactly what the last
  execution of the notebook recorded;
* anything else (``make test`` running the notebooks under nbval, Jupyter): the
  value is compared with the committed one and an ``AssertionError`` names the
  key when it moved by more than ``rtol`` (relative) or ``atol``; a value
  recorded with ``rtol=None`` (a timing, which depends on the machine) is not
  compared, and a key the file does not have yet is only reported.

Each call prints one line ``recorded NN/key = value``: the notebook's saved
output then shows what was recorded, and a test checks that the results file
and the saved outputs agree (they come from the same execution).
"""
from __future__ import annotations

import json
import math
import os
from pathlib import Path

__all__ = ["record", "load", "results_dir", "format_value"]

#: Where the results files live in the repository (``notebooks/results/NN.json``).
RESULTS_FOLDER = ("notebooks", "results")
#: The chapters this process has written (write mode starts each file afresh).
_WRITTEN: set = set()


def results_dir() -> Path:
    """``notebooks/results`` of the checkout: ``$MINIGRAD_RESULTS_DIR`` when set,
    else the folder next to a notebook running in ``notebooks/``, else the one
    of the repository this package lies in."""
    if os.environ.get("MINIGRAD_RESULTS_DIR"):
        return Path(os.environ["MINIGRAD_RESULTS_DIR"])
    here = Path.cwd()
    if here.name == RESULTS_FOLDER[0]:
        return here / RESULTS_FOLDER[1]
    return Path(__file__).resolve().parents[2].joinpath(*RESULTS_FOLDER)


def _path(chapter: str) -> Path:
    chapter = f"{int(chapter):02d}"
    return results_dir() / f"{chapter}.json"


def load(chapter: str) -> dict:
    """``{key: {"value": float, "rtol": float | None, "atol": float}}`` of a
    chapter (empty when the file does not exist)."""
    path = _path(chapter)
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def format_value(value: float) -> str:
    """The printed form of a recorded value: 6 significant digits."""
    return f"{value:.6g}"


def record(chapter: str, key: str, value, *, rtol: float | None = 1e-3,
           atol: float = 0.0) -> None:
    """Record ``value`` (a number) as result ``key`` of chapter ``chapter``.

    Args:
        chapter: the chapter number, ``"07"`` or ``7``.
        key: a name, letters, digits and underscores (``update_peak_k1_mib``).
        value: the number (a Python or NumPy scalar).
        rtol, atol: how far a later run may move it before it counts as a
            change (``rtol=None``: a machine-dependent number, never compared
            at run time; the chapter's prose is still checked against the
            committed value).

    Raises:
        AssertionError: (check mode) a compared value moved by more than its
            tolerance since the results file was written.
    """
    if not key.replace("_", "").isalnum():
        raise ValueError(f"record: key {key!r} must be letters, digits and underscores")
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(f"record: {chapter}/{key} is {value}, not a finite number")
    chapter = f"{int(chapter):02d}"
    print(f"recorded {chapter}/{key} = {format_value(value)}")
    path = _path(chapter)
    stored = load(chapter)
    if os.environ.get("MINIGRAD_RESULTS") == "write":
        if chapter not in _WRITTEN:       # a fresh run: keys it no longer records go away
            stored = {}
            _WRITTEN.add(chapter)
        stored[key] = {"value": float(format_value(value)), "rtol": rtol, "atol": atol}
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(dict(sorted(stored.items())), indent=1) + "\n",
                        encoding="utf-8")
        return
    if key not in stored:
        print(f"  (not in {path.name} yet: `make notebooks` writes it)")
        return
    entry = stored[key]
    if entry.get("rtol") is not None:
        want = entry["value"]
        allowed = entry["rtol"] * abs(want) + entry.get("atol", 0.0)
        # the file holds 6 significant digits: half a unit of the 6th is always allowed
        allowed = max(allowed, 5e-6 * abs(want))
        assert abs(value - want) <= allowed, (
            f"{chapter}/{key} is now {format_value(value)}, the results file "
            f"{path.name} holds {format_value(want)} (tolerance {allowed:.3g}): the "
            f"computation changed; run `make notebooks` to record the new value, then "
            f"check the numbers chapter {chapter} states (tests/docs/test_prose_numbers.py)")
