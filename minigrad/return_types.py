"""Named tuples returned by the reductions that give values and positions,
as ``torch.return_types``: ``values, indices = x.max(dim=1)``, or
``x.max(dim=1).values``."""
from __future__ import annotations

from collections import namedtuple

max = namedtuple("max", ["values", "indices"])  # noqa: A001 (PyTorch's name)
min = namedtuple("min", ["values", "indices"])  # noqa: A001
sort = namedtuple("sort", ["values", "indices"])
topk = namedtuple("topk", ["values", "indices"])
cummax = namedtuple("cummax", ["values", "indices"])
cummin = namedtuple("cummin", ["values", "indices"])
aminmax = namedtuple("aminmax", ["min", "max"])
