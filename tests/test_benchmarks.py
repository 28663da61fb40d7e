"""The benchmark runner's bookkeeping: floors found, missed floors reported.

The benchmarks themselves take minutes (``make bench``); these tests check only
the parts that decide what is reported, and that a GPU benchmark without a GPU
skips cleanly."""
from __future__ import annotations

import pytest

import minigrad
from benchmarks import bench_gpu, run_all


def test_find_floors_returns_every_dict_with_an_ok_flag():
    result = {"small": {"ratio": 1.7, "floor": 2.0, "ok": True},
              "segments": {"6": {"time_vs_plain": 1.1}},
              "floor_vs_torch": {"ratio": 2.0, "floor": 1.5, "ok": False}}
    floors = dict(run_all.find_floors(result))
    assert set(floors) == {"small", "floor_vs_torch"}
    assert floors["floor_vs_torch"]["ok"] is False


def test_summary_reports_a_missed_floor(capsys):
    report = {"results": {
        "bench_a": {"status": "ok", "seconds": 1.0,
                    "result": {"floor_x": {"ratio": 0.3, "floor": 0.35, "ok": True}}},
        "bench_b": {"status": "ok", "seconds": 1.0,
                    "result": {"floor_y": {"ratio": 2.0, "floor": 1.5, "ok": False}}},
    }}
    assert run_all.print_summary(report) is False
    out = capsys.readouterr().out
    assert "floor floor_x: 0.300 (limit 0.35) met" in out
    assert "floor floor_y: 2.000 (limit 1.5) MISSED" in out


@pytest.mark.skipif(minigrad.cuda.is_available(), reason="checks the no-GPU path")
def test_gpu_benchmark_skips_without_a_gpu(capsys):
    assert bench_gpu.run(quick=True) == {"skipped": "no usable GPU"}
    assert "skipped" in capsys.readouterr().out
