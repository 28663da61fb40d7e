"""Models built from minigrad's layers: a GPT (``minigrad.models.gpt``)."""
from .gpt import GPT, GPTConfig

__all__ = ["GPT", "GPTConfig"]
