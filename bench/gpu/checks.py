"""Float64 checks of our kernels from the bytes mosaic-run dumped, for bench.py.

mosaic-run checks a kernel against a reference of its own (--check=NAME)
only where it has one: a plain bf16 GEMM, attention, a few examples. The
kernels of the newer tables have none: the two kernels of a split-K GEMM
(the f32 partial tiles, then the fix-up that sums them), the GEMMs with a
fused epilogue (extra inputs, another function) and the FP8 GEMMs (scales).
bench.py runs those with `--check=none --dump-inputs=... --dump-outputs=...`
(mosaic-run still draws fresh random inputs, poisons the outputs, checks
that every output element was written and times the kernel) and checks the
dumped bytes here, with NumPy in float64.

Inputs as mosaic-run draws them: every floating-point input standard
normal, rounded to its element type (fp8 e4m3 too: |x| < 448 with
overwhelming probability, so no NaN encodings; the f32 scales of the FP8
kernels are standard normal as well, some negative or near zero, which the
references below take as they are). Outputs are poisoned with 0xFF bytes
before the run: NaN in every float type.

Each check compares elementwise, the way the examples' own checks do
(python/examples/gemm_ws.py and gemm_fp8.py `check`): |out - ref| <=
2 u |ref| + an accumulation term, u the unit roundoff of the output's type.
A K step missing or counted twice, a wrong scale or a missing bias is off
by far more than that. GEMM outputs are compared at sampled rows (the first
and the last always among them) and checked for NaN everywhere.
"""
from __future__ import annotations

import math
import random
import typing

import numpy as np

# Unit roundoff of each output type: rounding alone may be off by it.
ROUNDOFF = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "f32": 2.0 ** -24}
# The accumulation term for bf16 inputs, relative to the RMS of the
# accumulator (as gemm_ws.py's check): order and f32 rounding over K.
BF16_ACCUMULATION = 2.0 ** -8
# The accumulation term for fp8 inputs, relative to the size of each dot
# product's terms, sqrt(sum_k (a_ik b_jk)^2) (as gemm_fp8.py's check): the
# tensor core adds FP8 products with about 13 bits below the largest.
FP8_ACCUMULATION = 2.0 ** -7
# The K width of one step of gemm_ws.py's bf16 pipeline (128 bytes); the
# split-K units divide the steps, not the elements.
BF16_TILE_K = 64
# The FP8 scale blocks: 1 x 128 of A, 128 x 128 of Bt.
SCALE_BLOCK = 128
# Rows of a GEMM output compared with the float64 reference.
CHECKED_ROWS = 256


class Check(typing.NamedTuple):
    """passed; worst: the largest |out - ref| / allowed (inf with NaN);
    summary: a line for the log and the failure message."""
    passed: bool
    worst: float
    summary: str


def numpy_dtype(element_type: str):
    """The NumPy dtype of a manifest element type (ml_dtypes for bf16 and
    fp8)."""
    import ml_dtypes
    types = {"f32": np.float32, "f16": np.float16, "f64": np.float64,
             "bf16": ml_dtypes.bfloat16, "f8E4M3FN": ml_dtypes.float8_e4m3fn,
             "f8E5M2": ml_dtypes.float8_e5m2, "i8": np.int8, "i16": np.int16,
             "i32": np.int32, "i64": np.int64}
    if element_type not in types:
        raise ValueError(f"no NumPy dtype for element type {element_type!r}")
    return types[element_type]


def split_bytes(data: bytes, buffers) -> list:
    """`data`: the buffers' bytes concatenated in order, as mosaic-run dumps
    them; buffers: (element type, shape) of each. Returns one array each."""
    arrays, offset = [], 0
    for element_type, shape in buffers:
        dtype = np.dtype(numpy_dtype(element_type))
        count = math.prod(shape)
        if offset + count * dtype.itemsize > len(data):
            raise ValueError(f"the dump has {len(data)} bytes, fewer than the buffers "
                             f"{[tuple(s) for _, s in buffers]} need")
        arrays.append(np.frombuffer(data, dtype, count, offset).reshape(shape))
        offset += count * dtype.itemsize
    if offset != len(data):
        raise ValueError(f"the dump has {len(data)} bytes, the buffers {offset}")
    return arrays


def decode_dumps(buffers, outputs, input_bytes: bytes, output_bytes: bytes):
    """buffers: (element type, shape) of each buffer parameter in order;
    outputs: the positions of the output buffers among them. Returns
    (inputs, outputs) as arrays, each in parameter order."""
    outputs = set(outputs)
    ins = [buffer for i, buffer in enumerate(buffers) if i not in outputs]
    outs = [buffer for i, buffer in enumerate(buffers) if i in outputs]
    return split_bytes(input_bytes, ins), split_bytes(output_bytes, outs)


