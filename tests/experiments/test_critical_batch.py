"""The critical-batch experiment: the fit, one run to the target, the command's files."""
import json

import numpy as np
import pytest

from minigrad import cli
from minigrad.experiments import critical_batch as cb


def test_fit_recovers_an_exact_tradeoff():
    sizes = [1, 2, 4, 8, 16, 32, 64, 128]
    s_min, e_min = 30.0, 600.0
    steps = [s_min + e_min / b for b in sizes]          # (S/S_min − 1)(E/E_min − 1) = 1
    fit = cb.fit_tradeoff(sizes, steps)
    np.testing.assert_allclose(fit, (s_min, e_min, e_min / s_min), rtol=1e-10)
    for b, s in zip(sizes, steps):
        assert (s / s_min - 1) * (s * b / e_min - 1) == pytest.approx(1.0)


def test_a_larger_batch_takes_fewer_steps_to_the_target():
    task = cb.load_task("digits")
    s4 = cb.steps_to_target(task, 4, 0.4, target=1.0)
    s32 = cb.steps_to_target(task, 32, 0.8, target=1.0)      # 4 accumulated micro-batches of 8
    assert s4 is not None and s32 is not None and s32 < s4 < 8 * s32


def test_command_writes_its_files(tmp_path, monkeypatch, capsys):
    record = [{"step": 1, "loss": 2.0, "noise_scale": 5.0, "grad_sq": 1.0, "trace": 5.0}]
    fake = cb.CriticalBatchResult([1, 4, 16], [0.1, 0.4, 0.8], [600.0, 170.0, 70.0],
                                  [600.0, 680.0, 1120.0], {}, *cb.fit_tradeoff(
                                      [1, 4, 16], [600.0, 170.0, 70.0]), record, 5.0, 9.0, 0.3,
                                  [0], 1.0)
    monkeypatch.setattr(cb, "critical_batch", lambda **kwargs: fake)
    assert cli.main(["critical-batch", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "B_crit = E_min/S_min" in out and "| 16 | 2 | 0.8 | 70 | 1120 |" in out
    assert json.loads((tmp_path / "results.json").read_text())["b_crit"] == fake.b_crit
    assert (tmp_path / "tradeoff.png").stat().st_size > 0
    assert (tmp_path / "noise_scale.png").stat().st_size > 0


def test_bad_target_is_one_line(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["critical-batch", "--target", "-1"])
    assert exit_info.value.code == 2
    assert "minigrad critical-batch: error: argument --target" in capsys.readouterr().err


def test_train_compares_batch_b_at_the_scaled_lr_and_logs_the_noise_scale():
    from minigrad.experiments.training import train
    seen = []
    result = train("digits", micro_batch=50, accumulation_steps=5, epochs=1, optimizer="sgd",
                   compare_micro_batch=True, track_noise_scale=True, dtype=np.float64,
                   on_update=lambda run, u, e, loss, skipped, **extra: seen.append((run, extra)))
    assert result.micro_batch_scaled_lr == pytest.approx(0.1 / 5)    # SGD: the linear rule
    assert len(result.micro_batch_scaled_losses) == len(result.micro_batch_losses) == 30
    assert len(result.noise_scales) == 6 and result.noise_scales[-1] > 0
    assert all("noise_scale" in extra for run, extra in seen if run == "accumulated")
    adamw = train("digits", micro_batch=250, accumulation_steps=3, epochs=1,
                  compare_micro_batch=True, dtype=np.float64)
    assert adamw.micro_batch_scaled_lr == pytest.approx(0.01 / np.sqrt(3))   # the square root


def test_cli_train_logs_the_noise_scale(capsys):
    assert cli.main(["train", "--micro-batch", "50", "--accumulation-steps", "5", "--epochs",
                     "1", "--optimizer", "sgd", "--track-noise-scale", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "noise scale" in out and "gradient noise scale B_simple after the last window" in out


def test_record_keeps_the_numbers_and_the_command_line(tmp_path, monkeypatch):
    fake = cb.CriticalBatchResult([1, 4, 16], [0.1, 0.4, 0.8], [600.0, 170.0, 70.0],
                                  [600.0, 680.0, 1120.0], {"1": {"0.1": 600.0}}, *cb.fit_tradeoff(
                                      [1, 4, 16], [600.0, 170.0, 70.0]),
                                  [{"step": 1, "loss": 2.0, "noise_scale": 5.0}], 5.0, 9.0, 0.3,
                                  [0], 1.04)
    monkeypatch.setattr(cb, "critical_batch", lambda **kwargs: fake)
    path = tmp_path / "sub" / "record.json"
    assert cli.main(["critical-batch", "--quick", "--out", str(tmp_path), "--record",
                     str(path)]) == 0
    record = json.loads(path.read_text())
    assert record["command"] == "python -m minigrad critical-batch --quick --out " + str(tmp_path)
    results = record["results"]
    assert "noise_record" not in results and results["b_crit"] == fake.b_crit
    assert results["steps"] == fake.steps and results["noise_scale_at_target"] == 5.0


def test_finetune_record_keeps_the_numbers_it_has():
    from minigrad.cli_gpt import command_line, finetune_record
    result = {"model": object(), "window_losses": [2.5, 2.0], "val_loss_before": 2.0716549,
              "val_loss_after": 2.00042, "micro_batch_losses": [2.6, 2.1],
              "base_bytes": {"scheme": "nf4", "measured": 536064, "measured_per_weight": 0.5625}}
    assert finetune_record(result) == {
        "base_measured": 536064.0, "base_measured_per_weight": 0.5625, "last_window_loss": 2.0,
        "micro_batch_last_window_loss": 2.1, "val_loss_after": 2.00042,
        "val_loss_before": 2.07165}
    assert command_line("finetune", ["finetune", "--record", "x.json", "--lora-rank", "8",
                                     "--no-progress"]) == \
        "python -m minigrad finetune --lora-rank 8"
