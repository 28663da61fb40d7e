"""Reverse-mode automatic differentiation: Function, grad mode and the backward driver.

How a graph is recorded
-----------------------
A :class:`Function` computes on raw arrays (NumPy or CuPy).  Calling one on
Tensors runs ``forward`` on their ``.data``, wraps each output array in a new
Tensor, and, when gradients are wanted, records the Function as the output's
``creator``.  The Function keeps its *inputs* (it needs them to route gradients)
and whatever arrays its ``backward`` needs, but never its outputs: the
references only point from outputs back to inputs, so there are no reference
cycles, and once the user drops the last output the whole graph is freed by
reference counting alone (``gc`` is not needed).

How backward runs
-----------------
:func:`backward` orders the graph topologically with an explicit stack (no
recursion, so a chain of 100,000 operations is fine, in time linear in the
graph's size), then visits the Functions from the output back to the leaves.
Each Function receives the *sum* of the gradients of every use of its outputs
before it runs.  Gradients of interior tensors live in a dictionary local to
this one pass, so nothing stale survives between passes; leaf gradients are
*added* into ``leaf.grad`` (PyTorch's rule; ``zero_grad()`` clears them).

After a pass the arrays saved for backward are released (``retain_graph=False``,
the default, as in PyTorch), which is what makes memory fall back to the
parameters and gradients between micro-batches.  A second ``backward()``
through the same graph then raises a RuntimeError; with ``retain_graph=True``
the graph is kept and a second pass adds exactly the same gradients again
(leaf gradients double).
"""
from __future__ import annotations

import contextlib
import sys
import threading

import numpy as np

from . import backend

# ----------------------------------------------------------------------------
# Grad mode
# ----------------------------------------------------------------------------

class _ThreadState(threading.local):
    """Grad mode and the recomputation flag, separate for every thread."""

    enabled = True          # class attributes: the defaults each thread starts with
    recomputing = False


_state = _ThreadState()


def is_grad_enabled() -> bool:
    """True when operations record a graph for backward (the default)."""
    return _state.enabled


def set_grad_enabled(mode: bool) -> None:
    """Switch graph recording on or off for this thread."""
    _state.enabled = bool(mode)


class _GradMode(contextlib.ContextDecorator):
    """Context manager *and* decorator that sets grad mode and restores it on exit."""

    def __init__(self, mode: bool):
        self.mode = mode
        self._saved = []  # a stack, so one instance can be nested or re-entered

    def __enter__(self):
        self._saved.append(is_grad_enabled())
        set_grad_enabled(self.mode)
        return self

    def __exit__(self, *exc):
        set_grad_enabled(self._saved.pop())
        return False


def no_grad():
    """Disable graph recording inside a ``with`` block or a decorated function.

    The previous mode is restored on exit, also after an exception, and
    nested blocks restore correctly::

        with minigrad.no_grad():
            y = model(x)          # y.requires_grad is False

        @minigrad.no_grad()
        def evaluate(model, x): ...
    """
    return _GradMode(False)


def is_recomputing() -> bool:
    """True while :func:`minigrad.checkpoint` re-runs a forward pass during backward.

    Layers with side effects read it: BatchNorm does not update its running
    statistics a second time, and so on.
    """
    return _state.recomputing


@contextlib.contextmanager
def recomputing():
    """Mark the enclosed forward pass as a recomputation (see :func:`is_recomputing`)."""
    previous = is_recomputing()
    _state.recomputing = True
    try:
        yield
    finally:
        _state.recomputing = previous


def enable_grad():
    """Enable graph recording inside a block (the inverse of :func:`no_grad`)."""
    return _GradMode(True)


# ----------------------------------------------------------------------------
# Function
# ----------------------------------------------------------------------------

# tensor.py imports this module, so this one cannot import tensor.py at the top;
# tensor.py hands over its Tensor class and number-to-tensor converter instead.
_Tensor = None
_as_tensor_like = None


def _register_tensor_type(tensor_class, as_tensor_like) -> None:
    """Called once by :mod:`minigrad.tensor` after it defines ``Tensor``."""
    global _Tensor, _as_tensor_like
    _Tensor, _as_tensor_like = tensor_class, as_tensor_like


# What a Function keeps after release(): enough to describe it, no arrays.
_KEPT_AFTER_RELEASE = frozenset(("num_outputs", "needs_input_grad"))


