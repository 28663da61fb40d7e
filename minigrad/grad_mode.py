"""Grad mode: whether operations record a graph, per thread.

``no_grad()`` and ``enable_grad()`` work as context managers and decorators
and restore the previous mode on exit (PyTorch's semantics);
``set_grad_enabled(mode)`` switches at once and is a context manager too.
``recomputing()`` marks a forward pass re-run by gradient checkpointing, so
that layers with side effects (BatchNorm's running statistics) skip them.
The function recording a graph (:class:`minigrad.autograd.Function`) reads
``_state.enabled`` directly: one attribute read per operation.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import threading


class _ThreadState(threading.local):
    """Grad mode and the recomputation flag, separate for every thread."""

    enabled = True          # class attributes: the defaults each thread starts with
    recomputing = False


_state = _ThreadState()


def is_grad_enabled() -> bool:
    """True when operations record a graph for backward (the default)."""
    return _state.enabled


class set_grad_enabled:
    """Switch graph recording on or off for this thread, at once; as PyTorch's,
    also a context manager that restores the previous mode on exit::

        minigrad.set_grad_enabled(False)          # off from here on
        with minigrad.set_grad_enabled(False):    # off inside the block only
            ...
    """

    def __init__(self, mode: bool):
        self.previous = _state.enabled
        _state.enabled = bool(mode)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        _state.enabled = self.previous
        return False


class _GradMode(contextlib.ContextDecorator):
    """Context manager *and* decorator that sets grad mode and restores it on exit.

    A decorated generator function runs under the mode each time it resumes
    and gives the caller its own mode back at every ``yield`` (as PyTorch's
    decorators do); a plain ContextDecorator would leave the mode as soon as
    the call returns the generator, before the body has run at all.
    """

    def __init__(self, mode: bool):
        self.mode = mode
        # The modes to restore: a stack (one instance can be nested or
        # re-entered) per thread, since a decorated function may run in several
        # threads at once and each must get back its own mode.
        self._local = threading.local()

    def __enter__(self):
        stack = getattr(self._local, "saved", None)
        if stack is None:
            stack = self._local.saved = []
        stack.append(is_grad_enabled())
        _state.enabled = bool(self.mode)
        return self

    def __exit__(self, *exc):
        _state.enabled = self._local.saved.pop()
        return False

    def __call__(self, func):
        if not inspect.isgeneratorfunction(func):
            return super().__call__(func)

        @functools.wraps(func)
        def generator(*args, **kwargs):
            gen = func(*args, **kwargs)
            try:
                with self:
                    response = gen.send(None)
                while True:
                    try:
                        request = yield response        # the caller's own mode here
                    except GeneratorExit:
                        with self:
                            gen.close()
                        raise
                    except BaseException as exc:        # thrown in: resume with it
                        with self:
                            response = gen.throw(exc)
                    else:
                        with self:
                            response = gen.send(request)
            except StopIteration as stop:
                return stop.value
        return generator


def no_grad():
    """Disable graph recording inside a ``with`` block or a decorated function.

    The previous mode is restored on exit, also after an exception, and
    nested blocks restore correctly.  Grad mode belongs to the thread: one
    ``no_grad()`` object (a decorated function) used by several threads at
    once gives each thread back its own mode::

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
