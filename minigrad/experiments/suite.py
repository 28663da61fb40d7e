"""The verification suite behind ``python -m minigrad verify``: run, tabulate, save.

:func:`verification_cases` lists the cases (function and arguments),
:func:`run_suite` runs them, :func:`format_table` prints the rows, and
:func:`suite_report` is the JSON document ``--json`` writes.
"""
from __future__ import annotations

import dataclasses
import time
import traceback
from collections.abc import Callable

import numpy as np

from .char_lm import case_char_lm
from .class_weights import case_weighted_cross_entropy
from .cnn_mnist import case_cnn_mnist
from .exact_batchnorm import case_batchnorm_exact
from .finetune import case_sft
from .common import DIFFERS, DIFFERS_THRESHOLD, EQUAL, CaseResult, equal_tolerance
from .mlp_digits import case_mlp_digits
from .norm_layers import case_batchnorm, case_dropout, case_merged_running_stats, case_norm_layer
from .normalization import case_forgot_to_divide, case_unequal_micro_batches


@dataclasses.dataclass
class Case:
    """A case to run: a title for errors, its function, keyword arguments and expectation."""

    title: str
    expected: str
    function: Callable[..., CaseResult]
    kwargs: dict


def verification_cases(quick: bool = False) -> list[Case]:
    """The cases of ``verify``, in table order.

    ``quick`` keeps every case but runs fewer updates (3 instead of 20 for the
    MLPs, 2 instead of 10 or 5 for the language model and the CNN), for tests.
    """
    u = 3 if quick else 20        # MLP updates
    u_lm = 2 if quick else 10     # language-model updates
    u_cnn = 2 if quick else 5     # CNN updates
    u_gpt = 2 if quick else 20    # GPT fine-tuning updates (micro-batch 1 x 16)
    eq, diff = EQUAL, DIFFERS
    mlp = case_mlp_digits
    return [
        Case("mlp 32=8x4 sgd", eq, mlp, dict(batch_size=32, accumulation_steps=8,
                                             optimizer="sgd", updates=u)),
        Case("mlp 32=8x4 adamw", eq, mlp, dict(batch_size=32, accumulation_steps=8,
                                               optimizer="adamw", updates=u)),
        Case("mlp 128=8x16 sgd", eq, mlp, dict(batch_size=128, accumulation_steps=8,
                                               optimizer="sgd", updates=u)),
        Case("mlp 128=8x16 adamw", eq, mlp, dict(batch_size=128, accumulation_steps=8,
                                                 optimizer="adamw", updates=u)),
        Case("unequal, num_items", eq, case_unequal_micro_batches,
             dict(weighting="items", updates=u)),
        Case("unequal, divide by k", diff, case_unequal_micro_batches,
             dict(weighting="equal", updates=u)),
        Case("forgot to divide by k", eq, case_forgot_to_divide, dict(windows=2 if quick else 5)),
        Case("char-lm, token count", eq, case_char_lm,
             dict(normalization="tokens", updates=u_lm)),
        Case("char-lm, micro-batch mean", diff, case_char_lm,
             dict(normalization="micro-batch-mean", updates=u_lm)),
        Case("LayerNorm", eq, case_norm_layer, dict(norm="layer", updates=u)),
        Case("GroupNorm", eq, case_norm_layer, dict(norm="group", updates=u)),
        Case("dropout", eq, case_dropout, dict(updates=u)),
        Case("BatchNorm train", diff, case_batchnorm, dict(mode="train", updates=u)),
        Case("BatchNorm train exact (multi-pass)", eq, case_batchnorm_exact,
             dict(model="mlp", updates=u)),
        Case("BatchNorm = ghost BN", eq, case_batchnorm, dict(mode="ghost", updates=u)),
        Case("BatchNorm eval", eq, case_batchnorm, dict(mode="eval", updates=u)),
        Case("merged running stats", eq, case_merged_running_stats, dict(updates=u)),
        Case("cnn-mnist train", diff, case_cnn_mnist, dict(mode="train", updates=u_cnn)),
        Case("cnn-mnist BatchNorm train exact (multi-pass)", eq, case_batchnorm_exact,
             dict(model="cnn", updates=u_cnn)),
        Case("cnn-mnist eval", eq, case_cnn_mnist, dict(mode="eval", updates=u_cnn)),
        Case("weighted CE 32=8x4, weight sum", eq, case_weighted_cross_entropy,
             dict(weighting="weight-sum", updates=u)),
        Case("weighted CE 32=8x4, mean of micro-batch means", diff,
             case_weighted_cross_entropy, dict(weighting="micro-batch-mean", updates=u)),
        Case("gpt sft 16=16x1, completion tokens", eq, case_sft,
             dict(normalization="tokens", updates=u_gpt)),
        Case("gpt sft 16=16x1, micro-batch mean (2024 bug)", diff, case_sft,
             dict(normalization="micro-batch-mean", updates=u_gpt)),
        Case("gpt sft LoRA r=2, completion tokens", eq, case_sft,
             dict(normalization="tokens", lora_rank=2, updates=u_gpt)),
    ]


