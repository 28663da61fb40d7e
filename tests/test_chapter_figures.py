"""The chapters' figures are drawn from numbers the code computes:
tools/make_chapter_figures.py (one figure each of chapters 04-06) and the
counts of chapter 07's checkpointing figures (tools/figures/ch07.py)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

import minigrad
from tools.figures.ch07 import checkpoint_counts

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def figures():
    spec = importlib.util.spec_from_file_location("make_chapter_figures",
                                                  ROOT / "tools" / "make_chapter_figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _stored_arrays(out, shape, exclude):
    """Distinct arrays of ``shape`` that the Functions behind ``out`` saved."""
    seen, arrays, todo = set(), {}, [out._creator]
    while todo:
        fn = todo.pop()
        if fn is None or id(fn) in seen:
            continue
        seen.add(id(fn))
        for value in vars(fn).values():
            for a in value if isinstance(value, tuple) else (value,):
                if isinstance(a, np.ndarray) and a.shape == shape and a is not exclude:
                    arrays[id(a)] = a
        todo.extend(edge._creator for edge in fn.inputs)
    return len(arrays)


def _one_array_block(t):
    # (t * 0.5).tanh(): Mul saves t (the previous block's output) and the constant,
    # Tanh saves its output; the product is freed.  One array per block, as Linear -> Tanh.
    return (t * 0.5).tanh()


def _two_array_block(t):
    # As above, then a second Tanh: each Tanh saves its output, two arrays per block.
    return (t * 0.5).tanh().tanh()


@pytest.mark.parametrize("segments", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("block, per_layer", [(_one_array_block, 1), (_two_array_block, 2)])
def test_checkpoint_counts_match_the_graph(segments, block, per_layer):
    calls = [0] * 8

    def layer(i):
        def run(t):
            calls[i] += 1
            return block(t)
        return run

    x = minigrad.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=np.float64,
                        requires_grad=True)
    out = minigrad.checkpoint_sequential([layer(i) for i in range(8)], segments, x)
    stored, recomputed = checkpoint_counts(8, segments, per_layer=per_layer)
    assert _stored_arrays(out, (2, 3), x.data) == stored
    out.sum().backward()
    assert sum(calls) - 8 == recomputed


def test_the_chapter_07_numbers():
    assert checkpoint_counts(16, 4) == (7, 12)
    assert checkpoint_counts(16, 2) == (9, 8)
    assert checkpoint_counts(16, 8) == (9, 14)
    assert checkpoint_counts(16, 4, per_layer=2) == (11, 12)
    assert checkpoint_counts(16, 8, per_layer=2) == (11, 14)
    assert checkpoint_counts(4, 2) == (3, 2)


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
