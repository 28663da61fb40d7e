"""PyTorch's own per-operator sample inputs (OpInfo), run through minigrad.

For every operator whose name minigrad shares (module functions, Tensor
methods, nn.functional), every third float64 sample of PyTorch's
``sample_inputs`` and every input of its ``error_inputs`` is converted and
compared: values, dtypes, shapes and the gradients of every input.  No sample
may give a wrong value or an unclear crash, and every input PyTorch refuses
is refused (or is a documented extension, docs/api/pytorch_differences.md).
Skipped without PyTorch; ``python -m tools.opinfo_sweep -v`` runs all samples.
"""
import pytest

torch = pytest.importorskip("torch")


def test_opinfo_samples_agree_with_pytorch():
    from tools.opinfo_sweep import sweep
    counts, records, matched = sweep(every=3)
    bad = [f"{outcome} {op} {label} #{i}: {detail}"
           for op, label, i, outcome, detail in records if outcome in ("wrong", "crash")]
    assert not bad, f"{len(bad)} samples differ from PyTorch:\n" + "\n".join(bad[:40])
    operators = set(matched.values())       # an operator's variants count once
    assert len(operators) >= 260, f"only {len(operators)} OpInfo operators matched"
    assert counts["pass"] >= 1500, dict(counts)
