"""minigrad takes PyTorch's arguments wherever it uses PyTorch's name.

For every public name that minigrad and PyTorch both have (functions of
``minigrad``, ``minigrad.nn.functional``, the layers of ``minigrad.nn`` and the
methods of ``Tensor``), PyTorch's signature is read (``inspect.signature``, or
the first line of its docstring for the functions written in C) and every
PyTorch parameter must be in minigrad's at the same position, with the same
default; a keyword-only one must be accepted by name.  minigrad may add
parameters after PyTorch's, and give a default where PyTorch has none (a call
that works in PyTorch works the same).  The first parameter of a function (the input
tensor) may be named differently; ``self`` and PyTorch's plumbing
(``out``, ``layout``, ``pin_memory``, ``memory_format``, ``_stacklevel``...) are
left out.  Every exception is listed below with the reason.
"""
from __future__ import annotations

import ast
import inspect
import re

import pytest

import minigrad
import minigrad.nn.functional as F

PLUMBING = {"out", "layout", "pin_memory", "memory_format", "_stacklevel", "sparse_grad",
            "non_blocking", "_weight", "_freeze", "generator", "requires_grad"}

# PyTorch parameters minigrad does not take, with the reason.
NOT_TAKEN = {
    "embedding": {"max_norm", "norm_type", "scale_grad_by_freq", "sparse"},  # not built
    "Embedding": {"max_norm", "norm_type", "scale_grad_by_freq", "sparse"},
    # PyTorch 2.13's weight-only affine BatchNorm (bias=False): not built
    "BatchNorm1d": {"bias"}, "BatchNorm2d": {"bias"}, "SyncBatchNorm": {"bias"},
    "Hardtanh": {"min_value", "max_value"},    # deprecated aliases in PyTorch
    "cuda": {"device"},                        # one GPU: "cuda"
    "to": {"args", "kwargs"},                  # to(device=None, dtype=None) by keyword
    "load": {"f", "map_location", "pickle_module", "weights_only", "mmap",
             "pickle_load_args"},                 # minigrad's own file format
    "save": {"f", "pickle_module", "pickle_protocol", "_use_new_zipfile_serialization",
             "_disable_byteorder_record"},
    "backward": {"create_graph", "inputs"},   # no higher-order gradients
}

# Defaults that differ on purpose.
OTHER_DEFAULT = {
    # PyTorch's dim=None picks a dimension by the number of dimensions (0 for
    # 1-D and 3-D, 1 otherwise) and is deprecated; minigrad's design fixes -1.
    ("softmax", "dim"), ("log_softmax", "dim"), ("softmin", "dim"),
    ("Softmax", "dim"), ("LogSoftmax", "dim"), ("Softmin", "dim"),
    # minigrad's None stands for PyTorch's default 1 and tells an explicit
    # correction apart from unbiased=
    ("var", "correction"), ("std", "correction"),
    ("var_mean", "correction"), ("std_mean", "correction"),
    ("backward", "retain_graph"),             # PyTorch's None means False here
}

# The name minigrad uses where PyTorch's docstring shows another: PyTorch's
# keyword is minigrad's (test_pytorch_takes_minigrads_keyword calls it).
DOCSTRING_NAMES = {
    ("div", "value"): "other", ("div_", "value"): "other", ("divide", "value"): "other",
    ("true_divide", "value"): "other", ("floor_divide", "value"): "other",
    ("mul", "value"): "other", ("mul_", "value"): "other", ("multiply", "value"): "other",
    ("remainder", "divisor"): "other", ("matmul", "tensor2"): "other",
    ("concatenate", "axis"): "dim",
    ("backward", "gradient"): "grad",         # minigrad's fixed name (the design guide)
    ("bmm", "batch2"): "mat2", ("dot", "other"): "tensor", ("fmod", "divisor"): "other",
}
# Creation functions: PyTorch's device=None means the default device, "cpu".
CREATION = {"arange", "empty", "eye", "full", "full_like", "linspace", "ones", "ones_like",
            "rand", "randn", "tensor", "zeros", "zeros_like"}


