"""GradientAccumulator.backward without a host read per micro-batch (the GPU path).

``accumulation_device.backward_on_device`` keeps the window's loss sum and its
non-finite flag as 0-d arrays on the loss's device and reads them once, at the
window's end.  It is written for any array module, so here it runs on NumPy
arrays too and must give, to the bit, what the CPU path gives: the same
parameters, window losses, skipped windows and scale.  On a GPU the
accumulator takes it by itself, and the last test checks that no micro-batch
synchronizes with the device.
"""
import warnings

import numpy as np
import pytest

import minigrad
from minigrad.nn import functional as F
from minigrad.optim import SGD, Adam, GradientAccumulator, GradScaler
from minigrad.optim import accumulation_checks as checks
from minigrad.optim.accumulation_device import backward_on_device

from .loops import make_mlp

K = 3


def _loss(model, j, seed=0, poison=()):
    """Micro-batch j's (mean loss, num_items); its loss is multiplied by
    ``poison[j]`` (inf or nan) when j is in ``poison``; micro-batch 5 is empty."""
    rng = np.random.default_rng(seed + 100 * j)
    dtype = next(iter(model.parameters())).dtype
    size = int(rng.integers(1, 6))
    x = minigrad.tensor(rng.standard_normal((size, 6)), dtype=dtype)
    loss = F.cross_entropy(model(x), rng.integers(0, 3, size))
    if j in poison:
        loss = loss * minigrad.tensor(poison[j], dtype=dtype)
    return loss, 0 if j == 5 else size


def _run(deferred, seed=0, poison=(), scaler=None, dtype=None, compensated=False,
         opt=SGD, save_at=None):
    model = make_mlp(seed)
    acc = GradientAccumulator(opt(model.parameters(), lr=0.1), K, scaler=scaler,
                              dtype=dtype, compensated=compensated)
    record, saved = [], None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # skipped windows warn
        for j in range(8):
            loss, n = _loss(model, j, seed, poison)
            if deferred:
                backward_on_device(acc, loss, *checks.check_backward(acc, loss, n))
            else:
                acc.backward(loss, num_items=n)
            if j == save_at:
                saved = acc.state_dict()
            acc.step()
            record.append((acc.updates, acc.skipped_windows, acc.window_loss,
                           None if scaler is None else scaler.get_scale()))
        acc.flush()
    record.append((acc.updates, acc.skipped_windows, acc.window_loss))
    return [p.numpy() for p in model.parameters()], record, saved


def _same(a, b):
    """Bitwise equal, nan equal to nan."""
    assert len(a) == len(b)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("poison", [{}, {1: np.inf}, {4: np.nan}, {0: np.inf, 7: -np.inf}],
                         ids=["finite", "inf", "nan", "inf-and-minus-inf"])
@pytest.mark.parametrize("opt", [SGD, Adam])
def test_deferred_loss_sum_gives_the_cpu_paths_windows_to_the_bit(float64, poison, opt):
    params, record, _ = _run(True, poison=poison, opt=opt)
    params_cpu, record_cpu, _ = _run(False, poison=poison, opt=opt)
    _same(params, params_cpu)
    assert str(record) == str(record_cpu)        # nan window losses compare as text
    if poison:
        assert record[-1][1] >= 1                # a window was skipped


@pytest.mark.parametrize("dtype, compensated", [("float32", False), (None, True)])
def test_deferred_loss_sum_with_a_buffer(dtype, compensated):
    for poison in ({}, {2: np.nan}):
        params, record, _ = _run(True, poison=poison, dtype=dtype, compensated=compensated)
        params_cpu, record_cpu, _ = _run(False, poison=poison, dtype=dtype,
                                         compensated=compensated)
        _same(params, params_cpu)
        assert str(record) == str(record_cpu)


def test_deferred_inf_loss_backs_the_scale_off_as_the_cpu_path():
    runs = [_run(deferred, poison={1: np.inf},
                 scaler=GradScaler(init_scale=4.0, growth_interval=1))
            for deferred in (True, False)]
    _same(runs[0][0], runs[1][0])
    assert runs[0][1] == runs[1][1]
    assert runs[0][1][2][3] == 2.0      # the window with the inf loss halved the scale


def test_window_holds_device_values_until_it_settles(float64):
    model = make_mlp()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), K)
    for j in range(2):
        loss, n = _loss(model, j, poison={1: np.nan})
        backward_on_device(acc, loss, *checks.check_backward(acc, loss, n))
        acc.step()
    window = acc.window
    assert isinstance(window.loss_sum, np.ndarray) and window.loss_sum.shape == ()
    assert isinstance(window.nonfinite, np.ndarray) and window.nonfinite.dtype == bool
    window.settle()
    assert type(window.loss_sum) is float and window.nonfinite is True
    assert np.isnan(window.loss_sum)           # as the CPU path's sum


def test_state_dict_mid_window_holds_host_values_and_resumes_exactly(float64, tmp_path):
    _, _, saved = _run(True, poison={1: np.nan}, save_at=1)
    _, _, saved_cpu = _run(False, poison={1: np.nan}, save_at=1)
    assert type(saved["loss_sum"]) is float and saved["nonfinite"] is True
    assert str(saved["loss_sum"]) == str(saved_cpu["loss_sum"]) == "nan"
    minigrad.save(saved, tmp_path / "acc")                # plain values: saves
    model = make_mlp()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), K)
    acc.load_state_dict(minigrad.load(tmp_path / "acc"))
    assert acc.window.nonfinite is True and np.isnan(acc.window.loss_sum)


def test_gpu_micro_batch_does_not_wait_for_the_device(device):
    if device == "cpu":
        pytest.skip("the GPU path only")
    import cupyx  # noqa: PLC0415

    def run(dev):
        model = make_mlp().to(dev)
        acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), K)
        rng = np.random.default_rng(0)
        for j in range(2 * K):
            x = minigrad.tensor(rng.standard_normal((4, 6)), dtype=np.float32, device=dev)
            y = minigrad.tensor(rng.integers(0, 3, 4), device=dev)
            loss = F.cross_entropy(model(x), y)
            if dev != "cpu":
                with cupyx.allow_synchronize(False):   # raises at any host wait
                    acc.backward(loss, num_items=4)
            else:
                acc.backward(loss, num_items=4)
            acc.step()
        return acc.window_loss, [p.numpy() for p in model.parameters()]

    loss_gpu, params_gpu = run(device)
    loss_cpu, params_cpu = run("cpu")
    assert loss_gpu == pytest.approx(loss_cpu, rel=1e-6)
    for a, b in zip(params_gpu, params_cpu):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
