"""einsum: products of several tensors summed over named indices
(``torch.einsum``), with its gradient.

The equation names each operand's dimensions by letters, ``"ij,jk->ik"``
for a matrix product.  A letter in two operands multiplies along it; a
letter missing from the output is summed; a letter repeated in one operand
takes a diagonal (``"ii->i"``).  ``...`` stands for the dimensions not
named (broadcast like NumPy); without ``->`` the output is ``...`` then the
letters used once, in alphabetical order.

The gradient with respect to operand k is again an einsum: the upstream
gradient (with the output's letters) times every other operand, summed to
operand k's letters.  Two cases need care: a letter only operand k has (it
was summed away, so its gradient is broadcast along it), and a letter
repeated in operand k (the gradient lands on that diagonal, zeros elsewhere).
"""
from __future__ import annotations

import string

import numpy as np

from ..autograd import Function, unbroadcast
from ..backend import get_array_module


def parse_equation(equation, shapes):
    """``(inputs, output)``: the letters of each operand and of the output,
    with ``...`` replaced by letters of their own.  Checks the equation
    against the operands' shapes; raises ValueError naming what disagrees."""
    if not isinstance(equation, str):
        raise TypeError(f"einsum: equation must be a string, got {type(equation).__name__}")
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise ValueError(f"einsum: the equation {equation!r} names {len(terms)} operands "
                         f"but {len(shapes)} were given")
    for term in terms + ([rhs] if arrow else []):
        bad = set(term.replace("...", "")) - set(string.ascii_letters)
        if bad or term.count("...") > 1:
            raise ValueError(f"einsum: invalid subscripts {term!r} in {equation!r}; use "
                             "letters and at most one '...' per operand")
    spare = [c for c in string.ascii_letters if c not in eq]
    ellipsis_dims = 0
    inputs = []
    for k, (term, shape) in enumerate(zip(terms, shapes)):
        named = len(term.replace("...", ""))
        if "..." not in term and named != len(shape):
            raise ValueError(f"einsum: operand {k} has {len(shape)} dimensions but the "
                             f"subscripts {term!r} name {named} (and there is no '...')")
        if "..." in term:
            extra = len(shape) - named
            if extra < 0:
                raise ValueError(f"einsum: operand {k} has {len(shape)} dimensions, fewer "
                                 f"than the {named} its subscripts {term!r} name")
            ellipsis_dims = max(ellipsis_dims, extra)
            term = term.replace("...", "".join(_ellipsis(spare, extra)))
        inputs.append(term)
    dots = "".join(_ellipsis(spare, ellipsis_dims)) if ellipsis_dims else ""
    if arrow:
        output = rhs.replace("...", dots)
        if len(set(output)) != len(output):
            raise ValueError(f"einsum: output subscripts {rhs!r} repeat a letter")
        missing = set(output) - set("".join(inputs))
        if missing:
            raise ValueError(f"einsum: output letter {sorted(missing)[0]!r} does not occur "
                             f"in any operand of {equation!r}")
    else:
        letters = "".join(t.replace("...", "") for t in terms)
        output = dots + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return inputs, output


def _ellipsis(spare, count):
    """The letters standing for the last ``count`` dimensions of ``...``
    (right-aligned, as broadcasting aligns them)."""
    return spare[len(spare) - count:] if count else []


def letter_sizes(inputs, shapes):
    """{letter: size}: size-1 dimensions broadcast against others; any other
    disagreement raises ValueError."""
    sizes = {}
    for k, (term, shape) in enumerate(zip(inputs, shapes)):
        for letter, n in zip(term, shape):
            old = sizes.get(letter, 1)
            if n != old and 1 not in (n, old):
                raise ValueError(f"einsum: dimension {letter!r} of operand {k} has size "
                                 f"{n}, but an earlier one has size {old}")
            sizes[letter] = max(n, old) if 0 not in (n, old) else 0
    return sizes


class Einsum(Function):
    """``einsum(equation, *operands)`` on arrays of one dtype."""

    def __init__(self, equation):
        self.equation = equation

    def forward(self, *arrays):
        xp = get_array_module(arrays[0])
        if len({a.dtype for a in arrays}) > 1:
            raise TypeError(f"einsum: expected operands of one dtype, got "
                            f"{', '.join(str(a.dtype) for a in arrays)}; convert with .to()")
        self.terms, self.output = parse_equation(self.equation, [a.shape for a in arrays])
        self.sizes = letter_sizes(self.terms, [a.shape for a in arrays])
        self.shapes = [a.shape for a in arrays]
        # size-1 dimensions broadcast: stretch them, and sum back in backward
        self.arrays = [xp.broadcast_to(a, [self.sizes[c] for c in term])
                       for a, term in zip(arrays, self.terms)]
        spec = ",".join(self.terms) + "->" + self.output
        out = xp.einsum(spec, *self.arrays, optimize=len(arrays) > 2)
        return xp.asarray(out, dtype=arrays[0].dtype)

    def backward(self, g):
        return tuple(self._grad(k, g) if need else None
                     for k, need in enumerate(self.needs_input_grad))

    def _grad(self, k, g):
        xp = get_array_module(g)
        term = self.terms[k]
        others = [t for j, t in enumerate(self.terms) if j != k]
        unique = "".join(dict.fromkeys(term))            # letters, first occurrence order
        present = set(self.output).union(*others)
        kept = "".join(c for c in unique if c in present)
        spec = ",".join([self.output] + others) + "->" + kept
        grad = xp.einsum(spec, g, *[a for j, a in enumerate(self.arrays) if j != k],
                         optimize=len(self.arrays) > 2)
        # letters only this operand had: the gradient is the same all along them
        grad = grad.reshape([self.sizes[c] if c in kept else 1 for c in unique])
        grad = xp.broadcast_to(grad, [self.sizes[c] for c in unique])
        if len(unique) != len(term):                     # a repeated letter: a diagonal
            full = xp.zeros([self.sizes[c] for c in term], dtype=g.dtype)
            where = tuple(xp.arange(self.sizes[c]).reshape(
                [-1 if u == c else 1 for u in unique]) for c in term)
            full[where] = grad
            grad = full
        return unbroadcast(xp.ascontiguousarray(grad).astype(g.dtype, copy=False),
                           self.shapes[k])
