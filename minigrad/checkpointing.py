"""Gradient checkpointing: trade compute for memory by recomputing activations.

A plain forward pass keeps, for every Function, the arrays its backward needs
(the *activations*).  For a network of depth L that is O(L) arrays of the
batch's size, and it is usually what limits the batch on a small machine.

:func:`checkpoint` runs a piece of the network under :func:`~minigrad.no_grad`,
so none of its intermediate arrays are kept, and records one Function node in
their place.  When backward reaches that node it runs the piece a second time,
now with grad mode on, and backpropagates through the recomputed graph.  The
piece's activations therefore exist only during its own backward.

Splitting a chain of L layers into √L checkpointed segments keeps O(√L)
arrays instead of O(L), for the price of one extra forward pass (about a third
more time): Chen et al., "Training Deep Nets with Sublinear Memory Cost",
arXiv:1604.06174 (2016), section 4.

Four things make the recomputation give the very same numbers:

* the random state of every device (dropout's masks, ``randn`` on the CPU
  and the GPU) is saved before the first run and put back for the
  recomputation (:func:`minigrad.random.get_rng_state`);
* the forward's context is replayed: the per-example dropout contexts
  (``nn.dropout_context``) and the default dtype in force when it ran, so a
  backward outside the ``with`` block, inside another micro-batch's block,
  or after ``set_default_dtype`` recomputes what the forward computed;
* the recomputation runs inside :func:`minigrad.autograd.recomputing`, so
  layers with side effects, BatchNorm's running statistics, do them once;
* the inputs are the same arrays, so the same operations give the same bits.
"""
from __future__ import annotations

import numpy as np

from . import autograd
from . import random as mg_random
from .autograd import Function, enable_grad, is_grad_enabled, no_grad, recomputing
from .tensor import Tensor, get_default_dtype, set_default_dtype


class CheckpointFunction(Function):
    """One graph node standing for a whole call ``fn(*args)``.

    ``forward`` runs ``fn`` under no_grad and keeps nothing but its input
    arrays and the random state; ``backward`` recomputes ``fn`` with grad
    enabled and backpropagates through it.

    ``args`` is the full argument list given to :func:`checkpoint`, with
    ``None`` at the positions of the Tensor inputs that are passed to this
    Function (they arrive in ``forward`` as arrays).  A trailing extra input is
    the *anchor* (see :func:`checkpoint`) when ``has_anchor`` is True.
    """

    def __init__(self, fn, args, tensor_positions, has_anchor):
        self.fn = fn
        self.args = args
        self.tensor_positions = tensor_positions
        self.has_anchor = has_anchor
        self.rng_state = None
        self.contexts = None
        self.default_dtype = None
        self.single_output = True

    def _call_fn(self, tensors):
        """Run ``fn`` with ``tensors`` placed at their positions among the other args."""
        args = list(self.args)
        for position, t in zip(self.tensor_positions, tensors):
            args[position] = t
        return self.fn(*args)

    def forward(self, *arrays):
        if self.has_anchor:
            arrays = arrays[:-1]
        self.input_arrays = arrays          # backward recomputes from these
        # BEGIN SOLUTION ch07.1
        self.rng_state = mg_random.get_rng_state()
        self.contexts = list(mg_random.dropout_contexts())
        self.default_dtype = get_default_dtype()
        with no_grad():
            outputs = self._call_fn([Tensor(a) for a in arrays])
        outputs = _check_outputs(outputs)
        self.single_output = len(outputs) == 1
        result = tuple(o.data for o in outputs)
        return result[0] if self.single_output else result
        # END SOLUTION

    def backward(self, *grad_outputs):
        arrays = self.input_arrays
        needs = self.needs_input_grad[:len(arrays)]
        # Fresh leaves over the same arrays: the recomputed graph ends at them.
        leaves = [Tensor(a, requires_grad=need) for a, need in zip(arrays, needs)]

        # BEGIN SOLUTION ch07.2
        # Replay the forward's context, and put the caller's back afterwards.
        state_after = mg_random.get_rng_state()
        dtype_after = get_default_dtype()
        mg_random.set_rng_state(self.rng_state)
        contexts_after = mg_random.set_dropout_contexts(list(self.contexts))
        set_default_dtype(self.default_dtype)
        try:
            with enable_grad(), recomputing():
                outputs = _check_outputs(self._call_fn(leaves))
        finally:
            mg_random.set_rng_state(state_after)
            mg_random.set_dropout_contexts(contexts_after)
            set_default_dtype(dtype_after)

        _backward_many(outputs, grad_outputs)
        grads = [leaf.grad.data if (need and leaf.grad is not None) else None
                 for leaf, need in zip(leaves, needs)]
        if self.has_anchor:
            grads.append(None)
        return tuple(grads)
        # END SOLUTION


