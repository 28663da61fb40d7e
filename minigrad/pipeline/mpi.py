"""The MPI executor: one process (rank) per stage, arrays sent point to point.

Rank s of a communicator of size p runs stage s.  Forward activations go
from rank s to rank s + 1, gradients from s + 1 back to s, each as two
buffer-based messages: a small float64 *header* (dtype, shape, and the
micro-batch's item count n_j and mean loss L_j, which travel upstream with the
gradient so that every stage normalises by the same global item total), then
the array itself.  Tags are unique per micro-batch and direction, so messages
never match the wrong receive.

Why the sends are non-blocking.  Under 1F1B, in the steady state stage s
finishes F(j) and sends its activation to s + 1 while s + 1 finishes B(i) and
sends its gradient to s.  With a blocking ``Send`` (which, for large
messages, waits until the receiver posts its ``Recv``) both ranks sit in
``Send`` and neither reaches its ``Recv``: a deadlock.  So every send is an
``Isend`` whose request (and buffer) is kept until the request completes:
after each operation the rank tests its pending sends and drops the finished
ones, so a buffer lives only until its receiver has it, and per-rank memory
follows the schedule's stash (bounded under 1F1B) rather than growing with
m; ``Waitall`` at the end of the batch waits for the rest.  Receives block,
in the order of each stage's program.  A stage then
waits only for the data an operation needs, exactly as on the simulated
clock (:func:`~minigrad.pipeline.simulate`), which therefore also proves
that a schedule cannot deadlock here.

``import minigrad.pipeline`` does not import mpi4py; this module imports it
when an :class:`MPIPipeline` is made.  Install it with the ``distributed``
extra (``pip install 'minigrad[distributed]'``, which brings MPICH's
``mpiexec``) and launch with ``mpiexec -n p python script.py``.
"""
from __future__ import annotations

import os
import shutil
import sys
import time

import numpy as np

from .. import backend
from .local import split_batch
from .schedules import check_schedule, get_schedule
from .stage import PipelineStage

__all__ = ["MPIPipeline", "find_mpiexec", "mpiexec_env"]

# Header: [dtype code, ndim, n_items, loss, shape (up to _MAX_DIMS)].
_MAX_DIMS = 8
_HEADER = 4 + _MAX_DIMS
_DTYPES = (np.float16, np.float32, np.float64)
_ACTIVATION, _GRADIENT = 0, 1


def _tag(j: int, direction: int, part: int) -> int:
    """A tag unique to (micro-batch, direction, header or data)."""
    return 4 * j + 2 * direction + part


def find_mpiexec():
    """The ``mpiexec`` next to the running Python (a venv's bin/), else on PATH, else None."""
    here = os.path.join(os.path.dirname(sys.executable), "mpiexec")
    if os.path.isfile(here) and os.access(here, os.X_OK):
        return here
    return shutil.which("mpiexec")


def mpiexec_env(base=None) -> dict:
    """Environment for ranks that share few cores: one BLAS thread, yielding waits.

    ``OMP/OPENBLAS/MKL_NUM_THREADS=1`` keeps each rank on one thread; MPICH's
    ``MPIR_CVAR_POLLS_BEFORE_YIELD`` and ``MPIR_CVAR_POSIX_POLL_FREQUENCY`` set
    to 1 make a rank waiting in ``Recv`` yield its core after every poll instead
    of spinning 1000 times, which matters when ranks outnumber cores.
    """
    env = dict(os.environ if base is None else base)
    env.update({"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
                "MPIR_CVAR_POLLS_BEFORE_YIELD": "1", "MPIR_CVAR_POSIX_POLL_FREQUENCY": "1"})
    return env


