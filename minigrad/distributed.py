"""Data parallelism on MPI: W processes, one gradient all-reduce per window.

W processes (ranks) each hold a copy of the model.  In every window each rank
runs k micro-batches of its own shard of the window's items through forward
and backward, accumulating ``sum_j n_j grad L_j`` locally, exactly as the
single-process :class:`~minigrad.optim.GradientAccumulator`.  Only at the
window's last micro-batch do the ranks talk: the gradient buffers and the
item count are packed into **one** contiguous array and summed over the ranks
by **one** in-place ``Allreduce``; every rank then divides by the global item
count N = sum over ranks and micro-batches of n_j, and takes the same
optimizer step.  So W ranks × k micro-batches × b items give the update of one
batch of W·k·b items, whatever W and k are, to rounding::

    grad L = (1/N) sum_r sum_j n_rj grad L_rj,      N = sum_r sum_j n_rj

Deferring the exchange to the window's end is what PyTorch's
``DistributedDataParallel.no_sync()`` and fairseq's ``--update-freq`` do
(Ott et al., 2018, "Scaling Neural Machine Translation"): 1 collective per
window instead of k.

What lives here:

- :func:`init`, :func:`rank`, :func:`world_size`: the communicator.  Under
  ``mpiexec`` it is mpi4py's ``MPI.COMM_WORLD``; run alone (or without
  mpi4py) it is a :class:`LocalCommunicator` of size 1 with the same methods.
  ``import minigrad`` never imports mpi4py; :func:`init` does, and only when
  the process was started by an MPI launcher.
- :func:`broadcast_parameters` and :func:`check_parameters_identical`
  (bitwise, by a SHA-256 digest of every parameter and buffer).
- :class:`DistributedWindowSampler`: each window's items cut into W shards
  (sizes differing by at most one) and each shard into micro-batches.
- :func:`reduce_window`: the one all-reduce of a window, called by
  ``GradientAccumulator(..., comm=comm)``.
- :class:`CountingCommunicator`: counts collectives and bytes, for the proofs.
- :class:`~minigrad.nn.SyncBatchNorm` and :func:`convert_sync_batchnorm`
  (defined in :mod:`minigrad.nn.sync_batchnorm`, re-exported here).

Launch (one BLAS thread per rank; ``python -m mpi4py`` aborts every rank when
one raises)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
        mpiexec -n 4 python -m mpi4py -m minigrad verify --distributed
"""
from __future__ import annotations

import hashlib
import numbers
import os
import pickle
import shutil
import sys
from pathlib import Path

import numpy as np

from . import backend
from .nn import sync_batchnorm
from .nn.sync_batchnorm import SyncBatchNorm, convert_sync_batchnorm
from .tensor import Tensor

__all__ = ["init", "rank", "world_size", "is_launched", "LocalCommunicator",
           "CountingCommunicator", "broadcast_parameters", "check_parameters_identical",
           "parameters_digest", "DistributedWindowSampler", "reduce_window",
           "allreduce_sum_", "find_mpiexec", "launcher_env", "SyncBatchNorm",
           "convert_sync_batchnorm", "IN_PLACE"]


class _InPlace:
    """The in-place marker of :class:`LocalCommunicator` (``MPI.IN_PLACE`` in mpi4py)."""

    def __repr__(self):
        return "IN_PLACE"


IN_PLACE = _InPlace()

