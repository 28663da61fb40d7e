"""tools/make_chapter_figures.py: the chapters' figures are drawn from numbers it computes."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import minigrad

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def figures():
    spec = importlib.util.spec_from_file_location("make_chapter_figures",
                                                  ROOT / "tools" / "make_chapter_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stored_arrays(out, shape, exclude):
    seen, arrays, todo = set(), {}, [out._creator]
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        held = [t.data for t in fn.inputs] + [v for v in vars(fn).values()
                                               if isinstance(v, np.ndarray)]
        arrays.update((id(a), a) for a in held if a.shape == shape and a is not exclude)
        todo.extend(t._creator for t in fn.inputs)
    return len(arrays)


@pytest.mark.parametrize("segments", [1, 2, 3, 4, 8])
def test_checkpoint_counts_match_the_graph(figures, segments):
    # 8 blocks of (x * 0.5).tanh(): two arrays per block, as Linear -> Tanh.
    calls = [0] * 8

    def block(i):
        def run(t):
            calls[i] += 1
            return (t * 0.5).tanh()
        return run

    x = minigrad.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=np.float64,
                        requires_grad=True)
    out = minigrad.checkpoint_sequential([block(i) for i in range(8)], segments, x)
    stored, recomputed = figures.checkpoint_counts(8, segments, per_layer=2)
    assert _stored_arrays(out, (2, 3), x.data) == stored
    out.sum().backward()
    assert sum(calls) - 8 == recomputed


def test_the_chapter_07_numbers(figures):
    assert figures.checkpoint_counts(16, 4, per_layer=2) == (11, 12)
    assert figures.checkpoint_counts(16, 8, per_layer=2) == (11, 14)
    assert figures.checkpoint_counts(4, 2) == (3, 2)


def test_main_draws_the_chosen_figures(figures, tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(figures, "FIGURES", tmp_path)
    monkeypatch.setattr(figures, "ROOT", tmp_path)
    assert figures.main(["05", "06"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["05_token_weights.png",
                                                          "06_ghost_batches.png"]
    assert figures.main(["99"]) == 2
    assert "unknown chapter" in capsys.readouterr().out


def test_every_chapter_figure_is_committed_and_linked(figures):
    for chapter in figures.FIGURES_BY_CHAPTER:
        name = next((ROOT / "chapters" / "figures").glob(f"{chapter}_*.png")).name
        text = next((ROOT / "chapters").glob(f"{chapter}_*.md")).read_text(encoding="utf-8")
        assert f"(figures/{name})" in text, (chapter, name)