def _check_outputs(outputs):
    """``fn``'s result as a tuple of Tensors; TypeError for anything else."""
    single = isinstance(outputs, Tensor)
    outputs = (outputs,) if single else outputs
    if not isinstance(outputs, tuple) or not outputs or \
            not all(isinstance(o, Tensor) for o in outputs):
        raise TypeError(f"checkpoint: fn must return a Tensor or a non-empty tuple of "
                        f"Tensors, got {type(outputs).__name__}")
    return outputs


def _backward_many(outputs, grads) -> None:
    """Backpropagate ``grads`` (arrays or None) from several outputs in one pass.

    One output: a plain ``backward(grad)``.  Several: backward of
    ``Σ_i sum(out_i * g_i)``, whose gradient with respect to ``out_i`` is
    exactly ``g_i`` (products with 1.0 are exact), so the result is the same
    as one pass seeded with every ``g_i``.
    """
    pairs = [(o, g) for o, g in zip(outputs, grads) if o.requires_grad and g is not None]
    if not pairs:
        return      # nothing inside fn needs a gradient
    if len(pairs) == 1:
        out, g = pairs[0]
        autograd.backward(out, g)
        return
    total = None
    for out, g in pairs:
        term = (out * Tensor(g)).sum()
        total = term if total is None else total + term
    total.backward()


def checkpoint(fn, *inputs):
    """Call ``fn(*inputs)`` without keeping its activations; recompute them in backward.

    The result equals ``fn(*inputs)``, and so do the gradients that flow back
    through it: to the Tensor inputs, and to every parameter ``fn`` uses.
    The recomputation repeats the same operations on the same arrays, so on
    the CPU the gradients are usually equal bit for bit; only the order in
    which a parameter used in several segments sums its pieces can differ
    (float64 relative difference ≤ 1e-12, tested).

    Args:
        fn: a callable (a Module, a function) returning a Tensor or a tuple of
            Tensors.  It must compute the same thing when called twice: it may
            draw random numbers from minigrad's streams (dropout), which are
            replayed, but not from a ``numpy.random.Generator`` of its own.
        *inputs: its arguments.  Tensors among them are the inputs whose
            gradients are returned; other values (ints, flags) are passed
            through unchanged.

    Returns:
        What ``fn`` returns, as Tensors recorded as outputs of a single graph
        node (``CheckpointFunction``).

    How gradients arrive:
        * Tensor inputs receive theirs through the outer backward, like the
          inputs of any operation.
        * Parameters used inside ``fn`` (leaves that require grad but are not
          among ``inputs``) receive theirs from the *inner* backward through
          the recomputed graph: it adds directly into their ``.grad`` when the
          outer backward reaches this node.  The sum is the same as in a plain
          run; only the moment it is added differs.
        * When no Tensor input requires grad (the first layer's input), an
          empty *anchor* Tensor that requires grad is added as an extra input,
          so that the node is recorded and the parameters inside ``fn`` still
          get their gradients.  The output then requires grad whenever grad
          mode is on, even if ``fn`` used no parameter (PyTorch's reentrant
          checkpoint instead returns no gradients to such parameters).

    Side effects:
        ``fn`` runs twice.  During the second run
        :func:`minigrad.autograd.is_recomputing` is True (BatchNorm reads it
        and does not update its running statistics again), grad mode is on
        (also when backward is called under ``no_grad``), and the first
        run's context is back: minigrad's random state on every device (so
        dropout and ``randn`` draw the same numbers), the per-example dropout
        contexts, and the default dtype.  Afterwards all of them are what
        they were before the rerun.

    Under :func:`~minigrad.no_grad` this is just ``fn(*inputs)``.

    Raises:
        TypeError: ``fn`` is not callable, or does not return Tensors.

    Source: Chen, Xu, Zhang, Guestrin, "Training Deep Nets with Sublinear
    Memory Cost", arXiv:1604.06174 (2016); PyTorch's
    ``torch.utils.checkpoint.checkpoint`` (reentrant variant).
    """
    if not callable(fn):
        raise TypeError(f"checkpoint: fn must be callable, got {type(fn).__name__}")
    if not is_grad_enabled():
        return fn(*inputs)

    positions = [i for i, x in enumerate(inputs) if isinstance(x, Tensor)]
    tensors = [inputs[i] for i in positions]
    args = [None if isinstance(x, Tensor) else x for x in inputs]
    has_anchor = not any(t.requires_grad for t in tensors)
    if has_anchor:
        tensors.append(_anchor(tensors))
    node = CheckpointFunction(fn, args, positions, has_anchor)
    return node(*tensors)