def sample_rows(rows: int, count: int = CHECKED_ROWS, seed: int = 0) -> np.ndarray:
    """Up to `count` sorted row indices, the first and the last among them."""
    if rows <= count:
        return np.arange(rows)
    drawn = random.Random(seed).sample(range(1, rows - 1), count - 2)
    return np.array(sorted({0, rows - 1, *drawn}))


def f64(array) -> np.ndarray:
    return np.asarray(array).astype(np.float64)


def compare(out, ref, allowed, what: str) -> Check:
    """Elementwise: |out - ref| <= allowed; NaN fails."""
    out = f64(out)
    error = np.abs(out - ref)
    bad = ~(error <= allowed)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(error == 0, 0.0, error / allowed)
    worst = math.inf if np.isnan(out).any() else float(np.max(ratios, initial=0.0))
    summary = (f"{what}: max |out - ref| / tolerance {worst:.3g}; {int(bad.sum())} of "
               f"{out.size} compared elements outside it")
    if bad.any():
        first = tuple(int(i) for i in np.argwhere(bad)[0])
        summary += f"; first at {first}: {out[first]:.6g} vs {ref[first]:.6g}"
    return Check(not bad.any(), worst, summary)


def written(out, what: str) -> Check | None:
    """A failed Check when `out` holds NaN (the poison, or a NaN result)."""
    nans = int(np.isnan(f64(out)).sum())
    if nans:
        return Check(False, math.inf, f"{what}: {nans} of {out.size} elements NaN "
                                      "(unwritten: poisoned with 0xFF bytes)")
    return None


def rms(x) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0


def combine(checks) -> Check:
    checks = list(checks)
    return Check(all(c.passed for c in checks), max(c.worst for c in checks),
                 "; ".join(c.summary for c in checks))


# ---------------------------------------------------------------------------
# Split-K: gemm_ws.py --split-k S --reduction deterministic.


