"""Compile every fused GPU kernel minigrad declares with NVRTC, without a GPU.

minigrad's fused kernels (``backend.elementwise_kernel``) are CUDA C strings
that CuPy compiles the first time a GPU runs them: a typo or a type error in
one would show only on a GPU.  NVRTC, CUDA's runtime compiler, needs no GPU
and no driver, so this script compiles them all here:

1. it imports every module of the minigrad package, so that every kernel is
   declared (``backend.KERNELS``);
2. for each kernel, each dtype its ``types`` name, and two memory layouts
   (contiguous 1-d arrays with 32-bit indexing, strided 2-d arrays with
   64-bit indexing), it writes the translation unit with CuPy's own code
   generator (``cupy._core._kernel._get_elementwise_kernel_code``, what
   ``cupy.ElementwiseKernel`` compiles when called), CuPy's headers first;
3. it compiles each with NVRTC and CuPy's options for an H100/H200
   (``-arch=sm_90`` as CuPy passes for compute capability 9.0, ``-ftz=true``,
   ``--device-as-default-execution-space``, C++17, CuPy's and CUDA's include
   folders), to a cubin.

The kernels cannot run here; what is checked is that each compiles as CuPy
would compile it on the GPU.

Needs the ``kernels`` extra (``pip install -e '.[kernels]'``: CuPy, NVRTC and
the CUDA runtime headers, from wheels).

Usage (from the repository root)::

    python tools/check_kernels.py [--arch 90] [--list]

Exits 0 when every variant compiles; 1 after printing NVRTC's log of each
that does not; 2 when CuPy or NVRTC is not installed.
"""
from __future__ import annotations

import argparse
import importlib
import itertools
import pkgutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# (name, ndim of each non-raw array, C-contiguous, 32-bit indexing)
LAYOUTS = (("contiguous", 1, True, True), ("strided", 2, False, False))

# CuPy's _ArgInfo kinds (cupy/_core/_kernel.pxd, enum _ArgKind)
_ARG_NDARRAY, _ARG_INDEXER, _ARG_SCALAR = 1, 2, 3


@dataclass
class Result:
    kernel: str
    types: dict         # type letter -> dtype
    layout: str
    seconds: float
    error: str | None   # NVRTC's log, or None when it compiled

    def label(self) -> str:
        types = ", ".join(f"{k}={v}" for k, v in self.types.items())
        return f"{self.kernel} [{types}; {self.layout}]"


