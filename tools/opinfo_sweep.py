"""PyTorch-parity sweep: PyTorch's own per-operator sample inputs, run through minigrad.

PyTorch's test suite describes each operator by an ``OpInfo``
(``torch.testing._internal.common_methods_invocations.op_db``): a callable and
a generator of sample inputs (``sample_inputs``) and of inputs it refuses
(``error_inputs``).  For every operator whose name minigrad shares (a
module-level function, a ``Tensor`` method or a ``minigrad.nn.functional``
function) this module converts each float64 sample to minigrad, calls the
counterpart, and compares the output's values, dtype and shape and the
gradients of every input that requires one (for a random upstream gradient).

Each sample ends in one of:

``pass``         same values, shapes, dtypes and gradients;
``wrong``        a value, shape, dtype or gradient differs (or minigrad accepts
                 an input PyTorch refuses);
``crash``        minigrad raised an unclear error: one raised inside NumPy or
                 Python rather than by a check of minigrad's, or an
                 ``AttributeError``/``KeyError``/``ZeroDivisionError``-like error;
``refused``      minigrad refused clearly (its own ``TypeError``, ``ValueError``,
                 ``NotImplementedError``...): an option it does not offer;
``skipped``      PyTorch itself raised, or the sample cannot be converted.

Run the full sweep (about a minute on one core)::

    PYTHONPATH=. python -m tools.opinfo_sweep [--verbose] [--op NAME]

``tests/test_opinfo_sweep.py`` runs it in the test suite when PyTorch is
installed.
"""
from __future__ import annotations

import argparse
import collections
import os
import sys
import traceback
import types
import unittest
import warnings

import numpy as np

import minigrad
import minigrad.nn.functional as F

# operators whose outputs are random or uninitialized: compare shape and dtype only
RANDOM_OUTPUT = {"randn", "rand", "empty", "empty_like", "nn.functional.dropout",
                 "randn_like", "rand_like", "new_empty", "bernoulli", "multinomial",
                 "normal", "randint", "randint_like", "uniform"}
# torch.masked.* and friends are other operators that merely share a last name
FOREIGN_PREFIXES = ("masked.", "special.", "fft.", "_refs.", "sparse.")
# unclear errors: raised by a slip, not by an argument check
UNCLEAR_TYPES = (AttributeError, KeyError, ZeroDivisionError, UnboundLocalError,
                 NameError, AssertionError, RecursionError, FloatingPointError)
RTOL, ATOL = 1e-7, 1e-9
TOLERANCE = {"float64": (1e-7, 1e-9, 1e-6, 1e-8), "float32": (1e-4, 1e-5, 1e-3, 1e-4)}
_tol = dict(value=(RTOL, ATOL), grad=(1e-6, 1e-8))
# OpInfos whose ``op`` takes its arguments in another order than the public function
ADAPTERS = {"where": lambda x, cond, other: minigrad.where(cond, x, other),
            "nn.functional.embedding": lambda weight, idx, **kw: F.embedding(idx, weight, **kw)}


