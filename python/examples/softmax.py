"""Row softmax, twice: `softmax`, a 4096x128 f32 matrix with each warpgroup
normalizing 64 rows (examples/softmax.mlir in Python, op for op), and
`row_softmax(rows)`, the same for a row tile of 8, 16, 32 or 64 rows and
any width a multiple of 64, computed in f32 (x and y f32 or bf16).

A thread holds rows * width / 128 values of a tile. A narrow tile fits in
registers and is read once; a wide one is read in column chunks twice: the
first pass keeps each row's running max and its sum of exp(x - max),
rescaling the sum when the max grows; the second reads each chunk again
and writes exp(x - max) / sum.

Every exp(x - max) is 2^(x log2(e) - max log2(e)): one FFMA and one ex2
an element, where `mgpu.exp` is the ten instructions of an exp accurate
for any argument. Maxima are kept times log2(e), rounded once: the
rounding then scales a whole row by one factor, which the division by its
sum cancels.

    PYTHONPATH=build/python /usr/bin/python3 python/examples/softmax.py --emulate
    ... softmax.py --emulate --rows 16 --shape 32x4096 --dtype bf16
"""
import functools
import pathlib
import sys
import time

import numpy as np

import mosaic_gpu as mgpu

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import row_kernel_cli  # noqa: E402  (this directory's, found through the line above)

ROWS, COLS, BLOCK_ROWS = 4096, 128, 64


