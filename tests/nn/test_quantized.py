"""Quantized frozen weights: the NF4 table, round trips, the packed layout, the
layers' forward and backward, bytes as planned, LoRA on top, save and load."""
import numpy as np
import pytest

import minigrad
from minigrad import memory, nn, serialization
from minigrad import quantization as Q
from minigrad.memory_planner import plan, quantized_bytes_per

# QLoRA (Dettmers et al. 2023), appendix E, as bitsandbytes' functional.py prints them.
PAPER_NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
             -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
             0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
             0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
             0.7229568362236023, 1.0]


def _weight(shape=(48, 100), seed=0, scale=0.02):
    return (np.random.default_rng(seed).normal(size=shape) * scale).astype(np.float32)


def _linear(weight, bias=True):
    minigrad.manual_seed(0)
    layer = nn.Linear(weight.shape[1], weight.shape[0], bias=bias)
    layer.weight.data = weight.copy()
    return layer


# ------------------------------------------------------------------ the codes
def test_nf4_levels_are_the_papers_and_normal_quantiles():
    assert Q.NF4_LEVELS.tolist() == np.array(PAPER_NF4, np.float32).tolist()
    np.testing.assert_allclose(Q.normal_float_levels(), PAPER_NF4, atol=2e-7)
    assert Q.NF4_LEVELS[7] == 0 and (np.diff(Q.NF4_LEVELS) > 0).all()
    assert (Q.NF4_LEVELS > 0).sum() == 8 and (Q.NF4_LEVELS < 0).sum() == 7


def test_nearest_level_rounds_to_nearest_and_ties_down():
    mid = (Q.NF4_LEVELS[8] + Q.NF4_LEVELS[9]) / 2
    x = np.array([0.0, 1.0, -1.0, 0.08, mid, np.nextafter(mid, 1), 0.03, 0.05])
    assert Q.nearest_level(x, Q.NF4_LEVELS).tolist() == [7, 15, 0, 8, 8, 9, 7, 8]


def test_packing_puts_the_first_of_a_pair_in_the_high_nibble():
    w = np.array([-1.0, 1.0, 0.0], np.float32)            # codes 0, 15, 7 (+ pad 7)
    packed, absmax = Q.quantize_4bit(w, blocksize=64)
    assert packed.tolist() == [0x0F, 0x77] and absmax.tolist() == [1.0]
    assert Q.dequantize_4bit(packed, absmax, stop=3).tolist() == [-1.0, 1.0, 0.0]


@pytest.mark.parametrize("quant_type", ["nf4", "fp4", "int4"])
def test_4bit_round_trip_is_the_nearest_level_times_the_block_absmax(quant_type):
    w = _weight((10, 70))                                  # 700: the last block is short
    packed, absmax = Q.quantize_4bit(w, quant_type)
    assert packed.shape == (350,) and absmax.shape == (11,)
    flat = w.reshape(-1)
    blocks = np.arange(700) // 64
    np.testing.assert_array_equal(absmax, [np.abs(flat[blocks == b]).max() for b in range(11)])
    levels = Q.LEVELS[quant_type].astype(np.float64)
    exact = np.array([levels[np.argmin(np.abs(v / absmax[b] - levels))] * absmax[b]
                      for v, b in zip(flat.astype(np.float64), blocks)])
    got = Q.dequantize_4bit(packed, absmax, quant_type, dtype=np.float64, stop=700)
    np.testing.assert_allclose(got, exact, rtol=1e-6, atol=1e-9)
    part = Q.dequantize_4bit(packed, absmax, quant_type, dtype=np.float64, start=63, stop=131)
    np.testing.assert_array_equal(part, got[63:131])


def test_zero_is_exact_and_a_zero_block_decodes_to_zeros():
    w = _weight((4, 64))
    w[1] = 0
    w[2, ::3] = 0
    packed, absmax = Q.quantize_4bit(w)
    got = Q.dequantize_4bit(packed, absmax, stop=w.size).reshape(w.shape)
    assert absmax[1] == 0 and (got[1] == 0).all() and (got[2, ::3] == 0).all()


def test_int8_rowwise_round_trip_within_half_a_step():
    w = _weight()
    w[3] = 0
    codes, absmax = Q.quantize_int8_rowwise(w)
    assert codes.dtype == np.int8 and absmax.shape == (48,) and np.abs(codes).max() == 127
    back = Q.dequantize_int8_rowwise(codes, absmax, np.float64)
    assert (np.abs(back - w) <= absmax[:, None] / 254 * (1 + 1e-6)).all()
    assert (back[3] == 0).all()


