"""The local executor: every stage of a pipeline in one process.

It runs a schedule for real on a real model: the stages are slices of one
``Sequential``, each with its own optimizer and accumulator
(:class:`~minigrad.pipeline.stage.PipelineStage`), and the arrays that would
travel between machines are handed from one stage to the next.  The
operations run one at a time, in the order of the simulated clock
(:func:`~minigrad.pipeline.simulate`), so the stash of each stage rises and
falls exactly as on a real pipeline.
"""
from __future__ import annotations

import numbers


from .schedules import check_schedule, get_schedule
from .simulate import simulate
from .stage import PipelineStage

__all__ = ["LocalPipeline", "split_batch"]


def split_batch(array, m: int) -> list:
    """Cut an array into m micro-batches along axis 0 (``numpy.array_split``).

    Sizes differ by at most one (100 into 3 gives 34, 33, 33); the
    accumulators weight each by its item count, so unequal sizes are exact.

    Raises:
        ValueError: fewer rows than micro-batches (an empty micro-batch has no
            mean loss).
    """
    n = len(array)
    if n < m:
        raise ValueError(f"split_batch: a batch of {n} items cannot be cut into {m} "
                         f"non-empty micro-batches")
    bounds = [(n // m) * k + min(k, n % m) for k in range(m + 1)]
    return [array[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


class LocalPipeline:
    """Run a pipeline schedule over p stages in one process, one update per batch.

    Args:
        stages: p :class:`~minigrad.nn.Module` stages (e.g. from
            :func:`~minigrad.pipeline.split_sequential`).
        optimizers: p optimizers, ``optimizers[s]`` over ``stages[s]``'s parameters.
        loss_fn: ``loss_fn(output, target) -> mean loss`` on the last stage.
        micro_batches: m, micro-batches per batch (one update per batch).
        schedule: ``"gpipe"``, ``"1f1b"``, or an explicit schedule (p lists of
            ``("F", j)`` / ``("B", j)``).
        num_items, checkpoint, measure_stash: passed to every
            :class:`~minigrad.pipeline.stage.PipelineStage`.

    Attributes:
        stages: the :class:`PipelineStage` objects.
        schedule: the schedule run, p lists of ops.
        order: the global order the ops run in, ``(s, op, j)``.

    Raises:
        ValueError: ``len(optimizers) != len(stages)``, an unknown schedule,
            a schedule for other p or m, or (1F1B) m < p.
    """

    def __init__(self, stages, optimizers, loss_fn, micro_batches, schedule="1f1b", *,
                 num_items=None, checkpoint=False, measure_stash=False):
        stages, optimizers = list(stages), list(optimizers)
        p = len(stages)
        if p < 1 or len(optimizers) != p:
            raise ValueError(f"LocalPipeline: need one optimizer per stage, got "
                             f"{len(stages)} stages and {len(optimizers)} optimizers")
        if isinstance(micro_batches, bool) or not isinstance(micro_batches, numbers.Integral) \
                or micro_batches < 1:
            raise ValueError(f"LocalPipeline: micro_batches must be an int >= 1, got "
                             f"{micro_batches!r}")
        m = int(micro_batches)
        self.schedule = get_schedule(schedule, p, m) if isinstance(schedule, str) else schedule
        if check_schedule(self.schedule) != (p, m):
            raise ValueError(f"LocalPipeline: the schedule is for (p, m) = "
                             f"{check_schedule(self.schedule)}, expected {(p, m)}")
        self.micro_batches = m
        self.stages = [PipelineStage(module, opt, m, is_first=s == 0, is_last=s == p - 1,
                                     loss_fn=loss_fn, num_items=num_items,
                                     checkpoint=checkpoint, measure_stash=measure_stash)
                       for s, (module, opt) in enumerate(zip(stages, optimizers))]
        self.order = [(s, kind, j) for s, kind, j, _, _ in simulate(self.schedule).timeline]

    def step(self, inputs, targets) -> float:
        """One batch: m micro-batches through the schedule, one update per stage.

        Args:
            inputs: the batch's inputs, shape (N, ...), N >= m.
            targets: its targets, N rows.

        Returns:
            The batch's mean loss, ``sum_j n_j L_j / sum_j n_j`` (float).
        """
        if len(inputs) != len(targets):
            raise ValueError(f"LocalPipeline.step: {len(inputs)} inputs but "
                             f"{len(targets)} targets")
        xs = split_batch(inputs, self.micro_batches)
        ys = split_batch(targets, self.micro_batches)
        last = len(self.stages) - 1
        activations = {}            # (s, j) -> array arriving at stage s
        gradients = {}              # (s, j) -> (grad, n_j, L_j) arriving at stage s
        for s, kind, j in self.order:
            stage = self.stages[s]
            if kind == "F":
                x = xs[j] if s == 0 else activations.pop((s, j))
                out = stage.forward(j, x, ys[j] if s == last else None)
                if s < last:
                    activations[(s + 1, j)] = out
            else:
                grad, n, loss = gradients.pop((s, j), (None, None, None))
                grad_in, n, loss = stage.backward(j, grad, n, loss)
                if s > 0:
                    gradients[(s - 1, j)] = (grad_in, n, loss)
        return self.stages[-1].accumulator.window_loss

    @property
    def peak_stash(self) -> tuple:
        """Per stage, the most micro-batches stashed at once in the last batch."""
        return tuple(stage.peak_stash for stage in self.stages)

    @property
    def peak_stash_bytes(self) -> tuple:
        """Per stage, the most bytes stashed at once in the last batch (measure_stash)."""
        return tuple(stage.peak_stash_bytes for stage in self.stages)
