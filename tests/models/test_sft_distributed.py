"""The fine-tuning window of 16 pairs split over 2 MPI ranks (k = 8 each)
equals one padded batch of 16: 20 AdamW updates in float64."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from minigrad import distributed as dist

MPIEXEC = dist.find_mpiexec()


@pytest.mark.mpi
@pytest.mark.skipif(MPIEXEC is None, reason="mpiexec not found next to the Python "
                    "interpreter or on PATH (pip install 'minigrad[distributed]')")
def test_two_ranks_of_eight_micro_batches_equal_one_batch_of_16(tmp_path):
    path = tmp_path / "sft.json"
    out = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-m", "mpi4py", "-m",
                          "minigrad.experiments.sft_data_parallel", "--json", str(path)],
                         env=dist.launcher_env(), capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    (row,) = json.loads(path.read_text())["rows"]
    assert row["W"] == 2 and row["k"] == 8 and row["updates"] == 20
    assert row["value"] <= 1e-10, row
    assert out.stdout.count("PASSED") == 1             # rank 0 alone prints
