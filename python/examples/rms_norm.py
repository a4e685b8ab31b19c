"""RMS normalization over the last dim, at any width a multiple of 64:
y = x / sqrt(mean(x^2) + eps) * gamma, row by row, computed in f32 (x, gamma
and y f32 or bf16). Each block of one warpgroup normalizes a tile of
`rows` rows (8, 16, 32 or 64).

A thread holds rows * width / 128 values of a tile. A narrow tile fits in
registers and is read once; a wide one (8 rows of 8,192 f32 are 512 values
a thread, past the 255 registers a thread has) is read in column chunks
twice: the first pass sums the squares chunk by chunk, the second reads
each chunk again and scales it.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/rms_norm.py --emulate
    ... rms_norm.py --emulate --rows 16 --shape 32x4096 --dtype bf16
"""
import functools
import pathlib
import sys
import time

import numpy as np

import mosaic_gpu as mgpu

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import row_kernel_cli  # noqa: E402  (this directory's, found through the line above)

THREADS = 128
ROW_TILES = (8, 16, 32, 64)
EPS = 1e-6
# The most values of x a thread holds at once: a whole tile up to this
# many is kept in registers; past it, each chunk has CHUNK_VALUES per
# thread, and a pass holds two such vectors (the chunk, and the sum of
# squares or gamma), which leaves the rest of the 255 registers to
# addresses and ptxas's scheduling.
WHOLE_TILE_VALUES = 64
CHUNK_VALUES = 32
# Widths, and so chunks, are a multiple of this many columns: the row
# layout of an 8-row tile gives a row 16 lanes of 4 f32 (64 columns), and
# that of a taller tile fewer.
COLUMN_UNIT = 64


def chunk_columns(rows: int, columns: int) -> int:
    """The columns one step of the kernel reads: all of them where the
    tile fits in WHOLE_TILE_VALUES per thread, else the widest multiple of
    COLUMN_UNIT that divides `columns` with at most CHUNK_VALUES per
    thread."""
    if columns % COLUMN_UNIT:
        raise ValueError(f"rows of {columns} columns: the kernel takes a multiple of "
                         f"{COLUMN_UNIT}")
    if rows * columns <= WHOLE_TILE_VALUES * THREADS:
        return columns
    widest = CHUNK_VALUES * THREADS // rows
    return max(chunk for chunk in range(COLUMN_UNIT, widest + 1, COLUMN_UNIT)
               if columns % chunk == 0)


@functools.cache
def rms_norm(rows: int = 16) -> mgpu.GenericKernel:
    """The RMS norm kernel with a row tile of `rows` rows: called as
    `rms_norm(rows)(x, gamma)`, x a (rows * blocks, width) matrix and gamma
    one value per column."""
    if rows not in ROW_TILES:
        raise ValueError(f"`rows` must be one of {ROW_TILES}, got {rows!r}")

    def outputs(x, gamma):
        x.check_dtype("f32", "bf16")
        gamma.check_dtype("f32", "bf16")
        if x.ndim != 2 or gamma.shape != (x.shape[1],):
            raise ValueError(f"`x` must be a matrix and `gamma` hold one value per column "
                             f"of it; got {x}, {gamma}")
        chunk_columns(rows, x.shape[1])
        return [x]

    @mgpu.jit(block=(THREADS, 1, 1), outputs=outputs, name="rms_norm",
              grid=lambda x, gamma: (x.tiles(0, rows), 1, 1))
    def kernel(x, gamma, out):
        columns = x.shape[1]
        chunk = chunk_columns(rows, columns)
        tile = mgpu.ds(mgpu.block_id("x") * rows, rows)

        def load(ref):
            return mgpu.vector_load(ref).astype("f32")

        def store(value, ref):
            mgpu.vector_store(value.astype(out.dtype), ref)

        def rows_of(values):
            return mgpu.broadcast_in_dim(values, (rows, chunk), [0])

        def columns_of(values):
            return mgpu.broadcast_in_dim(values, (rows, chunk), [1])

        def inverse_rms(sum_of_squares):
            return mgpu.rsqrt(sum_of_squares * (1.0 / columns) + EPS)

        if chunk == columns:
            v = load(x[tile, :])
            scale = inverse_rms((v * v).reduce("add", axis=1))
            store(v * rows_of(scale) * columns_of(load(gamma)), out[tile, :])
            return

        # Pass 1: the squares summed elementwise over the chunks, reduced
        # across the row once after the last.
        squares = mgpu.range(0, columns, chunk, carry=mgpu.constant(0.0, "f32", (rows, chunk)))
        for start, partial in squares:
            v = load(x[tile, mgpu.ds(start, chunk)])
            squares.carry(partial + v * v)
        scale = rows_of(inverse_rms(squares.results.reduce("add", axis=1)))

        # Pass 2: each chunk read again, scaled and stored.
        for start in mgpu.range(0, columns, chunk):
            part = mgpu.ds(start, chunk)
            store(load(x[tile, part]) * scale * columns_of(load(gamma[part])), out[tile, part])

    return kernel


def reference(x, gamma):
    x = x.astype(np.float64)
    return x / np.sqrt((x * x).mean(1, keepdims=True) + EPS) * gamma.astype(np.float64)


def relative_error(y, expected):
    """The largest difference from `expected`, relative to the largest
    magnitude of its row."""
    y, expected = y.astype(np.float64), expected.astype(np.float64)
    scale = np.maximum(np.abs(expected).max(1, keepdims=True), np.finfo(np.float64).tiny)
    return float((np.abs(y - expected) / scale).max())


# The largest relative error each dtype passes with: f32's from its
# rounding and the hardware's rsqrt, bf16's from rounding the output.
TOLERANCE = {"f32": 1e-5, "bf16": 2.0 ** -7}

# (rows, shape) checked by default: every row tile, narrow and wide rows.
CHECKS = [(8, (16, 1024)), (16, (32, 4096)), (32, (64, 8192)), (64, (128, 128)),
          (64, (128, 512))]


def check(rows, shape, dtype="f32", backend=None, seed=0):
    """Runs the kernel with a tile of `rows` rows on random arrays of
    `shape` and `dtype` and returns its relative error (relative_error)
    from the float64 reference."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(getattr(mgpu, dtype).numpy)
    gamma = rng.standard_normal(shape[1]).astype(getattr(mgpu, dtype).numpy)
    y = rms_norm(rows)(x, gamma, backend=backend)
    return relative_error(y, reference(x, gamma))


# Every row tile at these widths is compiled by `--compile-report` (and,
# some of them, by the tests), which must show no spills and no stack.
SHIPPED_WIDTHS = (128, 256, 512, 1024, 2048, 4096, 8192)


def compile_report(rows, width, dtype="f32"):
    """Builds and compiles the kernel with a tile of `rows` rows for
    `width` columns and returns ptxas's figures (registers, spill_stores,
    spill_loads, stack_frame_bytes) with `seconds`, the time it took."""
    started = time.perf_counter()
    compiled = rms_norm(rows).specialize(*[((2 * rows, width), dtype), ((width,), dtype)]).compile(
        line_info=False)
    return dict(compiled.manifest["ptxas"], seconds=time.perf_counter() - started)


if __name__ == "__main__":
    sys.exit(row_kernel_cli.main(
        "rms_norm", __doc__, check=check, compile_report=compile_report, checks=CHECKS,
        row_tiles=ROW_TILES, tolerance=TOLERANCE, shipped_widths=SHIPPED_WIDTHS))