# OpInfos for an operator minigrad offers under another name: PyTorch's own
# definition of the OpInfo's operator is the call on the right (linalg.diagonal
# is diagonal over the last two dims, clamp_min is clamp(min=), upsample_* and
# constant_pad_nd are interpolate/pad with fixed options, __rdiv__ is __rtruediv__,
# unsafe_split/unsafe_chunk/split_with_sizes are split/chunk, vdot of reals is dot)
RENAMED = {
    "linalg.diagonal": ("minigrad.diagonal (dims -2, -1)",
                        lambda a, offset=0, dim1=-2, dim2=-1:
                        minigrad.diagonal(a, offset=offset, dim1=dim1, dim2=dim2)),
    "clamp_min": ("minigrad.clamp(min=)", lambda x, v: minigrad.clamp(x, min=v)),
    "clamp_max": ("minigrad.clamp(max=)", lambda x, v: minigrad.clamp(x, max=v)),
    "constant_pad_nd": ("F.pad (constant)",
                        lambda x, pad, value=0: F.pad(x, pad, value=value)),
    "nn.functional.upsample_nearest": (
        "F.interpolate(mode='nearest')",
        lambda x, size=None, scale_factor=None:
        F.interpolate(x, size=size, scale_factor=scale_factor, mode="nearest")),
    "nn.functional.upsample_bilinear": (
        "F.interpolate(mode='bilinear', align_corners=True)",
        lambda x, size=None, scale_factor=None:
        F.interpolate(x, size=size, scale_factor=scale_factor, mode="bilinear",
                      align_corners=True)),
    "__rdiv__": ("Tensor.__rtruediv__", lambda x, other: x.__rtruediv__(other)),
    # split/chunk without the views' aliasing checks, and vdot on real inputs
    "split_with_sizes": ("minigrad.split (sizes)",
                         lambda x, sizes, dim=0: minigrad.split(x, list(sizes), dim)),
    "unsafe_split": ("minigrad.split", lambda x, size, dim=0: minigrad.split(x, size, dim)),
    "unsafe_chunk": ("minigrad.chunk", lambda x, chunks, dim=0: minigrad.chunk(x, chunks, dim)),
    "vdot": ("minigrad.dot (real inputs)", lambda x, y: minigrad.dot(x, y)),
}
# integer-only operators (bitwise, shifts, one_hot) are swept in this dtype
INTEGER_DTYPE = "int64"


# OpInfos written as lambdas over a property or an in-place method
SPECIAL = {"T": lambda x: x.T, "mT": lambda x: x.mT, "item": lambda x: x.item(),
           "zero_": lambda x: x.clone().zero_()}


def deliberate_extension(torch, name, sample, label="", err=None):
    """The reason, when an input PyTorch refuses is one minigrad accepts on purpose
    (the table in docs/api/pytorch_differences.md), else None."""
    scalar = not isinstance(sample.input, torch.Tensor) or any(
        not isinstance(a, torch.Tensor) for a in sample.args)
    python_numbers = err is not None and err.error_type is Exception and not err.error_regex
    if name in ("maximum", "minimum", "max", "min") and scalar \
            and python_numbers:
        return "maximum/minimum with a Python number (NumPy's meaning)"
    if python_numbers and not isinstance(sample.input, torch.Tensor) \
            and label.startswith("minigrad."):
        return "module-level functions take Python numbers as input (NumPy's meaning)"
    if name in ("atan2", "isclose", "copysign", "fmod", "logaddexp", "logaddexp2", "hypot",
                "fmax", "fmin", "logical_and", "logical_or", "logical_xor") and scalar \
            and python_numbers:
        return "binary functions take a Python number as the second argument"
    if name in ("mean", "var", "std", "softmax", "log_softmax") and isinstance(
            sample.input, torch.Tensor) and not sample.input.dtype.is_floating_point:
        return "floating functions of integer tensors use the default dtype, as exp and log"
    return None


def import_op_db():
    """PyTorch's OpInfo list (``expecttest``, a test-only dependency, stubbed)."""
    if "expecttest" not in sys.modules:
        try:
            import expecttest  # noqa: F401
        except ImportError:
            stub = types.ModuleType("expecttest")
            stub.TestCase = unittest.TestCase
            sys.modules["expecttest"] = stub
    from torch.testing._internal.common_methods_invocations import op_db
    return op_db


