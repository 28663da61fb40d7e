"""Reverse-mode automatic differentiation: Function and the backward driver.

How a graph is recorded
-----------------------
A :class:`Function` computes on raw arrays (NumPy or CuPy).  Calling one on
Tensors runs ``forward`` on their ``.data``, wraps each output array in a new
Tensor, and, when gradients are wanted, records the Function as the output's
``creator``.  The Function keeps, for each input, where that input's gradient
must go (the leaf tensor itself, or an :class:`Edge` to the Function that made
it), and whatever arrays its ``backward`` needs, but never its outputs nor
any array it did not save: the references only point from outputs back to
inputs, so there are no reference cycles, an activation that no backward
needs is freed as soon as the user's code drops it, and once the user drops
the last output the whole graph is freed by reference counting alone (``gc``
is not needed).

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

import sys
import weakref

import numpy as np

from . import backend, versions
from .backend import check_same_device  # noqa: F401 (every Function's inputs pass it)
from .grad_mode import (_state, enable_grad, is_grad_enabled, is_recomputing,  # noqa: F401
                        no_grad, recomputing, set_grad_enabled)

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


class Edge:
    """What a Function keeps of an input that is not a leaf requiring grad.

    An input computed by a Function is remembered by where its gradient goes
    (output ``_output_index`` of the Function ``_creator``) and by the shape
    and dtype that gradient must have, not by the tensor: the tensor's array
    stays alive only if some backward saved it.  PyTorch's graph edges are
    the same ``(function, input_nr)`` pairs.  An input that needs no
    gradient is the shared :data:`NO_GRAD` (no creator, no gradient).

    A leaf that requires grad is kept as the Tensor itself, since its
    gradient goes into its ``.grad``.  Edge has the attributes the backward
    driver reads on both (``_creator``, ``_output_index``, ``_requires_grad``,
    ``shape``, ``dtype``), so the driver treats the two alike.
    """

    __slots__ = ("_creator", "_output_index", "_requires_grad", "shape", "dtype")

    def __init__(self, creator, output_index, shape, dtype):
        self._creator = creator
        self._output_index = output_index
        self._requires_grad = creator is not None
        self.shape = shape
        self.dtype = dtype

    def __repr__(self):
        if self._creator is None:
            return "Edge(no gradient)"
        return (f"Edge(<{type(self._creator).__name__}>, output {self._output_index}, "
                f"shape {self.shape}, {self.dtype})")


NO_GRAD = Edge(None, 0, None, None)


def _edge_to(t):
    """What a recorded Function keeps of an input Tensor ``t`` that is not a leaf
    requiring grad (that one it keeps as it is; see :class:`Edge`)."""
    if t._creator is None:
        return NO_GRAD
    return Edge(t._creator, t._output_index, t._data.shape, t._data.dtype)


class Function:
    """A differentiable operation on raw arrays: ``MyFunction(options)(x, y)``.

    Subclasses implement ``forward(self, *arrays)`` (an array or a tuple) and
    ``backward(self, *grad_outputs)`` (per input an array, or None when not
    needed: ``self.needs_input_grad``, one bool per input, is set before
    forward), saving on ``self`` what backward needs.  Numbers become constants.
    """

    inputs: tuple = ()              # per input: the leaf Tensor itself, or an Edge
    needs_input_grad: tuple = ()
    _released: bool = False
    _recorded_at: int = 0           # the in-place counter when recorded (minigrad.inplace)

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
            check_same_device(type(self).__name__, tensors)

        record, needs = False, ()
        if _state.enabled:                         # is_grad_enabled(), inline
            needs = tuple([t._requires_grad for t in tensors])
            record = True in needs
        self.needs_input_grad = needs if record else ()
        outputs = self.forward(*[t._data for t in tensors])
        single = not isinstance(outputs, tuple)     # one output: the common case
        results = (Tensor(outputs, record),) if single else \
            tuple([Tensor(out, record) for out in outputs])
        if record:                                  # the graph: outputs -> self -> inputs
            self.inputs = tuple([t if t._creator is None and t._requires_grad   # a leaf
                                 else _edge_to(t) for t in tensors])      # else an Edge
            self.num_outputs, self._released = len(results), False
            self._recorded_at = versions.counter
            for index, out in enumerate(results):
                out._creator, out._output_index = self, index
        return results[0] if single else results

    def forward(self, *arrays):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, *grad_outputs):  # pragma: no cover - abstract
        raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")

    def release(self) -> None:
        """Drop the inputs and saved arrays once backward no longer needs them."""
        saved = self.__dict__       # a new dict: one step, whatever the Function saved
        self.__dict__ = {"num_outputs": saved["num_outputs"], "_released": True,
                         "needs_input_grad": saved["needs_input_grad"]}

    def __repr__(self):
        return f"<{type(self).__name__}>"


# ----------------------------------------------------------------------------
# The backward driver
# ----------------------------------------------------------------------------

def _topological_order(root_fn):
    """``(order, uses)``: the Functions reachable from ``root_fn``, each before the
    creators of its inputs, and ``{id(leaf): [uses, None]}`` for every leaf that
    requires grad (how many input slots will send it a gradient; the None is
    where backward sums it).  Depth-first with an explicit stack: O(nodes +
    edges), no recursion limit.  Raises RuntimeError before any ``.grad`` is
    touched if an earlier backward freed the graph (:func:`_freed_graph_error`).
    """
    # BEGIN SOLUTION ch01.8
    order, uses = [], {}
    visited = {root_fn}             # Functions hash by identity
    stack = [(root_fn, iter(root_fn.inputs))]
    while stack:
        fn, it = stack[-1]
        for x in it:
            parent = x._creator
            if parent is None:
                if x._requires_grad:            # a leaf: one more use
                    uses.setdefault(id(x), [0, None])[0] += 1
            elif parent not in visited:
                if parent._released:            # freed by an earlier backward
                    raise _freed_graph_error(parent)
                visited.add(parent)
                stack.append((parent, iter(parent.inputs)))
                break
        else:
            stack.pop()
            order.append(fn)        # post-order: inputs' creators come first
    order.reverse()                  # now every Function precedes its inputs' creators
    return order, uses
    # END SOLUTION


def _freed_graph_error(fn) -> RuntimeError:
    """The error for a Function released by an earlier backward (``retain_graph=False``)."""
    return RuntimeError(f"backward: the graph through {type(fn).__name__} was already "
                        "freed by an earlier backward (retain_graph=False)")


def backward(tensor, grad=None, retain_graph: bool = False) -> None:
    """Compute d(tensor)/d(leaf) for every leaf that requires grad; add it to ``leaf.grad``.

    Args:
        tensor: the output Tensor; must require grad.
        grad: the upstream gradient, of ``tensor``'s shape (Tensor, array or
            number); may be omitted for a one-element tensor (then 1).
        retain_graph: keep the saved arrays, so backward can run through the graph again.

    Raises:
        RuntimeError: the tensor does not require grad, or its graph was freed.
        ValueError: ``grad`` is missing for a non-scalar output, or has another shape.
    """
    grad_array = _initial_gradient(tensor, grad)      # checked; 1 for one element
    root = tensor._creator
    if root is None:                     # a leaf: its gradient is grad itself
        _accumulate_leaf(tensor, grad_array, owned=False)
        return

    order, leaves = _topological_order(root)
    grads = {root: [None] * root.num_outputs}     # Function -> its outputs' gradients
    grads[root][tensor._output_index] = grad_array
    for fn in order:
        if fn in grads:
            if fn._recorded_at < versions.counter:   # something changed in place since
                versions.check_saved_arrays(fn)
            # grads.pop inline: no local name keeps the upstream gradients alive.
            _send_gradients(fn, grads.pop(fn), grads, leaves)
            if not retain_graph:
                fn.release()
        else:                             # no gradient flows into this Function,
            _count_down_leaves(fn, leaves)    # but its leaves' uses are over


def _initial_gradient(tensor, grad):
    """The array backward starts from: ``grad`` (a Tensor, array or number) as an
    array of the tensor's shape and dtype, or 1 for a one-element tensor.
    Raises when the tensor has no graph, was freed, or ``grad`` does not fit."""
    if not tensor._requires_grad:
        raise RuntimeError("backward: this tensor does not require grad and has no "
                           "graph (was it computed under no_grad(), or from inputs "
                           "with requires_grad=False?)")
    data, xp = tensor._data, tensor._xp
    if grad is None:
        if data.size != 1:
            raise ValueError(f"backward: grad can be implicitly created only for a tensor "
                             f"with one element, got shape {tensor.shape}; pass "
                             f"grad= of that shape")
        # ones_like for one element, without NumPy's Python-level wrapper
        grad_array = xp.array(1, dtype=data.dtype)
        if data.ndim:
            grad_array = grad_array.reshape(data.shape)
    else:
        grad_array = grad.data if isinstance(grad, _Tensor) else xp.asarray(grad)
        if grad_array.shape != tensor.shape:
            raise ValueError(f"backward: grad has shape {tuple(grad_array.shape)} but the "
                             f"tensor has shape {tensor.shape}; they must match")
        grad_array = grad_array.astype(tensor.dtype, copy=False)
    if tensor._creator is not None and tensor._creator._released:
        raise RuntimeError("backward: trying to backward through the graph a second "
                           "time; its saved arrays were freed by the first backward. "
                           "Pass retain_graph=True to the first call if you need to.")
    return grad_array


def _send_gradients(fn, grad_outputs, grads, leaves) -> None:
    """Run ``fn.backward``; add each input's gradient to its pending sum:
    ``grads[creator][output index]``, or ``leaves[id(leaf)]`` for a leaf (into
    ``.grad`` after its last use: :func:`_finish_leaf`, which takes a fresh array
    held by one name only, as taking them out of the list one by one ensures)."""
    in_grads = fn.backward(*grad_outputs)
    grad_outputs.clear()             # the upstream gradients are freed here, not later
    in_grads = list(in_grads) if isinstance(in_grads, tuple) else [in_grads]
    inputs = fn.inputs
    if len(in_grads) != len(inputs):
        raise RuntimeError(f"{type(fn).__name__}.backward returned {len(in_grads)} "
                           f"gradients for {len(inputs)} inputs")
    for i, x in enumerate(inputs):
        g, in_grads[i] = in_grads[i], None
        if not x._requires_grad:
            continue
        parent = x._creator
        ref = x if parent is not None else x._data      # an Edge, or the leaf's array
        if g is not None and (g.shape != ref.shape or g.dtype != ref.dtype):
            g = _fit_gradient(fn, g, x)      # cast to x's dtype; a wrong shape raises
        if parent is None:
            entry = leaves[id(x)]            # [uses left, gradient summed so far]
            if g is not None:
                entry[1] = g if entry[1] is None else entry[1] + g
                g = None
            entry[0] -= 1
            if entry[0] == 0:
                _finish_leaf(x, leaves.pop(id(x)))
        elif g is not None:
            slots = grads.setdefault(parent, [None] * parent.num_outputs)
            k = x._output_index
            slots[k] = g if slots[k] is None else slots[k] + g


def _fit_gradient(fn, g, x):
    """``g`` in the dtype of the input ``x``; RuntimeError naming ``fn`` if its shape differs."""
    if g.shape != x.shape:
        raise RuntimeError(f"{type(fn).__name__}.backward returned a gradient of "
                           f"shape {tuple(g.shape)} for an input of shape {x.shape}")
    return g.astype(x.dtype)


def _count_down_leaves(fn, leaves) -> None:
    """A Function that receives no gradient sends none: its leaf inputs' uses end."""
    for x in fn.inputs:
        if x._creator is None and x._requires_grad:
            entry = leaves[id(x)]
            entry[0] -= 1
            if entry[0] == 0:
                _finish_leaf(x, leaves.pop(id(x)))


