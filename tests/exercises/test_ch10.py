"""Exercises of chapter 10 (data parallelism).

Two ranks are simulated in one process: ``TwoRanks(r, peer)`` is rank r of a
world of two whose other rank sent, collective by collective, the buffers in
``peer`` (recorded from a previous run of that rank).  Running both ranks a
few rounds, each with what the other sent in the round before, reaches the
buffers of a real two-process run: no MPI needed, and the arithmetic is the
same as under ``mpiexec -n 2``.
"""
import warnings

import numpy as np
import pytest

import minigrad
from minigrad import distributed as dist
from minigrad import nn
from minigrad.optim import SGD, GradientAccumulator

from .check import assert_close, rng


class TwoRanks(dist.LocalCommunicator):
    """Rank ``rank`` of two; the other rank's buffers come from ``peer``."""

    def __init__(self, rank, peer=None):
        self.rank, self.size, self.peer, self.sent = rank, 2, peer, []

    def Get_rank(self):  # noqa: N802
        return self.rank

    def Get_size(self):  # noqa: N802
        return 2

    def _other(self, mine):
        i = len(self.sent)
        self.sent.append(mine.copy())
        if self.peer is None or i >= len(self.peer) or self.peer[i].shape != mine.shape:
            return np.zeros_like(mine)
        return self.peer[i]

    def Allreduce(self, sendbuf, recvbuf, op=None):  # noqa: N802
        send, recv = self._buffer(sendbuf), self._buffer(recvbuf)
        mine = (np.asarray(send) if isinstance(send, np.ndarray) else recv).copy()
        recv[...] = mine + self._other(mine)

    def Allgather(self, sendbuf, recvbuf):  # noqa: N802
        mine = np.asarray(self._buffer(sendbuf)).reshape(-1).copy()
        other = self._other(mine)
        rows = [mine, other] if self.rank == 0 else [other, mine]
        self._buffer(recvbuf).reshape(2, -1)[...] = np.stack(rows)


def run_two_ranks(work, rounds=3):
    """``[work(comm_of_rank_0), work(comm_of_rank_1)]`` of the last round."""
    sent = [None, None]
    for _ in range(rounds):
        comms = [TwoRanks(r, sent[1 - r]) for r in range(2)]
        results = [work(comm) for comm in comms]
        sent = [comm.sent for comm in comms]
    return results


X = rng(10).standard_normal((8, 3))
SHARDS = [[X[0:1], X[1:3]], [X[3:5], X[5:8]]]     # rank 0: 1 + 2 items, rank 1: 2 + 3
W0 = np.array([0.5, -1.0, 2.0])


def _mean_loss(w, x):
    y = minigrad.tensor(x) @ w
    return (y * y).mean()


def _grad_of_sum(x):
    return 2 * x.T @ (x @ W0)


def _one_window(comm, lr=0.1, shards=SHARDS, nan_on_rank=None):
    w = minigrad.tensor(W0.copy(), requires_grad=True)
    acc = GradientAccumulator(SGD([w], lr=lr), 2, comm=comm)
    updated = []
    for x in shards[comm.Get_rank()]:
        loss = _mean_loss(w, x)
        if nan_on_rank == comm.Get_rank():
            loss = loss * float("nan")
        acc.backward(loss, num_items=len(x))
        updated.append(acc.step())
    return w.numpy(), acc, updated


@pytest.mark.exercise("10.1")
def test_two_ranks_take_the_full_batch_step():
    lr = 0.1
    results = run_two_ranks(lambda comm: _one_window(comm, lr))
    full = _grad_of_sum(X) / 8
    sums = [sum(_grad_of_sum(x) for x in shard) for shard in SHARDS]
    for rank, (w, acc, updated) in enumerate(results):
        assert updated == [False, True], \
            f"rank {rank}: step() returned {updated}; the window of 2 micro-batches updates " \
            "at its 2nd step"
        local = 3 if rank == 0 else 5
        assert_close(w, W0 - lr * full, f"rank {rank}'s parameters after one window of 8 items "
                     "(3 on rank 0, 5 on rank 1)",
                     [(W0 - lr * (sums[0] / 3 + sums[1] / 5) / 2,
                       "this is the mean of the two ranks' means: sum the item counts over "
                       "the ranks too, and divide the summed gradient by the global count 8"),
                      (W0 - lr * (sums[0] + sums[1]) / local,
                       f"the gradients were summed over the ranks but divided by this rank's "
                       f"{local} items: put the item total into the buffer as well"),
                      (W0 - lr * sums[rank] / local,
                       "this is the rank's own window alone: the gradients were not "
                       "all-reduced (or not written back into .grad)")])