def _torch_parameters(obj, name):
    """[(name, default or inspect.Parameter.empty, kind)] of a PyTorch callable,
    or None when neither its signature nor its docstring gives them."""
    try:
        found = [(p.name, p.default, p.kind)
                 for p in inspect.signature(obj).parameters.values()]
        if any(kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
               for pname, _, kind in found if pname != "self"):
            return found
    except (TypeError, ValueError):
        pass                                      # written in C: read the docstring
    doc = inspect.getdoc(obj) or ""
    match = re.search(rf"^{re.escape(name)}\((.*?)\)\s*(->|$)", doc, re.M | re.S)
    if not match:
        return None
    found = _parse_arguments(match.group(1).replace("\n", " ").replace("\\*", "*"))
    plain = [p for p in found if p[2] not in (inspect.Parameter.VAR_POSITIONAL,
                                              inspect.Parameter.VAR_KEYWORD)]
    return found if plain else None               # (*args, **kwargs) says nothing


def _parse_arguments(text):
    out, kind = [], inspect.Parameter.POSITIONAL_OR_KEYWORD
    for part in _split(text):
        part = part.strip()
        if not part:
            continue
        if part == "*":
            kind = inspect.Parameter.KEYWORD_ONLY
            continue
        star = inspect.Parameter.VAR_POSITIONAL if part.startswith("*") else None
        if part.startswith("**"):
            star = inspect.Parameter.VAR_KEYWORD
        left, _, default = part.lstrip("*").partition("=")
        pname = left.split(":")[0].strip()
        try:
            value = ast.literal_eval(default.strip()) if default else inspect.Parameter.empty
        except (ValueError, SyntaxError):
            value = default.strip()               # a name such as torch.strided
        out.append((pname, value, star or kind))
        if star == inspect.Parameter.VAR_POSITIONAL:
            kind = inspect.Parameter.KEYWORD_ONLY
    return out


def _split(text):
    """Split at the commas outside brackets."""
    depth, part, parts = 0, "", []
    for ch in text:
        depth += ch in "([{" and 1 or ch in ")]}" and -1 or 0
        if ch == "," and depth == 0:
            parts.append(part)
            part = ""
        else:
            part += ch
    return parts + [part]


