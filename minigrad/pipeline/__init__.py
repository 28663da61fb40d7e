"""minigrad.pipeline: pipeline parallelism, micro-batches streaming through stages."""
from .schedules import SCHEDULES, check_schedule, get_schedule, gpipe, one_f_one_b
from .simulate import SimulationResult, bubble_formula, peak_stash, plot_timeline, simulate
from .stage import PipelineStage, StageAccumulator, graph_bytes, split_sequential
from .local import LocalPipeline, split_batch