def declared_kernels() -> dict:
    """Import every module of minigrad; return ``backend.KERNELS`` (name -> Kernel)."""
    import minigrad  # noqa: PLC0415
    for module in pkgutil.walk_packages(minigrad.__path__, "minigrad."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    return dict(minigrad.backend.KERNELS)


def variants(kernel):
    """Every (types, layout) the kernel is checked for: each combination of
    the dtypes of its type letters, in each of :data:`LAYOUTS`."""
    letters = sorted(kernel.types)
    for dtypes in itertools.product(*(kernel.types[k] for k in letters)):
        for layout in LAYOUTS:
            yield dict(zip(letters, dtypes)), layout


def cuda_source(kernel, types: dict, layout) -> str:
    """The CUDA C that ``cupy.ElementwiseKernel`` compiles for a call with
    arrays of ``types`` laid out as ``layout`` (``kernel.scalars`` passed as
    Python numbers), CuPy's headers included first: CuPy's own generator."""
    import cupy  # noqa: PLC0415
    from cupy._core import _carray, _kernel, _scalar, core  # noqa: PLC0415

    _, ndim, contiguous, index32 = layout
    ck = cupy.ElementwiseKernel(kernel.in_params, kernel.out_params, kernel.operation,
                                f"minigrad_{kernel.name}")
    params = ck.params[:ck.nargs]                      # the last one is the indexer
    unknown = set(kernel.scalars) - {p.name for p in ck.in_params}
    if unknown:
        raise ValueError(f"{kernel.name}: scalars {sorted(unknown)} are not input "
                         "parameters")

    def dtype(p):
        return np.dtype(p.dtype) if p.dtype is not None else types[p.ctype]

    in_dtypes = tuple(None if p.name in kernel.scalars else dtype(p) for p in ck.in_params)
    out_dtypes = tuple(dtype(p) for p in ck.out_params)
    in_types, out_types, type_map = ck._decide_params_type(in_dtypes, out_dtypes)
    arginfos = []
    for p, t in zip(params, in_types + out_types):
        if p.name in kernel.scalars:
            arginfos.append(_kernel._ArgInfo(_ARG_SCALAR, _scalar.CScalar, t, 0, True, True))
        else:           # a raw array keeps its own shape (here 1-d); the others are reduced
            arginfos.append(_kernel._ArgInfo(_ARG_NDARRAY, cupy.ndarray, t,
                                             1 if p.raw else ndim,
                                             True if p.raw else contiguous, index32))
    arginfos.append(_kernel._ArgInfo(_ARG_INDEXER, _carray.Indexer, None, ndim, True, index32))
    code = _kernel._get_elementwise_kernel_code(tuple(arginfos), type_map, ck.params,
                                                ck.operation, ck.name, ck.preamble)
    headers = "".join(f"#include <{h}>\n" for h in core._cupy_header_list)
    return headers + code


def nvrtc_options(arch: str) -> tuple:
    """The options CuPy 14 gives NVRTC for a GPU of compute capability ``arch``
    (cupy/_core/core.pyx ``compile_with_cache``, cupy/cuda/compiler.py)."""
    from cupy._core import core  # noqa: PLC0415
    return core.assemble_cupy_compiler_options(()) + (
        "-ftz=true", f"-arch=sm_{arch}", "--device-as-default-execution-space")


def compile_source(source: str, arch: str) -> str | None:
    """Compile with NVRTC to a cubin; return None, or NVRTC's log on failure."""
    from cupy.cuda import compiler  # noqa: PLC0415
    program = compiler._NVRTCProgram(source, "minigrad_kernel.cu", method="cubin")
    try:
        program.compile(nvrtc_options(arch))
    except compiler.CompileException as e:
        return e.get_message()
    return None


def check(kernels, arch: str = "90") -> list:
    """Compile every variant of every kernel in ``kernels``; a list of Results."""
    results = []
    for kernel in kernels:
        for types, layout in variants(kernel):
            start = time.perf_counter()
            try:
                error = compile_source(cuda_source(kernel, types, layout), arch)
            except Exception as e:      # CuPy refusing the declaration itself
                error = f"{type(e).__name__}: {e}"
            results.append(Result(kernel.name, types, layout[0],
                                  time.perf_counter() - start, error))
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arch", default="90",
                        help="compute capability to compile for (default 90: H100/H200)")
    parser.add_argument("--list", action="store_true",
                        help="list the declared kernels and exit")
    args = parser.parse_args(argv)
    try:
        import cupy  # noqa: F401, PLC0415
        from cupy_backends.cuda.libs import nvrtc  # noqa: PLC0415
        nvrtc_version = nvrtc.getVersion()
    except Exception as e:
        print(f"check_kernels: CuPy and NVRTC are needed ({type(e).__name__}: {e}); "
              "install them with: pip install -e '.[kernels]'", file=sys.stderr)
        return 2
    kernels = declared_kernels()
    if args.list:
        for kernel in kernels.values():
            print(kernel.name, {k: [str(d) for d in v] for k, v in kernel.types.items()})
        return 0
    start = time.perf_counter()
    results = check(kernels.values(), args.arch)
    failed = [r for r in results if r.error is not None]
    for r in failed:
        print(f"FAILED {r.label()}:\n{r.error}", file=sys.stderr)
    print(f"check_kernels: {len(kernels)} kernels, {len(results)} variants (kernel x dtypes "
          f"x layout) compiled with NVRTC {nvrtc_version[0]}.{nvrtc_version[1]} for sm_{args.arch}"
          f" (CuPy {cupy.__version__}) in {time.perf_counter() - start:.1f} s: "
          f"{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
