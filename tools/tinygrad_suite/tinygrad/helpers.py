"""The few helpers tinygrad's operator suite imports."""
import contextlib
import os


def getenv(key, default=0):
    return type(default)(os.getenv(key, default))


DEBUG = 0
IMAGE = 0


class _Dev:
    interface = "CPU"
    renderer = "CPU"
    device = "CPU"


DEV = _Dev()


@contextlib.contextmanager
def Context(**kwargs):  # noqa: N802
    yield