# Environment variables that MPI launchers set in every process they start:
# MPICH's Hydra (PMI), Open MPI, Slurm's srun with PMI.
_LAUNCHER_VARIABLES = ("PMI_SIZE", "PMI_RANK", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK")

_COMM = None


class LocalCommunicator:
    """A communicator of one process, with the methods of mpi4py's ``Comm`` used here.

    Collectives over one rank copy the send buffer to the receive buffer (or
    do nothing in place), so code written for W ranks runs unchanged alone.
    """

    rank = 0
    size = 1

    def Get_rank(self) -> int:  # noqa: N802 (mpi4py's names)
        return 0

    def Get_size(self) -> int:  # noqa: N802
        return 1

    @staticmethod
    def _buffer(buf):
        """mpi4py accepts ``[array, MPI.DOUBLE]``-style lists; take the array."""
        return buf[0] if isinstance(buf, (list, tuple)) else buf

    def Allreduce(self, sendbuf, recvbuf, op=None):  # noqa: N802
        """Sum over one rank: copy ``sendbuf`` into ``recvbuf`` (nothing when in place)."""
        if not isinstance(self._buffer(sendbuf), np.ndarray):   # IN_PLACE (ours or MPI's)
            return
        np.copyto(self._buffer(recvbuf), self._buffer(sendbuf))

    def Allgather(self, sendbuf, recvbuf):  # noqa: N802
        """Gather over one rank: ``recvbuf`` (1, ...) receives ``sendbuf``."""
        recv = self._buffer(recvbuf)
        recv.reshape(-1)[...] = np.asarray(self._buffer(sendbuf)).reshape(-1)

    def Bcast(self, buf, root=0):  # noqa: N802
        self._check_root(root)

    def Barrier(self):  # noqa: N802
        return None

    def allreduce(self, obj, op=None):
        return obj

    def allgather(self, obj):
        return [obj]

    def bcast(self, obj, root=0):
        self._check_root(root)
        return obj

    def Abort(self, errorcode=1):  # noqa: N802
        os._exit(errorcode)

    @staticmethod
    def _check_root(root):
        if root != 0:
            raise ValueError(f"LocalCommunicator: root must be 0 in a world of size 1, "
                             f"got {root}")

    def __repr__(self):
        return "LocalCommunicator(size=1)"


class CountingCommunicator:
    """Wrap a communicator and count its collectives and the bytes they carry.

    Every ``Allreduce``, ``Allgather``, ``Bcast`` (buffer interface) and
    ``allreduce``, ``allgather``, ``bcast`` (pickled objects) call adds one
    to :attr:`collectives` and the size of this rank's contribution to
    :attr:`bytes` (``nbytes`` of the buffer; ``len(pickle.dumps(obj))`` for
    objects); :attr:`calls` lists ``(method, bytes)``.  Other attributes go
    to the wrapped communicator.
    """

    def __init__(self, comm):
        self.base = comm
        self.reset()

    def reset(self) -> None:
        """Set the counts back to zero."""
        self.collectives = 0
        self.bytes = 0
        self.calls = []

    def _count(self, method, nbytes):
        self.collectives += 1
        self.bytes += int(nbytes)
        self.calls.append((method, int(nbytes)))

    @staticmethod
    def _nbytes(buf, other=None):
        if isinstance(buf, (list, tuple)):
            buf = buf[0]
        if not hasattr(buf, "nbytes"):          # IN_PLACE: the receive buffer's size
            buf = other[0] if isinstance(other, (list, tuple)) else other
        return buf.nbytes

    def Allreduce(self, sendbuf, recvbuf, *args, **kwargs):  # noqa: N802
        self._count("Allreduce", self._nbytes(sendbuf, recvbuf))
        return self.base.Allreduce(sendbuf, recvbuf, *args, **kwargs)

    def Allgather(self, sendbuf, recvbuf):  # noqa: N802
        self._count("Allgather", self._nbytes(sendbuf))
        return self.base.Allgather(sendbuf, recvbuf)

    def Bcast(self, buf, root=0):  # noqa: N802
        self._count("Bcast", self._nbytes(buf))
        return self.base.Bcast(buf, root=root)

    def allreduce(self, obj, *args, **kwargs):
        self._count("allreduce", len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)))
        return self.base.allreduce(obj, *args, **kwargs)

    def allgather(self, obj):
        self._count("allgather", len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)))
        return self.base.allgather(obj)

    def bcast(self, obj, root=0):
        self._count("bcast", len(pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)))
        return self.base.bcast(obj, root=root)

    def __getattr__(self, name):
        return getattr(self.base, name)

    def __repr__(self):
        return (f"CountingCommunicator({self.base!r}, collectives={self.collectives}, "
                f"bytes={self.bytes})")


# --------------------------------------------------------------------- the world
def is_launched() -> bool:
    """True when this process was started by an MPI launcher (mpiexec, srun),
    or mpi4py is already imported (``python -m mpi4py ...``)."""
    return "mpi4py.MPI" in sys.modules or any(v in os.environ for v in _LAUNCHER_VARIABLES)


