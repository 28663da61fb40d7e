"""Module and Parameter: registration, order, modes, state dicts, devices."""
from __future__ import annotations

import copy
import os
import subprocess
import sys

import numpy as np
import pytest

import minigrad
from minigrad import nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.register_buffer("count", np.zeros((), dtype=np.int64))
        self.register_buffer("stats", np.ones(4, dtype=np.float32))
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        return self.drop(self.fc(x))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()
        self.scale = nn.Parameter(np.ones(4, dtype=np.float32))
        self.head = nn.Sequential(nn.ReLU(), nn.Linear(4, 2))

    def forward(self, x):
        return self.head(self.block(x) * self.scale)


def test_parameter_accepts_array_and_tensor():
    p = nn.Parameter(np.zeros(3, dtype=np.float32))
    assert p.requires_grad and isinstance(p, minigrad.Tensor)
    t = minigrad.randn(2, 2)
    q = nn.Parameter(t)
    assert q.data is t.data and q.requires_grad
    with pytest.raises(TypeError, match="floating"):
        nn.Parameter(np.zeros(3, dtype=np.int64))


def test_named_parameters_dotted_in_registration_order():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    # PyTorch's order: a module's own parameters, then its children's, each in
    # registration order
    assert names == ["scale", "block.fc.weight", "block.fc.bias", "head.1.weight",
                     "head.1.bias"]
    params = list(net.parameters())
    assert all(a is b for a, (_, b) in zip(params, net.named_parameters()))
    assert [n for n, _ in net.named_buffers()] == ["block.count", "block.stats"]
    assert [n for n, _ in net.named_modules()] == ["", "block", "block.fc", "block.drop",
                                                   "head", "head.0", "head.1"]
    assert [n for n, _ in net.named_children()] == ["block", "head"]


def test_parameter_order_identical_across_hash_seeds():
    code = ("import minigrad.nn as nn\n"
            "m = nn.Sequential(nn.Linear(2, 3), nn.Linear(3, 1))\n"
            "m.extra = nn.Linear(1, 1)\n"
            "print(','.join(n for n, _ in m.named_parameters()))")
    outputs = set()
    for seed in ("0", "1", "12345"):
        env = dict(os.environ, PYTHONHASHSEED=seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True, cwd=os.path.dirname(minigrad.__path__[0]))
        outputs.add(out.stdout.strip())
    assert outputs == {"0.weight,0.bias,1.weight,1.bias,extra.weight,extra.bias"}


def test_shared_parameter_listed_once():
    a = nn.Linear(2, 2)
    seq = nn.Sequential(a, a)
    assert len(list(seq.parameters())) == 2


def test_reassignment_moves_between_registries():
    m = nn.Module()
    m.x = nn.Linear(1, 1)
    assert "x" in m._modules
    m.x = nn.Parameter(np.zeros(1, dtype=np.float32))
    assert "x" not in m._modules and "x" in m._parameters
    m.register_buffer("b", None)
    m.b = np.arange(3.0)
    assert isinstance(m.b, minigrad.Tensor) and not m.b.requires_grad
    del m.x
    assert not hasattr(m, "x")
    with pytest.raises(TypeError, match="expected a Parameter"):
        lin = nn.Linear(1, 1)
        lin.weight = np.zeros((1, 1))


def test_assignment_before_init_is_an_error():
    class Bad(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(1, 1)

    with pytest.raises(AttributeError, match="super"):
        Bad()


def test_register_buffer_errors():
    m = nn.Linear(2, 2)
    with pytest.raises(KeyError, match="weight"):
        m.register_buffer("weight", np.zeros(2))
    with pytest.raises(TypeError, match="buffer 'z'"):
        m.register_buffer("z", [1, 2])


def test_train_eval_recurse():
    net = Net()
    assert all(m.training for m in net.modules())
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.block.train(False)
    assert not net.block.drop.training and net.head.training
    with pytest.raises(TypeError):
        net.train("no")


def test_zero_grad_sets_none():
    net = Net()
    net(minigrad.randn(5, 3)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_apply_visits_children_first():
    net = Net()
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen[-1] == "Net" and seen.index("Linear") < seen.index("Block")


def test_repr_like_pytorch():
    text = repr(nn.Sequential(nn.Linear(2, 3), nn.ReLU()))
    assert text == ("Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n"
                    "  (1): ReLU()\n)")
    assert repr(nn.Dropout(0.25)) == "Dropout(p=0.25)"


def test_state_dict_round_trip_and_copy():
    net = Net()
    state = net.state_dict()
    assert list(state) == ["scale", "block.count", "block.stats", "block.fc.weight",
                           "block.fc.bias", "head.1.weight", "head.1.bias"]   # as PyTorch
    assert state["block.count"].dtype == np.int64
    state["scale"][...] = 7                     # a copy: the model is unchanged
    assert float(net.scale.data[0]) == 1.0
    minigrad.manual_seed(1)
    other = Net()
    assert not np.array_equal(other.block.fc.weight.data, net.block.fc.weight.data)
    weight = other.block.fc.weight
    missing, unexpected = other.load_state_dict(net.state_dict())
    assert missing == [] and unexpected == []
    assert other.block.fc.weight is weight            # loaded in place
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[k], v)
        assert other.state_dict()[k].dtype == v.dtype


def test_state_dict_through_npz(tmp_path):
    net = Net()
    net.block.count = np.array(5, dtype=np.int64)
    path = tmp_path / "model.npz"
    net.save(path)
    minigrad.manual_seed(3)
    other = Net()
    other.load(path)
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[k], v)
    assert int(other.block.count.item()) == 5
    assert list(nn.utils.load(path)) == list(net.state_dict())