class Function:
    """A differentiable operation on raw arrays.

    Subclasses implement

    * ``forward(self, *arrays) -> array`` (or a tuple of arrays), and
    * ``backward(self, *grad_outputs) -> gradient per input`` (an array, a tuple
      of arrays, or None for an input that needs no gradient),

    saving on ``self`` whatever backward needs.  ``self.needs_input_grad`` is a
    tuple of bools, one per input, so backward can skip work (read it in
    backward; it is set before forward runs).  Non-Tensor arguments (axes,
    exponents, ...) are passed to ``__init__``.

    Use it as ``MyFunction(options)(x, y)``; inputs may be Tensors or arrays /
    Python numbers (converted to constant Tensors).
    """

    inputs: tuple = ()
    needs_input_grad: tuple = ()
    _released: bool = False

    def __call__(self, *inputs):
        # The hot path of every model (a small network runs it thousands of times
        # a second): no per-call imports, and the common case, all inputs
        # Tensors, costs one isinstance per input.
        Tensor = _Tensor
        tensors = inputs
        for x in inputs:
            if not isinstance(x, Tensor):      # a number or array: make a constant
                reference = next((t for t in inputs if isinstance(t, Tensor)), None)
                tensors = tuple(t if isinstance(t, Tensor) else _as_tensor_like(t, reference)
                                for t in inputs)
                break
        if backend._cupy is not None and len(tensors) > 1:
            _check_same_device(type(self).__name__, tensors)

        record = False
        if is_grad_enabled():
            for t in tensors:
                if t._requires_grad:
                    record = True
                    break
        self.needs_input_grad = tuple([t._requires_grad for t in tensors]) if record else ()
        outputs = self.forward(*[t._data for t in tensors])
        single = not isinstance(outputs, tuple)
        if single:
            results = (Tensor(outputs, requires_grad=record),)
        else:
            results = tuple(Tensor(out, requires_grad=record) for out in outputs)
        if record:
            self.inputs = tensors
            self.num_outputs = len(results)
            self._released = False
            for index, out in enumerate(results):
                out._creator, out._output_index = self, index
        return results[0] if single else results

    def forward(self, *arrays):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, *grad_outputs):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")

    def release(self) -> None:
        """Drop the inputs and saved arrays once backward no longer needs them."""
        state = self.__dict__
        for name in state:
            if name not in _KEPT_AFTER_RELEASE:
                state[name] = None
        self.inputs = ()
        self._released = True

    def __repr__(self):
        return f"<{type(self).__name__}>"


def _check_same_device(name, tensors):
    devices = {t.device for t in tensors}
    if len(devices) > 1:
        shown = ", ".join(f"{t.device} (shape {t.shape})" for t in tensors)
        raise RuntimeError(f"{name}: tensors are on different devices: {shown}; "
                           "move them to one device with .to(device)")


# ----------------------------------------------------------------------------
# The backward driver
# ----------------------------------------------------------------------------

def _topological_order(root_fn):
    """Functions reachable from ``root_fn``, each after every Function that uses it.

    Iterative depth-first search with an explicit stack: O(nodes + edges), no
    recursion limit.
    """
    # BEGIN SOLUTION ch01.8
    order = []
    visited = {id(root_fn)}
    stack = [(root_fn, iter(root_fn.inputs))]
    while stack:
        fn, it = stack[-1]
        for x in it:
            parent = x._creator
            if parent is not None and id(parent) not in visited:
                visited.add(id(parent))
                stack.append((parent, iter(parent.inputs)))
                break
        else:
            stack.pop()
            order.append(fn)        # post-order: inputs' creators come first
    order.reverse()                  # now every Function precedes its inputs' creators
    return order
    # END SOLUTION


def backward(tensor, grad=None, retain_graph: bool = False) -> None:
    """Compute d(tensor)/d(leaf) for every leaf that requires grad and add it to ``leaf.grad``.

    Args:
        tensor: the output Tensor; must require grad.
        grad: the upstream gradient, same shape as ``tensor`` (a Tensor, array
            or number).  May be omitted only for a tensor with one element,
            where it defaults to 1.
        retain_graph: keep the saved arrays so that backward can run through
            the graph again.

    Raises:
        RuntimeError: the tensor does not require grad, or the graph was
            already freed by an earlier backward.
        ValueError: ``grad`` is missing for a non-scalar output, or its shape
            does not match.
    """
    Tensor = _Tensor
    if not tensor.requires_grad:
        raise RuntimeError("backward: this tensor does not require grad and has no "
                           "graph (was it computed under no_grad(), or from inputs "
                           "with requires_grad=False?)")
    xp = tensor._xp
    if grad is None:
        if tensor.data.size != 1:
            raise ValueError(f"backward: grad can be implicitly created only for a tensor "
                             f"with one element, got shape {tensor.shape}; pass "
                             f"grad= of that shape")
        grad_array = xp.ones_like(tensor.data)
    else:
        grad_array = grad.data if isinstance(grad, Tensor) else xp.asarray(grad)
        if grad_array.shape != tensor.shape:
            raise ValueError(f"backward: grad has shape {tuple(grad_array.shape)} but the "
                             f"tensor has shape {tensor.shape}; they must match")
        grad_array = grad_array.astype(tensor.dtype, copy=False)

    root = tensor._creator
    if root is None:                     # a leaf: its gradient is grad itself
        _accumulate_leaf(tensor, grad_array, owned=False)
        return
    if root._released:
        raise RuntimeError("backward: trying to backward through the graph a second "
                           "time; its saved arrays were freed by the first backward. "
                           "Pass retain_graph=True to the first call if you need to.")

    grads = {id(root): [None] * root.num_outputs}
    grads[id(root)][tensor._output_index] = grad_array
    leaf_grads = {}     # id(leaf) -> [leaf, summed gradient]
    for fn in _topological_order(root):
        if id(fn) not in grads:
            continue                      # no gradient flows into this Function
        if fn._released:
            raise RuntimeError(f"backward: the graph through {type(fn).__name__} was "
                               "already freed by an earlier backward (retain_graph=False)")
        _send_gradients(fn, fn.backward(*grads.pop(id(fn))), grads, leaf_grads)
        if not retain_graph:
            fn.release()
    # Hand each leaf its gradient.  A fresh array that nothing else holds
    # becomes leaf.grad as it is, which saves a full copy of every weight
    # gradient (PyTorch's AccumulateGrad makes the same reference-count test).
    # Popping the entries one at a time drops the driver's other references.
    # A view (base is not None) shares memory with its base, and an array with
    # more references is still held elsewhere (another leaf, the caller's
    # grad, a retained graph): those are copied.
    while leaf_grads:
        leaf, g = leaf_grads.popitem()[1]
        unshared = g.base is None and sys.getrefcount(g) == _UNSHARED_REFCOUNT
        _accumulate_leaf(leaf, g, owned=unshared)


