"""Stochastic gradient descent with momentum, Nesterov momentum and weight decay."""
from __future__ import annotations

from . import updates
from .checks import check_number, required
from .optimizer import Optimizer


class SGD(Optimizer):
    """Stochastic gradient descent, PyTorch's ``torch.optim.SGD`` update rule.

    For each parameter p with gradient g, at step t (t = 1, 2, ...)::

        g   <- g + weight_decay * p                       (L2 penalty, if weight_decay)
        b_t  = g                            at t = 1      (momentum buffer, if momentum)
        b_t  = momentum * b_{t-1} + (1 - dampening) * g   after
        g   <- g + momentum * b_t   (nesterov)   or   g <- b_t   (classical momentum)
        p   <- p - lr * g

    This is the formulation of Sutskever et al. (2013), "On the importance of
    initialization and momentum in deep learning", as written in PyTorch's
    documentation of SGD.  Parameters whose ``.grad`` is None are skipped.

    Args:
        params: Tensors or parameter groups (see :class:`Optimizer`).
        lr: learning rate, >= 0 (required).
        momentum: momentum factor, >= 0 (default 0: plain SGD).
        dampening: dampening of the momentum, >= 0 (default 0).
        nesterov: use Nesterov momentum (needs momentum > 0 and dampening 0).
        weight_decay: L2 penalty coefficient, >= 0 (default 0).

    Raises:
        TypeError / ValueError: a hyperparameter is not a number or out of
            range, or ``nesterov`` with ``momentum == 0`` or ``dampening != 0``.

    Example:
        >>> import minigrad
        >>> w = minigrad.tensor([1.0, -2.0], requires_grad=True)
        >>> (w * w).sum().backward()           # grad = 2w = [2, -4]
        >>> SGD([w], lr=0.25).step()
        >>> w.numpy().tolist()
        [0.5, -1.0]
    """

    _state_spec = {"momentum_buffer": "tensor"}
    _step_is_atomic = True     # checks pass before the first write (Optimizer._check_step)

    def __init__(self, params, lr=required, momentum=0.0, dampening=0.0,
                 nesterov=False, weight_decay=0.0):
        defaults = dict(lr=lr, momentum=momentum, dampening=dampening,
                        nesterov=nesterov, weight_decay=weight_decay)
        super().__init__(params, defaults)

    def _check_group(self, group):
        group["lr"] = check_number("SGD", "lr", group["lr"])
        group["momentum"] = check_number("SGD", "momentum", group["momentum"])
        group["dampening"] = check_number("SGD", "dampening", group["dampening"])
        group["weight_decay"] = check_number("SGD", "weight_decay", group["weight_decay"])
        group["nesterov"] = bool(group["nesterov"])
        if group["nesterov"] and (group["momentum"] <= 0 or group["dampening"] != 0):
            raise ValueError(f"SGD: nesterov momentum requires momentum > 0 and dampening "
                             f"= 0, got momentum={group['momentum']}, "
                             f"dampening={group['dampening']}")

    def step(self) -> None:
        """Update every parameter that has a gradient, in place (one step)."""
        for group in self.param_groups:
            lr, momentum = group["lr"], group["momentum"]
            dampening, weight_decay = group["dampening"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad.data
                # BEGIN SOLUTION ch03.1
                if weight_decay != 0:
                    g = g + weight_decay * p.data
                # END SOLUTION
                if momentum != 0:
                    # BEGIN SOLUTION ch03.2
                    state = self.state.setdefault(p, {})
                    buf = state.get("momentum_buffer")
                    if buf is None:
                        buf = g.copy()
                    else:
                        buf *= momentum
                        buf += (1 - dampening) * g
                    state["momentum_buffer"] = buf
                    g = g + momentum * buf if group["nesterov"] else buf
                    # END SOLUTION
                # BEGIN SOLUTION ch03.1
                updates.sub_scaled_(p.data, lr, g)     # p -= lr * g, no temporary
                # END SOLUTION