def test_double_quantization_of_the_scales():
    absmax = np.abs(_weight((1000,), scale=1.0)) + 0.5
    codes, nested, offset = Q.quantize_absmax(absmax)
    assert codes.dtype == np.int8 and nested.shape == (4,) and offset.shape == ()
    back = Q.dequantize_absmax(codes, nested, offset)
    step = np.repeat(nested, 256)[:1000] / 127
    assert (np.abs(back - absmax) <= step / 2 + 1e-6).all()
    np.testing.assert_allclose(offset, absmax.mean(), rtol=1e-6)


def test_errors_order_int8_nf4_int4_on_normal_weights():
    w = _weight((256, 256))
    errors = {}
    for q in ("nf4", "int4"):
        packed, absmax = Q.quantize_4bit(w, q)
        errors[q] = Q.relative_error(w, Q.dequantize_4bit(packed, absmax, q, stop=w.size)
                                     .reshape(w.shape))
    errors["int8"] = Q.relative_error(w, Q.dequantize_int8_rowwise(*Q.quantize_int8_rowwise(w)))
    assert errors["int8"] < errors["nf4"] < errors["int4"]


# ------------------------------------------------------------------ the layers
def _layers(linear, chunk_rows=7):
    return {"int8": nn.Linear8bitLt.from_linear(linear, chunk_rows=chunk_rows),
            "nf4": nn.Linear4bit.from_linear(linear, chunk_rows=chunk_rows),
            "nf4-dq": nn.Linear4bit.from_linear(linear, compress_statistics=True,
                                                chunk_rows=chunk_rows),
            "fp4": nn.Linear4bit.from_linear(linear, "fp4", chunk_rows=chunk_rows)}


@pytest.mark.parametrize("name", ["int8", "nf4", "nf4-dq", "fp4"])
def test_forward_and_backward_through_the_dequantized_weight(float64, name):
    linear = _linear(_weight((30, 50)).astype(np.float64))
    layer = _layers(linear)[name]
    w = layer.dequantize()
    assert w.dtype == np.float64 and w.shape == (30, 50)
    x = minigrad.tensor(np.random.default_rng(1).normal(size=(2, 3, 50)), requires_grad=True)
    y = layer(x)
    np.testing.assert_allclose(y.data, x.data @ w.T + layer.bias.data, rtol=1e-12, atol=1e-14)
    g = np.random.default_rng(2).normal(size=y.shape)
    y.backward(minigrad.tensor(g))
    np.testing.assert_allclose(x.grad.data, g @ w, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(layer.bias.grad.data, g.reshape(-1, 30).sum(0), rtol=1e-12)
    assert all(p.grad is None and not p.requires_grad
               for n, p in layer.named_parameters() if n != "bias")
    assert minigrad.gradcheck(lambda x: layer(x), [minigrad.tensor(x.data[0, :2],
                                                                   requires_grad=True)])


def test_chunk_size_changes_nothing_but_memory(float64):
    linear = _linear(_weight((30, 50)).astype(np.float64))
    x = np.random.default_rng(1).normal(size=(4, 50))
    outs = [nn.Linear4bit.from_linear(linear, chunk_rows=c)(minigrad.tensor(x)).data
            for c in (1, 7, 30)]
    np.testing.assert_allclose(outs[0], outs[2], rtol=1e-13)
    np.testing.assert_allclose(outs[1], outs[2], rtol=1e-13)


def test_forward_never_holds_the_full_precision_weight():
    """Dequantizing 16 of 1024 rows at a time, forward + backward of a batch
    of 4 peak far below the float32 weight (4 MiB), which dequantize() needs."""
    linear = _linear(_weight((1024, 1024)))
    layer = nn.Linear4bit.from_linear(linear, chunk_rows=16)
    x = minigrad.tensor(np.ones((4, 1024), np.float32), requires_grad=True)
    with memory.peak() as m:
        layer(x).sum().backward()
    with memory.peak() as whole:
        layer.dequantize()
    full = 1024 * 1024 * 4
    assert whole.peak_bytes >= full
    assert m.peak_bytes < full / 8, m.peak_bytes


@pytest.mark.parametrize("name,per_weight", [("int8", 1 + 4 / 50), ("nf4", 0.5 + 4 / 64)])
def test_stored_bytes_are_the_planners(name, per_weight):
    linear = _linear(_weight((64, 50)))
    layer = _layers(linear)[name]
    assert layer.quantized_bytes() == Q.quantized_bytes((64, 50), "int8" if name == "int8"
                                                        else "4bit")
    assert memory.bytes_of(layer) == layer.quantized_bytes() + 64 * 4      # + the bias
    assert layer.quantized_bytes() == pytest.approx(per_weight * 64 * 50, rel=1e-3)


def test_planner_counts_scales_and_double_quantization():
    assert quantized_bytes_per("nf4") == 0.5625
    assert quantized_bytes_per("nf4-dq") == pytest.approx(0.515869140625)
    assert quantized_bytes_per("int8-rowwise", 128) == 1 + 4 / 128
    n = 256 * 4096
    double = nn.Linear4bit.from_linear(_linear(_weight((256, 4096))), compress_statistics=True)
    assert double.quantized_bytes() == n // 2 + n // 64 + 4 * (n // 64 // 256) + 4
    assert double.quantized_bytes() == pytest.approx(quantized_bytes_per("nf4-dq") * n,
                                                     rel=1e-4)
    p = plan(n + 10, trainable=10, frozen_dtype="nf4-dq", activation_bytes_per_item=0)
    assert p.parameters == pytest.approx(10 * 4 + n * 0.515869140625)
    with pytest.raises(ValueError, match="row_length"):
        plan(100, trainable=10, frozen_dtype="int8-rowwise", activation_bytes_per_item=0)


def test_quantize_model_by_name_and_all():
    minigrad.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    nn.quantize_model(model, "int8", targets=("2",))
    assert type(model[0]) is nn.Linear and isinstance(model[2], nn.Linear8bitLt)
    nn.quantize_model(model, "nf4")
    assert isinstance(model[0], nn.Linear4bit)
    assert [n for n, _ in nn.quantized_layers(model)] == ["0", "2"]
    with pytest.raises(ValueError, match="no Linear"):
        nn.quantize_model(model, "nf4", targets=("nope",))
    with pytest.raises(ValueError, match="scheme"):
        nn.quantize_model(model, "nf3")
    x = minigrad.tensor(np.ones((2, 8), np.float32))
    y = model(x).data
    nn.dequantize_model(model)
    assert type(model[0]) is nn.Linear
    np.testing.assert_allclose(model(x).data, y, rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ on disk
def test_save_and_load_a_quantized_model_and_an_older_reader_refuses(tmp_path, monkeypatch):
    def build():
        minigrad.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 70), nn.ReLU(), nn.Linear(70, 4))
        return nn.quantize_model(model, "nf4", compress_statistics=True)
    model = build()
    path = minigrad.save(model.state_dict(), tmp_path / "q")
    assert [f for f in tmp_path.iterdir()] == [tmp_path / "q.npz"]      # atomic: no leftovers
    minigrad.manual_seed(1)
    other = nn.quantize_model(nn.Sequential(nn.Linear(8, 70), nn.ReLU(), nn.Linear(70, 4)),
                              "nf4", compress_statistics=True)
    other.load_state_dict(minigrad.load(path))
    for a, b in zip(model.state_dict().values(), other.state_dict().values()):
        assert a.dtype == b.dtype and a.tobytes() == b.tobytes()
    float_model = nn.Sequential(nn.Linear(8, 70), nn.ReLU(), nn.Linear(70, 4))
    with pytest.raises(KeyError, match="weight_absmax"):
        float_model.load_state_dict(minigrad.load(path))
    monkeypatch.setattr(serialization, "_READS", (1, 2))          # a minigrad before this one
    with pytest.raises(serialization.CheckpointError, match="format version 3"):
        minigrad.load(path)
    plain = minigrad.save(float_model.state_dict(), tmp_path / "plain")
    assert minigrad.load(plain).keys() == float_model.state_dict().keys()   # still version 1