@pytest.mark.exercise("10.1")
def test_one_collective_per_window():
    def work(comm):
        counting = dist.CountingCommunicator(comm)
        _one_window(counting)
        return counting
    for rank, counting in enumerate(run_two_ranks(work)):
        assert counting.collectives == 1 and counting.calls[0][0] == "Allreduce", \
            f"rank {rank}: a window must cost one Allreduce of one packed buffer, got " \
            f"{counting.collectives} collectives {[c for c, _ in counting.calls]}"


@pytest.mark.exercise("10.1")
def test_a_nan_on_one_rank_skips_the_window_on_both():
    def work(comm):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return _one_window(comm, nan_on_rank=1)
    for rank, (w, acc, updated) in enumerate(run_two_ranks(work)):
        assert updated == [False, False] and acc.skipped_windows == 1, \
            f"rank {rank}: rank 1's loss is nan, so every rank must skip the window " \
            f"(step() gave {updated}, skipped_windows={acc.skipped_windows}): the non-finite " \
            "flag travels in the buffer with the gradients"
        assert np.array_equal(w, W0), f"rank {rank}: a skipped window leaves the parameters"


@pytest.mark.exercise("10.1")
def test_a_gradient_held_by_one_rank_reaches_both_and_unused_parameters_keep_none():
    def work(comm):
        a, b, c = (minigrad.tensor(np.array([1.0, 2.0]), requires_grad=True) for _ in range(3))
        acc = GradientAccumulator(SGD([a, b, c], lr=0.1), 1, comm=comm)
        loss = (a * a).sum() if comm.Get_rank() == 0 else (a * 3.0 + b * b).sum()
        acc.backward(loss, num_items=2 if comm.Get_rank() == 0 else 4)
        assert dist.reduce_window(acc) is True, "reduce_window returns True for a window " \
                                                "that holds items"
        return a.grad, b.grad, c.grad, acc.window.item_total
    for rank, (ga, gb, gc, total) in enumerate(run_two_ranks(work)):
        # .grad holds Σ n_j ∇L_j: rank 0 has 2·[2, 4], rank 1 has 4·[3, 3].
        assert_close(ga, [16.0, 20.0], f"rank {rank}: a.grad after reduce_window",
                     [([4.0, 8.0], "only rank 0's gradient: sum over the ranks"),
                      ([12.0, 12.0], "only rank 1's gradient: sum over the ranks")])
        assert gb is not None, \
            f"rank {rank}: b has a gradient on rank 1 only; after the all-reduce every rank " \
            "must hold it (pack zeros where a rank has none, and a has-a-gradient flag)"
        assert_close(gb, [8.0, 16.0], f"rank {rank}: b.grad after reduce_window (4·[2, 4])")
        assert gc is None, f"rank {rank}: c has a gradient on no rank; its .grad stays None " \
                           "(the has-a-gradient flags sum to 0)"
        assert total == 6, f"rank {rank}: the window's item total is 2 + 4 = 6 over the " \
                           f"ranks, got {total}"


def _sync_bn_grads(comm, xs, gs, channels):
    x = minigrad.tensor(xs[comm.Get_rank()], requires_grad=True)
    bn = nn.SyncBatchNorm(channels, process_group=comm, dtype=np.float64)
    bn.weight.data[...] = np.linspace(0.5, 1.5, channels)
    y = bn(x)
    (y * minigrad.tensor(gs[comm.Get_rank()])).sum().backward()
    return x.grad.numpy()


