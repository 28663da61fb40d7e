"""Placeholder for tinygrad.renderer."""