def counterparts(op):
    """``[(label, callable(input, *args, **kwargs))]`` minigrad offers for ``op``."""
    name = op.name
    found = []
    if name in RENAMED:
        return [RENAMED[name]]
    if name.startswith("nn.functional."):
        short = name[len("nn.functional."):]
        if "." not in short and hasattr(F, short):
            found.append((f"F.{short}", getattr(F, short)))
        return found
    if name.startswith("linalg."):
        linalg = getattr(minigrad, "linalg", None)
        short = name[len("linalg."):]
        if linalg is not None and hasattr(linalg, short):
            found.append((f"linalg.{short}", getattr(linalg, short)))
        return found
    if "." in name:
        return found
    if name in SPECIAL and hasattr(minigrad.Tensor, name):
        return [(f"Tensor.{name}", SPECIAL[name])]
    if op.op is not None and getattr(op.op, "__module__", "") != "torch.testing." \
            and hasattr(minigrad, name) and callable(getattr(minigrad, name)):
        found.append((f"minigrad.{name}", getattr(minigrad, name)))
    if op.method_variant is not None and hasattr(minigrad.Tensor, name):
        attr = getattr(minigrad.Tensor, name)
        if isinstance(attr, property):
            found.append((f"Tensor.{name}", lambda x, *a, _n=name, **k: getattr(x, _n)))
        else:
            found.append((f"Tensor.{name}",
                          lambda x, *a, _n=name, **k: getattr(x, _n)(*a, **k)))
    inplace = name + "_"
    if op.inplace_variant is not None and callable(getattr(minigrad.Tensor, inplace, None)):
        found.append((f"Tensor.{inplace} (in place)",        # on a copy: a leaf refuses
                      lambda x, *a, _n=inplace, **k: getattr(x.clone(), _n)(*a, **k)))
    for alias in getattr(op, "aliases", ()):     # clip for clamp, concat for cat, ...
        short = alias.name
        if "." in short:
            continue
        if callable(getattr(minigrad, short, None)):
            found.append((f"minigrad.{short} (alias)", getattr(minigrad, short)))
        if alias.method_variant is not None and callable(getattr(minigrad.Tensor, short,
                                                                 None)):
            found.append((f"Tensor.{short} (alias)",
                          lambda x, *a, _n=short, **k: getattr(x, _n)(*a, **k)))
    return found


def _dtype(torch, d):
    return np.dtype(str(d).replace("torch.", "")) if d is not torch.bool else np.dtype(bool)


def to_minigrad(torch, obj, leaves):
    """The sample's torch objects as minigrad's (tensors become leaves)."""
    if isinstance(obj, torch.Tensor):
        arr = obj.detach().cpu().resolve_conj().numpy().copy()
        t = minigrad.tensor(arr, requires_grad=bool(obj.requires_grad))
        leaves.append((obj, t))
        return t
    if isinstance(obj, torch.dtype):
        return _dtype(torch, obj)
    if isinstance(obj, torch.Size):
        return tuple(obj)
    if isinstance(obj, torch.device):
        return str(obj)
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_minigrad(torch, o, leaves) for o in obj) \
            if not hasattr(obj, "_fields") else tuple(to_minigrad(torch, o, leaves) for o in obj)
    if isinstance(obj, dict):
        return {k: to_minigrad(torch, v, leaves) for k, v in obj.items()}
    if isinstance(obj, torch.memory_format) or isinstance(obj, torch.layout):
        raise _Unconvertible(f"{obj!r}")
    return obj


class _Unconvertible(Exception):
    pass


def flatten_outputs(torch, out):
    """Torch or minigrad outputs as a flat list of arrays/scalars."""
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, minigrad.Tensor):
        return [out]
    if isinstance(out, (list, tuple)):
        flat = []
        for o in out:
            flat.extend(flatten_outputs(torch, o))
        return flat
    return [out]


def _as_array(torch, o):
    if isinstance(o, torch.Tensor):
        return o.detach().cpu().numpy()
    if isinstance(o, minigrad.Tensor):
        return o.numpy()
    return o


