"""minigrad.pipeline: pipeline parallelism, micro-batches streaming through stages.

A model cut into p stages; a batch cut into m micro-batches that flow through
them; one optimizer update per stage after the last backward.  The update is
the full batch's: each stage accumulates its gradients over the m
micro-batches, weighted by their item counts (gradient accumulation, seen from
the side).

- ``schedules``: ``gpipe(p, m)``, ``one_f_one_b(p, m)``: per stage, the order of
  its ("F", j) / ("B", j) operations.
- ``simulate``: a simulated clock: makespan, bubble fraction, peak stash;
  ``plot_timeline`` draws the Gantt chart.
- ``stage``: ``PipelineStage`` (a slice of the model with its optimizer and
  accumulator), ``split_sequential``.
- ``local``: ``LocalPipeline``, every stage in one process.
- ``mpi``: ``MPIPipeline``, one MPI rank per stage (imports mpi4py when made).
"""
from .schedules import SCHEDULES, check_schedule, get_schedule, gpipe, one_f_one_b
from .simulate import SimulationResult, bubble_formula, peak_stash, plot_timeline, simulate
from .stage import PipelineStage, StageAccumulator, graph_bytes, split_sequential
from .local import LocalPipeline, split_batch
from .mpi import MPIPipeline   # mpi4py is imported only when an MPIPipeline is made

__all__ = ["gpipe", "one_f_one_b", "SCHEDULES", "get_schedule", "check_schedule", "simulate",
           "SimulationResult", "peak_stash", "plot_timeline", "bubble_formula",
           "PipelineStage", "StageAccumulator", "graph_bytes", "split_sequential",
           "LocalPipeline", "split_batch", "MPIPipeline"]
