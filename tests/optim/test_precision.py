"""Accumulation-buffer precision (GradBuffer) and loss scaling (GradScaler) with the accumulator."""
import numpy as np
import pytest

import minigrad
from minigrad.optim import SGD, Adam, GradientAccumulator, GradScaler
from minigrad.optim.buffers import GradBuffer, kahan_add, resolve_dtype
from minigrad.testing import max_rel_diff

from .loops import ce_loss, make_mlp


def _micro_batches(n, size=4, seed=0, n_in=6):
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal((size, n_in)).astype(np.float32), rng.integers(0, 3, size))
            for _ in range(n)]


def _train(acc, model, batches):
    for x, y in batches:
        acc.backward(ce_loss(model, x, y), num_items=len(x))
        acc.step()
    acc.flush()
    return [p.numpy().copy() for p in model.parameters()]


def _run(dtype=None, compensated=False, scaler=None, k=4, n=8, opt=SGD, **opt_kw):
    model = make_mlp()
    optimizer = opt(model.parameters(), lr=0.1, **opt_kw)
    acc = GradientAccumulator(optimizer, k, dtype=dtype, compensated=compensated, scaler=scaler)
    return _train(acc, model, _micro_batches(n)), model, optimizer, acc


# ------------------------------------------------------------------ buffers
def test_float32_buffer_is_bitwise_the_plain_accumulator():
    plain, *_ = _run()
    buffered, *_ = _run(dtype="float32")
    for a, b in zip(plain, buffered):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("dtype, tol", [("float16", 2e-3), ("bfloat16", 2e-2)])
@pytest.mark.parametrize("compensated", [False, True])
def test_low_precision_buffer_keeps_param_and_state_dtypes(dtype, tol, compensated):
    reference, *_ = _run(opt=Adam)
    params, model, optimizer, _ = _run(dtype=dtype, compensated=compensated, opt=Adam)
    assert all(p.dtype == np.float32 for p in model.parameters())
    for state in optimizer.state.values():
        assert all(v.dtype == np.float32 for v in state.values() if hasattr(v, "dtype"))
    start = [p.numpy() for p in make_mlp().parameters()]
    # the update (not the parameter) is what the buffer's rounding touches
    for a, b, s in zip(params, reference, start):
        assert max_rel_diff(a - s, b - s) < tol


def test_buffer_holds_the_window_in_its_dtype_and_grad_is_moved_out():
    model = make_mlp()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 3, dtype="float16",
                              compensated=True)
    (x, y), = _micro_batches(1)
    acc.backward(ce_loss(model, x, y), num_items=4)
    assert all(p.grad is None for p in model.parameters())
    assert {a.dtype for a in acc.buffer.sums.values()} == {np.dtype(np.float16)}
    n_params = sum(p.numel() for p in model.parameters())
    assert acc.buffer.nbytes == 2 * 2 * n_params           # sums + compensations, 2 bytes each


def test_kahan_beats_plain_float16_over_many_micro_batches():
    rng = np.random.default_rng(0)
    grads = rng.uniform(0.5, 1.5, size=(4096, 50))
    exact = grads.sum(axis=0)
    plain = GradBuffer("float16")
    kahan = GradBuffer("float16", compensated=True)
    param = minigrad.tensor(np.zeros(50, np.float64), requires_grad=True)
    sums = {}
    for name, buf in (("plain", plain), ("kahan", kahan)):
        for g in grads:
            param.grad = minigrad.tensor(g)
            buf.add([param])
        buf.write([param])
        sums[name] = param.grad.numpy()
    rounded_once = exact.astype(np.float16).astype(np.float64)
    err = {k: np.linalg.norm(v - exact) / np.linalg.norm(exact) for k, v in sums.items()}
    err_once = np.linalg.norm(rounded_once - exact) / np.linalg.norm(exact)
    assert err["plain"] > 10 * err_once             # rounding errors pile up past 2048
    assert err["kahan"] <= 1.5 * err_once