def init(timeout: float | None = None):
    """The communicator of this process (created once, then cached).

    ``MPI.COMM_WORLD`` of mpi4py when the process was started by an MPI
    launcher (``mpiexec -n W python -m mpi4py script.py``); otherwise (run
    alone, or mpi4py not installed) a :class:`LocalCommunicator` of size 1.

    Args:
        timeout: seconds every rank has to reach MPI's initialization (default
            ``MINIGRAD_INIT_TIMEOUT`` from the environment, else 60; 0 waits
            forever).  MPI initializes only when all W ranks do, so a rank that
            died before it (before even importing minigrad) would leave the
            others waiting forever; past the timeout this process exits with
            status 1 and a traceback ending in
            ``_mpi_world_waiting_for_every_rank``, and the launcher ends the job.

    Raises:
        ImportError: started by a launcher of W > 1 processes but mpi4py is
            missing (``pip install 'minigrad[distributed]'``).
    """
    global _COMM
    if _COMM is None:
        if is_launched():
            try:
                MPI = _mpi_world_waiting_for_every_rank(_init_timeout(timeout))
            except ImportError:
                if int(os.environ.get("PMI_SIZE", os.environ.get(
                        "OMPI_COMM_WORLD_SIZE", "1"))) > 1:
                    raise ImportError("minigrad.distributed: started by an MPI launcher "
                                      "but mpi4py is not installed; pip install "
                                      "'minigrad[distributed]'") from None
                _COMM = LocalCommunicator()
            else:
                _COMM = MPI.COMM_WORLD
                if _COMM.Get_size() > 1:
                    _abort_on_uncaught_exception()
        else:
            _COMM = LocalCommunicator()
    return _COMM


sync_batchnorm.default_process_group = init     # SyncBatchNorm's default communicator


def _init_timeout(timeout) -> float:
    """``init``'s timeout: the argument, else ``MINIGRAD_INIT_TIMEOUT``, else 60 s."""
    if timeout is None:
        text = os.environ.get("MINIGRAD_INIT_TIMEOUT", "60")
        try:
            timeout = float(text)
        except ValueError:
            raise ValueError(f"MINIGRAD_INIT_TIMEOUT must be a number of seconds, "
                             f"got {text!r}") from None
    if not timeout >= 0:
        raise ValueError(f"init: timeout must be a number of seconds >= 0 (0: wait "
                         f"forever), got {timeout!r}")
    return float(timeout)


def _mpi_world_waiting_for_every_rank(timeout: float):
    """Import mpi4py's ``MPI`` (which initializes MPI: every rank must arrive)
    under a watchdog: past ``timeout`` seconds the process exits with status 1.
    The watchdog is faulthandler's, a thread of C: MPI_Init holds the
    interpreter, so a Python thread or signal handler would never run."""
    if "mpi4py.MPI" in sys.modules or timeout == 0:     # python -m mpi4py: done already
        from mpi4py import MPI  # noqa: PLC0415
        return MPI
    import faulthandler  # noqa: PLC0415
    stream = sys.__stderr__ if sys.__stderr__ is not None else sys.stderr
    faulthandler.dump_traceback_later(timeout, exit=True, file=stream)
    try:
        from mpi4py import MPI  # noqa: PLC0415 (optional, loaded on demand)
    finally:
        faulthandler.cancel_dump_traceback_later()
    return MPI


def _launched_world_size() -> int:
    """W as the launcher's environment gives it (1 when not launched): MPICH's
    and Intel MPI's ``PMI_SIZE``, Open MPI's ``OMPI_COMM_WORLD_SIZE``,
    MVAPICH's ``MV2_COMM_WORLD_SIZE``, and under ``srun`` with PMIx (a
    ``PMIX_RANK`` but no size variable) Slurm's ``SLURM_STEP_NUM_TASKS``."""
    names = ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "MV2_COMM_WORLD_SIZE"]
    if "PMIX_RANK" in os.environ or "PMI_RANK" in os.environ:
        names.append("SLURM_STEP_NUM_TASKS")
    for name in names:
        try:
            return int(os.environ[name])
        except (KeyError, ValueError):
            continue
    return 1