def _send_gradients(fn, in_grads, grads, leaf_grads) -> None:
    """Add the gradients ``fn.backward`` returned to its inputs' pending sums.

    A leaf's sum goes to ``leaf_grads[id(leaf)]``; an interior tensor's to the
    slot of its output index in ``grads[id(its creator)]``.  (A function of
    its own, so that no local name of the driver keeps a gradient alive.)
    """
    if not isinstance(in_grads, tuple):
        in_grads = (in_grads,)
    if len(in_grads) != len(fn.inputs):
        raise RuntimeError(f"{type(fn).__name__}.backward returned {len(in_grads)} "
                           f"gradients for {len(fn.inputs)} inputs")
    for x, g in zip(fn.inputs, in_grads):
        if g is None or not x._requires_grad:
            continue
        if g.shape != x._data.shape:
            raise RuntimeError(f"{type(fn).__name__}.backward returned a gradient of "
                               f"shape {tuple(g.shape)} for an input of shape {x.shape}")
        if g.dtype != x._data.dtype:
            g = g.astype(x._data.dtype)
        parent = x._creator
        if parent is None:
            entry = leaf_grads.get(id(x))
            if entry is None:
                leaf_grads[id(x)] = [x, g]
            else:
                entry[1] = entry[1] + g
        else:
            slots = grads.get(id(parent))
            if slots is None:
                slots = grads[id(parent)] = [None] * parent.num_outputs
            k = x._output_index
            slots[k] = g if slots[k] is None else slots[k] + g


def _calibrate_refcount() -> int:
    """sys.getrefcount of an array held by one local name only (the count
    differs between Python versions, so it is measured, not assumed)."""
    g = np.empty(0)
    return sys.getrefcount(g)


_UNSHARED_REFCOUNT = _calibrate_refcount()


def _accumulate_leaf(leaf, g, owned: bool) -> None:
    """Add ``g`` into ``leaf.grad``; on first use keep ``g`` itself when ``owned``,
    else a copy (``g`` may be shared)."""
    if leaf.grad is None:
        leaf.grad = _Tensor(g if owned else g.copy())
    else:
        # BEGIN SOLUTION ch04.1
        leaf.grad.data += g
        # END SOLUTION


def unbroadcast(grad, shape):
    """Sum ``grad`` down to ``shape``: the reverse of NumPy broadcasting.

    Leading axes that broadcasting added are summed away; axes where ``shape``
    has size 1 are summed with keepdims.  Used by every binary op's backward.
    """
    if grad.shape == shape:
        return grad
    # BEGIN SOLUTION ch01.7
    ndim_extra = grad.ndim - len(shape)
    leading = tuple(range(ndim_extra))
    stretched = tuple(ndim_extra + i for i, n in enumerate(shape)
                      if n == 1 and grad.shape[ndim_extra + i] != 1)
    # keepdims=True: NumPy returns an array even when every axis is summed
    # (without it, a full sum is a NumPy scalar, not an array).
    return grad.sum(axis=leading + stretched, keepdims=True).reshape(shape)
    # END SOLUTION


def errstate(**kwargs):
    """``np.errstate`` (CuPy follows it too); used around math with expected inf."""
    return np.errstate(**kwargs)


__all__ = ["Function", "backward", "no_grad", "enable_grad", "is_grad_enabled",
           "set_grad_enabled", "unbroadcast"]
