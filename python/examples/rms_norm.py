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

import numpy as np

import mosaic_gpu as mgpu

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import row_kernels  # noqa: E402  (this directory's, found through the line above)
from row_kernels import (ROW_TILES, THREADS, chunk_columns, ptxas_report,  # noqa: E402
                         relative_error)

EPS = 1e-6


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


def check(rows, shape, dtype="f32", backend=None, seed=0):
    """Runs the kernel with a tile of `rows` rows on random arrays of
    `shape` and `dtype` and returns its relative error (relative_error)
    from the float64 reference."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(getattr(mgpu, dtype).numpy)
    gamma = rng.standard_normal(shape[1]).astype(getattr(mgpu, dtype).numpy)
    y = rms_norm(rows)(x, gamma, backend=backend)
    return relative_error(y, reference(x, gamma))


def compile_report(rows, width, dtype="f32"):
    """ptxas's figures for the kernel with a tile of `rows` rows for
    `width` columns (row_kernels.ptxas_report)."""
    return ptxas_report(rms_norm(rows), [((2 * rows, width), dtype), ((width,), dtype)])


if __name__ == "__main__":
    sys.exit(row_kernels.main("rms_norm", __doc__, check, compile_report))
