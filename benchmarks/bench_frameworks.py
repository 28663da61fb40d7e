"""minigrad against other frameworks on the CPU: the same MLP, batch and training step.

One training step is: forward through an MLP (Linear + ReLU layers),
softmax cross-entropy, zero the gradients, backward, one SGD update, all in
float32.  Every framework starts from the *same* weights, and the first
step's loss is checked to agree with minigrad's, so the same computation is
timed.  Contenders:

* minigrad (NumPy),
* PyTorch (CPU, eager),
* DeZero (the framework of "Deep Learning from Scratch 3", NumPy), when installed,
* tinygrad (its CPU backend, the step compiled with ``TinyJit``), when
  installed and a CPU device works (it needs clang).

Everyone gets one thread: ``torch.set_num_threads(1)``,
``NUM_CPU_THREADS=1`` for tinygrad's kernels, and one BLAS thread for NumPy
(threadpoolctl, or ``OPENBLAS_NUM_THREADS=1`` set before NumPy is imported).
Steps are timed in turn, repeat after repeat, in CPU time of the process (see
benchmarks/common.py); the table shows medians and each framework's time
divided by minigrad's.

Run:  python benchmarks/bench_frameworks.py [--quick]
"""
from __future__ import annotations

import os
import sys

try:
    from . import common
except ImportError:      # run as a script: benchmarks/ is on sys.path
    import common

import numpy as np  # noqa: E402

import minigrad  # noqa: E402
from minigrad import nn, optim  # noqa: E402
from minigrad.nn import functional as F  # noqa: E402

CASES = [
    # (name, widths, batch)
    ("small", (784, 256, 256, 10), 128),
    ("large", (1024, 1024, 1024, 10), 256),
]
LR = 0.01


class Unavailable(Exception):
    """A framework that is not installed or cannot run here (the reason is the message)."""


def init_weights(widths, rng):
    """(W, b) per layer, W of shape (out, in), PyTorch's default uniform init, float32."""
    params = []
    for fan_in, fan_out in zip(widths[:-1], widths[1:]):
        bound = 1.0 / np.sqrt(fan_in)
        params.append((rng.uniform(-bound, bound, (fan_out, fan_in)).astype(np.float32),
                       rng.uniform(-bound, bound, fan_out).astype(np.float32)))
    return params


# ---------------------------------------------------------------- contenders
# Each maker takes (weights, x, y) and returns (step, first_loss): ``step()``
# runs one training step; first_loss is the loss of the first step, a float.

