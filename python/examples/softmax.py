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

import numpy as np

import mosaic_gpu as mgpu

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import row_kernels  # noqa: E402  (this directory's, found through the line above)
from row_kernels import (ROW_TILES, THREADS, chunk_columns, ptxas_report,  # noqa: E402
                         relative_error)

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


LOG2E = 1.4426950408889634


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


def compile_report(rows, width, dtype="f32"):
    """ptxas's figures for the kernel with a tile of `rows` rows for
    `width` columns (row_kernels.ptxas_report)."""
    return ptxas_report(row_softmax(rows), [((2 * rows, width), dtype)])


if __name__ == "__main__":
    sys.exit(row_kernels.main("row_softmax", __doc__, check, compile_report))