def test_kahan_add_recovers_the_lost_low_part_by_hand():
    # 2048 + 1 in float16 rounds back to 2048 (spacing 2); c remembers the lost 1
    total, c = kahan_add(np.float16(2048), np.float16(0), np.float16(1))
    assert total == 2048 and c == -1
    total, c = kahan_add(total, c, np.float16(1))      # y = 1 - (-1) = 2: now it counts
    assert total == 2050 and c == 0


def test_buffer_resume_mid_window_is_exact():
    full, *_ = _run(dtype="float16", compensated=True, k=4, n=8)
    model = make_mlp()
    opt = SGD(model.parameters(), lr=0.1)
    acc = GradientAccumulator(opt, 4, dtype="float16", compensated=True)
    batches = _micro_batches(8)
    for x, y in batches[:6]:
        acc.backward(ce_loss(model, x, y), num_items=len(x))
        acc.step()
    state = acc.state_dict()
    params = [p.numpy().copy() for p in model.parameters()]
    model2 = make_mlp()
    for p, v in zip(model2.parameters(), params):
        p.data = v.copy()
    acc2 = GradientAccumulator(SGD(model2.parameters(), lr=0.1), 4, dtype="float16",
                               compensated=True)
    acc2.load_state_dict(state)
    resumed = _train(acc2, model2, batches[6:])
    for a, b in zip(resumed, full):
        np.testing.assert_array_equal(a, b)


def test_buffered_state_into_an_unbuffered_accumulator_is_refused():
    model = make_mlp()
    acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 4, dtype="float16")
    (x, y), = _micro_batches(1)
    acc.backward(ce_loss(model, x, y), num_items=4)
    acc.step()
    plain = GradientAccumulator(SGD(make_mlp().parameters(), lr=0.1), 4)
    with pytest.raises(ValueError, match="summed in an accumulation buffer"):
        plain.load_state_dict(acc.state_dict())


def test_bad_buffer_dtype_is_named():
    with pytest.raises(ValueError, match="float64, float32, float16, bfloat16; got 'int8'"):
        resolve_dtype("int8")
    with pytest.raises(ValueError, match="buffer dtype"):
        GradientAccumulator(SGD(make_mlp().parameters(), lr=0.1), 2, dtype=np.int32)
    with pytest.raises(TypeError, match="scaler must be a minigrad.optim.GradScaler"):
        GradientAccumulator(SGD(make_mlp().parameters(), lr=0.1), 2, scaler=2.0 ** 16)


def test_bfloat16_names_resolve_to_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert resolve_dtype("bfloat16") == np.dtype(ml_dtypes.bfloat16)
    assert resolve_dtype(ml_dtypes.bfloat16) == np.dtype(ml_dtypes.bfloat16)
    assert resolve_dtype("half") == np.float16


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_low_precision_buffer_on_device(device, dtype, tmp_path):
    """The buffer works on every device (bfloat16 on the GPU: CuPy >= 14), can
    be saved mid-window, and gives the CPU's update to the buffer's precision."""
    if dtype == "bfloat16":
        pytest.importorskip("ml_dtypes")
    results = []
    for dev in ("cpu", device):
        model = make_mlp().to(dev)
        acc = GradientAccumulator(SGD(model.parameters(), lr=0.1), 2, dtype=dtype)
        for j, (x, y) in enumerate(_micro_batches(2)):
            loss = minigrad.nn.functional.cross_entropy(model(minigrad.tensor(x, device=dev)),
                                                        minigrad.tensor(y, device=dev))
            acc.backward(loss, num_items=len(x))
            if j == 0:
                minigrad.save(acc.state_dict(), tmp_path / f"{dev}-{dtype}")
                acc.load_state_dict(minigrad.load(tmp_path / f"{dev}-{dtype}"))
            acc.step()
        assert acc.updates == 1
        assert all(p.device == dev and p.dtype == np.float32 for p in model.parameters())
        results.append([p.numpy() for p in model.parameters()])
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-3)


def test_bfloat16_probe_passes_on_numpy_with_ml_dtypes():
    pytest.importorskip("ml_dtypes")
    assert minigrad.backend.bfloat16_problem(np) is None


# ------------------------------------------------------------------ GradScaler
class CountingScaler(GradScaler):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.unscale_calls = 0

    def unscale_(self, optimizer):
        self.unscale_calls += 1
        super().unscale_(optimizer)


