"""``python -m tools.figures [NN ...]``: draw every chapter's figures (or those chapters')."""
from __future__ import annotations

import importlib
import pkgutil
import sys

import tools.figures as package


def main(argv: list[str]) -> int:
    wanted = {a.zfill(2) for a in argv}
    names = sorted(m.name for m in pkgutil.iter_modules(package.__path__) if m.name.startswith("ch"))
    for name in names:
        if wanted and name[2:].split("_")[0] not in wanted:      # ch12 and ch12_quant: 12
            continue
        for path in importlib.import_module(f"tools.figures.{name}").draw_all():
            print(path.relative_to(package.ROOT))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
