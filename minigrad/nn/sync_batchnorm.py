"""SyncBatchNorm: batch normalization over the batch of every rank together.

Under data parallelism each of W ranks sees a micro-batch of b items.  A plain
BatchNorm normalizes each rank's b items by their own statistics (a "ghost
batch" of b).  SyncBatchNorm exchanges per-channel summaries so that every
rank normalizes by the statistics of all W·b items, exactly the BatchNorm of
one batch of W·b (Ioffe & Szegedy 2015; PyTorch's ``torch.nn.SyncBatchNorm``):

* **forward**: each rank computes its per-channel (count n_r, mean μ_r,
  M2_r = Σ (x - μ_r)²); one ``Allgather`` gives every rank every summary, and
  each merges them in rank order (Chan, Golub & LeVeque 1979), so all ranks
  hold the same μ and biased σ² = M2 / N, N = Σ n_r;
* **backward**: with dx̂ = γ·dy, the input gradient
  dx = (1/σ)(dx̂ - mean(dx̂) - x̂·mean(dx̂·x̂)) needs the two per-channel sums
  Σ dx̂ and Σ dx̂·x̂ over the whole batch: one ``Allreduce`` of 2C numbers.
  The gradients of γ and β stay local sums; the gradient all-reduce of the
  window adds them up like every other parameter's.

The running statistics move with the global μ and the unbiased M2 / (N - 1),
identically on every rank.  With k > 1 micro-batches per window each
micro-batch is still normalized on its own, by the statistics of its W·b
items: the normalization stays ghost-batch with a ghost batch of W·b, not
W·k·b.  (``merge_running_stats=True``, which ``GradientAccumulator(model=...)``
sets, still makes the *running* statistics those of the whole window.)
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..autograd import Function, is_recomputing
from ..backend import get_array_module
from ..functions.norm import _affine_grads, _channel_affine, channel_shape, moments
from ..tensor import Tensor
from .module import Module
from .normalization import _BatchNorm, _update_running_stats, merge_moments


def _default_comm():
    """The communicator of a SyncBatchNorm made without ``process_group``:
    :func:`minigrad.distributed.init`, which :mod:`minigrad.distributed` hands
    over when it is imported (it imports this module; nn never imports it)."""
    return default_process_group()


default_process_group = None    # minigrad.distributed.init, set by minigrad.distributed


def _allreduce(comm, send: np.ndarray) -> np.ndarray:
    recv = np.empty_like(send)
    comm.Allreduce(send, recv)          # mpi4py's default op is MPI.SUM
    return recv


def global_moments(comm, x):
    """Per-channel (N, mean, M2) over the inputs of every rank, float64 NumPy.

    ``x`` is this rank's (n, C, *) input (NumPy or CuPy).  One ``Allgather``
    of [n, mean (C), M2 (C)] per rank; the summaries are merged in rank order,
    so every rank gets bitwise the same result.
    """
    axes = (0,) + tuple(range(2, x.ndim))
    channels = x.shape[1]
    count = x.size // channels if channels else 0
    mean, var = moments(x.astype(np.float64, copy=False), axes)
    row = np.empty(2 * channels + 1, dtype=np.float64)
    row[0] = count
    row[1:1 + channels] = backend.asnumpy(mean).reshape(-1)
    row[1 + channels:] = backend.asnumpy(var).reshape(-1) * count
    every = np.empty((comm.Get_size(), row.size), dtype=np.float64)
    comm.Allgather(row, every)
    merged = None
    for r in every:
        if r[0] > 0:
            merged = merge_moments(merged, {"count": np.asarray(int(r[0]), dtype=np.int64),
                                            "mean": r[1:1 + channels].copy(),
                                            "m2": r[1 + channels:].copy()})
    return merged


class SyncBatchNormTrain(Function):
    """Training-mode batch normalization with statistics over every rank.

    Inputs ``(x,)`` or ``(x, weight, bias)``, x of shape (n, C, *).  After
    forward, ``self.stats`` holds the global ``{"count", "mean", "m2"}``.
    """

    def __init__(self, comm, eps=1e-5, name="SyncBatchNorm"):
        self.comm, self.eps, self.name = comm, eps, name

    def forward(self, x, weight=None, bias=None):
        xp = get_array_module(x)
        self.axes = (0,) + tuple(range(2, x.ndim))
        stats = global_moments(self.comm, x)
        count = 0 if stats is None else int(stats["count"])
        if count <= 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got "
                             f"{count} over all ranks (input size {tuple(x.shape)} here)")
        self.stats, self.count = stats, count
        shape = channel_shape(x)
        mean = xp.asarray(stats["mean"]).astype(x.dtype).reshape(shape)
        var = xp.asarray(stats["m2"] / count).astype(x.dtype).reshape(shape)
        self.inv_std = 1.0 / xp.sqrt(var + self.eps)
        self.xhat = (x - mean) * self.inv_std
        return _channel_affine(self, x, weight, bias)

    def backward(self, g):
        needs = self.needs_input_grad
        dxhat = g if len(needs) == 1 else g * self.weight
        dx = None
        if needs[0]:
            # BEGIN SOLUTION ch10.2
            xp = get_array_module(g)
            channels = g.shape[1]
            local = np.empty(2 * channels, dtype=np.float64)
            local[:channels] = backend.asnumpy(dxhat.sum(axis=self.axes)).reshape(-1)
            local[channels:] = backend.asnumpy(
                (dxhat * self.xhat).sum(axis=self.axes)).reshape(-1)
            sums = _allreduce(self.comm, local) / self.count
            shape = channel_shape(g)
            mean_d = xp.asarray(sums[:channels]).astype(g.dtype).reshape(shape)
            mean_dx = xp.asarray(sums[channels:]).astype(g.dtype).reshape(shape)
            dx = self.inv_std * (dxhat - mean_d - self.xhat * mean_dx)
            # END SOLUTION
        if len(needs) == 1:
            return dx
        return (dx,) + _affine_grads(g, self.xhat, self.axes, (-1,), needs)


class SyncBatchNorm(_BatchNorm):
    """Batch normalization of (N, C, *) inputs over the batches of all ranks,
    as ``torch.nn.SyncBatchNorm``.

    In training mode, W ranks each passing a micro-batch of b items get
    exactly the output, input gradients and running statistics of one
    BatchNorm over the W·b items (see the module docstring for the
    exchange: one ``Allgather`` forward, one ``Allreduce`` backward, per
    layer and micro-batch).  Every rank must call forward and backward
    together.  In eval mode it is an ordinary BatchNorm with the running
    statistics (no communication).  Alone (world size 1) it equals
    BatchNorm1d/2d.

    Args:
        num_features, eps, momentum, affine, track_running_stats,
        merge_running_stats, device, dtype: as :class:`BatchNorm1d`.
        process_group: the communicator (default: ``minigrad.distributed.init()``,
            resolved at the first training forward).

    Raises:
        ValueError: fewer than 2 dimensions, a wrong channel count, or one
            value per channel over all ranks in training.
    """

    _name = "SyncBatchNorm"

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None, device=None, dtype=None, *,
                 merge_running_stats=False):
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine,
                         track_running_stats=track_running_stats,
                         merge_running_stats=merge_running_stats, device=device, dtype=dtype)
        self.process_group = process_group

    def _check_input_dim(self, x):
        if x.ndim < 2:
            raise ValueError(f"SyncBatchNorm: expected at least 2-D input (N, C, *), got "
                             f"shape {tuple(x.shape)}")

    def forward(self, x: Tensor) -> Tensor:
        self._check_input_dim(x)
        if x.shape[1] != self.num_features:
            raise ValueError(f"SyncBatchNorm: expected {self.num_features} channels (axis 1),"
                             f" got input of shape {tuple(x.shape)}")
        if not (self.training or not self.track_running_stats):
            return super().forward(x)                    # eval: running statistics
        if self.process_group is None:
            self.process_group = _default_comm()
        fn = SyncBatchNormTrain(self.process_group, eps=self.eps)
        out = fn(x) if self.weight is None else fn(x, self.weight, self.bias)
        if self.training and self.track_running_stats and not is_recomputing():
            if self.merge_running_stats:
                self._pending = merge_moments(self._pending, fn.stats)
            else:
                factor = self._next_factor()
                xp = self.running_mean._xp
                _update_running_stats(self.running_mean, self.running_var,
                                      xp.asarray(fn.stats["mean"]),
                                      xp.asarray(fn.stats["m2"] / (fn.count - 1)), factor)
        return out

    @classmethod
    def convert_sync_batchnorm(cls, module: Module, process_group=None) -> Module:
        """Replace every BatchNorm1d/2d in ``module`` by a SyncBatchNorm holding
        the same parameters, buffers and training mode (as PyTorch's
        ``SyncBatchNorm.convert_sync_batchnorm``); returns the converted module
        (``module`` itself, changed in place, unless it is a BatchNorm)."""
        if isinstance(module, _BatchNorm) and not isinstance(module, SyncBatchNorm):
            sync = cls(module.num_features, eps=module.eps, momentum=module.momentum,
                       affine=module.affine, track_running_stats=module.track_running_stats,
                       process_group=process_group,
                       merge_running_stats=module.merge_running_stats,
                       dtype=module.running_mean.dtype if module.running_mean is not None
                       else (module.weight.dtype if module.weight is not None else None))
            if module.affine:
                sync.weight, sync.bias = module.weight, module.bias
            if module.track_running_stats:
                sync.running_mean = module.running_mean
                sync.running_var = module.running_var
                sync.num_batches_tracked = module.num_batches_tracked
            sync.train(module.training)
            return sync
        for name, child in list(module._modules.items()):
            if child is not None:
                converted = cls.convert_sync_batchnorm(child, process_group)
                if converted is not child:
                    module.add_module(name, converted)
        return module


def convert_sync_batchnorm(module: Module, process_group=None) -> Module:
    """:meth:`SyncBatchNorm.convert_sync_batchnorm` as a function."""
    return SyncBatchNorm.convert_sync_batchnorm(module, process_group)
