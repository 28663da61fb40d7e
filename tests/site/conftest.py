"""The course site, built once per test session (strict mode, like `make site`).

Every test here needs the ``site`` extra (Sphinx, MyST-NB, Furo, MathJax); they
skip, with that reason, where it is not installed.
"""
from __future__ import annotations

import hashlib
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# The student copy (tools/make_student.py) leaves the answer keys out and clears
# the outputs of every notebook with an exercise.
STUDENT_COPY = (ROOT / "student.json").is_file()
SITE_PACKAGES = ("sphinx", "myst_nb", "furo", "mathjax")


def missing_site_packages() -> list[str]:
    return [name for name in SITE_PACKAGES if importlib.util.find_spec(name) is None]


def course_files() -> list[Path]:
    """The files the site is built from (they must come out of the build unchanged)."""
    return sorted(p for p in [*(ROOT / "chapters").rglob("*"), *(ROOT / "notebooks").glob("*")]
                  if p.is_file() and ".ipynb_checkpoints" not in p.parts)


def _digests() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in course_files()}


@pytest.fixture(scope="session")
def site(tmp_path_factory):
    """The folder of the built site (``index.html`` at its top)."""
    missing = missing_site_packages()
    if missing:
        pytest.skip(f"the site extra is not installed (missing {', '.join(missing)}): "
                    "pip install -e '.[site]'")
    work = tmp_path_factory.mktemp("site")
    out = work / "site"
    before = _digests()
    # the command of `make site`: -W --keep-going, every warning fails the build
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-E", "-q", "-b", "html",
         "-c", "docs", "-d", str(work / "doctrees"), ".", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert result.returncode == 0, \
        f"the strict site build failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    assert _digests() == before, "the site build changed a chapter or notebook"
    return out
