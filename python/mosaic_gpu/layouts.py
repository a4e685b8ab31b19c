"""Register layouts and shared-memory transforms as Python objects.

Each object knows its MLIR attribute text (``str(obj)``), which the kernel
builder parses; the C++ layout algebra stays the only one.
"""

__all__ = [
    "Layout",
    "Splat",
    "Strided",
    "TiledLayout",
    "WGMMA",
    "WGMMA_ROW",
    "Tile",
    "Swizzle",
]


class Layout:
    """A register layout; ``str(layout)`` is its attribute text."""

    def attribute(self, shape):
        """The attribute for a vector of ``shape``."""
        raise NotImplementedError

    def __repr__(self):
        return f"{type(self).__name__}({self._args()})"


class TiledLayout(Layout):
    """``#mosaic_gpu.TiledLayout<tiling, warp_dims, lane_dims, vector_dim>``.

    ``tiling`` is a list of tiles (tuples); a lane or warp dimension is an
    int or ``("replicated", times)``.
    """

    def __init__(self, tiling, warp_dims, lane_dims, vector_dim):
        self.tiling = [tuple(tile) for tile in tiling]
        self.warp_dims = list(warp_dims)
        self.lane_dims = list(lane_dims)
        self.vector_dim = vector_dim

    @staticmethod
    def _dim(dim):
        if isinstance(dim, tuple):
            return f"#mosaic_gpu.Replicated<times = {dim[1]}>"
        return str(dim)

    def attribute(self, shape=None):
        tiles = ", ".join("[" + ", ".join(map(str, t)) + "]" for t in self.tiling)
        warps = ", ".join(map(self._dim, self.warp_dims))
        lanes = ", ".join(map(self._dim, self.lane_dims))
        return (f"#mosaic_gpu.TiledLayout<[{tiles}], warp_dims = [{warps}], "
                f"lane_dims = [{lanes}], vector_dim = {self.vector_dim}>")

    def _args(self):
        return f"{self.tiling}, {self.warp_dims}, {self.lane_dims}, {self.vector_dim}"

    def __eq__(self, other):
        return isinstance(other, TiledLayout) and self.attribute() == other.attribute()

    def __hash__(self):
        return hash(self.attribute())


class Strided(Layout):
    """``#mosaic_gpu.WGStridedFragLayout<shape, vector_size>``: each thread
    holds ``vector_size`` consecutive elements, threads in turn."""

    def __init__(self, vector_size):
        self.vector_size = vector_size

    def attribute(self, shape):
        return (f"#mosaic_gpu.WGStridedFragLayout<[{', '.join(map(str, shape))}], "
                f"{self.vector_size}>")

    def _args(self):
        return str(self.vector_size)


class _Splat(Layout):
    """``#mosaic_gpu.WGSplatFragLayout<shape>``: every thread holds the one
    value."""

    def attribute(self, shape):
        return f"#mosaic_gpu.WGSplatFragLayout<[{', '.join(map(str, shape))}]>"

    def __repr__(self):
        return "Splat"


Splat = _Splat()
# The wgmma accumulator layout and its row reduction (the dialect's #wgmma and
# #wgmma_row aliases; lib/LayoutInference's wgmmaLayout and wgmmaRowLayout).
WGMMA = TiledLayout([(64, 8), (16, 8), (8, 8), (2,)], [-7], [-3, -2], -1)
WGMMA_ROW = TiledLayout([(64,), (16,), (8,), (1,)], [-4],
                        [-2, ("replicated", 4)], -1)


class Transform:
    """A shared-memory transform; ``str(transform)`` is its attribute text."""

    def __repr__(self):
        return str(self)


class Tile(Transform):
    """``#mosaic_gpu.tile<[...]>``: tiles the minor dimensions."""

    def __init__(self, tile):
        self.tile = tuple(tile)
        if not self.tile or not all(isinstance(t, int) and t > 0 for t in self.tile):
            raise ValueError(f"tile sizes must be positive ints, got {tile!r}")

    def __str__(self):
        return f"#mosaic_gpu.tile<[{', '.join(map(str, self.tile))}]>"


class Swizzle(Transform):
    """``#mosaic_gpu.swizzle<k{n}ByteSwizzle>``, n in 32, 64, 128."""

    def __init__(self, bytes):
        if bytes not in (32, 64, 128):
            raise ValueError(f"swizzle must be 32, 64 or 128 bytes, got {bytes!r}")
        self.bytes = bytes

    def __str__(self):
        return f"#mosaic_gpu.swizzle<k{self.bytes}ByteSwizzle>"