def _anchor(tensors):
    """An empty float Tensor requiring grad, on the inputs' device (see :func:`checkpoint`)."""
    xp = tensors[0]._xp if tensors else np
    return Tensor(xp.zeros(0), requires_grad=True)


def checkpoint_sequential(functions, segments: int, input):  # noqa: A002 (PyTorch's name)
    """Run a chain of layers in ``segments`` parts, checkpointing all but the last.

    The layers (a ``Sequential``, or any sequence of callables) are cut into
    ``segments`` consecutive parts of ``len(functions) // segments`` layers;
    the last part takes the remainder.  Every part but the last is run
    through :func:`checkpoint`; the last one runs plainly, since its
    activations are needed at once by backward anyway (PyTorch's
    ``torch.utils.checkpoint.checkpoint_sequential`` does the same).

    With L layers and ``segments = √L`` the activations kept are those of the
    segment boundaries plus one segment: O(√L) instead of O(L).

    Args:
        functions: a ``Sequential`` or a list/tuple of callables, each taking
            one Tensor and returning one Tensor.
        segments: the number of parts, 1 ≤ segments ≤ len(functions).
        input: the Tensor fed to the first layer.

    Returns:
        The output of the last layer.

    Raises:
        TypeError: ``segments`` is not an int.
        ValueError: ``segments`` is below 1 or above the number of layers.
    """
    layers = list(functions)
    if isinstance(segments, bool) or not isinstance(segments, (int, np.integer)):
        raise TypeError(f"checkpoint_sequential: segments must be an int, got "
                        f"{type(segments).__name__}")
    if not 1 <= segments <= len(layers):
        raise ValueError(f"checkpoint_sequential: segments must be between 1 and the "
                         f"number of layers ({len(layers)}), got {segments}")

    # BEGIN SOLUTION ch07.3
    size = len(layers) // segments
    x = input
    for start in range(0, size * (segments - 1), size):
        x = checkpoint(_run_layers(layers[start:start + size]), x)
    return _run_layers(layers[size * (segments - 1):])(x)
    # END SOLUTION


def _run_layers(layers):
    """A function applying ``layers`` one after the other."""
    def run(x):
        for layer in layers:
            x = layer(x)
        return x
    return run


__all__ = ["checkpoint", "checkpoint_sequential", "CheckpointFunction"]