def test_unscale_happens_once_per_window_not_per_micro_batch():
    scaler = CountingScaler(init_scale=2.0 ** 8)
    _, _, _, acc = _run(dtype="float16", scaler=scaler, k=4, n=12)
    assert acc.updates == 3 and scaler.unscale_calls == 3


def test_scaled_float16_run_equals_float32_run_to_float16_precision():
    reference, *_ = _run(opt=Adam)
    scaled, _, _, acc = _run(dtype="float16", scaler=GradScaler(init_scale=2.0 ** 10), opt=Adam)
    assert acc.updates == 2 and acc.skipped_windows == 0
    start = [p.numpy() for p in make_mlp().parameters()]
    for a, b, s in zip(scaled, reference, start):
        assert max_rel_diff(a - s, b - s) < 2e-3


def test_overflow_window_changes_no_parameter_and_no_optimizer_state():
    scaler = GradScaler(init_scale=2.0 ** 4, growth_interval=1)
    model = make_mlp()
    opt = Adam(model.parameters(), lr=0.1)
    acc = GradientAccumulator(opt, 2, dtype="float16", scaler=scaler)
    batches = _micro_batches(4)
    for x, y in batches[:2]:                 # one good window: Adam has state now
        acc.backward(ce_loss(model, x, y), num_items=len(x))
        acc.step()
    assert acc.updates == 1 and scaler.get_scale() == 2.0 ** 5     # grew after 1 good window
    params = [p.numpy().copy() for p in model.parameters()]
    state = opt.state_dict()
    scaler.update(new_scale=2.0 ** 30)       # 2**30 * gradient overflows float16 (65504)
    for x, y in batches[2:]:
        acc.backward(ce_loss(model, x, y), num_items=len(x))
        acc.step()
    assert acc.updates == 1 and acc.skipped_windows == 1
    assert scaler.get_scale() == 2.0 ** 29                              # backed off
    for p, before in zip(model.parameters(), params):
        np.testing.assert_array_equal(p.numpy(), before)
    after = opt.state_dict()
    assert after["state"].keys() == state["state"].keys()
    for key in state["state"]:
        for name, value in state["state"][key].items():
            np.testing.assert_array_equal(np.asarray(after["state"][key][name]), np.asarray(value))
    assert all(p.grad is None for p in model.parameters())


def test_scale_grows_after_growth_interval_good_windows():
    scaler = GradScaler(init_scale=4.0, growth_factor=3.0, growth_interval=2)
    _run(scaler=scaler, k=2, n=8)            # 4 good windows: grows twice
    assert scaler.get_scale() == 36.0 and scaler.state_dict()["_growth_tracker"] == 0


def test_standalone_use_matches_pytorch_semantics(torch):
    ours = GradScaler(init_scale=8.0, growth_interval=2)
    theirs = torch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    for bad in [False, False, True, False, False, False, True]:
        ours_scales = []
        for scaler, is_ours in ((ours, True), (theirs, False)):
            if is_ours:
                p = minigrad.tensor(np.ones(3, np.float32), requires_grad=True)
                opt = SGD([p], lr=0.1)
                loss = scaler.scale((p * (np.inf if bad else 1.0)).sum())
                loss.backward()
            else:
                p = torch.ones(3, requires_grad=True)
                opt = torch.optim.SGD([p], lr=0.1)
                loss = scaler.scale((p * (float("inf") if bad else 1.0)).sum())
                loss.backward()
            scaler.step(opt)
            scaler.update()
            ours_scales.append(scaler.get_scale())
            moved = not ((p.detach().numpy() if not is_ours else p.numpy()) == 1).all()
            assert moved == (not bad)
        assert ours_scales[0] == ours_scales[1]
    assert ours.state_dict() == {k: (v if not hasattr(v, "item") else v.item())
                                 for k, v in theirs.state_dict().items()}


def test_unscale_twice_in_one_window_raises():
    scaler = GradScaler()
    p = minigrad.tensor(np.ones(3, np.float32), requires_grad=True)
    opt = SGD([p], lr=0.1)
    scaler.scale(p.sum()).backward()
    scaler.unscale_(opt)
    with pytest.raises(RuntimeError, match="already been called"):
        scaler.unscale_(opt)
    np.testing.assert_array_equal(p.grad.numpy(), np.ones(3))