def _mismatches(name, mine, theirs, method=False):
    """What PyTorch's signature has that minigrad's does not: a list of texts."""
    ours = [(p.name, p.default, p.kind) for p in inspect.signature(mine).parameters.values()]
    if method or ours[:1] and ours[0][0] == "self":
        ours = ours[1:]
    if theirs and theirs[0][0] == "self":
        theirs = theirs[1:]
    problems = []
    skip_first = not method and not name[:1].isupper()
    theirs = _left_for_minigrad(name, theirs)
    positional = [p for p in ours if p[2] in (inspect.Parameter.POSITIONAL_ONLY,
                                              inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    by_name = {p[0]: p for p in ours}
    var_positional = any(p[2] == inspect.Parameter.VAR_POSITIONAL for p in ours)
    for i, (pname, default, kind) in enumerate(theirs):
        if kind == inspect.Parameter.VAR_POSITIONAL:
            if not var_positional:
                problems.append(f"*{pname}: minigrad takes no variable arguments")
            continue
        if kind == inspect.Parameter.VAR_KEYWORD:
            continue
        if i == 0 and skip_first:
            continue
        if kind == inspect.Parameter.POSITIONAL_OR_KEYWORD and not var_positional:
            if i >= len(positional) or positional[i][0] != pname:
                got = positional[i][0] if i < len(positional) else "nothing"
                problems.append(f"position {i}: PyTorch's {pname!r}, minigrad's {got!r}")
                continue
        if pname not in by_name:
            if not var_positional:
                problems.append(f"{pname!r} missing")
            continue
        ours_default = by_name[pname][1]
        if (name, pname) in OTHER_DEFAULT or (name in CREATION and pname == "device"):
            continue
        if not _same_default(ours_default, default):
            problems.append(f"{pname!r}: default {ours_default!r}, PyTorch's {default!r}")
    return problems


def _left_for_minigrad(name, theirs):
    """PyTorch's parameters without the plumbing and those minigrad does not
    take, under minigrad's names.  A positional parameter after a left-out
    one counts as keyword-only: its position cannot be the same in minigrad."""
    kept, shifted = [], False
    for pname, default, kind in theirs:
        if pname in PLUMBING or pname in NOT_TAKEN.get(name, ()):
            shifted |= kind == inspect.Parameter.POSITIONAL_OR_KEYWORD
            continue
        if shifted and kind == inspect.Parameter.POSITIONAL_OR_KEYWORD:
            kind = inspect.Parameter.KEYWORD_ONLY
        kept.append((DOCSTRING_NAMES.get((name, pname), pname), default, kind))
    return kept


def _same_default(a, b):
    if b is inspect.Parameter.empty:             # PyTorch requires it: any default will do
        return True
    if a is inspect.Parameter.empty:
        return False
    if isinstance(b, str) and isinstance(a, str):
        return a == b
    try:
        return type(a) is type(b) and a == b or (
            isinstance(a, (int, float)) and isinstance(b, (int, float))
            and not isinstance(a, bool) and not isinstance(b, bool) and a == b)
    except Exception:          # noqa: BLE001 (an array default, say)
        return False


def _pairs(torch):
    """(label, name, minigrad object, PyTorch parameters, is a method)."""
    tf = torch.nn.functional
    for name in sorted(dir(F)):
        mine, theirs = getattr(F, name), getattr(tf, name, None)
        if name.startswith("_") or theirs is None or not inspect.isfunction(mine):
            continue
        yield f"F.{name}", name, mine, _torch_parameters(theirs, name), False
    for name in sorted(dir(minigrad.nn)):
        mine, theirs = getattr(minigrad.nn, name), getattr(torch.nn, name, None)
        if inspect.isclass(mine) and inspect.isclass(theirs):
            yield f"nn.{name}", name, mine.__init__, _torch_parameters(theirs.__init__,
                                                                       "__init__"), True
    methods = {n for cls in type.mro(minigrad.Tensor)[:-1] for n in vars(cls)}
    for name in sorted(methods):
        mine, theirs = getattr(minigrad.Tensor, name), getattr(torch.Tensor, name, None)
        if name.startswith("_") or theirs is None or not inspect.isfunction(mine):
            continue
        yield f"Tensor.{name}", name, mine, _torch_parameters(theirs, name), True
    for name in sorted(dir(minigrad)):
        mine, theirs = getattr(minigrad, name), getattr(torch, name, None)
        if name.startswith("_") or theirs is None or not inspect.isfunction(mine):
            continue
        yield f"minigrad.{name}", name, mine, _torch_parameters(theirs, name), False


def test_signatures_follow_pytorch(torch):
    problems, compared = [], 0
    for label, name, mine, theirs, method in _pairs(torch):
        if theirs is None:
            continue
        compared += 1
        problems += [f"{label}: {p}" for p in _mismatches(name, mine, theirs, method)]
    assert compared > 150, f"only {compared} signatures could be compared"
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("method, keyword", sorted(
    (m, k) for (m, _), k in DOCSTRING_NAMES.items() if m not in ("concatenate", "backward")))
def test_pytorch_takes_minigrads_keyword(torch, method, keyword):
    """Where PyTorch's docstring names an argument differently, PyTorch itself
    takes minigrad's keyword."""
    x = torch.tensor([[3.0, 4.0], [5.0, 6.0]])
    if method in ("bmm", "dot"):                  # a batch of matrices, a vector
        x = x[None] if method == "bmm" else x[0]
    other = x if method in ("matmul", "bmm", "dot") else torch.tensor(2.0)
    getattr(x, method)(**{keyword: other})


def test_concatenate_takes_dim(torch):
    assert torch.concatenate([torch.ones(2)], dim=0).shape == (2,)
    assert minigrad.concatenate([minigrad.ones(2)], dim=0).shape == (2,)


def test_the_comparison_finds_each_kind_of_difference(torch):
    """A wrong default, swapped positions and a missing keyword are reported."""
    tf = torch.nn.functional

    def leaky_relu(x, negative_slope=0.02, inplace=False):
        """A default that is not PyTorch's."""

    def elu(x, inplace=False, alpha=1.0):
        """Two arguments swapped."""

    def softmax(x, dim=-1):
        """PyTorch's keyword dtype missing."""

    assert _mismatches("leaky_relu", leaky_relu, _torch_parameters(tf.leaky_relu, "x")) == \
        ["'negative_slope': default 0.02, PyTorch's 0.01"]
    assert len(_mismatches("elu", elu, _torch_parameters(tf.elu, "elu"))) == 2
    assert _mismatches("softmax", softmax, _torch_parameters(tf.softmax, "softmax")) == \
        ["'dtype' missing"]
    # a C function: its parameters come from the docstring
    assert [p[0] for p in _torch_parameters(torch.Tensor.sort, "sort")] == \
        ["dim", "descending"]
