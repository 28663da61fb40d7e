"""What the student copy's tools say when they reach an exercise not done."""
from minigrad import cli


def test_the_command_line_names_the_exercise_once(capsys, monkeypatch):
    monkeypatch.setattr(cli, "_exercises_not_started", lambda: ["2.9"])
    error = NotImplementedError("Exercise 2.9 — named_parameters: walking the module tree: "
                                "see chapters/02_layers_and_losses.md#exercise-2.9")
    assert cli._exercise_missing("train", error) == 3
    err = capsys.readouterr().err
    assert "minigrad train: this needs Exercise 2.9 — named_parameters" in err
    assert "Exercise Exercise" not in err and "make check EX=2.9" in err
