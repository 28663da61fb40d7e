"""One pipeline stage: a slice of the model, its optimizer, and its accumulation window.

A stage works on raw arrays at its borders, so that the same code serves the
local executor (arrays handed over in one process) and the MPI executor
(arrays sent between processes):

* ``forward(j, x)`` runs micro-batch j's forward and *stashes* what its
  backward will need (the input and the recorded graph); it returns the
  output array for the next stage (the last stage computes the loss instead);
* ``backward(j, grad)`` back-propagates the gradient of the *summed* per-item
  loss from the stage's output into its parameters' ``.grad`` and returns the
  gradient at its input, for the previous stage.

Each stage owns a :class:`~minigrad.optim.GradientAccumulator` over its own
parameters with ``accumulation_steps = m``.  The last stage weights micro-batch
j's mean loss by its item count n_j (``acc.backward(loss, num_items=n_j)``);
the gradients that flow upstream are therefore gradients of ``n_j L_j``, and
every stage counts the same n_j.  After the m-th backward each accumulator
divides by the same global total N = sum_j n_j and steps its optimizer once:
the full-batch update, stage by stage.
"""
from __future__ import annotations

import math
import numbers

import numpy as np

from .. import autograd, backend
from ..checkpointing import checkpoint as _checkpoint
from ..nn import Module
from ..optim import GradientAccumulator, Optimizer
from ..optim.accumulation_checks import check_backward_output
from ..tensor import Tensor

__all__ = ["PipelineStage", "StageAccumulator", "split_sequential", "graph_bytes"]


class StageAccumulator(GradientAccumulator):
    """A :class:`GradientAccumulator` that can also start backward at a stage's output.

    ``backward_output(output, grad, num_items, loss)`` is the inner-stage
    twin of ``backward(loss, num_items)``: the gradient ``grad`` arriving from
    the next stage is already that of ``num_items * loss`` (the last stage
    weighted it), so it is back-propagated as it is, and ``num_items`` and
    ``loss`` are only counted, for the normalisation by the window's item
    total and for ``window_loss``.  Everything else (``step``, ``flush``,
    the once-per-window update, skipping non-finite windows) is inherited.
    """

    def backward_output(self, output, grad_output, num_items, loss) -> None:
        """Back-propagate ``grad_output`` from ``output``; count ``num_items`` items.

        Args:
            output: the stage's output Tensor for this micro-batch.
            grad_output: an array of ``output``'s shape: the gradient of the
                micro-batch's *summed* item losses with respect to ``output``.
            num_items: n_j, the item count the last stage weighted by (>= 0; an
                empty micro-batch counts as one of the window's k and adds nothing).
            loss: L_j, the micro-batch's mean loss (a float; non-finite marks
                the window to be skipped, and nothing is back-propagated).

        Raises:
            TypeError / ValueError: bad ``num_items`` (as ``backward``), or a
                ``grad_output`` whose shape differs from ``output``'s.
            RuntimeError: called twice without ``step`` in between, or in a
                window that used ``backward(loss)`` without ``num_items``.
        """
        weight = check_backward_output(self, output, grad_output, num_items)
        loss = float(loss)
        if weight != 0 and math.isfinite(loss) and output.requires_grad:
            autograd.backward(output, grad_output)
        self._count_micro_batch(weight, "items", loss)      # as backward(loss, n_j) ends