def _abort_on_uncaught_exception() -> None:
    """An uncaught exception on one rank aborts every rank (exit status 1)
    instead of leaving the others waiting forever in a collective.

    Installed by ``import minigrad`` in every process an MPI launcher starts
    with W > 1 (so a rank that fails before :func:`init` ends the job too),
    and by :func:`init`.  The hook imports mpi4py only when an exception
    reaches it (MPI_Abort needs MPI initialized), so ``import minigrad`` still
    loads no MPI.  ``python -m mpi4py`` aborts only if mpi4py was imported
    before the exception, so it needs this too.  A rank that dies before
    importing minigrad leaves the others in :func:`init`, which exits after
    its timeout.  Not covered: a rank that calls ``sys.exit(1)`` after
    :func:`init` (no exception reaches the hook): the launcher then waits for
    the others.
    """
    global _ABORT_HOOK_INSTALLED
    if _ABORT_HOOK_INSTALLED:
        return
    _ABORT_HOOK_INSTALLED = True
    previous = sys.excepthook

    def hook(kind, value, traceback):
        previous(kind, value, traceback)
        sys.stderr.flush()
        try:
            from mpi4py import MPI  # noqa: PLC0415 (only now: an exception to abort on)
        except ImportError:
            return
        MPI.COMM_WORLD.Abort(1)
    sys.excepthook = hook


_ABORT_HOOK_INSTALLED = False
if _launched_world_size() > 1:
    _abort_on_uncaught_exception()


def rank(comm=None) -> int:
    """This process's rank, 0 ... W-1 (0 when alone)."""
    return (comm or init()).Get_rank()


def world_size(comm=None) -> int:
    """W, the number of processes (1 when alone)."""
    return (comm or init()).Get_size()


def _mpi_of(comm):
    """mpi4py's MPI module for an mpi4py communicator, None for a local one."""
    while isinstance(comm, CountingCommunicator):
        comm = comm.base
    if isinstance(comm, LocalCommunicator):
        return None
    from mpi4py import MPI  # noqa: PLC0415
    return MPI


def allreduce_sum_(comm, buf: np.ndarray) -> np.ndarray:
    """Sum the contiguous NumPy array ``buf`` over all ranks, in place (one
    ``Allreduce`` with ``IN_PLACE``); returns ``buf``.

    Raises:
        TypeError: ``buf`` is not a C-contiguous NumPy array.
    """
    if not isinstance(buf, np.ndarray) or not buf.flags.c_contiguous:
        raise TypeError(f"allreduce_sum_: expected a C-contiguous NumPy array, got "
                        f"{type(buf).__name__}")
    mpi = _mpi_of(comm)
    if mpi is None:
        comm.Allreduce(IN_PLACE, buf)
    else:
        comm.Allreduce(mpi.IN_PLACE, buf, op=mpi.SUM)
    return buf


# ------------------------------------------------------- parameters on every rank
def _state_tensors(model):
    """Every parameter, then every buffer, of ``model`` (registration order)."""
    return [p for _, p in model.named_parameters()] + \
        [b for _, b in model.named_buffers() if b is not None]


def broadcast_parameters(model, root: int = 0, comm=None) -> None:
    """Copy rank ``root``'s parameters and buffers to every rank, in place.

    Call it once after building the model, so that every rank starts from the
    same weights (and BatchNorm running statistics).  CuPy arrays are staged
    through the host.  One ``Bcast`` per tensor.

    Raises:
        TypeError: ``model`` is not a minigrad ``nn.Module``.
        ValueError: ``root`` is not a rank of ``comm``.
    """
    comm = comm or init()
    _check_module("broadcast_parameters", model)
    comm_root = _check_rank("broadcast_parameters", root, comm)
    for t in _state_tensors(model):
        host = np.ascontiguousarray(backend.asnumpy(t.data))
        comm.Bcast(host, root=comm_root)
        t.data[...] = backend.to_device(host, t.device)


def _check_module(where, model) -> None:
    from .nn import Module  # noqa: PLC0415
    if not isinstance(model, Module):
        raise TypeError(f"{where}: model must be a minigrad nn.Module, got "
                        f"{type(model).__name__}")


def _check_rank(where, root, comm) -> int:
    size = comm.Get_size()
    if isinstance(root, bool) or not isinstance(root, numbers.Integral) or \
            not 0 <= root < size:
        raise ValueError(f"{where}: root must be a rank in [0, {size}), got {root!r}")
    return int(root)


def parameters_digest(model) -> bytes:
    """SHA-256 of the bytes of every parameter and buffer (with shapes and dtypes)."""
    digest = hashlib.sha256()
    for t in _state_tensors(model):
        host = np.ascontiguousarray(backend.asnumpy(t.data))
        digest.update(f"{host.dtype.str}{host.shape}".encode())
        digest.update(host.tobytes())
    return digest.digest()


