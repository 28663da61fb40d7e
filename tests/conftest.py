"""Shared fixtures: devices, dtypes, and the optional reference framework.

Tests that take the ``device`` fixture run once per device.  The ``cuda`` case
skips, with its reason, when no GPU is usable.  ``MINIGRAD_TEST_DEVICE=cuda``
(set by ``make test-gpu``) runs only the GPU case and fails, rather than skips,
when the GPU is missing.
"""
from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import settings

import minigrad

# Property tests draw new examples on every run; in CI (CI set) they draw the
# same ones every time, so that a run is red only for a change, never for the
# luck of the draw.  Run `make test` locally to keep exploring.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

_ONLY = os.environ.get("MINIGRAD_TEST_DEVICE")
DEVICES = [_ONLY] if _ONLY else ["cpu", "cuda"]


@pytest.fixture(params=DEVICES)
def device(request):
    """A device name; the cuda case skips without a usable GPU."""
    name = request.param
    if name == "cuda" and not minigrad.cuda.is_available():
        if _ONLY == "cuda":
            pytest.fail("MINIGRAD_TEST_DEVICE=cuda but no usable GPU was found")
        pytest.skip("no usable GPU: CuPy is not installed or no GPU/driver is present")
    return name


@pytest.fixture
def float64():
    """Run the test with float64 as the default dtype, restoring it afterwards."""
    previous = minigrad.get_default_dtype()
    minigrad.set_default_dtype(np.float64)
    yield np.float64
    minigrad.set_default_dtype(previous)


@pytest.fixture(autouse=True)
def _seed_and_dtype():
    """Every test starts from seed 0 and restores the default dtype it found."""
    previous = minigrad.get_default_dtype()
    minigrad.manual_seed(0)
    yield
    minigrad.set_default_dtype(previous)


@pytest.fixture
def torch():
    """The PyTorch module, or skip when it is not installed (parity tests)."""
    return pytest.importorskip("torch", reason="PyTorch is not installed; parity tests skip")


def pytest_terminal_summary(terminalreporter):
    """One line per skip reason with its count (instead of one line per test)."""
    reasons = {}
    for report in terminalreporter.stats.get("skipped", []):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        terminalreporter.section("skipped tests, by reason")
        for reason, count in sorted(reasons.items(), key=lambda item: -item[1]):
            terminalreporter.write_line(f"{count:5d}  {reason}")


def pytest_collection_modifyitems(config, items):
    """Mark what a test needs, so ``-m`` can select it: ``torch`` for the
    parity tests (they take the ``torch`` fixture or have "parity" in their
    name), ``gpu`` for the cuda case of device-parametrized tests, and
    ``notebook`` for the notebooks' cells."""
    for item in items:
        if "torch" in getattr(item, "fixturenames", ()) or "parity" in item.name:
            item.add_marker(pytest.mark.torch)
        callspec = getattr(item, "callspec", None)
        if callspec is not None and callspec.params.get("device") == "cuda":
            item.add_marker(pytest.mark.gpu)
        if str(getattr(item, "path", "")).endswith(".ipynb"):
            item.add_marker(pytest.mark.notebook)
