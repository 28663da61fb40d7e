"""Checkpoints on disk: round trips without pickle, atomic writes, one clear error
for damaged files, and training resumed from disk bit for bit."""
import os
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import minigrad
from minigrad import nn, serialization
from minigrad.optim import SGD, Adam, GradientAccumulator, lr_scheduler
from minigrad.serialization import CheckpointError

from .optim.loops import ce_loss, classification_batches


def _equal(a, b):
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_equal(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_equal, a, b))
    if isinstance(a, (np.ndarray, np.generic)):      # bit for bit (nan payloads too)
        return type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape and \
            np.ascontiguousarray(a).tobytes() == np.ascontiguousarray(b).tobytes()
    if isinstance(a, float) and a != a:
        return isinstance(b, float) and b != b
    return type(a) is type(b) and a == b


def _model():
    minigrad.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3))


# ---------------------------------------------------------------- round trips
def test_module_save_and_load_meet_at_the_same_path(tmp_path):
    model = _model()
    path = tmp_path / "model"
    assert model.save(path) == str(path) + ".npz"
    assert os.listdir(tmp_path) == ["model.npz"]
    other = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3))
    assert other.load(path) == ([], [])                      # "model" finds model.npz
    assert _equal(other.state_dict(), model.state_dict())
    other.load(str(path) + ".npz")                          # and the full name works
    assert np.load(tmp_path / "model.npz").files == list(model.state_dict()) + ["minigrad.json"]


def test_a_path_without_npz_that_exists_is_read_as_is(tmp_path):
    model = _model()
    model.save(tmp_path / "weights.npz")
    os.rename(tmp_path / "weights.npz", tmp_path / "weights.bin")
    assert _equal(minigrad.load(tmp_path / "weights.bin"), model.state_dict())


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.npz"):
        _model().load(tmp_path / "nope")


def test_a_plain_numpy_savez_file_loads(tmp_path):
    arrays = {"a": np.arange(3), "b": np.ones((2, 2), np.float32)}
    np.savez(tmp_path / "plain.npz", **arrays)
    assert _equal(minigrad.load(tmp_path / "plain"), arrays)


STATES = {
    "scalars": {"int": 3, "float": 0.1, "nan": float("nan"), "inf": -float("inf"),
                "bool": True, "none": None, "str": "héllo", "big": 2 ** 70},
    "containers": {"tuple": (1, (2.5, "x")), "list": [[], [1, [2]]], "empty": {},
                   "int keys": {0: "a", 7: [1]}, "mixed keys": {1: 2, "1": 3, None: 4},
                   "marker-like": {"__array__": "not an array"}},
    "arrays": {"f16": np.arange(4, dtype=np.float16), "i64": np.arange(6).reshape(2, 3),
               "bool": np.array([True, False]), "0-d": np.array(2.5),
               "empty": np.zeros((0, 3), np.float32), "fortran": np.asfortranarray(
                   np.arange(6.0).reshape(2, 3)), "str": np.array(["ab", "c"])},
    "numpy scalars": {"f32": np.float32(1.5), "i8": np.int8(-3), "b": np.bool_(True),
                      "f64": np.float64(0.1), "i64": np.int64(2 ** 40)},
    "same name twice": {"a/b": np.ones(1), "a": {"b": np.zeros(1)}},
}


@pytest.mark.parametrize("name", sorted(STATES))
def test_round_trip_of_every_kind_of_value(tmp_path, name):
    path = minigrad.save(STATES[name], tmp_path / "state")
    assert _equal(minigrad.load(path), STATES[name])


def test_no_pickle_anywhere(tmp_path):
    path = minigrad.save({"x": np.ones(3), "y": [1, (2,)]}, tmp_path / "s")
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            if name.endswith(".npy"):
                with archive.open(name) as f:
                    np.lib.format.read_array(f, allow_pickle=False)
    np.savez(tmp_path / "pickled.npz", x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(CheckpointError, match="pickled.npz.*allow_pickle=False"):
        minigrad.load(tmp_path / "pickled.npz")


@pytest.mark.parametrize("bad", [{"f": len}, {"o": np.array([None], dtype=object)},
                                 {("tuple", "key"): 1}, [object()]])
def test_what_cannot_be_stored_raises_before_writing(tmp_path, bad):
    minigrad.save({"old": np.ones(2)}, tmp_path / "s")
    before = (tmp_path / "s.npz").read_bytes()
    with pytest.raises(TypeError, match="save"):
        minigrad.save(bad, tmp_path / "s")
    assert (tmp_path / "s.npz").read_bytes() == before
    assert os.listdir(tmp_path) == ["s.npz"]


def test_tensors_and_gpu_arrays_are_saved_as_arrays(tmp_path, device):
    t = minigrad.tensor([1.0, 2.0], device=device)
    loaded = minigrad.load(minigrad.save({"t": t, "a": t.data}, tmp_path / "t"))
    assert _equal(loaded, {"t": np.array([1.0, 2.0], np.float32),
                           "a": np.array([1.0, 2.0], np.float32)})


# ---------------------------------------------------------- damaged files
def _checkpoint(tmp_path):
    model = _model()
    opt = Adam(model.parameters(), lr=0.01)
    ce_loss(model, *classification_batches(1, 4)[0]).backward()
    opt.step()
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "note": (1, "a")}
    return minigrad.save(state, tmp_path / "ck"), state


