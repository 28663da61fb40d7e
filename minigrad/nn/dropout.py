"""Dropout, with masks that gradient accumulation can reproduce.

Where a mask's random numbers come from
---------------------------------------
Every mask comes from a counter-based hash (:func:`minigrad.random.hash_uniform`):
a uniform number is a pure function of integer keys, computed identically by
NumPy and CuPy.  Two modes:

* **default** (``per_example=False``): the keys are the seed and a global
  counter that advances with every value drawn.  The masks of one batch
  depend on how many values were drawn before, so splitting the batch into
  micro-batches gives *different* (equally valid) masks.
  ``minigrad.random.get_rng_state()`` / ``set_rng_state()`` save and restore
  the counter, so a recomputed forward pass (checkpointing) draws the same ones.

* **per example** (``per_example=True``): the keys are

      (seed, step, layer id, example index, position within the example)

  so an example's mask does not depend on which micro-batch carries it, and
  the full batch and any split of it into micro-batches draw exactly the same
  masks.  The training loop supplies the step and the *global* example
  indices, either with a context manager around the forward pass::

      for step, (x, y) in enumerate(loader):
          for idx, (xm, ym) in zip(index_parts, split_micro_batches((x, y), k)):
              with nn.dropout_context(step=step, example_index=idx):
                  loss = F.cross_entropy(model(xm), ym)   # idx = e.g. 8..15
              ...

  or by calling the layer directly: ``layer(x, example_index=idx, step=s)``.
  The layer id is given to each per-example Dropout in construction order,
  counting from 0 after every ``minigrad.manual_seed`` (so a model rebuilt
  after the same seed gets the same ids, as it gets the same weights), or set
  explicitly with ``layer_id=``; ``copy.deepcopy`` keeps it.
"""
from __future__ import annotations

import contextlib

from .. import random as _random
from . import functional as F
from .module import Module


@contextlib.contextmanager
def dropout_context(step: int, example_index):
    """Supply the step and the global example indices (one per row of the
    micro-batch, e.g. ``range(8, 16)``) to every per-example Dropout called
    inside the block.  Contexts nest; the innermost wins.

    Raises TypeError unless ``step`` is a non-negative int.
    """
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise TypeError(f"dropout_context: step must be a non-negative int, got {step!r}")
    stack = _random.dropout_contexts()
    stack.append((step, example_index))
    try:
        yield
    finally:
        stack.pop()


def current_dropout_context():
    """``(step, example_index)`` of the innermost :func:`dropout_context`, or None.

    The contexts are kept per thread in :mod:`minigrad.random`, where
    :func:`minigrad.checkpoint` saves them for its recomputation.
    """
    stack = _random.dropout_contexts()
    return stack[-1] if stack else None


class Dropout(Module):
    """Inverted dropout (Srivastava et al., JMLR 15, 2014): in training, each entry
    is zeroed with probability ``p`` and the kept ones are scaled by 1/(1-p), so
    the expected output equals the input; in eval mode it is the identity.

    Args:
        p: drop probability, in [0, 1).
        inplace: overwrite the input with the result (PyTorch's meaning).
        per_example: draw each example's mask from (seed, step, layer id,
            example index, position), so that micro-batches reproduce the full
            batch's masks exactly (see the module docstring for how to supply
            step and example indices).
        layer_id: the id that separates the masks of different layers (per
            example mode); default: the next id in construction order.

    Shapes: input ``(N, *)`` -> output ``(N, *)``, the same.

    Call as ``layer(x)``, or ``layer(x, example_index=idx, step=s)`` in per-example
    mode (arguments win over an active :func:`dropout_context`).

    Raises:
        ValueError: p outside [0, 1); in per-example training mode, no example
            indices supplied, or a number of indices different from N.
    """

    def __init__(self, p: float = 0.5, inplace: bool = False, *, per_example: bool = False,
                 layer_id: int | None = None):
        super().__init__()
        F._check_p(p)
        self.p, self.inplace = float(p), bool(inplace)
        self.per_example = bool(per_example)
        if layer_id is None and self.per_example:
            layer_id = _random.next_layer_id()
        self.layer_id = layer_id

    def forward(self, x, example_index=None, step=None):
        if not self.training or self.p == 0.0:
            return x
        if not self.per_example:
            if example_index is not None:
                raise ValueError("Dropout: example_index was given but this layer was "
                                 "made with per_example=False")
            return F.dropout(x, self.p, training=True, inplace=self.inplace)
        context = current_dropout_context()
        if example_index is None and context is not None:
            example_index = context[1]
        if step is None:
            step = context[0] if context is not None else 0
        if example_index is None:
            raise ValueError("Dropout(per_example=True) needs the example indices of the "
                             "batch: call it inside nn.dropout_context(step=..., "
                             "example_index=...) or pass example_index=")
        return F.dropout(x, self.p, training=True, inplace=self.inplace,
                         example_index=example_index, step=step, layer_id=self.layer_id)

    def extra_repr(self) -> str:
        text = f"p={self.p}" + (", inplace=True" if self.inplace else "")
        if self.per_example:
            text += f", per_example=True, layer_id={self.layer_id}"
        return text
