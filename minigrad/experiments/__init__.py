"""minigrad.experiments: does gradient accumulation give the full-batch update?

Each experiment trains one model twice from the same initial parameters, once
with full batches and once with the same batches cut into micro-batches and
accumulated with :class:`minigrad.optim.GradientAccumulator`, and returns a
:class:`CaseResult`: the largest gradient and parameter differences, the
verdict against its expectation ("equal" or "differs"), and per-update arrays
for plots. ``python -m minigrad verify`` runs them all (:mod:`.suite`); the
notebooks call them one by one.

Cases (module: function):

- ``mlp_digits``: :func:`case_mlp_digits` (equal, SGD and AdamW)
- ``normalization``: :func:`case_unequal_micro_batches` (num_items: equal;
  divide by k: differs), :func:`case_forgot_to_divide` (exactly k times)
- ``char_lm``: :func:`case_char_lm` (token count: equal; micro-batch mean: differs)
- ``norm_layers``: :func:`case_norm_layer` (LayerNorm, GroupNorm: equal),
  :func:`case_dropout` (per-example masks: equal), :func:`case_batchnorm`
  (train: differs; ghost BN: equal; eval: equal),
  :func:`case_merged_running_stats` (equal)
- ``cnn_mnist``: :func:`case_cnn_mnist` (BatchNorm2d train: differs; eval: equal)
- ``exact_batchnorm``: :func:`case_batchnorm_exact` (the BatchNorm train rows made
  exact by multi-pass accumulation: equal), :func:`case_exact_batchnorm`

:mod:`.training` holds the training loop of ``python -m minigrad train``.
"""
from .char_lm import case_char_lm
from .cnn_mnist import case_cnn_mnist
from .common import (DIFFERS, DIFFERS_THRESHOLD, EQUAL, CaseResult, compare_training,
                     equal_tolerance)
from .exact_batchnorm import case_batchnorm_exact, case_exact_batchnorm
from .mlp_digits import case_mlp_digits
from .norm_layers import (GhostBatchNorm1d, case_batchnorm, case_dropout,
                          case_merged_running_stats, case_norm_layer)
from .normalization import case_forgot_to_divide, case_unequal_micro_batches
from .suite import format_table, run_suite, suite_report, verification_cases

__all__ = [
    "CaseResult", "EQUAL", "DIFFERS", "DIFFERS_THRESHOLD", "equal_tolerance",
    "compare_training", "GhostBatchNorm1d",
    "case_mlp_digits", "case_unequal_micro_batches", "case_forgot_to_divide",
    "case_char_lm", "case_norm_layer", "case_dropout", "case_batchnorm",
    "case_merged_running_stats", "case_cnn_mnist",
    "case_batchnorm_exact", "case_exact_batchnorm",
    "verification_cases", "run_suite", "format_table", "suite_report",
]