def make_minigrad(weights, x, y):
    layers = []
    for i, (w, b) in enumerate(weights):
        linear = nn.Linear(w.shape[1], w.shape[0])
        linear.weight.data = w.copy()
        linear.bias.data = b.copy()
        layers += [linear, nn.ReLU()] if i < len(weights) - 1 else [linear]
    model = nn.Sequential(*layers)
    opt = optim.SGD(model.parameters(), lr=LR)
    xt, yt = minigrad.tensor(x), minigrad.tensor(y)

    def step():
        loss = F.cross_entropy(model(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step, float(step().item())


def make_torch(weights, x, y):
    try:
        import torch  # noqa: PLC0415
    except ImportError as exc:
        raise Unavailable("PyTorch is not installed") from exc
    torch.set_num_threads(1)
    layers = []
    for i, (w, b) in enumerate(weights):
        linear = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            linear.weight.copy_(torch.from_numpy(w))
            linear.bias.copy_(torch.from_numpy(b))
        layers += [linear, torch.nn.ReLU()] if i < len(weights) - 1 else [linear]
    model = torch.nn.Sequential(*layers)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        loss = torch.nn.functional.cross_entropy(model(xt), yt)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return loss
    return step, float(step().item())


def _import_dezero():
    try:
        import dezero  # noqa: F401, PLC0415
    except ImportError as exc:
        raise Unavailable("DeZero is not installed (pip install dezero)") from exc
    except AttributeError:
        # DeZero 0.0.13 (2020) uses ``np.int`` as a default argument, an alias
        # NumPy removed in 1.24; give it back for the import only.
        np.int = int
        try:
            import dezero  # noqa: F401, PLC0415
        finally:
            del np.int
    import dezero  # noqa: PLC0415
    return dezero


def make_dezero(weights, x, y):
    dezero = _import_dezero()
    import dezero.functions as DF  # noqa: PLC0415
    import dezero.layers as DL  # noqa: PLC0415

    model = dezero.Model()
    linears = []
    for i, (w, b) in enumerate(weights):
        linear = DL.Linear(w.shape[0], in_size=w.shape[1])
        # DeZero keeps W as (in, out).  Its own init gives float64 weights under
        # NumPy 2 (float32 array * float64 scalar), so set float32 ones here.
        linear.W.data = np.ascontiguousarray(w.T)
        linear.b.data = b.copy()
        setattr(model, f"l{i}", linear)
        linears.append(linear)

    def forward(h):
        for i, linear in enumerate(linears):
            h = linear(h)
            if i < len(linears) - 1:
                h = DF.relu(h)
        return h
    opt = dezero.optimizers.SGD(LR).setup(model)

    def step():
        loss = DF.softmax_cross_entropy(forward(x), y)
        model.cleargrads()
        loss.backward()
        opt.update()
        return loss
    loss = step()
    if linears[0].W.data.dtype != np.float32:
        raise Unavailable(f"DeZero computed in {linears[0].W.data.dtype}, not float32")
    return step, float(loss.data)


def make_tinygrad(weights, x, y):
    # tinygrad's CPU kernels run on as many threads as there are cores unless
    # told otherwise; it reads this variable when first imported.
    os.environ.setdefault("NUM_CPU_THREADS", "1")
    try:
        from tinygrad import Context, Device, Tensor, TinyJit  # noqa: PLC0415
        from tinygrad import nn as tnn  # noqa: PLC0415
    except ImportError as exc:
        raise Unavailable("tinygrad is not installed (pip install tinygrad)") from exc
    try:
        device = Device.DEFAULT
    except RuntimeError as exc:
        raise Unavailable(f"tinygrad has no usable device here ({exc}; its CPU "
                          "backend needs clang)") from exc
    if device not in ("CPU", "CLANG", "LLVM"):
        raise Unavailable(f"tinygrad picked device {device}, not a CPU backend")

    linears = []
    for w, b in weights:
        linear = tnn.Linear(w.shape[1], w.shape[0])
        linear.weight = Tensor(w.copy()).realize()
        linear.bias = Tensor(b.copy()).realize()
        linears.append(linear)
    params = [t for linear in linears for t in (linear.weight, linear.bias)]
    opt = tnn.optim.SGD(params, lr=LR)
    xt, yt = Tensor(x).realize(), Tensor(y.astype(np.int32)).realize()

    def loss_of(h):
        for i, linear in enumerate(linears):
            h = linear(h)
            if i < len(linears) - 1:
                h = h.relu()
        return h.sparse_categorical_crossentropy(yt)

    @TinyJit
    def jit_step():
        with Context(TRAINING=1):        # the optimizer refuses to step otherwise
            opt.zero_grad()
            loss = loss_of(xt)
            loss.backward()
            # realize the loss together with the update: computed lazily after
            # opt.step(), it would see the updated weights
            Tensor.realize(loss, *opt.schedule_step())
            return loss

    first = float(jit_step().numpy())
    for _ in range(2):                      # TinyJit captures on the 2nd/3rd call
        jit_step()

    def step():
        return jit_step().numpy()           # .numpy() waits for the result
    return step, first


REQUIRED = ("minigrad",)    # the others are skipped, with the reason, when they fail
MAKERS = {"minigrad": make_minigrad, "pytorch": make_torch, "dezero": make_dezero,
          "tinygrad": make_tinygrad}


# --------------------------------------------------------------------- run
def bench_case(widths, batch, repeats):
    """Time every available framework on one case; return (medians, losses, skipped)."""
    rng = common.seed_all(0)
    weights = init_weights(widths, rng)
    x = rng.standard_normal((batch, widths[0]), dtype=np.float32)
    y = rng.integers(0, widths[-1], batch)
    steps, losses, skipped = {}, {}, {}
    for name, maker in MAKERS.items():
        try:
            steps[name], losses[name] = maker(weights, x, y)
        except Unavailable as exc:
            skipped[name] = str(exc)
        except Exception as exc:          # an optional framework that breaks here
            if name in REQUIRED:
                raise
            skipped[name] = f"failed to run: {type(exc).__name__}: {exc}"
    for name, loss in losses.items():         # the same model, really
        if not np.isclose(loss, losses["minigrad"], rtol=1e-4):
            raise RuntimeError(f"{name}'s first loss {loss} differs from minigrad's "
                               f"{losses['minigrad']}: not the same computation")
    return common.interleaved_median(steps, repeats, warmup=2), losses, skipped


def run(quick: bool = False) -> dict:
    """Time each case, print a table, return ``{case: {framework: {...}}}``."""
    limits = common.one_blas_thread()
    results = {}
    try:
        for case, widths, batch in CASES:
            repeats = (5 if case == "small" else 3) if quick else (21 if case == "small" else 7)
            times, _, skipped = bench_case(widths, batch, repeats)
            base = times["minigrad"]
            results[case] = {name: {"step_s": t, "vs_minigrad": t / base}
                             for name, t in times.items()}
            results[case]["skipped"] = skipped
            rows = [[name, 1e3 * t, t / base] for name, t in times.items()]
            rows += [[name, "skipped", "-"] for name in skipped]
            common.print_table(
                f"Frameworks, CPU, one thread: MLP {'-'.join(map(str, widths))}, batch "
                f"{batch}, float32, SGD training step",
                ["framework", "CPU ms / step", "time / minigrad"], rows)
            for name, reason in skipped.items():
                print(f"  {name} skipped: {reason}")
    finally:
        if limits is not None:
            limits.unregister()
    return results


if __name__ == "__main__":
    run(quick="--quick" in sys.argv[1:])
