"""Register layouts and shared-memory transforms as Python objects.

Each object holds its parameters; the C++ builder makes its attribute from
them (``_mosaic.tiled_layout``, ``tile_transform``, ...), so the C++ layout
algebra and the dialect's printer stay the only ones. ``layout.attribute()``
and ``str(transform)`` print that attribute.
"""

from __future__ import annotations

import functools
from typing import Sequence, Union

from . import _mosaic

__all__ = [
    "Layout",
    "Splat",
    "Strided",
    "TiledLayout",
    "WGMMA",
    "WGMMA_ROW",
    "WGMMA_COLUMN",
    "Tile",
    "Swizzle",
]


@functools.cache
def _printing_context() -> _mosaic.Context:
    """The context attributes are made in to be printed."""
    return _mosaic.Context()


class Layout:
    """A register layout."""

    def _attribute(self, context: _mosaic.Context, shape: Sequence[int] | None) -> _mosaic.Attribute:
        """The attribute for a vector of ``shape``, made in ``context``; an
        invalid one raises MosaicError."""
        raise NotImplementedError

    def attribute(self, shape: Sequence[int] | None = None) -> str:
        """The attribute's MLIR text for a vector of ``shape`` (which a
        TiledLayout does not need), printed by the dialect."""
        return str(self._attribute(_printing_context(), shape))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._args()})"

    def _args(self) -> str:
        raise NotImplementedError


def _shape_of(layout: Layout, shape: Sequence[int] | None) -> list[int]:
    if shape is None:
        raise TypeError(f"{layout!r} needs the vector's shape")
    return list(shape)


# A TiledLayout warp or lane dimension: an index, or ("replicated", times).
PartitionDim = Union[int, tuple[str, int]]


class TiledLayout(Layout):
    """``#mosaic_gpu.TiledLayout<tiling, warp_dims, lane_dims, vector_dim>``.

    ``tiling`` is a list of tiles (tuples); a lane or warp dimension is an
    int or ``("replicated", times)``.
    """

    def __init__(self, tiling: Sequence[Sequence[int]], warp_dims: Sequence[PartitionDim],
                 lane_dims: Sequence[PartitionDim], vector_dim: int) -> None:
        self.tiling = [tuple(tile) for tile in tiling]
        self.warp_dims = [self._check_dim(d) for d in warp_dims]
        self.lane_dims = [self._check_dim(d) for d in lane_dims]
        self.vector_dim = vector_dim

    @staticmethod
    def _check_dim(dim: PartitionDim) -> PartitionDim:
        if isinstance(dim, int) or (isinstance(dim, tuple) and len(dim) == 2
                                    and dim[0] == "replicated" and isinstance(dim[1], int)):
            return dim
        raise TypeError(f"a warp or lane dim must be an int or ('replicated', times), got {dim!r}")

    @staticmethod
    def _dim(dim: PartitionDim) -> int | _mosaic.Replicated:
        return _mosaic.Replicated(dim[1]) if isinstance(dim, tuple) else dim

    def _attribute(self, context: _mosaic.Context, shape: Sequence[int] | None = None) -> _mosaic.Attribute:
        return _mosaic.tiled_layout(context, [list(t) for t in self.tiling],
                                    [self._dim(d) for d in self.warp_dims],
                                    [self._dim(d) for d in self.lane_dims],
                                    self.vector_dim)

    def _args(self) -> str:
        return f"{self.tiling}, {self.warp_dims}, {self.lane_dims}, {self.vector_dim}"

    def _key(self) -> tuple:
        return (tuple(self.tiling), tuple(self.warp_dims), tuple(self.lane_dims), self.vector_dim)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TiledLayout) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


class Strided(Layout):
    """``#mosaic_gpu.WGStridedFragLayout<shape, vector_size>``: each thread
    holds ``vector_size`` consecutive elements, threads in turn."""

    def __init__(self, vector_size: int) -> None:
        self.vector_size = vector_size

    def _attribute(self, context: _mosaic.Context, shape: Sequence[int] | None) -> _mosaic.Attribute:
        return _mosaic.strided_layout(context, _shape_of(self, shape), self.vector_size)

    def _args(self) -> str:
        return str(self.vector_size)


class _Splat(Layout):
    """``#mosaic_gpu.WGSplatFragLayout<shape>``: every thread holds the one
    value."""

    def _attribute(self, context: _mosaic.Context, shape: Sequence[int] | None) -> _mosaic.Attribute:
        return _mosaic.splat_layout(context, _shape_of(self, shape))

    def __repr__(self) -> str:
        return "Splat"


Splat = _Splat()
# The wgmma accumulator layout and its row reduction (the dialect's #wgmma and
# #wgmma_row aliases; lib/LayoutInference's wgmmaLayout and wgmmaRowLayout),
# and the layout of one of its rows.
WGMMA = TiledLayout([(64, 8), (16, 8), (8, 8), (2,)], [-7], [-3, -2], -1)
WGMMA_ROW = TiledLayout([(64,), (16,), (8,), (1,)], [-4],
                        [-2, ("replicated", 4)], -1)
# Its column counterpart: each thread holds the pairs of columns its lane
# holds in every row (a bias per column, broadcast with broadcast_in_dim
# into the accumulator's layout without moving data).
WGMMA_COLUMN = TiledLayout([(8,), (2,)], [("replicated", 4)], [("replicated", 8), -2], -1)


class Transform:
    """A shared-memory transform; ``str(transform)`` is its attribute's MLIR
    text."""

    def _attribute(self, context: _mosaic.Context) -> _mosaic.Attribute:
        raise NotImplementedError

    def __str__(self) -> str:
        return str(self._attribute(_printing_context()))

    def __repr__(self) -> str:
        return str(self)


class Tile(Transform):
    """``#mosaic_gpu.tile<[...]>``: tiles the minor dimensions."""

    def __init__(self, tile: Sequence[int]) -> None:
        self.tile = tuple(tile)
        if not self.tile or not all(isinstance(t, int) and t > 0 for t in self.tile):
            raise ValueError(f"tile sizes must be positive ints, got {tile!r}")

    def _attribute(self, context: _mosaic.Context) -> _mosaic.Attribute:
        return _mosaic.tile_transform(context, list(self.tile))


class Swizzle(Transform):
    """``#mosaic_gpu.swizzle<k{n}ByteSwizzle>``, n in 32, 64, 128."""

    def __init__(self, bytes: int) -> None:
        if bytes not in (32, 64, 128):
            raise ValueError(f"swizzle must be 32, 64 or 128 bytes, got {bytes!r}")
        self.bytes = bytes

    def _attribute(self, context: _mosaic.Context) -> _mosaic.Attribute:
        return _mosaic.swizzle_transform(context, self.bytes)
