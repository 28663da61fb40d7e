"""``python -m minigrad verify`` and ``python -m minigrad train`` (see :mod:`minigrad.cli`)."""
from .cli import main

if __name__ == "__main__":
    raise SystemExit(main())
