"""The chapters' figures, one module per chapter (``ch01.py`` ... ``ch14.py``).

Each module defines ``draw_all() -> list[pathlib.Path]``: it draws that chapter's
figures into ``chapters/figures/`` with numbers it computes (with minigrad itself,
or plain NumPy where the figure shows arithmetic), so a picture never disagrees
with its text.  ``python -m tools.figures [NN ...]`` (``make figures``) runs them.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
FIGURES = ROOT / "chapters" / "figures"


def save(fig, name: str, folder: Path | None = None) -> Path:
    """Write ``fig`` to ``chapters/figures/<name>`` (or ``folder/<name>``; PNG, no
    timestamp) and close it."""
    folder = FIGURES if folder is None else Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)
    return path