# ------------------------------------------------------------------ on the GPU
@pytest.mark.parametrize("name", ["int8", "nf4", "nf4-dq"])
def test_the_gpu_dequantizes_as_the_cpu(device, name):
    """Quantized on the device, dequantized by the fused kernels: the CPU's numbers."""
    linear = _linear(_weight((40, 96)))
    cpu = _layers(linear, chunk_rows=9)[name]
    here = _layers(linear.to(device), chunk_rows=9)[name]
    assert here.weight.device == device
    for key, a in cpu.state_dict().items():
        b = here.state_dict()[key]
        assert a.dtype == b.dtype and a.shape == b.shape, key
        if key == "weight" or a.dtype.kind == "f":       # the codes, and the scales
            np.testing.assert_allclose(b, a, rtol=1e-6, atol=0, err_msg=key)
        else:     # double quantization's codes: the GPU's mean may round differently
            assert np.abs(b.astype(int) - a.astype(int)).max() <= 1, key
    np.testing.assert_allclose(minigrad.backend.asnumpy(here.dequantize()), cpu.dequantize(),
                               rtol=1e-5, atol=1e-7)
    x = np.random.default_rng(3).normal(size=(5, 96)).astype(np.float32)
    xs = [minigrad.tensor(x, device=d, requires_grad=True) for d in ("cpu", device)]
    ys = [layer(t) for layer, t in zip((cpu, here), xs)]
    for y in ys:
        y.sum().backward()
    np.testing.assert_allclose(ys[1].numpy(), ys[0].numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(xs[1].grad.numpy(), xs[0].grad.numpy(), rtol=1e-5, atol=1e-6)