@pytest.mark.exercise("10.2")
@pytest.mark.parametrize("shape", [(3, 2), (2, 3, 4)], ids=["(n, C)", "(n, C, L)"])
def test_sync_batchnorm_input_gradient_is_the_full_batch_one(shape):
    channels = shape[1]
    sizes = (shape[0], shape[0] + 2)                  # uneven micro-batches
    r = rng(11)
    xs = [r.standard_normal((n,) + shape[1:]) * 2 + 1 for n in sizes]
    gs = [r.standard_normal((n,) + shape[1:]) for n in sizes]
    dxs = run_two_ranks(lambda comm: _sync_bn_grads(comm, xs, gs, channels))

    # The reference: one BatchNorm over the 2 micro-batches together.
    x_all = minigrad.tensor(np.concatenate(xs), requires_grad=True)
    bn = (nn.BatchNorm1d if len(shape) < 4 else nn.BatchNorm2d)(channels, dtype=np.float64)
    bn.weight.data[...] = np.linspace(0.5, 1.5, channels)
    (bn(x_all) * minigrad.tensor(np.concatenate(gs))).sum().backward()
    expected = np.split(x_all.grad.numpy(), [sizes[0]])

    axes = (0,) + tuple(range(2, len(shape)))
    both = np.concatenate(xs)
    mean, var = both.mean(axis=axes, keepdims=True), both.var(axis=axes, keepdims=True)
    inv_std = 1 / np.sqrt(var + 1e-5)
    gamma = np.linspace(0.5, 1.5, channels).reshape((1, channels) + (1,) * (len(shape) - 2))
    count = both.size // channels
    for rank in range(2):
        xhat, dxhat = (xs[rank] - mean) * inv_std, gs[rank] * gamma
        local_count = xs[rank].size // channels

        def with_means(d_mean, dx_mean):
            return inv_std * (dxhat - d_mean - xhat * dx_mean)
        s1 = dxhat.sum(axis=axes, keepdims=True)
        s2 = (dxhat * xhat).sum(axis=axes, keepdims=True)
        assert_close(dxs[rank], expected[rank],
                     f"rank {rank}: the input gradient of SyncBatchNorm {shape}",
                     [(with_means(s1 / local_count, s2 / local_count),
                       "these are the means of this rank's sums over its own items: all-reduce "
                       "Σ dx̂ and Σ dx̂·x̂ and divide by the global count"),
                      (with_means(s1 / count, s2 / count),
                       "this rank's sums divided by the global count: the two sums must be "
                       "all-reduced (added over the ranks) first")])


def _all_batches(sampler_args, W):
    samplers = [dist.DistributedWindowSampler(**sampler_args, num_replicas=W, rank=r)
                for r in range(W)]
    return samplers, [[[np.asarray(mb) for mb in window] for window in s] for s in samplers]


