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


# ---------------------------------------------------------------------------
# Attention: mosaic_gpu.attention's kernels, fixed-length batches
# (bench/gpu/attention_kernels.py). dims = (batch, heads, kv_heads, seq,
# head_dim); Q and O (tokens, heads * head_dim), K and V (tokens, kv_heads *
# head_dim), token b * seq + s being position s of sequence b, head h the
# column block [h * head_dim, +head_dim) and served by key/value head
# h // (heads / kv_heads); the LSE (batch, heads, seq), natural log, as
# FlashAttention returns it.

# Token rows compared per check: every head of each, against all the keys
# of its sequence.
ATTENTION_CHECKED_ROWS = 64
# The relative rounding of P (or of dS) where the kernel rounds it for a
# tensor-core product: bf16, f16, and e4m3 (FP8: 3 mantissa bits).
P_ROUNDOFF = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11, "fp8": 2.0 ** -4}
# Each rounding is at most P_ROUNDOFF of its term and they add up like a
# random walk: the allowance is this many times P_ROUNDOFF times the root
# sum of squares of the terms (about 7 standard deviations of the sum of
# roundings uniform in [-u, u]).
ROUNDING_SPREAD = 4
# The rest of the arithmetic relative to the sum of |terms|: f32 throughout
# for bf16 and f16; for FP8, Q K^T's and P V's FP8 products added in the
# tensor core with about 13 bits below the largest, without promotion.
ATTENTION_ACCUMULATION = {"bf16": 2.0 ** -12, "f16": 2.0 ** -12, "fp8": 2.0 ** -8}
# The LSE's allowance, |lse - ref| <= this * (1 + |ref|): f32 sums of up to
# seq terms and the approximate exp2 and log2 (bf16, f16); FP8's scores
# carry the tensor core's FP8 accumulation.
LSE_TOLERANCE = {"bf16": 2.0 ** -12, "f16": 2.0 ** -12, "fp8": 2.0 ** -8}


def _lse_by_token(lse, dims) -> np.ndarray:
    """The LSE (batch, heads, seq), or flattened, as (heads, tokens)."""
    batch, heads, kv_heads, seq, d = dims
    return f64(lse).reshape(batch, heads, seq).transpose(1, 0, 2).reshape(heads, batch * seq)


def _heads(x, heads: int) -> np.ndarray:
    """(tokens, heads * d) -> (tokens, heads, d), float64."""
    return f64(x).reshape(x.shape[0], heads, -1)


def _visible(causal: bool, queries, keys) -> np.ndarray:
    """(len(queries), len(keys)) bool: which key positions each query
    position sees."""
    if not causal:
        return np.ones((len(queries), len(keys)), bool)
    return np.asarray(keys)[None, :] <= np.asarray(queries)[:, None]