def test_truncated_files_raise_one_clear_error(tmp_path):
    path, _ = _checkpoint(tmp_path)
    data = open(path, "rb").read()
    for size in sorted({0, 1, 3, 30, 100, len(data) // 3, len(data) // 2, len(data) - 200,
                        len(data) - 23, len(data) - 1}):
        with open(path, "wb") as f:
            f.write(data[:size])
        with pytest.raises(CheckpointError, match="ck.npz: cannot read this checkpoint"):
            minigrad.load(path)


def test_every_flipped_byte_is_caught_or_harmless(tmp_path):
    model = nn.Linear(3, 2)
    path = model.save(tmp_path / "m")
    data = open(path, "rb").read()
    caught = 0
    for i in range(len(data)):
        damaged = bytearray(data)
        damaged[i] ^= 0xFF
        with open(path, "wb") as f:
            f.write(damaged)
        try:
            loaded = minigrad.load(path)
        except CheckpointError as error:
            assert error.path == path and isinstance(error, ValueError)
            caught += 1
        else:      # a byte zip ignores (a timestamp, an attribute): same content
            assert _equal(loaded, model.state_dict()), i
    assert caught > 0.6 * len(data)     # the rest: versions, timestamps, zip64 sizes it rereads


def test_other_files_raise_the_same_error(tmp_path):
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(CheckpointError, match="text.npz"):
        minigrad.load(tmp_path / "text.npz")
    with pytest.raises(CheckpointError, match="text.npz"):
        nn.Linear(2, 2).load(tmp_path / "text")
    path, _ = _checkpoint(tmp_path)
    with pytest.raises(CheckpointError, match="no model state dict"):
        nn.Linear(2, 2).load(path)                      # an optimizer's file into a model


# ------------------------------------------------------------ crash safety
def test_a_save_that_raises_midway_leaves_the_previous_file(tmp_path, monkeypatch):
    path, state = _checkpoint(tmp_path)
    before = open(path, "rb").read()
    calls = {"n": 0}
    write_array = np.lib.format.write_array

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        return write_array(*args, **kwargs)

    monkeypatch.setattr(np.lib.format, "write_array", failing)
    with pytest.raises(OSError, match="disk full"):
        minigrad.save({"model": _model().state_dict(), "other": np.zeros(5)}, path)
    assert open(path, "rb").read() == before
    assert os.listdir(tmp_path) == ["ck.npz"]           # no temporary file left behind
    assert _equal(minigrad.load(path), state)


KILLED_SAVE = """
import os, sys, numpy as np, minigrad
write_array = np.lib.format.write_array
def dies(*args, **kwargs):
    write_array(*args, **kwargs)
    os._exit(3)                      # the process is killed after one array
np.lib.format.write_array = dies
minigrad.save({"a": np.zeros(1000), "b": np.ones(1000)}, sys.argv[1])
"""


def test_a_killed_save_leaves_the_previous_file(tmp_path):
    path, state = _checkpoint(tmp_path)
    before = open(path, "rb").read()
    done = subprocess.run([sys.executable, "-c", KILLED_SAVE, path], capture_output=True,
                          timeout=120)
    assert done.returncode == 3, done.stderr.decode()
    assert open(path, "rb").read() == before
    assert _equal(minigrad.load(path), state)


def test_the_written_file_has_the_usual_permissions(tmp_path):
    path = minigrad.save({"a": np.ones(1)}, tmp_path / "p")
    mask = os.umask(0)
    os.umask(mask)
    assert os.stat(path).st_mode & 0o777 == 0o666 & ~mask


# ------------------------------------------------------- states through disk
def _steps(opt, model, batches):
    for batch in batches:
        ce_loss(model, *batch).backward()
        opt.step()
        opt.zero_grad()