def split_sequential(model, sizes) -> list:
    """Cut a ``Sequential`` into consecutive stages of ``sizes[s]`` layers each.

    The stages are new ``Sequential`` objects holding the *same* layer
    objects (``model[a:b]``), so they share the model's parameters.

    Args:
        model: a :class:`~minigrad.nn.Sequential` of L layers.
        sizes: the number of layers of each stage, positive ints summing to
            L; or an int p, for p stages of near-equal length (the first
            ``L % p`` stages get one layer more).

    Returns:
        A list of ``Sequential`` stages.

    Raises:
        TypeError: ``model`` is not a Sequential.
        ValueError: sizes that are not positive or do not sum to ``len(model)``,
            or a stage without parameters (each stage has an optimizer).
    """
    from ..nn import Sequential  # noqa: PLC0415
    if not isinstance(model, Sequential):
        raise TypeError(f"split_sequential: model must be a minigrad.nn.Sequential, got "
                        f"{type(model).__name__}")
    n = len(model)
    if isinstance(sizes, numbers.Integral) and not isinstance(sizes, bool):
        p = int(sizes)
        if not 1 <= p <= n:
            raise ValueError(f"split_sequential: the number of stages must be between 1 "
                             f"and the number of layers ({n}), got {p}")
        sizes = [n // p + (1 if s < n % p else 0) for s in range(p)]
    sizes = list(sizes)
    if not sizes or any(isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1
                        for k in sizes) or sum(sizes) != n:
        raise ValueError(f"split_sequential: sizes must be positive ints summing to the "
                         f"number of layers ({n}), got {sizes}")
    bounds = np.cumsum([0, *sizes])
    stages = [model[int(a):int(b)] for a, b in zip(bounds[:-1], bounds[1:])]
    for s, stage in enumerate(stages):
        if not list(stage.parameters()):     # each stage steps an optimizer of its own
            raise ValueError(f"split_sequential: stage {s} ({', '.join(type(m).__name__ for m in stage)}) "
                             f"has no parameters, so it has nothing to train; move it into a "
                             f"neighbouring stage (sizes {sizes})")
    return stages


def graph_bytes(tensor, exclude=()) -> int:
    """Bytes of the arrays that the graph behind ``tensor`` keeps alive for backward.

    Walks from ``tensor``'s creator back to the leaves and counts, once each,
    the arrays that Function nodes hold: their leaf inputs' data and the
    arrays they saved (directly, or in a tuple / list).  ``tensor``'s own data
    counts when a Function saved it (Tanh and sigmoid keep their output for
    backward, so the stage's output stays alive with the graph after it has
    been handed on); the arrays in ``exclude`` do not (the parameters:
    resident, not stashed).

    Returns:
        The total ``nbytes`` (an int); 0 for a tensor without a graph.
    """
    seen = {id(a) for a in exclude}
    total = 0

    def count(obj):
        nonlocal total
        if backend.is_array(obj) and id(obj) not in seen:
            seen.add(id(obj))
            total += int(obj.nbytes)

    visited = set()
    stack = [tensor.creator] if tensor.creator is not None else []
    while stack:
        fn = stack.pop()
        if id(fn) in visited:
            continue
        visited.add(id(fn))
        for name, value in vars(fn).items():
            if name == "inputs":
                continue
            if isinstance(value, (tuple, list)):
                for item in value:
                    count(item)
            else:
                count(value)
        for x in fn.inputs:              # leaf Tensors, or Edges (no array)
            if isinstance(x, Tensor):
                count(x.data)
            if x._creator is not None:
                stack.append(x._creator)
    return total


class PipelineStage:
    """Stage s of p: a module, its optimizer, its accumulator, and its stash.

    Args:
        module: the stage's layers (a :class:`~minigrad.nn.Module`, usually a
            ``Sequential`` from :func:`split_sequential`).
        optimizer: an :class:`~minigrad.optim.Optimizer` over this stage's
            parameters (and no others).
        micro_batches: m, the micro-batches per update (the accumulation
            window, ``accumulation_steps`` of the stage's accumulator).
        is_first, is_last: where the stage sits (the first receives data,
            the last computes the loss).
        loss_fn: ``loss_fn(output, target) -> mean loss`` (last stage only),
            e.g. ``nn.functional.cross_entropy``.
        num_items: ``num_items(target) -> n_j``, the number of items the mean
            loss averages over (default: ``len(target)``; for a loss with
            ``ignore_index``, count the non-ignored targets).
        checkpoint: run the stage under :func:`minigrad.checkpoint`, so the
            stash keeps only the stage's inputs and backward recomputes the
            forward (GPipe's re-materialization, Huang et al. 2019, 2.3).
        scheduler: an optional learning-rate scheduler, stepped once per update.
        measure_stash: record ``peak_stash_bytes`` (walks the graph after each
            forward; leave off when timing).

    Attributes:
        accumulator: the stage's :class:`StageAccumulator`.
        stash: ``{j: (input Tensor, output Tensor)}`` of the micro-batches
            forwarded and not yet backwarded.
        peak_stash: the most entries the stash held in the last window.
        peak_stash_bytes: their largest total :func:`graph_bytes` (with
            ``measure_stash``; else None).
    """

    def __init__(self, module, optimizer, micro_batches, *, is_first, is_last,
                 loss_fn=None, num_items=None, checkpoint=False, scheduler=None,
                 measure_stash=False):
        if not isinstance(module, Module):
            raise TypeError(f"PipelineStage: module must be a minigrad.nn.Module, got "
                            f"{type(module).__name__}")
        if not isinstance(optimizer, Optimizer):
            raise TypeError(f"PipelineStage: optimizer must be a minigrad Optimizer, got "
                            f"{type(optimizer).__name__}")
        if is_last and not callable(loss_fn):
            raise TypeError("PipelineStage: the last stage needs a loss_fn(output, target)")
        self.module = module
        self.optimizer = optimizer
        self.micro_batches = micro_batches
        self.is_first = bool(is_first)
        self.is_last = bool(is_last)
        self.loss_fn = loss_fn
        self.num_items = num_items if num_items is not None else len
        self.checkpoint = bool(checkpoint)
        self.measure_stash = bool(measure_stash)
        self.accumulator = StageAccumulator(optimizer, micro_batches, scheduler=scheduler)
        params = list(module.parameters())
        self.device = params[0].device if params else "cpu"
        self.stash = {}
        self._targets = {}
        self._losses = {}       # L_j of the last stage, read once (a wait on the GPU)
        self._begin_window()

    def _begin_window(self):
        self.peak_stash = 0
        self.peak_stash_bytes = 0 if self.measure_stash else None

    def stash_bytes(self) -> int:
        """Bytes held now by the stash: stage inputs plus the graphs to backward through.

        For each stashed micro-batch: its input's data, plus :func:`graph_bytes`
        of its output (parameters excluded).  With ``checkpoint`` this is the
        inputs alone (and, on the last stage, the targets).
        """
        params = [p.data for p in self.module.parameters()]
        seen_inputs = 0
        total = 0
        for x, y in self.stash.values():
            seen_inputs += int(x.data.nbytes)
            total += graph_bytes(y, exclude=params + [x.data])
        return seen_inputs + total

    # ------------------------------------------------------------------ forward
    def forward(self, j, x, target=None):
        """Micro-batch j's forward; stash what backward needs.

        Args:
            j: the micro-batch index.
            x: the stage's input array (the data on the first stage, the
                previous stage's output elsewhere), on any device.
            target: the micro-batch's targets (last stage only).

        Returns:
            The output array (for the next stage); on the last stage, the
            mean loss L_j as a float.

        Raises:
            RuntimeError: micro-batch j is already stashed.
            ValueError: no ``target`` on the last stage.
        """
        if j in self.stash:
            raise RuntimeError(f"PipelineStage.forward: micro-batch {j} was already "
                               "forwarded and not yet backwarded")
        if not self.stash and self.accumulator.micro_step == 0:
            self._begin_window()
        # Later stages need the gradient at their input, to send it upstream.
        x = Tensor(backend.to_device(x, self.device), requires_grad=not self.is_first)
        if self.is_last:
            if target is None:
                raise ValueError("PipelineStage.forward: the last stage needs the "
                                 "micro-batch's target")
            self._targets[j] = target
            if not isinstance(target, Tensor):
                target = Tensor(backend.to_device(backend.as_array(target), self.device))
            # With checkpointing the loss is inside the recomputed piece: the
            # stash then holds the stage's inputs (x and the target) only.
            y = _checkpoint(self._forward_loss, x, target) if self.checkpoint else \
                self._forward_loss(x, target)
        else:
            y = _checkpoint(self.module, x) if self.checkpoint else self.module(x)
        self.stash[j] = (x, y)
        self.peak_stash = max(self.peak_stash, len(self.stash))
        if self.measure_stash:
            self.peak_stash_bytes = max(self.peak_stash_bytes, self.stash_bytes())
        if not self.is_last:
            return y.data
        self._losses[j] = float(y.item())     # read on the host once: L_j travels upstream
        return self._losses[j]

    def _forward_loss(self, x, target):
        return self.loss_fn(self.module(x), target)

    # ----------------------------------------------------------------- backward
    def backward(self, j, grad=None, num_items=None, loss=None):
        """Micro-batch j's backward; the m-th one of a window updates the stage.

        Args:
            j: the micro-batch index (forwarded before).
            grad: the gradient of ``n_j L_j`` with respect to this stage's
                output (an array; None on the last stage).
            num_items, loss: n_j and L_j as the last stage computed them (None
                on the last stage, which computes them).

        Returns:
            ``(grad_input, num_items, loss)``: the gradient of ``n_j L_j`` at
            this stage's input (None on the first stage; zeros if the input
            received no gradient or the micro-batch has no items; nan for a
            non-finite loss of a micro-batch with items), and n_j, L_j to
            pass upstream.

        Raises:
            KeyError: micro-batch j is not stashed.
        """
        if j not in self.stash:
            raise KeyError(f"PipelineStage.backward: micro-batch {j} is not stashed "
                           f"(stashed: {sorted(self.stash)})")
        x, y = self.stash.pop(j)
        if self.is_last:
            target = self._targets.pop(j)
            num_items = self.num_items(target)
            loss = self._losses.pop(j)
            self.accumulator.backward(y, num_items=num_items)
        else:
            grad = backend.to_device(grad, self.device)
            self.accumulator.backward_output(y, grad, num_items, loss)
        grad_input = None
        if not self.is_first:
            xp = backend.get_array_module(x.data)
            if not math.isfinite(loss) and num_items != 0:     # zero items: zeros
                grad_input = xp.full(x.shape, np.nan, dtype=x.dtype)
            elif x.grad is None:
                grad_input = xp.zeros(x.shape, dtype=x.dtype)
            else:
                grad_input = x.grad.data
        self.accumulator.step()
        return grad_input, num_items, loss
