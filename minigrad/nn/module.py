"""Module and Parameter: how layers hold their weights, sub-layers and buffers.

A :class:`Module` registers what is assigned to it as an attribute:

* a :class:`Parameter` (a Tensor that requires grad) goes into ``_parameters``,
* another Module goes into ``_modules`` (a child),
* :meth:`Module.register_buffer` adds a *buffer*: state that is saved with the
  model but not trained, such as BatchNorm's running statistics.

All three are plain dicts, so iteration follows registration order and is the
same in every run, whatever the hash seed (sets would not be).  The design
follows ``torch.nn.Module``; the method names and their meaning are PyTorch's.

A parameter is also stored as a plain instance attribute, so that
``self.weight`` in a forward pass is an ordinary attribute read, not a failed
lookup followed by ``__getattr__`` (ten times slower; a small network reads
its parameters thousands of times a second).  Every write goes through
``__setattr__``, :meth:`Module.register_parameter` and ``__delattr__``, which
keep the two in step: change parameters through them, not through
``_parameters`` directly.
"""
from __future__ import annotations

import numpy as np

from .. import backend
from ..tensor import Tensor, _is_floating


class Parameter(Tensor):
    """A Tensor that a Module registers as trainable (``requires_grad=True``).

    Args:
        data: a NumPy or CuPy array, or a Tensor (its array is shared, not
            copied, as ``torch.nn.Parameter`` does).  Must be floating point.
        requires_grad: True by default.

    Raises:
        TypeError: the data is not floating point (integer tensors cannot
            require gradients).
    """

    __slots__ = ()

    def __init__(self, data, requires_grad: bool = True):
        if isinstance(data, Tensor):
            data = data.data
        super().__init__(data, requires_grad=requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()


def _as_buffer(value, name):
    """A buffer value as a Tensor without a graph (or None)."""
    if value is None:
        return None
    if isinstance(value, Tensor):
        return Tensor(value.data)
    if backend.is_array(value):
        return Tensor(value)
    raise TypeError(f"register_buffer: buffer {name!r} must be an array, a Tensor or "
                    f"None, got {type(value).__name__}")


def _convert_value(key, value, t):
    """``value`` as an array of ``t``'s dtype on ``t``'s device (a new array)."""
    dtype = getattr(value, "dtype", None)
    if dtype is None:
        try:
            dtype = np.asarray(value).dtype
        except (TypeError, ValueError) as error:     # ragged lists and the like
            raise TypeError(f"load_state_dict: value of {key!r} is not an array of numbers "
                            f"({error})") from None
    if dtype.kind not in "biuf":
        raise TypeError(f"load_state_dict: value of {key!r} has dtype {dtype}; expected "
                        f"numbers convertible to the module's {t.dtype}")
    return t._xp.array(backend.to_device(value, t.device), dtype=t.dtype, copy=True)


class Module:
    """Base class of every layer and model.

    Subclasses call ``super().__init__()`` first, assign Parameters, Modules and
    buffers as attributes, and implement ``forward``.  Calling the module calls
    ``forward``.

    Example::

        class MLP(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1 = nn.Linear(4, 8)
                self.fc2 = nn.Linear(8, 2)

            def forward(self, x):
                return self.fc2(self.fc1(x).relu())

        list(dict(MLP().named_parameters()))
        # ['fc1.weight', 'fc1.bias', 'fc2.weight', 'fc2.bias']
    """

    def __init__(self):
        object.__setattr__(self, "_parameters", {})
        object.__setattr__(self, "_buffers", {})
        object.__setattr__(self, "_non_persistent", set())
        object.__setattr__(self, "_modules", {})
        object.__setattr__(self, "training", True)

    # ------------------------------------------------------------ registration
    def _check_initialized(self, name):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"cannot assign {name!r} before Module.__init__() "
                                 f"is called (call super().__init__() first)")

    def __setattr__(self, name, value):
        if isinstance(value, Parameter):
            self._check_initialized(name)
            self._remove_from(name, self._buffers, self._modules)
            self._parameters[name] = value
            self.__dict__[name] = value          # the fast read (module docstring)
        elif isinstance(value, Module):
            self._check_initialized(name)
            self._remove_from(name, self.__dict__, self._parameters, self._buffers)
            self._modules[name] = value
        elif "_parameters" in self.__dict__ and name in self._parameters:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to parameter "
                                f"{name!r}: expected a Parameter or None")
            self._parameters[name] = None
            self.__dict__[name] = None
        elif "_buffers" in self.__dict__ and name in self._buffers:
            self._buffers[name] = _as_buffer(value, name)
        elif "_modules" in self.__dict__ and name in self._modules:
            if value is not None:
                raise TypeError(f"cannot assign {type(value).__name__} to child module "
                                f"{name!r}: expected a Module or None")
            self._modules[name] = None
        else:
            object.__setattr__(self, name, value)

    @staticmethod
    def _remove_from(name, *dicts):
        for d in dicts:
            d.pop(name, None)

    def __getattr__(self, name):
        # Called only when normal lookup fails: look in the three registries.
        d = self.__dict__
        for registry in ("_parameters", "_buffers", "_modules"):
            if registry in d and name in d[registry]:
                return d[registry][name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __delattr__(self, name):
        for registry in (self._parameters, self._buffers, self._modules):
            if name in registry:
                del registry[name]
                self._non_persistent.discard(name)
                self.__dict__.pop(name, None)    # a parameter's fast-read copy
                return
        object.__delattr__(self, name)

    def register_parameter(self, name: str, param: Parameter | None) -> None:
        """Register ``param`` (a Parameter, or None for an absent one such as
        ``bias=False``) under ``name``."""
        if param is not None and not isinstance(param, Parameter):
            raise TypeError(f"register_parameter: {name!r} must be a Parameter or None, "
                            f"got {type(param).__name__}")
        self._check_initialized(name)
        self._remove_from(name, self._buffers, self._modules)
        self._parameters[name] = param
        self.__dict__[name] = param              # the fast read (module docstring)

    def register_buffer(self, name: str, value, persistent: bool = True) -> None:
        """Register a buffer: state saved in :meth:`state_dict` but not trained.

        Args:
            name: attribute name.
            value: an array, a Tensor (its array is kept, without graph) or None.
            persistent: False keeps the buffer out of :meth:`state_dict`.

        Raises:
            TypeError: ``value`` is not an array, Tensor or None.
            KeyError: ``name`` is already a parameter or a child module.
        """
        self._check_initialized(name)
        if name in self._parameters or name in self._modules:
            raise KeyError(f"register_buffer: {name!r} is already a parameter or a "
                           f"child module")
        self.__dict__.pop(name, None)
        self._buffers[name] = _as_buffer(value, name)
        if persistent:
            self._non_persistent.discard(name)
        else:
            self._non_persistent.add(name)

    def add_module(self, name: str, module: Module | None) -> None:
        """Register ``module`` as a child named ``name``."""
        if module is not None and not isinstance(module, Module):
            raise TypeError(f"add_module: {name!r} must be a Module, got "
                            f"{type(module).__name__}")
        self._check_initialized(name)
        self._remove_from(name, self.__dict__, self._parameters, self._buffers)
        self._modules[name] = module

    # --------------------------------------------------------------- iteration
    def named_modules(self, prefix: str = ""):
        """Yield ``(dotted name, module)`` for this module (name ``""``) and every
        descendant, depth first, each module once."""
        seen = set()            # of ids: compare modules by identity
        stack = [(prefix, self)]
        while stack:
            name, module = stack.pop()
            if id(module) in seen:
                continue
            seen.add(id(module))
            yield name, module
            children = [(f"{name}.{child_name}" if name else child_name, child)
                        for child_name, child in module._modules.items()
                        if child is not None]
            stack.extend(reversed(children))    # so the first child is visited first

    def modules(self):
        """This module and every descendant (see :meth:`named_modules`)."""
        for _, module in self.named_modules():
            yield module

    def named_children(self):
        """Yield ``(name, module)`` for the direct children, in registration order."""
        for name, module in self._modules.items():
            if module is not None:
                yield name, module

    def children(self):
        for _, module in self.named_children():
            yield module

    def _named_members(self, registry: str):
        # BEGIN SOLUTION ch02.9
        seen = set()            # a parameter shared by two layers is listed once
        for module_name, module in self.named_modules():
            for name, value in getattr(module, registry).items():
                if value is None or id(value) in seen:
                    continue
                seen.add(id(value))
                yield (f"{module_name}.{name}" if module_name else name), value
        # END SOLUTION

    def named_parameters(self):
        """Yield ``(dotted name, Parameter)`` in registration order, each once."""
        return self._named_members("_parameters")

    def parameters(self):
        """The Parameters of this module and its descendants, in registration order."""
        for _, p in self.named_parameters():
            yield p

    def named_buffers(self):
        """Yield ``(dotted name, buffer Tensor)`` in registration order."""
        return self._named_members("_buffers")

    def buffers(self):
        for _, b in self.named_buffers():
            yield b

    # -------------------------------------------------------------- mode, apply
    def train(self, mode: bool = True) -> Module:
        """Set training mode (``mode=True``) or evaluation mode on this module and
        every descendant; returns self."""
        if not isinstance(mode, bool):
            raise TypeError(f"train: mode must be a bool, got {type(mode).__name__}")
        for module in self.modules():
            object.__setattr__(module, "training", mode)
        return self

    def eval(self) -> Module:
        """Evaluation mode: same as ``train(False)`` (Dropout becomes the identity,
        BatchNorm uses its running statistics)."""
        return self.train(False)

    def apply(self, fn) -> Module:
        """Call ``fn(module)`` on every descendant (children first) and on self."""
        for child in self.children():
            child.apply(fn)
        fn(self)
        return self

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients: ``.grad = None`` (PyTorch's default), or zeros."""
        for p in self.parameters():
            if set_to_none or p.grad is None:
                p.grad = None
            else:
                p.grad.data[...] = 0

    # ------------------------------------------------------------ device, dtype
    def to(self, device=None, dtype=None) -> Module:
        """Move parameters and buffers to ``device`` and/or cast floating ones to
        ``dtype``, in place (the Parameter objects stay the same, so an optimizer
        built before still holds them); returns self.

        ``module.to("cuda")``, ``module.to(numpy.float64)`` and
        ``module.to("cpu", numpy.float32)`` all work.  Integer buffers (such as
        ``num_batches_tracked``) keep their dtype, as in PyTorch.  All or
        nothing: if a conversion fails halfway (out of GPU memory), every
        tensor already converted is put back.
        """
        if device is not None and not isinstance(device, str) and dtype is None:
            device, dtype = None, device          # module.to(float64)
        if device is not None:
            device = backend.normalize_device(device)
        if dtype is not None:
            dtype = np.dtype(dtype)
            if dtype.kind != "f":
                raise TypeError(f"Module.to: dtype must be floating point, got {dtype}")

        def convert(array):
            if dtype is not None and _is_floating(array.dtype):
                array = array.astype(dtype, copy=False)
            if device is not None:
                array = backend.to_device(array, device)
            return array

        done, seen = [], set()  # (tensor, its old array, its gradient's old array): to undo
        try:
            for module in self.modules():
                for t in list(module._parameters.values()) + list(module._buffers.values()):
                    if t is None or id(t) in seen:
                        continue
                    seen.add(id(t))
                    done.append((t, t.data, None if t.grad is None else t.grad.data))
                    t.data = convert(t.data)
                    if t.grad is not None:
                        t.grad.data = convert(t.grad.data)
        except BaseException:           # e.g. out of GPU memory halfway: all back
            for t, data, grad in done:
                t.data = data
                if grad is not None:
                    t.grad.data = grad
            raise
        return self

    def cpu(self) -> Module:
        return self.to("cpu")

    def cuda(self) -> Module:
        return self.to("cuda")

    def double(self) -> Module:
        return self.to(np.float64)

    def float(self) -> Module:
        return self.to(np.float32)

    # -------------------------------------------------------------- state dict
    def state_dict(self) -> dict:
        """Parameters and persistent buffers as NumPy arrays (copies), with dotted
        keys, in registration order: ``{"fc1.weight": array, ...}``.

        Integer buffers (``num_batches_tracked``) are included with their dtype.
        """
        state = {}
        for module_name, module in self.named_modules():
            prefix = f"{module_name}." if module_name else ""
            for name, p in module._parameters.items():
                if p is not None:
                    state[prefix + name] = np.array(backend.asnumpy(p.data), copy=True)
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent:
                    state[prefix + name] = np.array(backend.asnumpy(b.data), copy=True)
        return state

    def _state_tensors(self) -> dict:
        """The Tensors that :meth:`state_dict` reads, under the same keys."""
        tensors = {}
        for module_name, module in self.named_modules():
            prefix = f"{module_name}." if module_name else ""
            for name, p in module._parameters.items():
                if p is not None:
                    tensors[prefix + name] = p
            for name, b in module._buffers.items():
                if b is not None and name not in module._non_persistent:
                    tensors[prefix + name] = b
        return tensors

    def load_state_dict(self, state_dict: dict, strict: bool = True):
        """Copy arrays from ``state_dict`` into the parameters and buffers, in place.

        Each value is copied into the existing ``.data``, keeping its device and
        dtype.  Values may be NumPy/CuPy arrays or Tensors.

        Args:
            state_dict: a mapping from dotted names to arrays (as made by
                :meth:`state_dict` or :func:`minigrad.nn.utils.load`).
            strict: when True (the default), a key that the module lacks or a
                key of the module missing from ``state_dict`` raises.

        Returns:
            ``(missing_keys, unexpected_keys)`` as two lists (empty when strict).

        Raises:
            TypeError: ``state_dict`` is not a mapping.
            KeyError: strict and a key is missing or unexpected (the message
                names every such key).
            ValueError: a shape differs (always, strict or not; names the key,
                both shapes).
            TypeError: a value is not numbers (strings, objects, complex
                numbers into a real parameter).

        All or nothing: every value is checked and converted before the first
        one is copied in, so on any error the module is unchanged.
        """
        if not hasattr(state_dict, "keys"):
            raise TypeError(f"load_state_dict: expected a dict from names to arrays, got "
                            f"{type(state_dict).__name__}")
        own = self._state_tensors()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            parts = []
            if missing:
                parts.append(f"missing keys: {', '.join(missing)}")
            if unexpected:
                parts.append(f"unexpected keys: {', '.join(unexpected)}")
            raise KeyError(f"load_state_dict for {type(self).__name__}: "
                           + "; ".join(parts))
        converted = {}      # every value converted first: a bad one raises before any copy
        for key, t in own.items():
            if key not in state_dict:
                continue
            value = state_dict[key]
            value = value.data if isinstance(value, Tensor) else value
            shape = tuple(getattr(value, "shape", np.shape(value)))
            if shape != t.shape:
                raise ValueError(f"load_state_dict: size mismatch for {key!r}: the "
                                 f"checkpoint has shape {shape}, the module has "
                                 f"shape {t.shape}")
            converted[key] = _convert_value(key, value, t)
        for key, array in converted.items():
            own[key].data[...] = array
        return missing, unexpected

    def save(self, path) -> str:
        """Write :meth:`state_dict` to the ``.npz`` file ``path``, atomically
        (see :func:`minigrad.nn.utils.save`); ``.npz`` is added when missing.
        Returns the path written."""
        from .utils import save  # noqa: PLC0415  (utils imports nothing of Module)
        return save(self.state_dict(), path)

    def load(self, path, strict: bool = True):
        """Load a file written by :meth:`save` into this module, in place (the
        same ``path``: ``m.save("model")`` then ``m.load("model")`` both use
        ``model.npz``).  Raises FileNotFoundError, or
        :class:`minigrad.serialization.CheckpointError` for a damaged file;
        see :meth:`load_state_dict` for the rest."""
        from .utils import load  # noqa: PLC0415
        return self.load_state_dict(load(path), strict=strict)

    # --------------------------------------------------------------- calling
    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward() method")

    def __call__(self, *args, **kwargs):
        return self.forward(*args, **kwargs)

    # ------------------------------------------------------------------ repr
    def extra_repr(self) -> str:
        """The text inside the parentheses of this module's repr (override it)."""
        return ""

    def __repr__(self):
        lines = []
        for name, child in self._modules.items():
            child_text = repr(child).replace("\n", "\n  ")
            lines.append(f"  ({name}): {child_text}")
        extra = self.extra_repr()
        if not lines:
            return f"{type(self).__name__}({extra})"
        head = f"{type(self).__name__}("
        if extra:
            lines.insert(0, "  " + extra.replace("\n", "\n  "))
        return head + "\n" + "\n".join(lines) + "\n)"

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._parameters) |
                      set(self._buffers) | set(self._modules))
