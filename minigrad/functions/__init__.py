"""Differentiable functions, one family per file.

Each class is a :class:`minigrad.autograd.Function`: ``forward`` and ``backward``
on raw arrays.  Tensor methods and ``minigrad.nn.functional`` call them.
"""