def run_case(case: Case, *, device: str, dtype) -> CaseResult:
    """Run one case; an exception becomes a failed row whose note names the error."""
    start = time.perf_counter()
    try:
        return case.function(device=device, dtype=dtype, **case.kwargs)
    except Exception as error:  # noqa: BLE001 (one broken case must not hide the others)
        tolerance = equal_tolerance(dtype) if case.expected == EQUAL else DIFFERS_THRESHOLD
        return CaseResult(name=case.title, expected=case.expected, tolerance=tolerance,
                          note=f"error: {type(error).__name__}: {error}", device=device,
                          dtype=np.dtype(dtype).name, seconds=time.perf_counter() - start,
                          extras={"traceback": traceback.format_exc()})


def run_suite(*, device: str = "cpu", dtype=np.float64, quick: bool = False,
              on_result: Callable[[CaseResult], None] | None = None) -> list[CaseResult]:
    """Run every case of :func:`verification_cases`; call ``on_result`` after each."""
    results = []
    for case in verification_cases(quick):
        result = run_case(case, device=device, dtype=dtype)
        results.append(result)
        if on_result is not None:
            on_result(result)
    return results


COLUMNS = ("case", "expected", "grad abs", "grad rel", "param abs", "param rel",
           "tolerance", "verdict", "note")


def _number(x: float | None) -> str:
    """``1.2e-16``; ``-`` for a number the case does not measure."""
    return "-" if x is None else f"{x:.1e}"


def table_row(result: CaseResult) -> tuple[str, ...]:
    """The cells of one row (see :data:`COLUMNS`); the tolerance reads ``<= t`` or ``> t``.

    A case that reproduces a bug shows its own labels (``expected_label``,
    ``verdict_label``) so that a passing row reads as the bug measured, never
    as "harmless".
    """
    sign = "<=" if result.expected == EQUAL else ">"
    verdict = (result.verdict_label or "ok") if result.passed else "FAIL"
    return (result.name, result.expected_label or result.expected,
            _number(result.grad_abs_diff), _number(result.grad_rel_diff),
            _number(result.param_abs_diff), _number(result.param_rel_diff),
            f"{sign} {result.tolerance:.0e}", verdict, result.note)


def format_table(results: list[CaseResult]) -> str:
    """A plain-text table, one row per case, columns aligned."""
    rows = [COLUMNS] + [table_row(r) for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def suite_report(results: list[CaseResult], **settings) -> dict:
    """The ``--json`` document: ``{"passed", "cases": [row, ...], **settings}``.

    Each row has ``name``, ``expected``, ``max_abs_diff``, ``max_rel_diff``,
    ``tolerance``, ``passed``, then every other :class:`CaseResult` field.
    """
    return {"passed": all(r.passed for r in results), **settings,
            "cases": [r.to_dict() for r in results]}