def test_state_dict_round_trip_and_bad_arguments():
    a = GradScaler(init_scale=32.0, growth_interval=3)
    a._growth_tracker = 2
    b = GradScaler()
    b.load_state_dict(a.state_dict())
    assert b.state_dict() == a.state_dict()
    with pytest.raises(ValueError, match="backoff_factor must be in"):
        GradScaler(backoff_factor=1.5)
    with pytest.raises(ValueError, match="growth_interval must be an int"):
        GradScaler(growth_interval=0)
    with pytest.raises(TypeError, match="expected a Tensor"):
        GradScaler().scale(3.0)
    disabled = GradScaler(enabled=False)
    assert disabled.get_scale() == 1.0 and disabled.state_dict() == {}


@pytest.mark.parametrize("seed", range(40))
def test_accumulator_scale_follows_pytorch_through_windows_with_inf_losses(torch, seed):
    """k micro-batches per window, some losses inf: the scale sequence and which
    windows update are PyTorch's (backward of an inf loss gives inf gradients
    there; minigrad skips that backward, and the window still counts as an overflow)."""
    rng = np.random.default_rng(seed)
    k, windows = int(rng.integers(1, 4)), 6
    growth_interval = int(rng.integers(1, 3))
    bad = rng.random((windows, k)) < 0.3
    ours = GradScaler(init_scale=4.0, growth_interval=growth_interval)
    theirs = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=growth_interval)
    p = minigrad.tensor(np.ones(3, np.float32), requires_grad=True)
    acc = GradientAccumulator(SGD([p], lr=0.1), k, scaler=ours)
    q = torch.ones(3, requires_grad=True)
    opt = torch.optim.SGD([q], lr=0.1)
    for w in range(windows):
        for j in range(k):
            factor = np.inf if bad[w, j] else 1.0
            acc.backward((p * factor).sum())
            acc.step()
            theirs.scale((q * float(factor)).sum() / k).backward()     # the window mean
        theirs.step(opt)
        theirs.update()
        opt.zero_grad()
        assert ours.get_scale() == theirs.get_scale(), (w, bad)
        np.testing.assert_allclose(p.numpy(), q.detach().numpy(), rtol=1e-6)
    assert acc.skipped_windows == int(bad.any(axis=1).sum())


def test_step_twice_and_update_without_step_raise_as_in_pytorch():
    scaler = GradScaler(init_scale=4.0, growth_interval=1)
    p = minigrad.tensor(np.ones(3, np.float32), requires_grad=True)
    opt = SGD([p], lr=0.1)
    with pytest.raises(RuntimeError, match="no inf checks were recorded"):
        scaler.update()
    assert scaler.get_scale() == 4.0
    scaler.scale(p.sum()).backward()
    scaler.step(opt)
    with pytest.raises(RuntimeError, match="step\\(\\) has already been called"):
        scaler.step(opt)
    np.testing.assert_allclose(p.numpy(), np.full(3, 0.9, np.float32))    # one update only
    scaler.update()
    assert scaler.get_scale() == 8.0


@pytest.mark.parametrize("state, error, message", [
    (None, TypeError, "expected a dict"),
    ({"scale": -5.0}, ValueError, "scale must be a finite number > 0"),
    ({"scale": "big"}, TypeError, "scale must be a number"),
    ({"growth_interval": 0}, ValueError, "growth_interval must be an int >= 1"),
    ({"growth_interval": 2.5}, TypeError, "growth_interval must be an int"),
    ({"growth_factor": 0.5}, ValueError, "growth_factor must be > 1"),
    ({"backoff_factor": 1.0}, ValueError, "backoff_factor must be in"),
    ({"_growth_tracker": 7}, ValueError, "_growth_tracker must be an int in"),
])
def test_load_state_dict_enforces_what_init_enforces(state, error, message):
    scaler = GradScaler(init_scale=4.0, growth_interval=3)
    good = GradScaler(init_scale=2.0, growth_interval=3).state_dict()
    with pytest.raises(error, match=message):
        scaler.load_state_dict(None if state is None else {**good, **state})
    assert scaler.get_scale() == 4.0                        # nothing half-loaded