def compare_values(torch, ref, got, name, shape_only=False):
    """None when equal, else a sentence saying what differs."""
    r_flat, g_flat = flatten_outputs(torch, ref), flatten_outputs(torch, got)
    if len(r_flat) != len(g_flat):
        return f"{len(g_flat)} outputs, PyTorch {len(r_flat)}"
    for i, (r, g) in enumerate(zip(r_flat, g_flat)):
        if isinstance(r, torch.Tensor):
            if not isinstance(g, minigrad.Tensor):
                return f"output {i}: {type(g).__name__}, PyTorch a Tensor"
            ra, ga = _as_array(torch, r), _as_array(torch, g)
            if ra.shape != ga.shape:
                return f"output {i}: shape {ga.shape}, PyTorch {ra.shape}"
            if ra.dtype != ga.dtype:
                return f"output {i}: dtype {ga.dtype}, PyTorch {ra.dtype}"
            if shape_only:
                continue
            if ra.dtype.kind in "fc":
                ok = np.allclose(ga, ra, rtol=_tol["value"][0], atol=_tol["value"][1],
                                 equal_nan=True)
            else:
                ok = np.array_equal(ga, ra)
            if not ok:
                return f"output {i}: values differ (max |diff| " \
                       f"{np.nanmax(np.abs(ga.astype(float) - ra.astype(float)), initial=0):.3g})"
        else:
            ga = _as_array(torch, g)
            if isinstance(ga, np.ndarray) and ga.ndim == 0:
                ga = ga.item()
            if shape_only:
                continue
            try:
                same = (ga == r) or (isinstance(r, float) and np.isnan(r) and np.isnan(ga))
            except Exception:  # noqa: BLE001
                same = False
            if not same:
                return f"output {i}: {ga!r}, PyTorch {r!r}"
    return None


def _is_unclear(exc):
    """An error that is a slip rather than a check: see the module docstring."""
    if isinstance(exc, UNCLEAR_TYPES):
        return True
    if isinstance(exc, TypeError) and ("unexpected keyword argument" in str(exc)
                                       or "positional argument" in str(exc)):
        return False  # Python's own refusal names the argument
    if isinstance(exc, (NotImplementedError,)):
        return False
    tb = traceback.extract_tb(exc.__traceback__)
    if not tb:
        return False
    last = tb[-1].filename.replace(os.sep, "/")
    return "/minigrad/" not in last or "/site-packages/numpy" in last


def run_sample(torch, op, label, fn, sample, rng):
    """``(outcome, detail)`` for one sample and one minigrad counterpart."""
    ref_call = op.op if not label.startswith("Tensor.") or op.method_variant is None \
        else op.method_variant
    if label.endswith("(in place)"):
        ref_call = lambda x, *a, **k: op.inplace_variant(x.clone(), *a, **k)  # noqa: E731
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = ref_call(sample.input, *sample.args, **sample.kwargs)
    except Exception as exc:  # noqa: BLE001
        return "skipped", f"PyTorch raised {type(exc).__name__}"
    leaves = []
    try:
        mg_input = to_minigrad(torch, sample.input, leaves)
        mg_args = to_minigrad(torch, tuple(sample.args), leaves)
        mg_kwargs = to_minigrad(torch, dict(sample.kwargs), leaves)
    except Exception as exc:  # noqa: BLE001
        return "skipped", f"cannot convert {exc}"
    if op.name in ADAPTERS and not label.startswith("Tensor."):
        fn = ADAPTERS[op.name]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = fn(mg_input, *mg_args, **mg_kwargs)
    except Exception as exc:  # noqa: BLE001
        kind = "crash" if _is_unclear(exc) else "refused"
        return kind, f"{type(exc).__name__}: {str(exc)[:160]}"
    shape_only = op.name in RANDOM_OUTPUT or sample.kwargs.get("dropout_p", 0) > 0
    diff = compare_values(torch, ref, got, op.name, shape_only)
    if diff:
        return "wrong", diff
    if shape_only:
        return "pass", ""
    # gradients, through output_process_fn_grad as PyTorch's own tests do
    process = sample.output_process_fn_grad
    try:
        ref_p = process(ref)
    except Exception:  # noqa: BLE001
        return "pass", "gradient not compared"
    r_flat = [o for o in flatten_outputs(torch, ref_p)
              if isinstance(o, torch.Tensor) and o.requires_grad and o.dtype.is_floating_point]
    grad_leaves = [(t, m) for t, m in leaves if t.requires_grad]
    if not r_flat or not grad_leaves:
        return "pass", ""
    try:
        got_p = _process_minigrad(torch, process, got)
    except Exception:  # noqa: BLE001
        got_p = got
    g_flat = [o for o in flatten_outputs(torch, got_p) if isinstance(o, minigrad.Tensor)
              and np.dtype(o.dtype).kind == "f"]
    if len(g_flat) != len(r_flat):
        g_flat = [o for o in g_flat if o.requires_grad]
    if len(g_flat) != len(r_flat):
        return "pass", "gradient not compared"  # outputs compared; no pairing
    seeds = [rng.standard_normal(tuple(o.shape)) for o in r_flat]
    ref_grads = torch.autograd.grad(r_flat, [t for t, _ in grad_leaves],
                                    [torch.tensor(s) for s in seeds],
                                    allow_unused=True)
    try:
        total = None
        for o, s in zip(g_flat, seeds):
            if not o.requires_grad:
                continue
            term = (o * minigrad.tensor(s.astype(np.dtype(o.dtype)))).sum()
            total = term if total is None else total + term
        if total is not None:
            total.backward()
    except Exception as exc:  # noqa: BLE001
        kind = "crash" if _is_unclear(exc) else "refused"
        return kind, f"backward: {type(exc).__name__}: {str(exc)[:160]}"
    for i, ((t, m), rg) in enumerate(zip(grad_leaves, ref_grads)):
        want = np.zeros(tuple(t.shape)) if rg is None else rg.numpy(force=True)
        have = np.zeros(tuple(t.shape)) if m.grad is None else m.grad.numpy()
        if have.shape != want.shape:
            return "wrong", f"gradient {i}: shape {have.shape}, PyTorch {want.shape}"
        if not np.allclose(have, want, rtol=_tol["grad"][0], atol=_tol["grad"][1],
                           equal_nan=True):
            return "wrong", f"gradient {i} differs (max |diff| " \
                            f"{np.nanmax(np.abs(have - want), initial=0):.3g})"
    return "pass", ""


