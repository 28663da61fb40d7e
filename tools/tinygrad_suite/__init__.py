"""tinygrad's operator suite run against minigrad (see run.py)."""