def check_parameters_identical(model, comm=None) -> bool:
    """True when every rank holds bitwise-identical parameters and buffers.

    Each rank hashes its tensors (:func:`parameters_digest`); one
    ``Allgather`` of the 32-byte digests lets every rank compare them all, so
    every rank returns the same answer.
    """
    comm = comm or init()
    mine = np.frombuffer(parameters_digest(model), dtype=np.uint8).copy()
    every = np.empty((world_size(comm), mine.size), dtype=np.uint8)
    comm.Allgather(mine, every)
    return bool((every == every[0]).all())


# --------------------------------------------------------------------- the data
class DistributedWindowSampler:
    """Shard each window of items across the ranks, then into micro-batches.

    The epoch's order (a permutation of ``range(dataset_size)`` seeded by
    ``seed + epoch``, or the identity with ``shuffle=False``) is cut into
    windows of ``window_size`` items (the last one shorter unless
    ``drop_last``).  Window w's items are cut into W contiguous shards whose
    sizes differ by at most one (``numpy.array_split``: uneven shards are
    allowed), and rank r's shard into m micro-batches, again by
    ``array_split``.  m = k for a full window; for a short last window of n
    items m = min(k, n // W), the same on every rank, so every rank makes the
    same number of ``step()`` calls and closes the window with ``flush()``.

    Unlike ``torch.utils.data.DistributedSampler``, which repeats items to
    give every rank the same count, no item is repeated or dropped (except by
    ``drop_last``): the accumulator's item counts ``num_items=len(idx)``
    carry the weighting, so uneven shards give the full-batch update.

    Args:
        dataset_size: number of items.
        window_size: items per optimizer update, over all ranks (W·k·b).
        accumulation_steps: k, micro-batches per rank per window.
        num_replicas, rank: W and r (default: from :func:`init`).
        shuffle, seed: the epoch's permutation.
        drop_last: drop a last window shorter than ``window_size``.

    Iterating yields, per window, a list of this rank's micro-batches (each
    an int64 index array).

    Raises:
        ValueError: ``window_size < W·k`` (some micro-batch would be empty),
            a rank outside 0 ... W-1, or a last window of fewer than W items
            without ``drop_last``.
    """

    def __init__(self, dataset_size, window_size, accumulation_steps, num_replicas=None,
                 rank=None, shuffle=True, seed=0, drop_last=False):
        num_replicas = world_size() if num_replicas is None else num_replicas
        rank = globals()["rank"]() if rank is None else rank
        for label, value in (("dataset_size", dataset_size), ("window_size", window_size),
                             ("accumulation_steps", accumulation_steps),
                             ("num_replicas", num_replicas)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"DistributedWindowSampler: {label} must be a positive "
                                 f"int, got {value!r}")
        if not 0 <= rank < num_replicas:
            raise ValueError(f"DistributedWindowSampler: rank must be in [0, {num_replicas}),"
                             f" got {rank}")
        if window_size < num_replicas * accumulation_steps:
            raise ValueError(f"DistributedWindowSampler: window_size {window_size} < "
                             f"num_replicas * accumulation_steps = {num_replicas} * "
                             f"{accumulation_steps}; some micro-batches would be empty")
        last = dataset_size % window_size
        if last and not drop_last and last < num_replicas:
            raise ValueError(f"DistributedWindowSampler: the last window has {last} items "
                             f"for {num_replicas} ranks; pass drop_last=True or a "
                             f"dataset_size whose remainder is >= {num_replicas}")
        self.dataset_size, self.window_size = int(dataset_size), int(window_size)
        self.accumulation_steps = int(accumulation_steps)
        self.num_replicas, self.rank = int(num_replicas), int(rank)
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.epoch = 0

    def set_epoch(self, epoch: int) -> None:
        """Choose the epoch's permutation (as PyTorch's ``set_epoch``)."""
        self.epoch = int(epoch)

    def order(self) -> np.ndarray:
        """The epoch's item order, the same on every rank."""
        if not self.shuffle:
            return np.arange(self.dataset_size)
        return np.random.default_rng(self.seed + self.epoch).permutation(self.dataset_size)

    def __len__(self) -> int:
        full, last = divmod(self.dataset_size, self.window_size)
        return full + (1 if last and not self.drop_last else 0)

    def window_indices(self, window: int) -> np.ndarray:
        """Every item of window ``window`` (all ranks), in order."""
        start = window * self.window_size
        return self.order()[start:start + self.window_size]

    def micro_batches(self, indices, rank=None) -> list:
        """Rank ``rank``'s micro-batches of a window holding ``indices``."""
        rank = self.rank if rank is None else rank
        # BEGIN SOLUTION ch10.3
        shard = np.array_split(np.asarray(indices), self.num_replicas)[rank]
        m = min(self.accumulation_steps, len(indices) // self.num_replicas)
        return np.array_split(shard, m)
        # END SOLUTION

    def __iter__(self):
        for w in range(len(self)):
            yield self.micro_batches(self.window_indices(w))

    def shard_table(self, window: int = 0) -> list:
        """The micro-batch sizes of window ``window``, one list per rank."""
        idx = self.window_indices(window)
        return [[len(mb) for mb in self.micro_batches(idx, r)]
                for r in range(self.num_replicas)]


# ------------------------------------------------------------ the window's reduce
def reduce_window(accumulator) -> bool:
    """Sum one window of ``accumulator`` over the ranks of ``accumulator.comm``.

    Packs every parameter's accumulated gradient ``sum_j n_j grad L_j`` (zeros
    where a rank has none), one has-a-gradient flag per parameter, the item
    total, the item-weighted loss sum and a non-finite flag into **one**
    contiguous NumPy buffer (the parameters' common dtype, at least float32 so
    that the item total is exact up to 2**24 and never inf; CuPy gradients are
    packed on the device and copied to the host once), runs **one** in-place
    ``Allreduce``, and writes the sums back: gradients (to their device), the
    global item total N and loss sum, the global non-finite flag.  The
    accumulator then divides by N as usual.  A parameter without a gradient
    on every rank keeps ``grad = None``.

    Returns:
        False when the window is empty on every rank (then the window is
        reset and nothing else changes), else True.
    """
    comm = accumulator.comm
    params, window = accumulator.optimizer._params(), accumulator.window
    if not params:
        raise ValueError("reduce_window: the optimizer has no parameters")
    # BEGIN SOLUTION ch10.1
    dtype = np.result_type(np.float32, *[p.dtype for p in params])   # counts: never float16
    sizes = [int(np.prod(p.shape)) for p in params]
    n_grad = sum(sizes)
    xp = backend.get_array_module(params[0].data)
    packed = xp.zeros(n_grad + len(params) + 3, dtype=dtype)
    offset = 0
    for i, (p, size) in enumerate(zip(params, sizes)):
        if p.grad is not None:
            packed[offset:offset + size] = p.grad.data.reshape(-1)
            packed[n_grad + i] = 1
        offset += size
    host = np.ascontiguousarray(backend.asnumpy(packed))      # one device -> host copy
    host[-3:] = (window.item_total, window.loss_sum, 1.0 if window.nonfinite else 0.0)
    allreduce_sum_(comm, host)                                 # the window's one collective
    total = host[-3].item()
    if total == 0:
        accumulator.optimizer.zero_grad()
        accumulator._reset_window()
        return False
    device = params[0].device
    summed = backend.to_device(host, device)                   # one host -> device copy
    offset = 0
    for i, (p, size) in enumerate(zip(params, sizes)):
        if host[n_grad + i] > 0:
            grad = summed[offset:offset + size].reshape(p.shape).astype(p.dtype)
            p.grad = Tensor(grad)
        offset += size
    window.item_total = int(total) if float(total).is_integer() else total
    window.loss_sum = host[-2].item()
    window.nonfinite = bool(host[-1] > 0)
    return True
    # END SOLUTION


# ----------------------------------------------------------------- the launcher
def find_mpiexec() -> str | None:
    """Path of ``mpiexec``: next to the running Python first (the ``mpich``
    wheel installs it into the environment's ``bin/``), then on PATH; None if absent."""
    here = Path(sys.executable).parent / "mpiexec"
    if here.exists() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("mpiexec")


def launcher_env(base=None) -> dict:
    """The environment for ``mpiexec`` on a small, shared machine: one
    BLAS/OpenMP thread per rank, values already set kept.

    W ranks that each start a BLAS thread pool fight for the cores: 4 ranks
    on 2 cores ran a matmul loop 20 times slower with the default thread
    pools (8.45 s against 0.35-0.48 s; ``benchmarks/bench_distributed.py``).
    """
    env = dict(os.environ if base is None else base)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(key, "1")
    return env