@mgpu.kernel(grid=(ROWS // BLOCK_ROWS, 1, 1), block=(128, 1, 1),
             inputs=[((ROWS, COLS), "f32")], outputs=[((ROWS, COLS), "f32")])
def softmax(x, out):
    rows = mgpu.ds(mgpu.block_id("x") * BLOCK_ROWS, BLOCK_ROWS)
    v = mgpu.vector_load(x[rows, :])
    row_max = v.reduce("max", axis=1)
    e = mgpu.exp(v - mgpu.broadcast_in_dim(row_max, v.shape, [0]))
    row_sum = e.reduce("add", axis=1)
    mgpu.vector_store(e / mgpu.broadcast_in_dim(row_sum, v.shape, [0]), out[rows, :])


THREADS = 128
LOG2E = 1.4426950408889634
ROW_TILES = (8, 16, 32, 64)
# The most values of x a thread holds at once: a whole tile up to this
# many is kept in registers (with its exponentials, twice that); past it,
# each chunk has CHUNK_VALUES per thread, and a pass holds the chunk and
# its exponentials, which leaves the rest of the 255 registers to
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
def row_softmax(rows: int = 16) -> mgpu.GenericKernel:
    """The softmax kernel with a row tile of `rows` rows: called as
    `row_softmax(rows)(x)`, x a (rows * blocks, width) matrix."""
    if rows not in ROW_TILES:
        raise ValueError(f"`rows` must be one of {ROW_TILES}, got {rows!r}")

    def outputs(x):
        x.check_dtype("f32", "bf16")
        if x.ndim != 2:
            raise ValueError(f"`x` must be a matrix; got {x}")
        chunk_columns(rows, x.shape[1])
        return [x]

    @mgpu.jit(block=(THREADS, 1, 1), outputs=outputs, name="row_softmax",
              grid=lambda x: (x.tiles(0, rows), 1, 1))
    def kernel(x, out):
        columns = x.shape[1]
        chunk = chunk_columns(rows, columns)
        tile = mgpu.ds(mgpu.block_id("x") * rows, rows)

        def load(ref):
            return mgpu.vector_load(ref).astype("f32")

        def store(value, ref):
            mgpu.vector_store(value.astype(out.dtype), ref)

        def rows_of(values):
            return mgpu.broadcast_in_dim(values, (rows, chunk), [0])

        def scaled_max(v):
            """Each row's max times log2(e)."""
            return v.reduce("max", axis=1) * LOG2E

        def exp_below(v, top):
            """exp(v - max) for `top`, the rows' scaled_max."""
            return mgpu.exp2(mgpu.fma(v, LOG2E, -rows_of(top)))

        if chunk == columns:
            v = load(x[tile, :])
            e = exp_below(v, scaled_max(v))
            store(e * rows_of(1.0 / e.reduce("add", axis=1)), out[tile, :])
            return

        # Pass 1: each row's running scaled max and sum of exp(x - max). A
        # chunk that raises the max scales the sum so far by exp(old - new);
        # the first chunk's does so from -inf, scaling the empty sum by 0.
        stats = mgpu.range(0, columns, chunk,
                           carry=(mgpu.constant(float("-inf"), "f32", (rows,)),
                                  mgpu.constant(0.0, "f32", (rows,))))
        for start, top, total in stats:
            v = load(x[tile, mgpu.ds(start, chunk)])
            new_top = mgpu.maximum(top, scaled_max(v))
            chunk_sum = exp_below(v, new_top).reduce("add", axis=1)
            stats.carry(new_top, total * mgpu.exp2(top - new_top) + chunk_sum)
        top, total = stats.results
        scale = rows_of(1.0 / total)

        # Pass 2: each chunk read again and normalized.
        for start in mgpu.range(0, columns, chunk):
            part = mgpu.ds(start, chunk)
            store(exp_below(load(x[tile, part]), top) * scale, out[tile, part])

    return kernel


def reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def relative_error(y, expected):
    """The largest difference from `expected`, relative to the largest
    magnitude of its row."""
    y, expected = y.astype(np.float64), expected.astype(np.float64)
    scale = np.maximum(np.abs(expected).max(1, keepdims=True), np.finfo(np.float64).tiny)
    return float((np.abs(y - expected) / scale).max())


# The largest relative error each dtype passes with: f32's from its
# rounding and the hardware's ex2, bf16's from rounding the output.
TOLERANCE = {"f32": 1e-5, "bf16": 2.0 ** -7}

# (rows, shape) checked by default: every row tile, narrow and wide rows.
CHECKS = [(8, (16, 1024)), (16, (32, 4096)), (32, (64, 8192)), (64, (128, 128)),
          (64, (128, 512))]


def check(rows, shape, dtype="f32", backend=None, seed=0):
    """Runs the kernel with a tile of `rows` rows on random arrays of
    `shape` and `dtype` and returns its relative error (relative_error)
    from the float64 reference. Rows are shifted by up to 200, past where
    exp overflows f32, which only subtracting the row's max survives."""
    rng = np.random.default_rng(seed)
    x = 4 * rng.standard_normal(shape) + rng.uniform(-200, 200, (shape[0], 1))
    x = x.astype(getattr(mgpu, dtype).numpy)
    y = row_softmax(rows)(x, backend=backend)
    return relative_error(y, reference(x))


# Every row tile at these widths is compiled by `--compile-report` (and,
# some of them, by the tests), which must show no spills and no stack.
SHIPPED_WIDTHS = (128, 256, 512, 1024, 2048, 4096, 8192)


def compile_report(rows, width, dtype="f32"):
    """Builds and compiles the kernel with a tile of `rows` rows for
    `width` columns and returns ptxas's figures (registers, spill_stores,
    spill_loads, stack_frame_bytes) with `seconds`, the time it took."""
    started = time.perf_counter()
    compiled = row_softmax(rows).specialize(*[((2 * rows, width), dtype)]).compile(
        line_info=False)
    return dict(compiled.manifest["ptxas"], seconds=time.perf_counter() - started)


if __name__ == "__main__":
    sys.exit(row_kernel_cli.main(
        "row_softmax", __doc__, check=check, compile_report=compile_report, checks=CHECKS,
        row_tiles=ROW_TILES, tolerance=TOLERANCE, shipped_widths=SHIPPED_WIDTHS))