def _by_sequence(rows, seq: int):
    """(b, the indices into rows of sequence b's tokens, their positions)."""
    rows = np.asarray(rows)
    for b in np.unique(rows // seq):
        chosen = np.nonzero(rows // seq == b)[0]
        yield int(b), chosen, rows[chosen] - b * seq


def attention_forward_reference(dims, causal: bool, q, k, v, rows):
    """At token rows `rows`: O (rows, heads, d) and the LSE (heads, rows)
    in float64, the root sum of squares of each O element's terms
    p_j v_j / l and their sum of magnitudes. q (tokens, heads, d), k and v
    (tokens, kv_heads, d), float64."""
    batch, heads, kv_heads, seq, d = dims
    group = heads // kv_heads
    o, spread, size = (np.zeros((len(rows), heads, d)) for _ in range(3))
    lse = np.zeros((heads, len(rows)))
    for b, chosen, positions in _by_sequence(rows, seq):
        keys = slice(b * seq, (b + 1) * seq)
        visible = _visible(causal, positions, np.arange(seq))
        for h in range(heads):
            kh, vh = k[keys, h // group], v[keys, h // group]
            scores = np.where(visible, q[b * seq + positions, h] @ kh.T / math.sqrt(d), -np.inf)
            top = scores.max(axis=1, keepdims=True)
            p = np.exp(scores - top)
            total = p.sum(axis=1, keepdims=True)
            o[chosen, h] = p @ vh / total
            lse[h, chosen] = (top + np.log(total))[:, 0]
            spread[chosen, h] = np.sqrt(np.square(p) @ np.square(vh)) / total
            size[chosen, h] = p @ np.abs(vh) / total
    return o, lse, spread, size


def _check_forward(dims, causal, q, k, v, o, lse, dtype: str, out: str, seed: int) -> Check:
    batch, heads, kv_heads, seq, d = dims
    failed = written(o, "O") or written(lse, "LSE")
    if failed:
        return failed
    rows = sample_rows(batch * seq, ATTENTION_CHECKED_ROWS, seed)
    ref, ref_lse, spread, size = attention_forward_reference(dims, causal, q, k, v, rows)
    allowed = (2 * ROUNDOFF[out] * np.abs(ref) + ROUNDING_SPREAD * P_ROUNDOFF[dtype] * spread
               + ATTENTION_ACCUMULATION[dtype] * size)
    lse_allowed = LSE_TOLERANCE[dtype] * (1 + np.abs(ref_lse))
    return combine([compare(_heads(o[rows], heads), ref, allowed, "O"),
                    compare(_lse_by_token(lse, dims)[:, rows], ref_lse, lse_allowed, "LSE")])


def check_attention_forward(dims, causal: bool, q, k, v, o, lse, seed: int = 0) -> Check:
    """forward.py's kernel (bf16 or f16): O = softmax(Q K^T / sqrt(d)) V
    and the LSE at sampled token rows, every head. O per element within 2 u
    |ref| + 4 u_P sqrt(sum_j (p_j v_j)^2) / l + 2^-12 sum_j |p_j v_j| / l
    (u_P: P's rounding to the input type for P V), the LSE within 2^-12 (1
    + |ref|)."""
    batch, heads, kv_heads, seq, d = dims
    dtype = "f16" if np.dtype(q.dtype) == np.float16 else "bf16"
    return _check_forward(dims, causal, _heads(q, heads), _heads(k, kv_heads),
                          _heads(v, kv_heads), o, lse, dtype, dtype, seed)


def check_attention_forward_fp8(dims, causal: bool, q, k, v_t, descales, o, lse,
                                seed: int = 0) -> Check:
    """forward_fp8.py's kernel: the forward on the dequantized inputs (Q, K
    and V times their descales, the (3,) f32 input), V given transposed,
    (kv_heads * d, batch * padded seq), each sequence's keys at a multiple
    of 128 columns. Tolerances as check_attention_forward's with P rounded
    to e4m3 and the FP8 accumulation."""
    batch, heads, kv_heads, seq, d = dims
    padded = v_t.shape[1] // batch
    if v_t.shape != (kv_heads * d, batch * padded) or padded < seq:
        raise ValueError(f"V^T of {shape_text(dims)} must be ({kv_heads * d}, batch x seq "
                         f"rounded up to 128), got {v_t.shape}")
    q_descale, k_descale, v_descale = f64(descales)
    v = f64(v_t).reshape(kv_heads * d, batch, padded)[:, :, :seq].reshape(kv_heads * d, -1).T
    return _check_forward(dims, causal, _heads(q, heads) * q_descale,
                          _heads(k, kv_heads) * k_descale, _heads(v, kv_heads) * v_descale, o,
                          lse, "fp8", "bf16", seed)


def shape_text(dims) -> str:
    return "x".join(str(d) for d in dims)


# The backward's LSE and D workspaces: each sequence's rows at whole blocks
# of this many columns (backward.py's ROWS, padded_seq).
DELTA_ROWS = 64


def _padded_seq(seq: int) -> int:
    return -(-seq // DELTA_ROWS) * DELTA_ROWS


def _stats_by_token(stats, dims) -> np.ndarray:
    """A (heads, batch * padded seq) workspace (backward.stats_shape) as
    (heads, tokens): each sequence's first seq columns."""
    batch, heads, kv_heads, seq, d = dims
    padded = _padded_seq(seq)
    return f64(stats).reshape(heads, batch, padded)[:, :, :seq].reshape(heads, batch * seq)


def check_attention_delta(dims, o, do, delta) -> Check:
    """backward.py's preprocess: D[h, t] = sum_i dO[t, h, i] O[t, h, i] in
    f32, D (heads, batch * padded seq) (the padding's columns hold what
    follows each sequence: not checked); every element of the sequences,
    within 2^-20 sum_i |dO O| (f32 products and sums over head_dim)."""
    batch, heads, kv_heads, seq, d = dims
    shape = (heads, batch * _padded_seq(seq))
    if delta.shape != shape:
        raise ValueError(f"D of {shape_text(dims)} must be {shape}, got {delta.shape}")
    products = _heads(do, heads) * _heads(o, heads)
    return compare(_stats_by_token(delta, dims), products.sum(-1).T,
                   2.0 ** -20 * np.abs(products).sum(-1).T, "D")


def check_attention_dq(dims, workspace, dq) -> Check:
    """backward.py's postprocess: dQ = the f32 workspace / sqrt(d), rounded
    to bf16; every element, within 2 u |ref|."""
    d = dims[-1]
    ref = f64(workspace) / math.sqrt(d)
    return compare(dq, ref, 2 * ROUNDOFF["bf16"] * np.abs(ref), "dQ")


def check_attention_backward(dims, causal: bool, q, k, v, do, lse, delta, dq_workspace, dk,
                             dv, seed: int = 0) -> Check:
    """backward.py's main kernel: from the given LSE and D (heads, batch *
    padded seq), which mosaic-run draws at random (so P =
    exp(S / sqrt(d) - LSE) is no softmax: the check computes what the
    kernel computes from them), dS = P o (dO V^T - D), dK = dS^T Q /
    sqrt(d) and dV = P^T dO at sampled key rows, summed over each key/value
    head's query heads. Per element within 2 u |ref| + 8 u sqrt(sum of the
    squared terms) + 2^-12 sum of |terms| (u: bf16's; P and dS are rounded
    for the tensor core). dQ is added into dq_workspace, which mosaic-run
    cannot zero (it draws inputs, and poisons outputs): not checked here
    (check_attention_dq checks the postprocess, the package's tests dQ)."""
    batch, heads, kv_heads, seq, d = dims
    group, scale, tokens = heads // kv_heads, 1 / math.sqrt(d), batch * seq
    failed = written(dk, "dK") or written(dv, "dV")
    if failed:
        return failed
    q3, do3 = _heads(q, heads), _heads(do, heads)
    k3, v3 = _heads(k, kv_heads), _heads(v, kv_heads)
    lse64, delta64 = _stats_by_token(lse, dims), _stats_by_token(delta, dims)
    rows = sample_rows(tokens, ATTENTION_CHECKED_ROWS, seed)
    shape = (len(rows), kv_heads, d)
    ref_dk, spread_dk, size_dk, ref_dv, spread_dv, size_dv = (np.zeros(shape)
                                                                for _ in range(6))
    for b, chosen, positions in _by_sequence(rows, seq):
        tokens_b = b * seq + np.arange(seq)
        keys = b * seq + positions
        visible = _visible(causal, np.arange(seq), positions)
        for h in range(heads):
            g = h // group
            p = np.where(visible, np.exp(q3[tokens_b, h] @ k3[keys, g].T * scale
                                         - lse64[h, tokens_b][:, None]), 0)
            ds = p * (do3[tokens_b, h] @ v3[keys, g].T - delta64[h, tokens_b][:, None])
            ref_dk[chosen, g] += ds.T @ q3[tokens_b, h] * scale
            spread_dk[chosen, g] += np.square(ds.T) @ np.square(q3[tokens_b, h]) * scale ** 2
            size_dk[chosen, g] += np.abs(ds.T) @ np.abs(q3[tokens_b, h]) * scale
            ref_dv[chosen, g] += p.T @ do3[tokens_b, h]
            spread_dv[chosen, g] += np.square(p.T) @ np.square(do3[tokens_b, h])
            size_dv[chosen, g] += p.T @ np.abs(do3[tokens_b, h])
    u = ROUNDOFF["bf16"]

    def allowed(ref, spread, size):
        return (2 * u * np.abs(ref) + 2 * ROUNDING_SPREAD * u * np.sqrt(spread)
                + ATTENTION_ACCUMULATION["bf16"] * size)

    return combine([
        compare(_heads(dk[rows], kv_heads), ref_dk, allowed(ref_dk, spread_dk, size_dk), "dK"),
        compare(_heads(dv[rows], kv_heads), ref_dv, allowed(ref_dv, spread_dv, size_dv), "dV")])