@pytest.mark.parametrize("kwargs, error", [
    ({"init_scale": "big"}, TypeError), ({"init_scale": None}, TypeError),
    ({"growth_factor": "2"}, TypeError), ({"init_scale": float("nan")}, ValueError),
    ({"growth_interval": 1.0}, TypeError), ({"backoff_factor": 0.0}, ValueError),
])
def test_bad_settings_name_the_setting(kwargs, error):
    with pytest.raises(error, match=f"GradScaler: {next(iter(kwargs))} must be"):
        GradScaler(**kwargs)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
def test_an_item_total_beyond_float16_range_is_never_cast_to_float16(dtype):
    # two micro-batches of 40,000 items: the total 80,000 is inf in float16
    w = minigrad.tensor(np.zeros(1, dtype), requires_grad=True)
    acc = GradientAccumulator(SGD([w], lr=1.0), 2)
    for _ in range(2):
        x = minigrad.tensor(np.full(40_000, 1e-4, dtype))
        acc.backward((w * x).mean(), num_items=40_000)
        acc.step()
    assert acc.updates == 1
    np.testing.assert_allclose(w.numpy(), [-1e-4], rtol=2e-3 if dtype == "float16" else 1e-6)


@pytest.mark.parametrize("opt", [Adam, minigrad.optim.AdamW])
def test_adam_updates_float16_parameters_in_float32(opt):
    # eps = 1e-8 is 0 in float16: a zero gradient gave 0/0 = nan before
    p = minigrad.tensor(np.array([1.0, 2.0, -3.0], np.float16), requires_grad=True)
    ref = minigrad.tensor(p.numpy().astype(np.float32), requires_grad=True)
    o16, o32 = opt([p], lr=1e-3), opt([ref], lr=1e-3)
    for g in ([0.0, 1.0, -2.0], [0.0, 1e-4, 3.0], [0.0, 0.0, 0.0]):
        p.grad = minigrad.tensor(np.array(g, np.float16))
        ref.grad = minigrad.tensor(np.array(g, np.float16).astype(np.float32))
        ref.data[...] = p.numpy()          # float32 arithmetic from the stored float16 value
        o16.step()
        o32.step()
        assert p.dtype == np.float16 and np.isfinite(p.numpy()).all()
        np.testing.assert_array_equal(p.numpy(), ref.numpy().astype(np.float16))
    assert o16.state[p]["exp_avg"].dtype == np.float32
    again = opt([p], lr=1e-3)
    again.load_state_dict(o16.state_dict())             # float32 moments load back
    with pytest.raises(ValueError, match="expected float32 for a float16 parameter"):
        bad = o16.state_dict()
        bad["state"][0]["exp_avg"] = bad["state"][0]["exp_avg"].astype(np.float16)
        again.load_state_dict(bad)


def test_unscale_allocates_nothing_gradient_sized_and_finds_inf_and_nan():
    """The finiteness check reads each gradient's min and max (one read on the
    host for all of them), not a boolean array per gradient."""
    import tracemalloc
    w = minigrad.nn.Parameter(np.zeros((1000, 1000), dtype=np.float32))   # 4 MB gradients
    b = minigrad.nn.Parameter(np.zeros(3, dtype=np.float32))
    opt = SGD([w, b], lr=0.1)
    for bad, expected in ((None, False), (np.inf, True), (np.nan, True), (-np.inf, True)):
        scaler = GradScaler(init_scale=8.0)
        w.grad = minigrad.tensor(np.full((1000, 1000), 8.0, dtype=np.float32))
        b.grad = minigrad.tensor(np.zeros(3, dtype=np.float32))
        if bad is not None:
            b.grad.data[1] = bad
        tracemalloc.start()
        scaler.unscale_(opt)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 100_000, f"unscale_ allocated {peak} bytes"
        assert scaler._per_optimizer[id(opt)]["found_inf"] is expected
        assert w.grad.data[0, 0] == 1.0
