"""minigrad.experiments.results: what the notebooks record for the chapters."""
from __future__ import annotations

import json

import pytest

from minigrad.experiments import results


@pytest.fixture
def folder(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIGRAD_RESULTS_DIR", str(tmp_path))
    monkeypatch.setattr(results, "_WRITTEN", set())
    return tmp_path


def test_write_mode_stores_the_value_and_its_tolerance(folder, monkeypatch, capsys):
    monkeypatch.setenv("MINIGRAD_RESULTS", "write")
    results.record("7", "peak_mib", 11.51452)
    results.record("07", "seconds", 0.25, rtol=None)
    stored = json.loads((folder / "07.json").read_text())
    assert stored == {"peak_mib": {"value": 11.5145, "rtol": 1e-3, "atol": 0.0},
                      "seconds": {"value": 0.25, "rtol": None, "atol": 0.0}}
    assert "recorded 07/peak_mib = 11.5145" in capsys.readouterr().out
    assert results.load("07")["seconds"]["value"] == 0.25


def test_check_mode_compares_with_the_committed_value(folder, monkeypatch):
    monkeypatch.setenv("MINIGRAD_RESULTS", "write")
    results.record("07", "peak_mib", 11.5)
    results.record("07", "seconds", 0.25, rtol=None)
    monkeypatch.delenv("MINIGRAD_RESULTS")
    results.record("07", "peak_mib", 11.505)           # within rtol 1e-3
    results.record("07", "seconds", 9.0, rtol=None)     # a timing: never compared
    results.record("07", "new_key", 1.0)                # not recorded yet: only reported
    with pytest.raises(AssertionError, match="07/peak_mib is now 12"):
        results.record("07", "peak_mib", 12.0)
    assert json.loads((folder / "07.json").read_text())["peak_mib"]["value"] == 11.5


def test_bad_keys_and_values_are_refused(folder):
    with pytest.raises(ValueError, match="letters, digits"):
        results.record("07", "peak-mib", 1.0)
    with pytest.raises(ValueError, match="finite"):
        results.record("07", "peak", float("nan"))


def test_a_new_execution_starts_the_file_afresh(folder, monkeypatch):
    monkeypatch.setenv("MINIGRAD_RESULTS", "write")
    results.record("07", "old_key", 1.0)
    results.record("07", "kept", 2.0)
    monkeypatch.setattr(results, "_WRITTEN", set())      # the next kernel process
    results.record("07", "kept", 2.0)
    assert set(results.load("07")) == {"kept"}