def _finish_leaf(leaf, entry) -> None:
    """The leaf's last use has run: add its summed gradient into ``leaf.grad``.

    Adding each leaf's gradient as soon as it is final (PyTorch's
    AccumulateGrad does the same) means that at most the gradients of the
    leaves still in use are held beside ``.grad``: accumulating over
    micro-batches costs one parameter's gradient on top of ``.grad``, not a
    second copy of every gradient.

    A fresh array that nothing else holds becomes ``leaf.grad`` as it is,
    which saves a full copy of every weight gradient (PyTorch's AccumulateGrad
    makes the same reference-count test).  A view (base is not None) shares
    memory with its base, and an array with more references is still held
    elsewhere (another leaf, the caller's grad, a retained graph): those are
    copied.
    """
    g, entry[1] = entry[1], None         # now g is held by this name only
    if g is not None:
        if _leaf_observers.data:        # any observer (optim/noise_scale.py); .data: no __len__ call
            _observe(leaf, g)
        unshared = g.base is None and sys.getrefcount(g) == _UNSHARED_REFCOUNT
        _accumulate_leaf(leaf, g, unshared)


def _calibrate_refcount() -> int:
    """sys.getrefcount of an array held by one local name only (the count
    differs between Python versions, so it is measured, not assumed)."""
    g = np.empty(0)
    return sys.getrefcount(g)