@pytest.mark.parametrize("make", [lambda ps: SGD(ps, lr=0.1, momentum=0.9, nesterov=True),
                                  lambda ps: Adam(ps, lr=0.01, weight_decay=0.1)])
def test_optimizer_state_through_disk_resumes_exactly(tmp_path, float64, make):
    batches = classification_batches(6, 8)
    model = _model()
    opt = make(model.parameters())
    _steps(opt, model, batches[:3])
    minigrad.save({"model": model.state_dict(), "optimizer": opt.state_dict()},
                  tmp_path / "ck")
    _steps(opt, model, batches[3:])
    loaded = minigrad.load(tmp_path / "ck")
    model2 = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.Tanh(), nn.Linear(8, 3))
    model2.to(np.float64)
    model2.load_state_dict(loaded["model"])
    opt2 = make(model2.parameters())
    opt2.load_state_dict(loaded["optimizer"])
    _steps(opt2, model2, batches[3:])
    assert _equal(model2.state_dict(), model.state_dict())


def test_scheduler_states_through_disk(tmp_path):
    def build(opt):
        return lr_scheduler.SequentialLR(
            opt, [lr_scheduler.ChainedScheduler([
                lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=3),
                lr_scheduler.MultiStepLR(opt, [2, 4])]),
                lr_scheduler.CosineAnnealingLR(opt, T_max=5)], milestones=[6])
    w = minigrad.tensor([1.0], requires_grad=True)
    opt = SGD([w], lr=1.0)
    sched = build(opt)
    lrs = []
    for t in range(14):
        if t == 5:
            minigrad.save({"opt": opt.state_dict(), "sched": sched.state_dict()},
                          tmp_path / "s")
        opt.step()
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
    loaded = minigrad.load(tmp_path / "s")
    opt2 = SGD([minigrad.tensor([1.0], requires_grad=True)], lr=1.0)
    opt2.load_state_dict(loaded["opt"])
    sched2 = build(opt2)
    sched2.load_state_dict(loaded["sched"])
    resumed = []
    for _ in range(9):
        opt2.step()
        sched2.step()
        resumed.append(opt2.param_groups[0]["lr"])
    assert resumed == lrs[5:]


def _bn_run():
    model = _model()
    opt = Adam(model.parameters(), lr=0.01)
    sched = lr_scheduler.ChainedScheduler([lr_scheduler.LinearLR(opt, total_iters=2),
                                           lr_scheduler.StepLR(opt, 1, 0.7)])
    acc = GradientAccumulator(opt, 3, scheduler=sched, model=model, max_grad_norm=1.0)
    return model, opt, acc


@pytest.mark.parametrize("stop", [4, 5, 6])
def test_training_resumed_from_disk_mid_window_is_bit_identical(tmp_path, float64, stop):
    batches = classification_batches(10, 8)

    def feed(model, acc, part):
        for x, y in part:
            acc.backward(ce_loss(model, x, y), num_items=len(x))
            acc.step()

    model, opt, acc = _bn_run()
    feed(model, acc, batches)
    acc.flush()

    model1, _, acc1 = _bn_run()
    feed(model1, acc1, batches[:stop])
    minigrad.save({"model": model1.state_dict(), "accumulator": acc1.state_dict(),
                   "rng": minigrad.random.get_rng_state()}, tmp_path / "run")
    del model1, acc1
    loaded = minigrad.load(tmp_path / "run")
    model2, opt2, acc2 = _bn_run()
    model2.load_state_dict(loaded["model"])
    acc2.load_state_dict(loaded["accumulator"])
    feed(model2, acc2, batches[stop:])
    acc2.flush()
    assert _equal(model2.state_dict(), model.state_dict())
    assert _equal(opt2.state_dict(), opt.state_dict())
    assert (acc2.updates, acc2.window_loss) == (acc.updates, acc.window_loss)


def test_nn_utils_checks_keys_and_values(tmp_path):
    with pytest.raises(TypeError, match="must be an array or a Tensor"):
        nn.utils.save({"w": [1, 2]}, tmp_path / "x")
    with pytest.raises(TypeError, match="names"):
        nn.utils.save({0: np.ones(1)}, tmp_path / "x")
    assert serialization.checkpoint_path("a/b") == "a/b.npz"
    assert serialization.checkpoint_path("a/b.npz") == "a/b.npz"


# ------------------------------------------------------------ any structure
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402
from hypothesis.extra import numpy as hnp  # noqa: E402

_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(-2 ** 80, 2 ** 80), st.floats(allow_nan=True),
    st.text(max_size=5),
    hnp.arrays(st.sampled_from([np.float32, np.float64, np.int64, np.uint8, np.bool_,
                                np.float16, np.complex64]),
               hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3)),
    hnp.from_dtype(np.dtype(np.float32)).map(np.float32),
    hnp.from_dtype(np.dtype(np.int16)).map(np.int16))
