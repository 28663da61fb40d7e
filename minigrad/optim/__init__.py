"""minigrad.optim: optimizers, learning-rate schedulers, clipping, and gradient accumulation.

- ``SGD``, ``Adam``, ``AdamW``: PyTorch's update rules, on ``param.data`` in place.
- ``lr_scheduler``: ``LambdaLR``, ``StepLR``, ``CosineAnnealingLR``, ``LinearLR`` (warm-up),
  ``MultiplicativeLR``, ``MultiStepLR``, ``ConstantLR``, ``ExponentialLR``, chainable as
  PyTorch's, and ``SequentialLR`` / ``ChainedScheduler`` to combine them.
- ``clip_grad_norm_``: clip all gradients together by their global norm.
- ``GradientAccumulator``: k micro-batches, one update, equal to the full-batch update.
- ``GradScaler``: dynamic loss scaling, unscaled once per accumulation window.
"""
from . import lr_scheduler
from .accumulation import GradientAccumulator
from .adam import Adam, AdamW
from .clip import clip_grad_norm_
from .grad_scaler import GradScaler
from .optimizer import Optimizer
from .sgd import SGD

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "lr_scheduler", "clip_grad_norm_",
           "GradientAccumulator", "GradScaler"]
