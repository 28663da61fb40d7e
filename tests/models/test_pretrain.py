"""The shipped GPT checkpoint: its quality, and that its command reproduces it."""
from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

import minigrad

from minigrad.cli import main
from minigrad.experiments.pretrain import (CHECKPOINT, RECORD, evaluate, load_gpt, pretrain,
                                           sample, shakespeare_splits)


def shipped_record():
    return json.loads((resources.files("minigrad.models") / "files" / RECORD).read_text())


def test_shipped_checkpoint_has_the_recorded_quality():
    model, tokenizer, meta = load_gpt()
    record = shipped_record()
    assert meta["val_loss"] == pytest.approx(record["val_loss"])
    assert record["command"].startswith("python -m minigrad pretrain")
    _, _, val = shakespeare_splits()
    loss = evaluate(model, val, block_size=model.config.block_size, batches=4)
    assert loss < 2.2                       # a uniform guess is ln 65 = 4.17, unigrams ~3.3
    assert abs(loss - record["val_loss"]) < 0.1
    text = sample(model, tokenizer, "ROMEO:\n", 60, seed=0)
    assert text.startswith("ROMEO:\n") and len(text) == 67


def test_the_command_reproduces_the_recorded_first_steps():
    """A shortened run of the recorded command (same seed, same schedule) makes
    the very losses the full run recorded at its first steps."""
    record = shipped_record()
    c = record["config"]
    _, short = pretrain(n_layer=c["n_layer"], n_head=c["n_head"], n_embd=c["n_embd"],
                        block_size=c["block_size"], batch_size=record["batch_size"],
                        steps=record["steps"], lr=record["lr"], warmup=record["warmup"],
                        seed=record["seed"], stop_after=3, eval_batches=1)
    np.testing.assert_allclose(short["train_losses"], record["train_losses"][:3], rtol=1e-4)


def test_pretrain_and_finetune_commands(tmp_path, capsys):
    out = tmp_path / "gpt.npz"
    assert main(["pretrain", "--n-layer", "1", "--n-head", "2", "--n-embd", "16",
                 "--steps", "4", "--stop-after", "2", "--batch-size", "4", "--no-progress",
                 "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "validation loss" in text and "wrote" in text
    model, _, meta = load_gpt(out)
    assert model.config.n_embd == 16 and len(meta["train_losses"]) == 2
    assert (tmp_path / "gpt.json").exists()
    adapter = tmp_path / "adapter.npz"
    assert main(["finetune", "--checkpoint", str(out), "--micro-batch", "1",
                 "--accumulation-steps", "2", "--updates", "1", "--lora-rank", "2",
                 "--checkpointing", "--no-progress",
                 "--compare-micro-batch", "--plot", str(tmp_path / "curve.png"),
                 "--out", str(adapter)]) == 0
    text = capsys.readouterr().out
    assert "LoRA rank 2" in text and "window loss" in text and "the adapters alone" in text
    assert "plain batch 1 (2 updates)" in text and (tmp_path / "curve.png").stat().st_size > 0
    assert all(".lora_" in name for name in minigrad.load(adapter))
    with pytest.raises(SystemExit):
        main(["finetune", "--micro-batch", "0"])
    with pytest.raises(SystemExit):
        main(["pretrain", "--n-embd", "10", "--n-head", "3"])