_keys = st.one_of(st.text(max_size=4), st.integers(-3, 3), st.none(), st.booleans(),
                  st.sampled_from(["__array__", "__tuple__", "__dict__", "a/b"]))
_states = st.recursive(
    _leaves, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                     st.lists(inner, max_size=3).map(tuple),
                                     st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=12)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(state=_states)
def test_any_state_round_trips(tmp_path, state):
    assert _equal(minigrad.load(minigrad.save(state, tmp_path / "any")), state)


def test_keys_that_are_no_file_names_round_trip(tmp_path):
    state = {"\x00": np.float32(0), "": np.ones(1), "..": {"/": np.zeros(2)}, "a b": np.ones(1),
             "a_b": np.zeros(1)}
    path = minigrad.save(state, tmp_path / "odd")
    assert _equal(minigrad.load(path), state)
    with zipfile.ZipFile(path) as archive:
        assert all(".." not in n.split("/") and not n.startswith("/") and "\x00" not in n
                   for n in archive.namelist())


@pytest.mark.parametrize("key", [np.int64(3), np.float64(0.5), np.int8(-1)])
def test_numpy_scalar_dict_keys_round_trip(tmp_path, key):
    """A key such as a step counted with NumPy (np.int64) is a valid key that
    save accepts, so load must read it back with its value and type."""
    state = {key: np.arange(3.0), "other": 1, 7: {key: "x"}}
    loaded = minigrad.load(minigrad.save(state, tmp_path / "keys"))
    assert set(loaded) == {key, "other", 7}
    back, = (k for k in loaded if k == key)
    assert type(back) is type(key)
    np.testing.assert_array_equal(loaded[key], np.arange(3.0))
    assert loaded[7] == {key: "x"}


def test_a_key_longer_than_a_zip_member_name_round_trips(tmp_path):
    # zip member names hold at most 65,535 bytes; the key only names the member
    state = {"k" * 70000: np.ones(1), "k" * 70001: np.arange(2.0), "k" * 64: np.zeros(3)}
    back = minigrad.load(minigrad.save(state, tmp_path / "long"))
    assert list(back) == list(state)
    for key in state:
        np.testing.assert_array_equal(back[key], state[key])


def test_bfloat16_arrays_round_trip_bit_for_bit(tmp_path):
    ml_dtypes = pytest.importorskip("ml_dtypes")
    array = np.array([0.1, -3.0, np.inf, 1e38], dtype=ml_dtypes.bfloat16)
    back = minigrad.load(minigrad.save({"buffer": array}, tmp_path / "b"))["buffer"]
    assert back.dtype == array.dtype
    np.testing.assert_array_equal(back.view(np.uint16), array.view(np.uint16))
    # a file without low-precision arrays keeps format version 1
    with zipfile.ZipFile(minigrad.save({"a": np.ones(2)}, tmp_path / "plain")) as archive:
        assert b'"version": 1' in archive.read("minigrad.json")


def test_a_bfloat16_accumulator_is_saved_mid_window_and_resumes(tmp_path):
    pytest.importorskip("ml_dtypes")
    minigrad.manual_seed(0)
    x1, x2 = minigrad.randn(4, 3), minigrad.randn(4, 3)

    def make(model):
        return GradientAccumulator(SGD(model.parameters(), lr=0.1), 2, dtype="bfloat16")

    model = nn.Linear(3, 2)
    acc = make(model)
    acc.backward(model(x1).sum())
    assert not acc.step()                       # mid-window: the sum sits in bfloat16
    path = minigrad.save({"model": model.state_dict(), "acc": acc.state_dict()},
                         tmp_path / "mid")
    acc.backward(model(x2).sum())
    assert acc.step()

    state = minigrad.load(path)
    resumed_model = nn.Linear(3, 2)
    resumed_model.load_state_dict(state["model"])
    resumed = make(resumed_model)
    resumed.load_state_dict(state["acc"])
    resumed.backward(resumed_model(x2).sum())
    assert resumed.step()
    for a, b in zip(model.parameters(), resumed_model.parameters()):
        np.testing.assert_array_equal(a.data, b.data)


def test_loading_a_folder_says_it_is_a_folder(tmp_path):
    (tmp_path / "ckpt").mkdir()
    for path in (tmp_path / "ckpt", tmp_path):
        with pytest.raises(IsADirectoryError, match="is a folder"):
            minigrad.load(path)
