"""Helpers shared by the tests: one call checks an op's forward and backward
against PyTorch, another against finite differences."""
from __future__ import annotations

import numpy as np

import minigrad


def to_tensors(arrays, device="cpu", requires_grad=True):
    """minigrad leaf tensors (float arrays require grad; integer arrays never do)."""
    return [minigrad.tensor(a, device=device,
                            requires_grad=requires_grad and np.asarray(a).dtype.kind == "f")
            if isinstance(a, np.ndarray) else a for a in arrays]


def compare_with_torch(torch, mg_fn, torch_fn, arrays, device="cpu", rtol=1e-10,
                       atol=1e-12, seed=0):
    """Run ``mg_fn`` and ``torch_fn`` on the same NumPy inputs and compare
    outputs and input gradients (for a random upstream gradient).

    ``arrays`` holds NumPy arrays (float ones get gradients) and other
    arguments passed through unchanged.  Returns the minigrad output.
    """
    mg_inputs = to_tensors(arrays, device)
    th_inputs = [torch.tensor(a, requires_grad=a.dtype.kind == "f")
                 if isinstance(a, np.ndarray) else a for a in arrays]
    out = mg_fn(*mg_inputs)
    ref = torch_fn(*th_inputs)
    np.testing.assert_allclose(out.numpy(), ref.detach().numpy(), rtol=rtol, atol=atol,
                               err_msg="forward differs from PyTorch")
    if out.requires_grad:
        v = np.random.default_rng(seed).standard_normal(out.shape).astype(out.dtype)
        out.backward(minigrad.tensor(v, device=device))
        ref.backward(torch.tensor(v))
        for i, (m, t) in enumerate(zip(mg_inputs, th_inputs)):
            if isinstance(m, minigrad.Tensor) and m.requires_grad:
                assert t.grad is not None, f"input {i}: PyTorch gives no gradient"
                np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=rtol,
                                           atol=atol,
                                           err_msg=f"gradient of input {i} differs")
    return out


def check_gradients(fn, arrays, device="cpu", **kwargs):
    """gradcheck ``fn`` on float64 copies of ``arrays`` (see minigrad.gradcheck)."""
    inputs = to_tensors([np.asarray(a, dtype=np.float64) if isinstance(a, np.ndarray)
                         and a.dtype.kind == "f" else a for a in arrays], device)
    return minigrad.gradcheck(fn, inputs, **kwargs)