class MPIPipeline:
    """This rank's stage of a pipeline spread over an MPI communicator.

    Every rank makes one, with its own stage's module and optimizer; rank s
    is stage s, and the communicator's size is p.

    Args:
        module: this rank's stage (a :class:`~minigrad.nn.Module`).
        optimizer: an optimizer over ``module``'s parameters.
        loss_fn: ``loss_fn(output, target) -> mean loss`` (used by the last rank).
        micro_batches: m, micro-batches per batch (one update per batch).
        schedule: ``"gpipe"``, ``"1f1b"`` or an explicit schedule for (p, m).
        comm: an mpi4py communicator (default ``MPI.COMM_WORLD``).
        num_items, checkpoint, measure_stash: as for
            :class:`~minigrad.pipeline.stage.PipelineStage`.

    Attributes:
        rank, p: this stage's index and the number of stages.
        stage: the :class:`PipelineStage`.
        timeline: after :meth:`step`, ``(rank, op, j, start, end)`` of this
            rank's operations, in seconds from a barrier at the batch's start
            (compute only; waiting for messages is outside the intervals).
        peak_send_bytes: after :meth:`step`, the most bytes of send buffers
            this rank held at once (headers and arrays of pending ``Isend``s).

    Raises:
        ImportError: mpi4py is not installed.
        ValueError: an unknown schedule, one for other (p, m), or (1F1B) m < p.
    """

    def __init__(self, module, optimizer, loss_fn, micro_batches, schedule="1f1b", *,
                 comm=None, num_items=None, checkpoint=False, measure_stash=False):
        from mpi4py import MPI  # noqa: PLC0415 (optional dependency, loaded on use)
        self._mpi = MPI
        self.comm = MPI.COMM_WORLD if comm is None else comm
        self.rank, self.p = self.comm.Get_rank(), self.comm.Get_size()
        m = int(micro_batches)
        schedule = get_schedule(schedule, self.p, m) if isinstance(schedule, str) else schedule
        if check_schedule(schedule) != (self.p, m):
            raise ValueError(f"MPIPipeline: the schedule is for (p, m) = "
                             f"{check_schedule(schedule)}, the communicator has "
                             f"{self.p} ranks and m = {m}")
        self.micro_batches = m
        self.ops = list(schedule[self.rank])
        self.stage = PipelineStage(module, optimizer, m, is_first=self.rank == 0,
                                   is_last=self.rank == self.p - 1, loss_fn=loss_fn,
                                   num_items=num_items, checkpoint=checkpoint,
                                   measure_stash=measure_stash)
        self.timeline = []
        self.peak_send_bytes = 0
        self._pending = []

    # ------------------------------------------------------------ messages
    def _isend(self, array, dest, j, direction, n_items=0.0, loss=0.0):
        data = np.ascontiguousarray(backend.asnumpy(array))
        if data.ndim > _MAX_DIMS or data.dtype.type not in _DTYPES:
            raise ValueError(f"MPIPipeline: can send float16/32/64 arrays of up to "
                             f"{_MAX_DIMS} dimensions, got {data.dtype} of shape {data.shape}")
        header = np.zeros(_HEADER, dtype=np.float64)
        header[:4] = (_DTYPES.index(data.dtype.type), data.ndim, n_items, loss)
        header[4:4 + data.ndim] = data.shape
        for part, buf in ((0, header), (1, data)):
            request = self.comm.Isend(buf, dest=dest, tag=_tag(j, direction, part))
            self._pending.append((request, buf))     # the buffer lives until it is sent
        self._count_send_bytes()

    def _free_completed_sends(self):
        """Forget each send whose request has completed, so its buffer can be freed."""
        self._pending = [(request, buf) for request, buf in self._pending
                         if not request.Test()]

    def _count_send_bytes(self):
        held = sum(int(buf.nbytes) for _, buf in self._pending)
        self.peak_send_bytes = max(self.peak_send_bytes, held)

    def _recv(self, source, j, direction):
        header = np.empty(_HEADER, dtype=np.float64)
        self.comm.Recv(header, source=source, tag=_tag(j, direction, 0))
        code, ndim, n_items, loss = header[:4]
        shape = tuple(int(d) for d in header[4:4 + int(ndim)])
        data = np.empty(shape, dtype=_DTYPES[int(code)])
        self.comm.Recv(data, source=source, tag=_tag(j, direction, 1))
        n_items = int(n_items) if float(n_items).is_integer() else float(n_items)
        return data, n_items, float(loss)

    # ---------------------------------------------------------------- batch
    def step(self, inputs=None, targets=None) -> float:
        """One batch through this rank's program; one update of this stage.

        Args:
            inputs: the batch's inputs, shape (N, ...), on rank 0 (ignored elsewhere).
            targets: its targets, N rows, on the last rank (ignored elsewhere).

        Returns:
            The batch's mean loss ``sum_j n_j L_j / sum_j n_j`` (float), the
            same on every rank (n_j and L_j travel with the gradients).

        Raises:
            ValueError: rank 0 without inputs, or the last rank without targets.
        """
        first, last = self.rank == 0, self.rank == self.p - 1
        if first and inputs is None:
            raise ValueError("MPIPipeline.step: rank 0 (the first stage) needs the inputs")
        if last and targets is None:
            raise ValueError(f"MPIPipeline.step: rank {self.rank} (the last stage) needs "
                             f"the targets")
        xs = split_batch(inputs, self.micro_batches) if first else None
        ys = split_batch(targets, self.micro_batches) if last else None
        self._pending = []
        self.timeline = []
        self.peak_send_bytes = 0
        self.comm.Barrier()
        t0 = time.perf_counter()
        for kind, j in self.ops:
            if kind == "F":
                x = xs[j] if first else self._recv(self.rank - 1, j, _ACTIVATION)[0]
                start = time.perf_counter()
                out = self.stage.forward(j, x, ys[j] if last else None)
                end = time.perf_counter()
                if not last:
                    self._isend(out, self.rank + 1, j, _ACTIVATION)
            else:
                grad, n, loss = (None, None, None) if last else \
                    self._recv(self.rank + 1, j, _GRADIENT)
                start = time.perf_counter()
                grad_in, n, loss = self.stage.backward(j, grad, n, loss)
                end = time.perf_counter()
                if not first:
                    self._isend(grad_in, self.rank - 1, j, _GRADIENT, n, loss)
            self.timeline.append((self.rank, kind, j, start - t0, end - t0))
            self._free_completed_sends()
        self._mpi.Request.Waitall([request for request, _ in self._pending])
        self._pending = []
        return self.stage.accumulator.window_loss
