"""Adam (Kingma & Ba, 2015) and AdamW (Loshchilov & Hutter, 2019)."""
from __future__ import annotations

import math

from .. import backend
from . import updates
from .checks import check_number
from .optimizer import Optimizer


class Adam(Optimizer):
    """Adam, PyTorch's ``torch.optim.Adam`` update rule.

    For each parameter p with gradient g, at step t (t = 1, 2, ...; the step
    count is kept per parameter in ``state[p]["step"]``)::

        g   <- g + weight_decay * p              (L2 penalty added to the gradient)
        m_t  = beta1 * m_{t-1} + (1 - beta1) * g          (first moment, m_0 = 0)
        v_t  = beta2 * v_{t-1} + (1 - beta2) * g * g      (second moment, v_0 = 0)
        p   <- p - lr / (1 - beta1**t) * m_t / (sqrt(v_t) / sqrt(1 - beta2**t) + eps)

    Source: Kingma & Ba, "Adam: A Method for Stochastic Optimization", ICLR
    2015, Algorithm 1, with eps added outside the square root after bias
    correction, as PyTorch does.  At t = 1 the bias-corrected moments are g and
    ``g*g``, so the first step moves each weight by ``lr * g / (|g| + eps)``,
    that is ``lr * sign(g)`` when ``|g| >> eps``.  Parameters whose ``.grad`` is None are skipped.

    float16 and bfloat16 parameters are updated in float32, and their moments
    are kept in float32 (``updates.in_opmath``, as PyTorch's fused Adam):
    ``eps = 1e-8`` is 0 in float16, where a zero gradient would give 0/0.

    Args:
        params: Tensors or parameter groups (see :class:`Optimizer`).
        lr: learning rate, >= 0 (default 1e-3).
        betas: (beta1, beta2), each in [0, 1) (default (0.9, 0.999)).
        eps: added to the denominator, >= 0 (default 1e-8).
        weight_decay: L2 coefficient, >= 0 (default 0).

    Raises:
        TypeError / ValueError: a hyperparameter is not a number or out of range.
    """

    decoupled_weight_decay = False
    _state_spec = {"step": "count", "exp_avg": "tensor", "exp_avg_sq": "tensor"}
    _step_is_atomic = True     # checks pass before the first write (Optimizer._check_step)
    _state_dtype = staticmethod(updates.opmath_dtype)    # float16 params: float32 moments

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
        super().__init__(params, defaults)

    def _check_group(self, group):
        name = type(self).__name__
        group["lr"] = check_number(name, "lr", group["lr"])
        group["eps"] = check_number(name, "eps", group["eps"])
        group["weight_decay"] = check_number(name, "weight_decay", group["weight_decay"])
        betas = group["betas"]
        if not isinstance(betas, (tuple, list)) or len(betas) != 2:
            raise TypeError(f"{name}: betas must be a pair (beta1, beta2), got {betas!r}")
        group["betas"] = (check_number(name, "betas[0]", betas[0], high=1.0),
                          check_number(name, "betas[1]", betas[1], high=1.0))

    def step(self) -> None:
        """Update every parameter that has a gradient, in place (one step)."""
        for group in self.param_groups:
            lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                with updates.in_opmath(p) as (data, g):     # float16: in float32
                    self._update(p, data, g, lr, beta1, beta2, eps, weight_decay)

    def _update(self, p, data, g, lr, beta1, beta2, eps, weight_decay) -> None:
        """One parameter's step on ``data`` (``p.data``, or its float32 copy)."""
        xp = backend.get_array_module(data)
        state = self.state.setdefault(p, {})
        if not state:                               # the first step: m_0 = v_0 = 0
            state.update(step=0, exp_avg=xp.zeros_like(data), exp_avg_sq=xp.zeros_like(data))
        state["step"] = t = state["step"] + 1
        if weight_decay != 0 and self.decoupled_weight_decay:
            # BEGIN SOLUTION ch03.4
            data *= 1 - lr * weight_decay           # AdamW: shrink the weights
            # END SOLUTION
        elif weight_decay != 0:
            g = g + weight_decay * data             # Adam: L2 in the gradient
        # BEGIN SOLUTION ch03.3
        m, v = state["exp_avg"], state["exp_avg_sq"]
        bias_correction1 = 1 - beta1 ** t
        bias_correction2_sqrt = math.sqrt(1 - beta2 ** t)
        step_size = lr / bias_correction1
        if updates.fused_on_gpu(data, g):           # the lines below, one GPU kernel
            return updates.adam_update_gpu(data, m, v, g, beta1, beta2, step_size,
                                           bias_correction2_sqrt, eps)
        for data, m, v, g in updates.cache_blocks(data, m, v, g):   # views, in cache
            m += (1 - beta1) * (g - m)                  # = beta1*m + (1-beta1)*g
            v *= beta2
            v += (1 - beta2) * (g * g)
            denom = xp.sqrt(v) / bias_correction2_sqrt + eps
            data -= step_size * m / denom
        # END SOLUTION


class AdamW(Adam):
    """AdamW: Adam with *decoupled* weight decay, PyTorch's ``torch.optim.AdamW``.

    Instead of adding ``weight_decay * p`` to the gradient (where Adam's
    normalization would rescale it), each step first shrinks the weights::

        p <- p * (1 - lr * weight_decay)

    and then takes the Adam step above with the raw gradient.  Source:
    Loshchilov & Hutter, "Decoupled Weight Decay Regularization", ICLR 2019,
    Algorithm 2 (with the schedule multiplier folded into lr, as PyTorch does).

    Args: as :class:`Adam`, but ``weight_decay`` defaults to 0.01.
    """

    decoupled_weight_decay = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
