"""tools/check_kernels.py: every fused GPU kernel is declared where the check
can find it, and NVRTC (no GPU needed) catches a typo and a type error.

The compiling tests need the ``kernels`` extra (CuPy, NVRTC and the CUDA
headers, from wheels) and skip without it; CI installs it (``make
check-kernels``) and runs them.
"""
from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from minigrad import backend
from tools import check_kernels

ROOT = Path(__file__).resolve().parents[2]


def _declarations_inside_functions():
    """(file, line) of every elementwise_kernel(...) call inside a function."""
    found = []
    for path in sorted((ROOT / "minigrad").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for func in ast.walk(tree):
            if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(func):
                if (isinstance(node, ast.Call)
                        and getattr(node.func, "attr", getattr(node.func, "id", None))
                        == "elementwise_kernel"):
                    found.append((str(path.relative_to(ROOT)), node.lineno))
    return found


def test_every_kernel_is_declared_at_module_level():
    # a kernel made inside a function would exist only once a GPU ran it,
    # out of the check's sight
    assert _declarations_inside_functions() == []


def test_the_check_finds_every_declared_kernel():
    kernels = check_kernels.declared_kernels()
    assert {"sgd_update", "adam_update", "select_where_nonzero",
            "cross_entropy_backward", "dequantize_4bit", "dequantize_int8"} <= set(kernels)
    ce = kernels["cross_entropy_backward"]
    assert set(ce.types) == {"T", "I"} and np.dtype(np.uint8) in ce.types["I"]
    n_variants = len(list(check_kernels.variants(ce)))
    assert n_variants == len(ce.types["T"]) * len(ce.types["I"]) * len(check_kernels.LAYOUTS)


def test_a_name_declared_twice_with_another_body_is_refused():
    backend.elementwise_kernel("test_twice", "T x", "T y", "y = x", types={"T": [np.float32]})
    backend.elementwise_kernel("test_twice", "T x", "T y", "y = x", types={"T": [np.float32]})
    try:
        with pytest.raises(ValueError, match="'test_twice' is already declared"):
            backend.elementwise_kernel("test_twice", "T x", "T y", "y = 2 * x")
    finally:
        del backend.KERNELS["test_twice"]


def _nvrtc():
    pytest.importorskip("cupy", reason="the kernels extra (CuPy, NVRTC) is not installed")
    nvrtc = pytest.importorskip("cupy_backends.cuda.libs.nvrtc")
    try:
        nvrtc.getVersion()
    except Exception as e:      # CuPy without the NVRTC library
        pytest.skip(f"NVRTC is not loadable: {e}")


def _kernel(operation, **kw):
    # built directly, not declared: the planted errors stay out of backend.KERNELS
    return backend.Kernel("planted", "T g, T lr", "T p", operation,
                          kw.pop("types", {"T": backend.FUSED_DTYPES}), kw.pop("scalars", ("lr",)))


def test_every_declared_kernel_compiles_with_nvrtc():
    _nvrtc()
    results = check_kernels.check(check_kernels.declared_kernels().values())
    failed = [f"{r.label()}: {r.error}" for r in results if r.error is not None]
    assert not failed, "\n".join(failed)
    assert len(results) >= 44      # 4 kernels; the loss's over 8 integer target dtypes


def test_nvrtc_catches_a_typo():
    _nvrtc()
    results = check_kernels.check([_kernel("p -= lr * gg")])
    assert [r.error is not None for r in results] == [True] * 4
    assert 'identifier "gg" is undefined' in results[0].error


def test_nvrtc_catches_a_type_error():
    _nvrtc()
    results = check_kernels.check([_kernel("p = &g;")])      # an address into a float
    assert all(r.error is not None for r in results)
    assert "cannot be assigned" in results[0].error


def test_nvrtc_catches_an_error_in_one_dtype_only():
    # ``%`` takes integers only: the float32 variant fails, the int32 one
    # compiles; the check compiles every dtype a kernel declares
    _nvrtc()
    results = check_kernels.check([_kernel("p = g % lr;", types={"T": [np.int32, np.float32]})])
    by_dtype = {str(r.types["T"]): r.error is not None for r in results}
    assert by_dtype == {"int32": False, "float32": True}
    assert "integral" in next(r.error for r in results if r.error)


def test_a_scalar_that_is_no_parameter_is_reported():
    _nvrtc()
    results = check_kernels.check([_kernel("p -= lr * g", scalars=("rate",))])
    assert all("scalars ['rate'] are not input parameters" in r.error for r in results)
    assert check_kernels.check([_kernel("p -= lr * g")])[0].error is None
