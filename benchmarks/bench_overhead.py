"""Engine overhead: a 3-layer ReLU MLP in minigrad against the same maths in NumPy.

Forward + backward of  x -> Linear -> ReLU -> Linear -> ReLU -> Linear -> cross-entropy
is timed twice per repeat, once in minigrad and once written by hand in NumPy with
manual gradients, alternating the two so that both see the same machine state.
Each call is timed with the process's CPU time and the wall clock together; the
ratio of the medians is minigrad's overhead.  The floors (on the CPU-time
ratio, the work done; the wall-clock ratio is printed beside it):

    widths 64-128-128-10,     batch 32,  float32: ratio <= 1.5   (per-op overhead)
    widths 1024-1024-1024-10, batch 256, float32: ratio <= 1.05  (large matmuls)

Two harnesses, both interleaved.  "cold": a full ``gc.collect()`` before
every call, which walks every object of the process and leaves the caches
cold, so it charges Python-heavy code more, by an amount that depends on
what else the process has loaded (with PyTorch imported a collection walks
far more objects, and even NumPy's time triples).  "warm": :mod:`timeit`'s
method, the collector disabled during the repeats and the calls back to
back, as the steps of a training loop run; its ratio does not depend on what
else is loaded, and the floors are checked on it (CPU time).  PyTorch's
eager CPU step, when installed, runs as a third contender in both, for scale.

The "noise" column is the widest interquartile range of the four timings
(two contenders, two clocks) over its median: on a shared machine it shows how
far a single repeat can stray, and why the medians of many repeats are used.

Run:  python benchmarks/bench_overhead.py [--quick]
(or ``python benchmarks/run_all.py --only bench_overhead``).  Both contenders get
one BLAS thread (see ``benchmarks/common.py``): threadpoolctl when installed, and
``OPENBLAS_NUM_THREADS=1`` set before NumPy is imported.
"""
from __future__ import annotations

import sys

try:
    from . import common
except ImportError:      # run as a script: benchmarks/ is on sys.path
    import common

import numpy as np  # noqa: E402

import minigrad  # noqa: E402

CASES = [
    # (name, widths, batch, floor on the ratio minigrad / NumPy)
    ("small", (64, 128, 128, 10), 32, 1.5),
    ("large", (1024, 1024, 1024, 10), 256, 1.05),
]


def init_params(widths, rng):
    """Weights (out, in) and biases (out,) in float32, PyTorch's Linear layout."""
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append(rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, (fan_out,)).astype(np.float32))
    return params


