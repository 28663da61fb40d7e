"""The command line: ``python -m minigrad verify`` and ``train``, their flags and errors."""
from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import minigrad
from minigrad import cli
from minigrad.experiments import verification_cases

ROOT = Path(__file__).resolve().parents[1]


def run_module(*args, timeout=300):
    """``python -m minigrad ARGS`` in a fresh interpreter, from the repository root."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-m", "minigrad", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.mark.slow
def test_verify_quick_json(tmp_path):
    path = tmp_path / "verify.json"
    done = run_module("verify", "--quick", "--json", str(path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    header = done.stdout.splitlines()[1]
    for column in ("case", "expected", "grad abs", "grad rel", "param abs", "param rel",
                   "tolerance", "verdict"):
        assert column in header
    n = len(verification_cases(quick=True))
    assert f"{n}/{n} verdicts as expected" in done.stdout and "PASSED" in done.stdout

    report = json.loads(path.read_text())
    assert report["passed"] is True and report["quick"] is True
    assert len(report["cases"]) == n
    for row in report["cases"]:
        assert {"name", "expected", "max_abs_diff", "max_rel_diff", "tolerance",
                "passed"} <= set(row)
        assert row["expected"] in ("equal", "differs") and row["passed"] is True
        if row["expected"] == "equal":
            assert row["max_rel_diff"] <= row["tolerance"]
        else:
            assert row["max_rel_diff"] > row["tolerance"]
    names = [row["name"] for row in report["cases"]]
    assert any("ghost" in n for n in names) and any("char-lm" in n for n in names)


def test_verify_exits_1_when_a_verdict_does_not_match(monkeypatch, capsys):
    from minigrad.experiments import suite
    real = suite.verification_cases

    def one_wrong_expectation(quick=False):
        case = real(quick)[0]                   # an "equal" case ...
        case.expected = "differs"               # ... now expected to differ
        case.function = lambda **kw: _flip(real(quick)[0].function(**kw))
        return [case]

    monkeypatch.setattr(suite, "verification_cases", one_wrong_expectation)
    assert cli.main(["verify", "--quick"]) == 1
    assert "FAIL" in capsys.readouterr().out


def _flip(result):
    result.expected, result.tolerance = "differs", 1e-3
    return result


@pytest.mark.slow
def test_verify_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert cli.main(["verify", "--quick", "--plots", str(tmp_path / "figures")]) == 0
    for name in ("verify_summary.png", "verify_per_update.png", "verify_losses.png"):
        png = tmp_path / "figures" / name
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().out


def test_train_one_tiny_epoch(capsys):
    code = cli.main(["train", "--dataset", "digits", "--micro-batch", "100", "--accumulation-steps",
                     "5", "--epochs", "1", "--optimizer", "sgd", "--lr", "0.2", "--no-progress"])
    assert code == 0
    out = capsys.readouterr().out
    assert "update    3  epoch 1  window loss" in out          # 1500 / 500 = 3 updates
    assert "held-out accuracy (accumulated 5 x 100):" in out


@pytest.mark.slow
def test_train_writes_a_plot_with_the_full_batch_curve(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    plot = tmp_path / "loss.png"
    code = cli.main(["train", "--dataset", "shakespeare", "--micro-batch", "256",
                     "--accumulation-steps", "4", "--epochs", "1", "--dtype", "float64",
                     "--compare-full-batch", "--plot", str(plot), "--seed", "3"])
    assert code == 0
    out = capsys.readouterr().out
    assert "held-out per-token loss (full batch 1024)" in out
    gap = float(out.split("max |window loss - full-batch loss| over 2 updates: ")[1].split()[0])
    assert gap <= 1e-12
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_help_documents_every_flag(capsys):
    for command, flags in {
        "verify": ["--device", "--dtype", "--json", "--plots", "--quick"],
        "train": ["--dataset", "--micro-batch", "--accumulation-steps", "--epochs",
                  "--optimizer", "--lr", "--device", "--seed", "--plot",
                  "--compare-full-batch", "--compare-micro-batch", "--dtype", "--no-progress"],
    }.items():
        with pytest.raises(SystemExit) as exit_info:
            cli.main([command, "--help"])
        assert exit_info.value.code == 0
        text = capsys.readouterr().out
        for flag in flags:
            assert flag in text, (command, flag)
    parser_help = cli.build_parser().format_help()
    assert "verify" in parser_help and "train" in parser_help


BAD_FLAGS = [
    (["train", "--accumulation-steps", "0"], "--accumulation-steps: must be >= 1, got 0"),
    (["train", "--micro-batch", "-2"], "--micro-batch: must be >= 1"),
    (["train", "--micro-batch", "two"], "expected a positive integer, got 'two'"),
    (["train", "--dataset", "cifar10"], "invalid choice: 'cifar10'"),
    (["train", "--epochs", "-1"], "--epochs: must be >= 0, got -1"),
    (["train", "--lr", "0"], "--lr: must be a finite number > 0"),
    (["train", "--lr", "nan"], "--lr: must be a finite number > 0"),
    (["train", "--optimizer", "rmsprop"], "invalid choice: 'rmsprop'"),
    (["verify", "--dtype", "float16"], "invalid choice: 'float16'"),
    (["verify", "--json", "/no/such/folder/x.json"], "does not exist"),
    (["verify", "--json", str(ROOT)], "is a folder, expected a file path"),
    (["verify", "--plots", str(ROOT / "README.md")], "is a file, expected a folder"),
    (["train", "--plot", "loss.txt"], "must end in .png, .svg or .pdf"),
    (["train", "--plot", "loss"], "must end in .png, .svg or .pdf"),
    (["train", "--micro-batch", "1000", "--accumulation-steps", "8"],
     "= 8000 exceeds the 1500 training items of digits"),
    (["frobnicate"], "invalid choice: 'frobnicate'"),
    (["train", "--micro_batch", "16"],
     "minigrad train: error: unrecognized argument --micro_batch (did you mean --micro-batch?)"),
    (["train", "--accum", "4"], "--accum (did you mean --accumulation-steps?)"),
    (["train", "--micro-b", "4"], "--micro-b (did you mean --micro-batch?)"),
    (["verify", "--quik", "--jsn=x.json"],
     "minigrad verify: error: unrecognized arguments --quik (did you mean --quick?), --jsn "
     "(did you mean --json?)"),
    (["verify", "--frobnicate"], "unrecognized argument --frobnicate; see 'minigrad verify"),
    (["verify", "stray"], "unrecognized arguments: stray"),
]


@pytest.mark.parametrize("argv, message", BAD_FLAGS)
def test_bad_flags_exit_2_with_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert err.startswith("minigrad")


def test_cuda_without_a_gpu_exits_2(monkeypatch, capsys):
    monkeypatch.setattr(minigrad.cuda, "is_available", lambda: False)
    for command in ("verify", "train"):
        with pytest.raises(SystemExit) as exit_info:
            cli.main([command, "--device", "cuda"])
        assert exit_info.value.code == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "no usable GPU" in err


def test_plots_without_matplotlib_exit_2(monkeypatch, capsys):
    real_find_spec = cli.importlib.util.find_spec
    monkeypatch.setattr(cli.importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real_find_spec(name, *a))
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["train", "--plot", "loss.png"])
    assert exit_info.value.code == 2
    assert "need matplotlib" in capsys.readouterr().err


def test_bad_flag_in_a_fresh_interpreter_has_no_traceback():
    done = run_module("train", "--accumulation-steps", "0")
    assert done.returncode == 2
    assert done.stderr == "minigrad train: error: argument --accumulation-steps: must be >= 1, got 0\n"
    assert done.stdout == ""


def test_no_command_prints_the_usage_and_exits_2(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: minigrad") and "verify" in err and "train" in err
    assert err.rstrip().endswith("minigrad: error: choose a command: verify or train")


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out == f"minigrad {minigrad.__version__}\n"


def test_every_parser_refuses_abbreviations():
    parser = cli.build_parser()
    subparsers = parser._subparsers._group_actions[0].choices
    assert parser.allow_abbrev is False
    assert set(subparsers) == {"verify", "train", "plan", "pretrain", "finetune", "critical-batch"}
    assert all(p.allow_abbrev is False for p in subparsers.values())


def test_train_counts_skipped_windows_apart_from_updates(capsys):
    code = cli.main(["train", "--lr", "1e9", "--epochs", "1", "--no-progress"])
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    updates = [line for line in lines if "  update " in line]
    skipped = [line for line in lines if "  skipped " in line]
    assert "12 windows (one update each)" in lines[0]
    assert len(updates) + len(skipped) == 12 and updates and skipped
    assert all("window loss inf" in line or "nan" in line for line in skipped)
    assert updates[-1].split()[2] == str(len(updates))     # update numbers count updates only
    assert "done in" in captured.out and f": {len(updates)} updates" in captured.out
    assert f"{len(skipped)} windows skipped" in captured.out
    assert code == 0                                        # some updates were made
    # warnings: one clean line each, no source line
    warning_lines = [line for line in captured.err.splitlines() if line]
    assert warning_lines and all(line.startswith("minigrad train: warning: ")
                                 for line in warning_lines)
    assert "return self._update()" not in captured.err and ".py:" not in captured.err


def test_train_exits_1_when_no_update_was_made(monkeypatch, capsys):
    from minigrad.experiments import training
    real_load_task = training.load_task

    def diverged(*args, **kwargs):         # every loss non-finite, from the first window
        task = real_load_task(*args, **kwargs)
        loss_fn = task.loss_fn

        def infinite_loss(model, batch):
            loss, items = loss_fn(model, batch)
            return loss * float("inf"), items
        return dataclasses.replace(task, loss_fn=infinite_loss)

    monkeypatch.setattr(training, "load_task", diverged)
    code = cli.main(["train", "--micro-batch", "100", "--accumulation-steps", "5",
                     "--epochs", "1", "--no-progress"])
    captured = capsys.readouterr()
    assert code == 1
    assert "3 windows skipped" in captured.out and ": 0 updates" in captured.out
    assert "minigrad train: error: no update was made" in captured.err