@pytest.mark.exercise("10.3")
@pytest.mark.parametrize("size, window, k, W", [(24, 12, 2, 3), (23, 10, 3, 3), (50, 17, 2, 4)])
def test_every_item_of_a_window_lands_once(size, window, k, W):
    samplers, per_rank = _all_batches(dict(dataset_size=size, window_size=window,
                                           accumulation_steps=k, seed=4), W)
    for w in range(len(samplers[0])):
        wanted = np.sort(samplers[0].window_indices(w))
        mbs = [per_rank[r][w] for r in range(W)]
        got = np.sort(np.concatenate([mb for rank_mbs in mbs for mb in rank_mbs]))
        assert len(got) == len(wanted) and np.array_equal(got, wanted), \
            f"window {w} holds {len(wanted)} items; the ranks' micro-batches hold " \
            f"{len(got)}" + (" (some item is repeated: no padding, the item counts carry "
                             "the weighting)" if len(got) > len(wanted) else
                             " (some item is missing)" if len(got) < len(wanted) else
                             ": not the window's items")
        shards = [sum(len(mb) for mb in rank_mbs) for rank_mbs in mbs]
        assert max(shards) - min(shards) <= 1, \
            f"window {w}: the ranks' shards hold {shards} items; they differ by at most one"
        counts = [len(rank_mbs) for rank_mbs in mbs]
        expected = min(k, len(wanted) // W)
        assert counts == [expected] * W, \
            f"window {w} of {len(wanted)} items: every rank needs min(k, n // W) = {expected} " \
            f"micro-batches (the same step() count on every rank), got {counts}"
        assert all(len(mb) > 0 for rank_mbs in mbs for mb in rank_mbs), \
            f"window {w}: an empty micro-batch"


@pytest.mark.exercise("10.1")
def test_the_window_loss_is_the_global_item_weighted_mean():
    results = run_two_ranks(lambda comm: _one_window(comm))
    expected = float(((X @ W0) ** 2).sum() / 8)
    for rank, (w, acc, updated) in enumerate(results):
        local = SHARDS[rank]
        own = float(sum(((x @ W0) ** 2).sum() for x in local) / sum(len(x) for x in local))
        assert acc.window_loss is not None and np.isclose(acc.window_loss, expected), \
            f"rank {rank}: window_loss is {acc.window_loss}, the item-weighted mean loss of " \
            f"the 8 items of both ranks is {expected}" + (
                " (this rank's own loss sum over the global count: write the summed loss "
                "sum back too)" if acc.window_loss is not None
                and np.isclose(acc.window_loss, own * len(np.concatenate(local)) / 8) else "")


@pytest.mark.exercise("10.1")
def test_a_window_empty_on_every_rank_is_no_update_and_no_skip():
    def work(comm):
        w = minigrad.tensor(W0.copy(), requires_grad=True)
        acc = GradientAccumulator(SGD([w], lr=0.1), 2, comm=comm)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            flushed = acc.flush()            # nothing pending on either rank
        return flushed, acc, w.numpy()
    for rank, (flushed, acc, w) in enumerate(run_two_ranks(work)):
        assert flushed is False and acc.updates == 0 and acc.skipped_windows == 0, \
            f"rank {rank}: flush() with no items on any rank gave {flushed} (updates=" \
            f"{acc.updates}, skipped_windows={acc.skipped_windows}); when the summed item " \
            "total is 0, reset the window and return False: there is nothing to skip"
        assert np.array_equal(w, W0), f"rank {rank}: an empty window leaves the parameters"


@pytest.mark.exercise("10.1")
def test_a_rank_without_items_takes_the_other_ranks_step():
    def work(comm):
        w = minigrad.tensor(W0.copy(), requires_grad=True)
        acc = GradientAccumulator(SGD([w], lr=0.1), 2, comm=comm)
        if comm.Get_rank() == 0:
            acc.backward(_mean_loss(w, X[:4]), num_items=4)
            acc.step()
        return acc.flush(), w.numpy()
    expected = W0 - 0.1 * _grad_of_sum(X[:4]) / 4
    for rank, (flushed, w) in enumerate(run_two_ranks(work)):
        assert flushed is True, f"rank {rank}: rank 0 holds 4 items, so every rank updates " \
                                f"(flush() gave {flushed})"
        assert_close(w, expected, f"rank {rank}'s parameters (rank 1 had an empty shard)")


@pytest.mark.exercise("10.1")
def test_float16_parameters_get_float16_gradients_back():
    def work(comm):
        w = minigrad.tensor(np.array([1.0, -2.0], np.float16), requires_grad=True)
        acc = GradientAccumulator(SGD([w], lr=0.1), 1, comm=comm)
        acc.backward((w * w).sum(), num_items=1)
        dist.reduce_window(acc)
        return w.grad
    for rank, grad in enumerate(run_two_ranks(work)):
        assert grad.dtype == np.float16, \
            f"rank {rank}: a float16 parameter got a {grad.dtype} gradient back; the buffer " \
            "is at least float32, cast each gradient back to its parameter's dtype"
        np.testing.assert_allclose(grad.numpy(), [4.0, -8.0])


@pytest.mark.exercise("10.3")
@pytest.mark.parametrize("size, window, k, W", [(11, 6, 3, 2), (19, 12, 4, 3)])
def test_a_short_last_window_gives_every_rank_the_same_step_count(size, window, k, W):
    samplers, per_rank = _all_batches(dict(dataset_size=size, window_size=window,
                                           accumulation_steps=k, seed=4), W)
    last = len(samplers[0]) - 1
    n = len(samplers[0].window_indices(last))
    shards = [sum(len(mb) for mb in per_rank[r][last]) for r in range(W)]
    counts = [len(per_rank[r][last]) for r in range(W)]
    expected = min(k, n // W)
    assert counts == [expected] * W, \
        f"the last window holds {n} items over {W} ranks (shards {shards}) with k = {k}: " \
        f"every rank needs min(k, n // W) = {expected} micro-batches, got {counts}; a count " \
        "taken from the rank's own shard differs between ranks, and a rank with fewer " \
        "step() calls leaves the others waiting in the all-reduce"