def test_strict_load_errors_name_the_key():
    net = Net()
    state = net.state_dict()
    del state["scale"]
    with pytest.raises(KeyError, match="missing keys: scale"):
        Net().load_state_dict(state)
    state = net.state_dict()
    state["block.extra"] = np.zeros(1)
    with pytest.raises(KeyError, match="unexpected keys: block.extra"):
        Net().load_state_dict(state)
    state = net.state_dict()
    state["head.1.weight"] = np.zeros((3, 3), dtype=np.float32)
    with pytest.raises(ValueError, match=r"head\.1\.weight.*\(3, 3\).*\(2, 4\)"):
        Net().load_state_dict(state)
    # non-strict: reports, loads what matches
    state = net.state_dict()
    del state["scale"]
    state["junk"] = np.zeros(2)
    missing, unexpected = Net().load_state_dict(state, strict=False)
    assert missing == ["scale"] and unexpected == ["junk"]


def test_load_keeps_dtype():
    net = nn.Linear(2, 2)
    state = {k: v.astype(np.float64) for k, v in net.state_dict().items()}
    net.load_state_dict(state)
    assert net.weight.dtype == np.float32


def test_to_dtype_in_place():
    net = Net()
    weight = net.block.fc.weight
    assert net.to(np.float64) is net
    assert weight is net.block.fc.weight and weight.dtype == np.float64
    assert net.block.stats.dtype == np.float64
    assert net.block.count.dtype == np.int64        # integer buffers keep their dtype
    y = net(minigrad.randn(2, 3, dtype=np.float64))
    assert y.dtype == np.float64
    with pytest.raises(TypeError, match="floating"):
        net.to(np.int32)


def test_to_device_round_trip(device):
    net = Net()
    before = net.state_dict()
    net.to(device)
    assert all(p.device == device for p in net.parameters())
    assert all(b.device == device for b in net.buffers())
    y = net(minigrad.randn(4, 3, device=device))
    assert y.device == device
    y.sum().backward()
    net.to("cpu")
    assert all(p.grad.device == "cpu" for p in net.parameters())
    for k, v in net.state_dict().items():
        np.testing.assert_array_equal(v, before[k])


def test_deepcopy_is_independent():
    net = Net()
    twin = copy.deepcopy(net)
    assert [n for n, _ in twin.named_parameters()] == [n for n, _ in net.named_parameters()]
    twin.scale.data[...] = 3
    assert float(net.scale.data[0]) == 1.0


def test_forward_missing_is_an_error():
    with pytest.raises(NotImplementedError, match="forward"):
        nn.Module()(1)


def test_load_state_dict_of_a_non_mapping_is_a_type_error():
    with pytest.raises(TypeError, match="load_state_dict: expected a dict .*got list"):
        nn.Linear(2, 1).load_state_dict([1, 2])


def test_attribute_reads_follow_every_change_of_a_parameter():
    # A parameter is read as a plain attribute (no __getattr__); every way of
    # changing it must keep that read and the registry in step.
    import copy
    import pickle

    m = nn.Linear(2, 3)
    assert "weight" in vars(m) and m.weight is m._parameters["weight"]
    new = nn.Parameter(np.zeros((3, 2), dtype=np.float32))
    m.weight = new
    assert m.weight is new and m._parameters["weight"] is new
    m.bias = None
    assert m.bias is None and m._parameters["bias"] is None
    m.register_parameter("bias", nn.Parameter(np.ones(3, dtype=np.float32)))
    assert m.bias is m._parameters["bias"] and float(m.bias.data.sum()) == 3.0
    m.weight = nn.Linear(1, 1)                  # a parameter replaced by a child module
    assert isinstance(m.weight, nn.Linear) and "weight" not in m._parameters
    assert [n for n, _ in m.named_parameters()] == ["bias", "weight.weight", "weight.bias"]
    del m.bias
    assert "bias" not in m._parameters
    with pytest.raises(AttributeError):
        m.bias
    for clone in (copy.deepcopy(m), pickle.loads(pickle.dumps(m))):
        inner = clone.weight
        assert inner.weight is inner._parameters["weight"] is not m.weight.weight