def split_ranges(k: int, splits: int, tile_k: int = BF16_TILE_K) -> list:
    """The K range [begin, end) of each split: split s takes K steps
    [s * ceil(steps / S), +ceil(steps / S)) of the ceil(K / tile_k) steps
    (gemm_ws.py's split_steps)."""
    steps = -(-k // tile_k)
    per = -(-steps // splits)
    return [(min(k, s * per * tile_k), min(k, (s + 1) * per * tile_k))
            for s in range(splits)]


def check_split_partials(a, b, workspace, seed: int = 0) -> Check:
    """gemm_ws_split_k: workspace (S, M, N) f32, split s holding A[:, ks] *
    B[ks, :] over its K range ks."""
    splits = workspace.shape[0]
    failed = written(workspace, "partials")
    if failed:
        return failed
    rows = sample_rows(a.shape[0], seed=seed)
    a_rows, b64 = f64(a[rows]), f64(b)
    checks = []
    for s, (begin, end) in enumerate(split_ranges(a.shape[1], splits)):
        ref = a_rows[:, begin:end] @ b64[begin:end]
        allowed = 2 * ROUNDOFF["f32"] * np.abs(ref) + BF16_ACCUMULATION * rms(ref)
        checks.append(compare(workspace[s][rows], ref, allowed, f"partial {s} (K {begin}:{end})"))
    worst = max(checks, key=lambda c: c.worst)
    passed = all(c.passed for c in checks)
    return Check(passed, worst.worst, f"{splits} partials; worst: {worst.summary}"
                 if passed else "; ".join(c.summary for c in checks if not c.passed))


def check_fixup(workspace, c) -> Check:
    """gemm_ws_split_k_fixup: C = bf16(sum over s of workspace[s]), all of C.
    The f32 sum of S terms may be off by S units of each term's rounding."""
    failed = written(c, "C")
    if failed:
        return failed
    w = f64(workspace)
    ref = w.sum(axis=0)
    allowed = (2 * ROUNDOFF["bf16"] * np.abs(ref)
               + w.shape[0] * 2 * ROUNDOFF["f32"] * np.abs(w).sum(axis=0))
    return compare(c, ref, allowed, "C")


# ---------------------------------------------------------------------------
# Fused epilogues: gemm_ws.py --epilogue NAME.


def gelu_tanh(x):
    """GELU, tanh form (PyTorch's approximate='tanh')."""
    return 0.5 * x * (1 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))


class EpilogueReference(typing.NamedTuple):
    """An epilogue of gemm_ws.py's EPILOGUES, in float64: its inputs after A
    and B (row vectors (M,), column vectors (N,), an (M, N) residual) and
    `function(acc, rows, column_vectors, row_vectors, residual)` over the
    sampled rows. bench/gpu runs without mosaic_gpu, so these restate
    gemm_ws.py's references; test_bench.py compares the two where
    mosaic_gpu can be imported."""
    row_vectors: int
    column_vectors: int
    residual: bool
    function: typing.Callable
    out: str = "bf16"


EPILOGUE_REFERENCES = {
    # nn.Linear + GELU: a bias per column, then the tanh GELU.
    "bias_gelu_tanh": EpilogueReference(
        0, 1, False, lambda acc, rows, cols, row_vecs, residual: gelu_tanh(acc + cols[0])),
    # A skip connection added to the product.
    "residual": EpilogueReference(
        0, 0, True, lambda acc, rows, cols, row_vecs, residual: acc + residual),
}


def check_epilogue(name: str, a, b, extras, c, seed: int = 0) -> Check:
    """gemm_ws with the fused epilogue `name`: C = f(A * B, extras), B K x N.
    The accumulation term scales with the accumulator's RMS, before the
    epilogue (as gemm_ws.py's check)."""
    epilogue = EPILOGUE_REFERENCES[name]
    expected = epilogue.row_vectors + epilogue.column_vectors + int(epilogue.residual)
    if len(extras) != expected:
        raise ValueError(f"epilogue {name} takes {expected} inputs after A and B, "
                         f"got {len(extras)}")
    failed = written(c, "C")
    if failed:
        return failed
    rows = sample_rows(a.shape[0], seed=seed)
    acc = f64(a[rows]) @ f64(b)
    row_vecs = [f64(v)[rows][:, None] for v in extras[:epilogue.row_vectors]]
    cols = [f64(v)[None, :] for v in
            extras[epilogue.row_vectors:epilogue.row_vectors + epilogue.column_vectors]]
    residual = f64(extras[-1][rows]) if epilogue.residual else None
    ref = epilogue.function(acc, rows, cols, row_vecs, residual)
    allowed = 2 * ROUNDOFF[epilogue.out] * np.abs(ref) + BF16_ACCUMULATION * rms(acc)
    return compare(c[rows], ref, allowed, f"C ({name})")


# ---------------------------------------------------------------------------
# FP8: gemm_fp8.py --scaling tensor|row|block.

FP8_SCALINGS = ("tensor", "row", "block")


def scale_blocks(size: int) -> int:
    return -(-size // SCALE_BLOCK)


def fp8_scale_shapes(scaling: str, m: int, n: int, k: int):
    """The shapes of A's and Bt's scale arrays as gemm_fp8.py's kernel takes
    them: tensor (1,), (1,); row (M,), (N,); block flattened: A's
    (ceil(K/128), M) K-block-major matrix, Bt's (ceil(N/128), ceil(K/128))
    row-major one."""
    if scaling == "tensor":
        return (1,), (1,)
    if scaling == "row":
        return (m,), (n,)
    if scaling == "block":
        return (scale_blocks(k) * m,), (scale_blocks(n) * scale_blocks(k),)
    raise ValueError(f"scaling must be one of {', '.join(FP8_SCALINGS)}, got {scaling!r}")


def dequantize_fp8(scaling: str, a, bt, a_scales, b_scales, rows):
    """(A[rows] and Bt) times their scales, in float64, from the kernel's
    scale layouts (fp8_scale_shapes)."""
    (m, k), n = a.shape, bt.shape[0]
    want = fp8_scale_shapes(scaling, m, n, k)
    if (tuple(a_scales.shape), tuple(b_scales.shape)) != want:
        raise ValueError(f"{scaling} scaling of {m}x{n}x{k} takes scales of shapes {want}, "
                         f"got {a_scales.shape} and {b_scales.shape}")
    sa, sb = f64(a_scales), f64(b_scales)
    a64, b64 = f64(a[rows]), f64(bt)
    if scaling == "tensor":
        return a64 * sa[0], b64 * sb[0]
    if scaling == "row":
        return a64 * sa[rows][:, None], b64 * sb[:, None]
    kb, nb = scale_blocks(k), scale_blocks(n)
    a_blocks = sa.reshape(kb, m).T[rows]  # (rows, K blocks)
    b_blocks = sb.reshape(nb, kb)
    a_expanded = np.repeat(a_blocks, SCALE_BLOCK, axis=1)[:, :k]
    b_expanded = np.repeat(np.repeat(b_blocks, SCALE_BLOCK, axis=0), SCALE_BLOCK, axis=1)
    return a64 * a_expanded, b64 * b_expanded[:n, :k]


def check_fp8(scaling: str, a, bt, a_scales, b_scales, c, out: str = "bf16",
              seed: int = 0) -> Check:
    """gemm_fp8: C = dequant(A) dequant(Bt)^T. Tolerance per element (as
    gemm_fp8.py's check): 2 u |ref| + 2^-7 sqrt(sum_k (a_ik b_jk)^2)."""
    failed = written(c, "C")
    if failed:
        return failed
    rows = sample_rows(a.shape[0], seed=seed)
    a64, b64 = dequantize_fp8(scaling, a, bt, a_scales, b_scales, rows)
    ref = a64 @ b64.T
    magnitude = np.sqrt(np.square(a64) @ np.square(b64).T)
    allowed = 2 * ROUNDOFF[out] * np.abs(ref) + FP8_ACCUMULATION * magnitude
    return compare(c[rows], ref, allowed, f"C ({scaling} scaling)")
