"""Run tinygrad's operator suite (``test/backend/test_ops.py`` from the public
tinygrad repository, MIT license; not copied here) against minigrad through
the stand-in ``tinygrad`` package next to this file.

    PYTHONPATH=. python -m tools.tinygrad_suite.run PATH/TO/test_ops.py [-v] [-k NAME]

Every call of the suite's ``helper_test_op`` (which compares with PyTorch,
so torch is needed) is one case:

``pass``         values, shapes, dtypes and gradients agree with PyTorch;
``wrong``        the comparison failed (the suite's own "forward pass failed"
                 / "backward pass ... failed" message);
``unsupported``  the stand-in or minigrad raised (a name or option minigrad
                 does not offer).

A test method that fails before any ``helper_test_op`` call counts once as
``unsupported``; one with no helper call that passes counts once as ``pass``.
"""
from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import sys
import unittest
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))


def load(path):
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    spec = importlib.util.spec_from_file_location("tinygrad_test_ops", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def run(path, pattern=None, verbose=False):
    mod = load(path)
    original = mod.helper_test_op
    records = []
    current = {"test": None, "calls": 0}

    def recording(*args, **kwargs):
        current["calls"] += 1
        case = f"{current['test']}#{current['calls']}"
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                original(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001
            msg = str(exc)
            kind = "wrong" if (" pass" in msg and "failed" in msg) else "unsupported"
            records.append((case, kind, f"{type(exc).__name__}: {msg[:300]}"))
            return
        records.append((case, "pass", ""))

    mod.helper_test_op = recording
    loader = unittest.TestLoader()
    for cls_name in ("TestOps", "TestOpsUint8"):
        cls = getattr(mod, cls_name, None)
        if cls is None:
            continue
        for name in loader.getTestCaseNames(cls):
            if pattern and pattern not in name:
                continue
            current.update(test=f"{cls_name}.{name}", calls=0)
            before = len(records)
            result = unittest.TestResult()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cls(name).run(result)
            problems = result.errors + result.failures
            if len(records) == before:
                if result.skipped:
                    records.append((current["test"], "skipped", result.skipped[0][1][:200]))
                elif problems:
                    records.append((current["test"], "unsupported",
                                    problems[0][1].strip().splitlines()[-1][:300]))
                else:
                    records.append((current["test"], "pass", ""))
    counts = collections.Counter(kind for _, kind, _ in records)
    if verbose:
        for case, kind, detail in records:
            if kind != "pass":
                print(f"{kind:11} {case}: {detail}")
    return counts, records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="tinygrad's test/backend/test_ops.py")
    parser.add_argument("-k", dest="pattern", help="only test methods whose name contains this")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    counts, records = run(args.path, args.pattern, args.verbose)
    print(f"cases: {len(records)}; " + ", ".join(
        f"{k} {counts[k]}" for k in ("pass", "wrong", "unsupported", "skipped")))
    return 1 if counts["wrong"] else 0


if __name__ == "__main__":
    sys.exit(main())
