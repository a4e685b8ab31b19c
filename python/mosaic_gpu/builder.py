"""The kernel being built, held in an explicit context rather than a global.

``building(builder, shape)`` makes a ``_mosaic.KernelBuilder`` the active
one for the duration of a ``with`` block (in a ContextVar, so that each
thread and asyncio task sees its own); ``current()`` is the builder every
op calls, ``launch_shape()`` the kernel's grid, block and cluster (which
helpers such as the pipeline check), ``location()`` the user's line the op
is located at. Shared argument checks live here too.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import sys
from typing import Any, Iterator, NamedTuple, Sequence

from . import _mosaic

# (file, line, column) as the C++ builder takes it.
SourceLocation = tuple[str, int, int]


class LaunchShape(NamedTuple):
    """The grid, block and cluster of the kernel being built, as the
    decorator was given them ((x, y, z) each)."""
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    cluster: tuple[int, int, int]


_ACTIVE: contextvars.ContextVar[tuple[_mosaic.KernelBuilder, LaunchShape] | None] = \
    contextvars.ContextVar("mosaic_gpu_kernel_builder", default=None)
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


@contextlib.contextmanager
def building(builder: _mosaic.KernelBuilder,
             shape: LaunchShape) -> Iterator[_mosaic.KernelBuilder]:
    """Makes ``builder`` the active kernel builder inside the ``with``
    block, for a kernel launched with ``shape``; raises RuntimeError when a
    kernel is already being built."""
    if _ACTIVE.get() is not None:
        raise RuntimeError("kernels cannot be defined inside kernels")
    token = _ACTIVE.set((builder, shape))
    try:
        yield builder
    finally:
        _ACTIVE.reset(token)


def _active() -> tuple[_mosaic.KernelBuilder, LaunchShape]:
    active = _ACTIVE.get()
    if active is None:
        raise RuntimeError("mosaic_gpu ops can only be called inside a @mosaic_gpu.kernel function")
    return active


def current() -> _mosaic.KernelBuilder:
    """The active kernel builder; RuntimeError outside a kernel."""
    return _active()[0]


def launch_shape() -> LaunchShape:
    """The grid, block and cluster of the kernel being built; RuntimeError
    outside a kernel."""
    return _active()[1]


def location() -> SourceLocation:
    """``(file, line, col)`` of the innermost caller outside this package."""
    frame = sys._getframe(1)
    while frame and os.path.dirname(os.path.abspath(frame.f_code.co_filename)) == _PACKAGE_DIR:
        frame = frame.f_back
    if frame is None:
        return "", 0, 0
    col = 1
    positions = list(frame.f_code.co_positions()) if hasattr(frame.f_code, "co_positions") else []
    if frame.f_lasti // 2 < len(positions) and positions[frame.f_lasti // 2][2] is not None:
        col = positions[frame.f_lasti // 2][2] + 1
    return frame.f_code.co_filename, frame.f_lineno, col


def check_type(value: Any, cls: type | tuple[type, ...], what: str) -> Any:
    """``value``, which must be a ``cls`` (TypeError naming ``what``)."""
    if not isinstance(value, cls):
        name = cls.__name__ if isinstance(cls, type) else " or ".join(c.__name__ for c in cls)
        raise TypeError(f"`{what}` must be a {name}, got {value!r}")
    return value


def check_ints(values: Any, what: str) -> tuple[int, ...]:
    """``values`` as a tuple of ints (TypeError naming ``what``)."""
    if not isinstance(values, (tuple, list)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in values):
        raise TypeError(f"`{what}` must be a tuple of ints, got {values!r}")
    return tuple(values)


def check_shape(shape: Sequence[int], what: str) -> tuple[int, ...]:
    """``shape`` as a non-empty tuple of positive ints."""
    shape = check_ints(shape, what)
    if not shape or any(d <= 0 for d in shape):
        raise ValueError(f"`{what}` must be a non-empty tuple of positive ints, got {shape!r}")
    return shape