# --------------------------------------------------------------- NumPy by hand
def numpy_step(params, x, y):
    """Loss and gradients of the MLP, forward and backward written by hand.

    cross-entropy = mean_n( logsumexp(z_n) - z_n[y_n] ); its gradient with respect
    to the logits is (softmax(z) - onehot(y)) / N.
    """
    W1, b1, W2, b2, W3, b3 = params
    n = x.shape[0]
    z1 = x @ W1.T + b1
    h1 = np.maximum(z1, 0)
    z2 = h1 @ W2.T + b2
    h2 = np.maximum(z2, 0)
    z3 = h2 @ W3.T + b3
    shifted = z3 - z3.max(axis=1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    loss = -log_probs[np.arange(n), y].mean()

    dz3 = np.exp(log_probs)
    dz3[np.arange(n), y] -= 1
    dz3 /= n
    dW3, db3 = dz3.T @ h2, dz3.sum(axis=0)
    dz2 = (dz3 @ W3) * (z2 > 0)
    dW2, db2 = dz2.T @ h1, dz2.sum(axis=0)
    dz1 = (dz2 @ W2) * (z1 > 0)
    dW1, db1 = dz1.T @ x, dz1.sum(axis=0)
    return loss, [dW1, db1, dW2, db2, dW3, db3]


# ------------------------------------------------------------------- minigrad
class TensorOpsLinear:
    """y = x Wᵀ + b from tensor ops, for a minigrad without ``nn``."""

    def __init__(self, weight, bias):
        self.weight, self.bias = weight, bias

    def __call__(self, x):
        return x @ self.weight.T + self.bias


def tensor_ops_cross_entropy(logits, target):
    """mean_n -log_softmax(z_n)[y_n] from tensor ops."""
    n = logits.shape[0]
    return -logits.log_softmax(axis=1)[np.arange(n), target.data].mean()


def build_minigrad_model(np_params):
    """Three layers holding copies of ``np_params`` and the loss function.

    ``minigrad.nn.Linear`` and ``nn.functional.cross_entropy`` (one fused
    Function each) when ``minigrad.nn`` exists, else the same maths from tensor ops.
    """
    weights = np_params[0::2]
    biases = np_params[1::2]
    try:
        from minigrad import nn  # noqa: PLC0415
        from minigrad.nn import functional as F  # noqa: PLC0415
    except ImportError:
        layers = [TensorOpsLinear(minigrad.tensor(w, requires_grad=True),
                                  minigrad.tensor(b, requires_grad=True))
                  for w, b in zip(weights, biases)]
        return layers, tensor_ops_cross_entropy
    layers = []
    for w, b in zip(weights, biases):
        layer = nn.Linear(w.shape[1], w.shape[0])
        layer.weight.data = w.copy()
        layer.bias.data = b.copy()
        layers.append(layer)
    return layers, F.cross_entropy


def parameters_of(layers):
    return [p for layer in layers for p in (layer.weight, layer.bias)]


def minigrad_step(layers, loss_fn, x, y, params=None):
    """Loss of the same MLP in minigrad, then backward (gradients land in .grad).

    ``params``: the parameters' list, made once as an optimizer holds it (its
    ``zero_grad()`` clears them); made here when not given.
    """
    for p in params if params is not None else parameters_of(layers):
        p.grad = None
    h = layers[0](x).relu()
    h = layers[1](h).relu()
    loss = loss_fn(layers[2](h), y)
    loss.backward()
    return loss


def check_same_maths(np_params, layers, loss_fn, x, y):
    """Both implementations must compute the same loss and gradients before timing."""
    loss_np, grads_np = numpy_step(np_params, x, y)
    loss_mg = minigrad_step(layers, loss_fn, minigrad.tensor(x), minigrad.tensor(y))
    np.testing.assert_allclose(loss_mg.item(), loss_np, rtol=1e-4)
    for p, g in zip(parameters_of(layers), grads_np):
        np.testing.assert_allclose(p.grad.numpy(), g, rtol=1e-3, atol=1e-5)


def torch_step_for(np_params, x, y):
    """The same forward + backward in PyTorch eager on the CPU (one thread), or
    None when PyTorch is not installed: a third contender, for scale."""
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return None
    torch.set_num_threads(1)
    params = [torch.tensor(a, requires_grad=True) for a in np_params]
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    F = torch.nn.functional

    def step():
        for p in params:
            p.grad = None
        W1, b1, W2, b2, W3, b3 = params
        h = F.relu(F.linear(xt, W1, b1))
        h = F.relu(F.linear(h, W2, b2))
        loss = F.cross_entropy(F.linear(h, W3, b3), yt)
        loss.backward()
        return loss
    return step


def bench_case(widths, batch, repeats, collect_each=True):
    """Medians (CPU and wall) per forward+backward for NumPy, minigrad (and
    PyTorch when installed), interleaved; ``collect_each``: see
    :func:`common.interleaved_medians_both_clocks`."""
    rng = common.seed_all(0)
    np_params = init_params(widths, rng)
    layers, loss_fn = build_minigrad_model(np_params)
    x = rng.standard_normal((batch, widths[0])).astype(np.float32)
    y = rng.integers(0, widths[-1], size=batch)
    check_same_maths(np_params, layers, loss_fn, x, y)

    x_mg, y_mg = minigrad.tensor(x), minigrad.tensor(y)
    params = parameters_of(layers)
    contenders = {"numpy": lambda: numpy_step(np_params, x, y),
                  "minigrad": lambda: minigrad_step(layers, loss_fn, x_mg, y_mg, params)}
    torch_step = torch_step_for(np_params, x, y)
    if torch_step is not None:
        contenders["pytorch"] = torch_step
    return common.interleaved_medians_both_clocks(contenders, repeats=repeats, warmup=3,
                                                  collect_each=collect_each)


class _Identity(minigrad.autograd.Function):
    """A Function that does nothing, to time the engine's fixed costs alone."""

    def forward(self, a):
        return a

    def backward(self, g):
        return g


def per_call_costs(repeats: int = 2001) -> dict:
    """Microseconds of each fixed per-call part of the engine, on tiny arrays
    (so that no arithmetic is timed); medians of ``repeats`` timings (of a
    loop of 100 calls each), the collector off (``timeit``'s method):

    * ``function_call``: ``_Identity()(t)`` under ``no_grad``: making the
      Function object, wrapping the inputs, running forward, making the
      output Tensor;
    * ``graph_record``: the same call with grad enabled minus the above:
      ``needs_input_grad``, the edges to the inputs, linking the output;
    * ``backward_per_function``: one more Function in a chain that backward
      walks (topological order, ``_send_gradients``, ``release``), from a
      chain of 64;
    * ``linear_module_chain``: ``nn.Linear(x)`` minus ``LinearFunction()(x, W, b)``:
      ``Module.__call__``, ``forward``, the dtype checks of ``F.linear``;
    * ``numpy_matmul``: one ``x @ W.T`` of the small MLP's first layer, for scale.
    """
    import gc  # noqa: PLC0415
    import statistics  # noqa: PLC0415
    import time  # noqa: PLC0415

    from minigrad import nn  # noqa: PLC0415
    from minigrad.functions.linear import LinearFunction  # noqa: PLC0415

    a = minigrad.tensor(np.ones(4, np.float32), requires_grad=True)
    layer = nn.Linear(64, 128)
    x = minigrad.tensor(np.ones((32, 64), np.float32))
    xa, w = x.data, layer.weight.data

    def chain():
        t = a
        for _ in range(64):
            t = _Identity()(t)
        return t

    def chain_backward():
        t = chain()
        a.grad = None
        t.backward(np.ones(4, np.float32))

    def call_no_grad():
        with minigrad.no_grad():
            for _ in range(100):
                _Identity()(a)

    def call_grad():
        for _ in range(100):
            _Identity()(a)

    def module():
        for _ in range(100):
            layer(x)

    def function():
        for _ in range(100):
            LinearFunction()(x, layer.weight, layer.bias)

    def matmul():
        for _ in range(100):
            xa @ w.T

    def median_us(fn, per_call):
        times = []
        for _ in range(repeats // 10):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return 1e6 * statistics.median(times) / per_call

    gc.collect()
    gc.disable()
    try:
        free = median_us(call_no_grad, 100)
        recorded = median_us(call_grad, 100)
        walk = median_us(chain_backward, 64) - median_us(chain, 64)
        chain_cost = median_us(module, 100) - median_us(function, 100)
        mm = median_us(matmul, 100)
    finally:
        gc.enable()
    return {"function_call_us": free, "graph_record_us": recorded - free,
            "backward_per_function_us": walk, "linear_module_chain_us": chain_cost,
            "numpy_matmul_us": mm}


def run(quick: bool = False) -> dict:
    """Time every case, print a table, and return ``{name: {...}}`` with the ratios.

    The floors are checked on the warm harness's CPU-time ratio (the work
    done; see the module docstring); the cold harness's CPU and wall-clock
    ratios are reported beside it, with the quartiles of each contender's
    times as the noise of the machine.
    """
    limits = common.one_blas_thread()
    results, rows = {}, []
    try:
        for name, widths, batch, floor in CASES:
            repeats = (31 if name == "small" else 5) if quick else \
                (301 if name == "small" else 31)
            t = bench_case(widths, batch, repeats)
            warm = bench_case(widths, batch, repeats, collect_each=False)
            np_t, mg_t = t["numpy"], t["minigrad"]
            ratio = mg_t["cpu"] / np_t["cpu"]
            wall_ratio = mg_t["wall"] / np_t["wall"]
            warm_ratio = warm["minigrad"]["cpu"] / warm["numpy"]["cpu"]
            warm_wall_ratio = warm["minigrad"]["wall"] / warm["numpy"]["wall"]
            torch_ratio = t["pytorch"]["cpu"] / np_t["cpu"] if "pytorch" in t else None
            torch_warm = (warm["pytorch"]["cpu"] / warm["numpy"]["cpu"]
                          if "pytorch" in warm else None)
            noise = max((hi - lo) / med for c in (np_t, mg_t) for key in ("cpu", "wall")
                        for (lo, hi), med in [(c[key + "_spread"], c[key])])
            results[name] = {"widths": widths, "batch": batch, "numpy_s": np_t["cpu"],
                             "minigrad_s": mg_t["cpu"], "numpy_wall_s": np_t["wall"],
                             "minigrad_wall_s": mg_t["wall"], "ratio": warm_ratio,
                             "cold_ratio": ratio, "cold_wall_ratio": wall_ratio,
                             "warm_wall_ratio": warm_wall_ratio,
                             "pytorch_cold_ratio": torch_ratio, "pytorch_ratio": torch_warm,
                             "noise": noise, "floor": floor, "ok": warm_ratio <= floor}
            rows.append([name, "-".join(map(str, widths)), batch, np_t["cpu"] * 1e3,
                         mg_t["cpu"] * 1e3, ratio, wall_ratio, warm_ratio, warm_wall_ratio,
                         "-" if torch_ratio is None else f"{torch_ratio:.3f} / {torch_warm:.3f}",
                         f"{100 * noise:.0f} %", floor, warm_ratio <= floor])
    finally:
        if limits is not None:
            limits.unregister()
    common.print_table("Engine overhead: 3-layer ReLU MLP + cross-entropy, forward + "
                       "backward, float32, one BLAS thread (minigrad / NumPy by hand); "
                       "noise: widest interquartile range / median",
                       ["case", "widths", "batch", "numpy CPU ms", "minigrad CPU ms",
                        "cold CPU ratio", "cold wall ratio", "warm CPU ratio", "warm wall ratio",
                        "PyTorch / NumPy (cold, warm)", "noise", "floor", "met (warm)"],
                       rows)
    costs = per_call_costs(201 if quick else 2001)
    common.print_table("Fixed costs per call (µs, wall clock, medians, collector off)",
                       list(costs), [[round(v, 2) for v in costs.values()]])
    results["per_call_us"] = costs
    return results


if __name__ == "__main__":
    out = run(quick="--quick" in sys.argv[1:])
    sys.exit(0 if all(r["ok"] for r in out.values() if "ok" in r) else 1)