def _process_minigrad(torch, process, got):
    """Apply an OpInfo's ``output_process_fn_grad`` (written for torch: the
    identity, or picking tuple elements, or a method minigrad shares) to
    minigrad's outputs."""
    return process(got)


def _torch_accepts(op, sample):
    """Whether PyTorch's public call runs on an error input written for
    another spelling of the operator (clamp_min's error inputs are those of
    the Tensor-bound overload: ``torch.clamp_min(t, 2)`` runs)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            op.op(sample.input, *sample.args, **sample.kwargs)
    except Exception:  # noqa: BLE001
        return False
    return True


def run_errors(torch, op, label, fn):
    """``[(outcome, detail)]`` for the inputs PyTorch refuses: minigrad must refuse too."""
    results = []
    if label.endswith("(in place)"):
        return results          # error_inputs describe the out-of-place operator
    try:
        errors = list(op.error_inputs(torch.device("cpu")))
    except Exception:  # noqa: BLE001
        return results
    for err in errors:
        sample = err.sample_input
        if label.startswith("Tensor.") and not isinstance(sample.input, torch.Tensor):
            continue  # a method needs a tensor to be called on
        if "out" in sample.kwargs or "device" in err.error_regex \
                or "same device" in err.error_regex:
            continue  # out= and devices: no counterpart in minigrad
        reason = deliberate_extension(torch, op.name, sample, label, err)
        if reason:
            results.append(("extension", reason))
            continue
        leaves = []
        try:
            mg_input = to_minigrad(torch, sample.input, leaves)
            mg_args = to_minigrad(torch, tuple(sample.args), leaves)
            mg_kwargs = to_minigrad(torch, dict(sample.kwargs), leaves)
        except Exception:  # noqa: BLE001
            continue
        if op.name in ADAPTERS and not label.startswith("Tensor."):
            fn = ADAPTERS[op.name]
        if any(t.dtype not in (torch.float64, torch.float32, torch.int64, torch.int32,
                               torch.bool, torch.uint8, torch.int8, torch.int16,
                               torch.float16)
               for t, _ in leaves):
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                fn(mg_input, *mg_args, **mg_kwargs)
        except Exception as exc:  # noqa: BLE001
            if _is_unclear(exc):
                results.append(("crash", f"refusal: {type(exc).__name__}: {str(exc)[:120]}"))
            else:
                results.append(("pass", ""))
            continue
        if op.name in RENAMED and _torch_accepts(op, sample):
            results.append(("skipped", "PyTorch's own call accepts this error input"))
            continue
        results.append(("wrong", f"accepted an input PyTorch refuses "
                                 f"({err.error_type.__name__}: {err.error_regex[:80]})"))
    return results


def sweep(ops=None, every=1, verbose=False, errors=True, seed=0, dtype="float64"):
    """Run the sweep.  ``every=k`` keeps every k-th sample of each operator.

    Returns ``(counts, records, matched)``: outcome counts, a list of
    ``(op, label, index, outcome, detail)`` and ``{OpInfo entry (name.variant):
    operator name}`` of the matched operators."""
    import torch
    op_db = import_op_db()
    tdtype = getattr(torch, dtype)
    rv, av, rg, ag = TOLERANCE[dtype]
    _tol.update(value=(rv, av), grad=(rg, ag))
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    counts = collections.Counter()
    records = []
    matched = {}           # OpInfo entry (name.variant) -> operator name
    previous = None
    try:
        for op in op_db:
            if ops and op.name not in ops:
                continue
            if op.name.startswith(FOREIGN_PREFIXES):
                continue
            found = counterparts(op)
            if not found:
                continue
            sample_dtype, grad = tdtype, op.supports_autograd
            if not op.supports_dtype(tdtype, "cpu"):
                if not op.supports_dtype(getattr(torch, INTEGER_DTYPE), "cpu") or \
                        any(op.supports_dtype(d, "cpu") for d in (torch.float32,
                                                                  torch.float64)):
                    continue
                sample_dtype, grad = getattr(torch, INTEGER_DTYPE), False
            full = op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")
            matched[full] = op.name
            try:
                samples = list(op.sample_inputs("cpu", sample_dtype, requires_grad=grad))
            except Exception:  # noqa: BLE001
                continue
            for label, fn in found:
                for i, sample in enumerate(samples):
                    if i % every:
                        continue
                    outcome, detail = run_sample(torch, op, label, fn, sample, rng)
                    counts[outcome] += 1
                    records.append((full, label, i, outcome, detail))
                    if verbose and outcome in ("wrong", "crash"):
                        print(f"{outcome:7} {full} {label} #{i}: {detail}")
                if errors:
                    for j, (outcome, detail) in enumerate(run_errors(torch, op, label, fn)):
                        counts[outcome] += 1
                        records.append((full, label, f"error{j}", outcome, detail))
                        if verbose and outcome in ("wrong", "crash"):
                            print(f"{outcome:7} {full} {label} error#{j}: {detail}")
    finally:
        if previous is not None:
            minigrad.set_default_dtype(previous)
    return counts, records, matched


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", action="append", help="only this OpInfo name (repeatable)")
    parser.add_argument("--every", type=int, default=1, help="keep every k-th sample")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="print each wrong value and unclear crash")
    parser.add_argument("--refused", action="store_true", help="also print refusals")
    parser.add_argument("--dtype", default="float64", choices=sorted(TOLERANCE),
                        help="the samples' floating dtype (float32: looser tolerances)")
    args = parser.parse_args(argv)
    counts, records, matched = sweep(args.op, args.every, args.verbose, dtype=args.dtype)
    if args.refused:
        for full, label, i, outcome, detail in records:
            if outcome == "refused":
                print(f"refused {full} {label} #{i}: {detail}")
    names = set(matched.values())
    print(f"operators matched: {len(matched)} OpInfo entries "
          f"({len(names)} distinct names)")
    print("samples: " + ", ".join(f"{k} {counts[k]}" for k in
                                  ("pass", "wrong", "crash", "refused", "extension", "skipped")))
    unchecked = [r for r in records if r[3] == "pass" and r[4]]
    print(f"passed without a gradient comparison: {len(unchecked)}")
    if args.verbose:
        for full, label, i, outcome, detail in unchecked:
            print(f"  {full} {label} #{i}: {detail}")
    return 1 if counts["wrong"] or counts["crash"] else 0


if __name__ == "__main__":
    sys.exit(main())