_UNSHARED_REFCOUNT = _calibrate_refcount()


def _accumulate_leaf(leaf, g, owned: bool) -> None:
    """Add ``g`` into ``leaf.grad``; on first use keep ``g`` itself when ``owned``,
    else a copy (``g`` may be shared)."""
    if leaf._grad is None:
        leaf._grad = _Tensor(g if owned else g.copy())
    else:
        # BEGIN SOLUTION ch04.1
        leaf._grad._data += g
        # END SOLUTION


# Observers of the gradients added into leaves: objects with a method
# ``observe_leaf_gradient(leaf, g)``, called with this pass's own gradient ``g``
# of ``leaf`` just before it is added into ``leaf.grad`` (``g`` must not be
# changed or kept).  Held by weak reference: an observer that nobody else
# holds stops observing.  :class:`minigrad.optim.noise_scale.NoiseScaleTracker`
# takes the squared norm of each micro-batch's gradient here, where it arrives,
# without copying ``.grad``.
_leaf_observers: weakref.WeakSet = weakref.WeakSet()


def _observe(leaf, g) -> None:
    for observer in list(_leaf_observers):
        observer.observe_leaf_gradient(leaf, g)


def add_leaf_observer(observer) -> None:
    """Call ``observer.observe_leaf_gradient(leaf, g)`` for every gradient that a
    backward pass through a graph adds into a leaf's ``.grad`` (in every
    thread; not ``leaf.backward(grad)`` called on a leaf itself), until
    :func:`remove_leaf_observer` or until the observer is garbage-collected."""
    _leaf_observers.add(observer)


def remove_leaf_observer(observer) -> None:
    """Stop calling ``observer`` (nothing happens if it was not observing)."""
    _leaf_observers.discard(observer)


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
    # keepdims=True: an array even when every axis is summed (else a NumPy scalar)
    return grad.sum(axis=leading + stretched, keepdims=True).reshape(shape)
    # END SOLUTION


__all__ = ["Function", "backward", "no_grad", "enable_grad", "is_grad_enabled",
           "set_grad_enabled", "unbroadcast", "Edge", "NO_GRAD", "add_leaf_observer",
           "remove_leaf_observer"]
