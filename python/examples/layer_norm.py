"""Layer normalization over the last dim, written once for every shape:
y = (x - mean) / sqrt(var + eps) * gamma + beta, row by row. Each block of
one warpgroup normalizes ROWS rows; the grid, the output and the vector
shapes come from the arrays the kernel is called with (`mgpu.jit`).

    PYTHONPATH=build/python /usr/bin/python3 python/examples/layer_norm.py --emulate
"""
import argparse
import sys

import numpy as np

import mosaic_gpu as mgpu

ROWS = 64
EPS = 1e-5


def _outputs(x, gamma, beta):
    """One output like `x`; every array f32, gamma and beta one per column."""
    for spec in (x, gamma, beta):
        spec.check_dtype("f32")
    if x.ndim != 2 or gamma.shape != (x.shape[1],) or beta.shape != (x.shape[1],):
        raise ValueError(f"`x` must be a matrix and `gamma`, `beta` hold one value per column "
                         f"of it; got {x}, {gamma}, {beta}")
    return [x]


@mgpu.jit(block=(128, 1, 1), outputs=_outputs,
          grid=lambda x, gamma, beta: (x.tiles(0, ROWS), 1, 1))
def layer_norm(x, gamma, beta, out):
    columns = x.shape[1]
    rows = mgpu.ds(mgpu.block_id("x") * ROWS, ROWS)
    v = mgpu.vector_load(x[rows, :])

    def row_mean(values):
        return mgpu.broadcast_in_dim(values.reduce("add", axis=1) * (1.0 / columns),
                                     v.shape, [0])

    centered = v - row_mean(v)
    scale = mgpu.rsqrt(row_mean(centered * centered) + EPS)
    g = mgpu.broadcast_in_dim(mgpu.vector_load(gamma), v.shape, [1])
    b = mgpu.broadcast_in_dim(mgpu.vector_load(beta), v.shape, [1])
    mgpu.vector_store(centered * scale * g + b, out[rows, :])


def reference(x, gamma, beta):
    x = x.astype(np.float64)
    return (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + EPS) * gamma + beta


SHAPES = [(64, 128), (128, 256), (192, 64)]


def check(shape, backend=None, seed=0):
    """Runs the kernel on random arrays of `shape` and returns the largest
    difference from the float64 reference."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape, dtype=np.float32)
    gamma = rng.standard_normal(shape[1], dtype=np.float32)
    beta = rng.standard_normal(shape[1], dtype=np.float32)
    y = layer_norm(x, gamma, beta, backend=backend)
    return float(np.abs(y - reference(x, gamma, beta)).max())


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--emulate", action="store_true", help="run on the PTX emulator")
    args = parser.parse_args()
    worst = 0.0
    for shape in SHAPES:
        error = check(shape, "emulator" if args.emulate else None)
        print(f"layer_norm {shape}: max |error| {error:.2e}")
        worst = max(worst, error)
    print("PASS" if worst < 1e-4 else "FAIL")
    sys.exit(0 if worst < 1e-4 else 1)
