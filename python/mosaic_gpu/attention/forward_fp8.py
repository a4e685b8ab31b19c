"""The fused attention forward for FP8 (e4m3) inputs with per-tensor
scales, FlashAttention-3 style: O = softmax(Q K^T / sqrt(d)) V, bf16, and
the f32 LSE of each query row, where Q, K and V are the e4m3 arrays times
their descale factors (as FlashAttention-3's q_descale, k_descale and
v_descale: x ~ x_fp8 * descale, ``quantize``).

The kernel is forward.py's (block (i, h, b) computes query rows [128 i,
+128) of query head h of sequence b; a producer warpgroup issues the TMA
loads into a ring of ``stages`` K and V stages; two consumer warpgroups of
64 query rows take turns issuing their MMAs on named barriers 4 and 5),
with these differences:

- The descales are one (3,) f32 kernel input (q, k, v), read at run time,
  so one compiled kernel serves any scales. The scores' scale becomes
  q_descale * k_descale * log2(e) / sqrt(d), and the epilogue multiplies
  O by v_descale.
- V is given transposed, V^T (kv_heads * d, keys): wgmma takes 8-bit
  operands only K-major, and for O += P V the K dim is the keys, so V's
  stage must be (d, keys), keys contiguous, in shared memory. The
  alternatives: an in-kernel transpose of each (keys, d) stage (FA3 does it
  in the producer warpgroup with ldmatrix / stmatrix and byte permutes),
  which our compiler cannot express (no 8-bit register transpose; a
  transposed shared-memory view is lowered only as a wgmma operand), or a
  separate transpose pass. A transpose is O(tokens d) bytes against the
  kernel's O(tokens^2 d) MMAs, and where V is quantized to FP8 the
  quantization pass can write V^T at no extra cost; ``transpose_v`` does it
  on the host. Each sequence's keys start at a column of V^T that is a
  multiple of 128 (``padded_seq``: seq rounded up to a key tile, the
  padding zeros), so every stage's TMA box starts on a whole 128-byte
  swizzle row, which layout inference needs to tile the V^T ring (it
  cannot tile a box whose first column is not a known multiple of the
  swizzle width), and the keys past a sequence's end that a last tile
  reads are zeros.
- P goes to the P V wgmma through shared memory, not registers: our
  compiler lowers a register A operand for 16-bit types only (an e4m3 A
  fragment packs 4 elements per register in an order that is not the f32
  accumulator's, which FA3 fixes with register permutes). Each consumer
  stores P_j, converted to e4m3, into one of two buffers of its own (j
  mod 2): P_j's store must not overtake another warp's part of the P V
  wgmma that read the same buffer, and with two buffers that wgmma is
  P_{j-2} V_{j-2}, which every warp of the consumer waited for before the
  turn barrier of step j, a barrier all of them pass. (One buffer would
  need a warpgroup barrier between the wgmma wait and the store.) The
  compiler fences the stores for the async proxy before the wgmma.
- P is exp2(s - m + 8), 256 times the softmax's usual P (P <= 256 <
  448, e4m3's largest). e4m3's smallest normal is 2^-6 and its
  subnormals step by 2^-9, so the shift keeps P's 3 mantissa bits down to
  exp(s - m) = 2^-14 (not 2^-6) and rounds smaller terms to within 2^-18
  (not 2^-10). It costs nothing: the 8 is subtracted from m before the
  exp2, the row sum l is of the same scaled P, so O = acc / l needs no
  correction, and the LSE subtracts the 8.
- The P V products accumulate in the tensor core across the whole
  sequence, as FA3 does, with no promotion into f32 registers every tile
  as gemm_fp8.py does: that would hold a 64 x d f32 partial sum beside
  the accumulator and S (at d = 256, 128 + 128 + 64 of a consumer's 240
  registers). ``check_results`` bounds what that costs in accuracy.

Head dims 64, 128 and 256. At 256 the O tile is not staged in shared
memory for a TMA store: with it the Q, K and V^T stages and the P
buffers would take 256 KiB at 2 stages (a block has 227), so the
consumers store O from registers; their accumulator and S then hold 192
of their 240 registers each (ptxas spills none). Causal and
grouped heads (kv_heads), fixed lengths and packed batches (cu_seqlens)
are as in forward.py. In V^T every sequence takes padded_seq columns, the
longest's length rounded up to 128, so that sequence b starts at column
b * padded_seq with no offsets to read: for a packed batch of uneven
lengths V^T is wider than V is long (batch * padded_seq against tokens).

Accuracy: ``check_results`` compares O and the LSE with reference.forward in
float64 on the dequantized inputs and derives its tolerance (see there).
"""
from __future__ import annotations

import math

from .. import control_flow as _cf
from .. import dtypes as _dtypes
from .. import kernels as _kernels
from .. import pipeline as _pipeline
from .. import refs as _refs
from .. import values as _values
from ..builder import check_type
from . import config as _config
from .config import Config
from .forward import (BLOCK_M, BLOCK_N, HALF_M, give_first_turn, mask, sequence, store_output,
                      take_turn)

__all__ = ["E4M3_MAX", "P_SHIFT", "build", "check", "check_results", "dequantize", "descales",
           "inputs", "padded_seq", "quantize", "run", "shapes", "smem", "staged_output",
           "transpose_v"]

PRODUCER_REGISTERS = 24
CONSUMER_REGISTERS = 240
HEAD_DIMS = (64, 128, 256)
# e4m3's largest finite value: a per-tensor scale maps amax to it.
E4M3_MAX = 448.0
# P is computed as exp2(s - m + P_SHIFT): at most 2^8 = 256 < E4M3_MAX.
P_SHIFT = 8
# The descales input: q, k, v.
DESCALES = 3
O_DTYPE = _dtypes.bf16


def padded_seq(config: Config) -> int:
    """The columns of V^T per sequence: seq rounded up to a key tile, so
    that every tile's TMA box starts at a multiple of 128 tokens."""
    return -(-config.seq // BLOCK_N) * BLOCK_N


def shapes(config: Config) -> dict[str, tuple[int, ...]]:
    """The kernel's arrays: config.shapes() with v replaced by v_t (kv_heads
    * d, batch * padded_seq) and the (3,) f32 descales; the inputs are q,
    k, v_t, descales (and cu_seqlens), the outputs o and lse."""
    result = dict(config.shapes())
    del result["v"]
    result["v_t"] = (config.key_heads * config.head_dim, config.batch * padded_seq(config))
    result["descales"] = (DESCALES,)
    return result


def staged_output(config: Config) -> bool:
    """Whether O goes to global memory through shared memory and a TMA
    store (head dims up to 128), or straight from registers (256, whose
    64 KiB O tile does not fit beside the stages)."""
    return config.head_dim <= 128


def smem(config: Config) -> list:
    """The Q halves, the K and V^T rings, each consumer's two P buffers,
    the O halves (``staged_output``), and the barriers: Q landed, K and
    V^T landed per stage, stage released."""
    dtype, d, stages = config.element, config.head_dim, config.stages
    o_halves = [_kernels.SmemBuffer((2, HALF_M, d), O_DTYPE)] if staged_output(config) else []
    return [_kernels.SmemBuffer((2, HALF_M, d), dtype),
            _kernels.SmemBuffer((stages, BLOCK_N, d), dtype),
            _kernels.SmemBuffer((stages, d, BLOCK_N), dtype),
            _kernels.SmemBuffer((2, 2, HALF_M, BLOCK_N), dtype)] + o_halves + [
            _kernels.Barriers(1, arrival_count=1),
            _kernels.Barriers(stages, arrival_count=1),
            _kernels.Barriers(stages, arrival_count=1),
            _kernels.Barriers(stages, arrival_count=2)]


def check(config: Config) -> None:
    """Raises ValueError for a configuration this kernel cannot run."""
    check_type(config, Config, "config")
    _config.check(config, HEAD_DIMS, ("fp8",))
    needed = _kernels.smem_bytes(smem(config))
    if needed > _kernels.MAX_SMEM_BYTES:
        raise ValueError(
            f"{config.stages} stages of {BLOCK_N} keys at head_dim {config.head_dim} need "
            f"{needed / 1024:.1f} KiB of shared memory, more than the "
            f"{_kernels.MAX_SMEM_BYTES // 1024} KiB of a block; use fewer stages")


def build(config: Config) -> _kernels.Kernel:
    """The FP8 forward kernel for ``config`` (dtype 'fp8'); ValueError for
    a bad one. Inputs q, k (e4m3), v_t (e4m3, ``transpose_v``), the
    descales (f32 [q, k, v], ``descales``) and for a packed batch
    cu_seqlens (i32); outputs o (bf16) and lse (f32), shaped as
    ``shapes(config)`` says."""
    check(config)
    dtype, d = config.element, config.head_dim
    array_shapes = shapes(config)
    tile_bytes = BLOCK_N * d * dtype.itemsize
    # exp(x / sqrt(d)) = exp2(x * log2(e) / sqrt(d)): scores in base 2.
    scale = math.log2(math.e) / math.sqrt(d)
    name = "attention_fp8_causal_fwd" if config.causal else "attention_fp8_fwd"
    inputs = [(array_shapes["q"], dtype), (array_shapes["k"], dtype),
              (array_shapes["v_t"], dtype), (array_shapes["descales"], "f32")]
    if config.varlen:
        inputs.append((array_shapes["cu_seqlens"], "i32"))

    @_kernels.kernel(grid=(-(-config.seq // BLOCK_M), config.heads, config.batch),
                     block=(384, 1, 1), inputs=inputs,
                     outputs=[(array_shapes["o"], O_DTYPE), (array_shapes["lse"], "f32")],
                     smem=smem(config), name=name, flush_denormals=True)
    def attention(q, k, v_t, descales, *refs):
        cu_seqlens = refs[0] if config.varlen else None
        o, lse, q_smem, k_smem, v_smem, p_smem, *rest = refs[config.varlen:]
        o_smem = rest[0] if staged_output(config) else None
        q_full, k_full, v_full, empty = rest[-4:]
        stages = config.stages
        q_block = _values.block_id("x")
        head = _values.block_id("y")
        # Each head is a column block of d in its (tokens, heads * d) array,
        # and a row block of d in V^T.
        q_column = head.astype("i32") * d
        kv_column = (head // config.group).astype("i32") * d
        sequence_index = _values.block_id("z")
        start, length = sequence(config, cu_seqlens, sequence_index)
        # Sequence b's keys are V^T's columns from b * padded_seq.
        v_start = sequence_index.astype("i32") * padded_seq(config)
        q_first = q_block.astype("i32") * BLOCK_M
        key_tiles = (length + (BLOCK_N - 1)) // BLOCK_N
        steps = _values.minimum(key_tiles, q_block.astype("i32") + 1) if config.causal \
            else key_tiles
        steps = steps.astype("index")
        wg = _values.warpgroup_id()

        def parity(step):
            return (step // stages).astype("i64").astype("i1")

        def producer():
            _pipeline.set_max_registers(PRODUCER_REGISTERS, action="decrease")
            _refs.arrive_expect_tx(q_full[0], 2 * HALF_M * d * dtype.itemsize)
            for half in range(2):
                _refs.async_load(q, q_smem[half], q_full[0],
                                 indices=[start + q_first + half * HALF_M, q_column],
                                 slice_lengths=[HALF_M, d])

            @_cf.for_loop(0, steps)
            def _(j):
                stage = j % stages
                _refs.wait(empty[stage], parity(j + stages))
                key0 = j.astype("i32") * BLOCK_N
                _refs.arrive_expect_tx(k_full[stage], tile_bytes)
                _refs.async_load(k, k_smem[stage], k_full[stage],
                                 indices=[start + key0, kv_column], slice_lengths=[BLOCK_N, d])
                _refs.arrive_expect_tx(v_full[stage], tile_bytes)
                _refs.async_load(v_t, v_smem[stage], v_full[stage],
                                 indices=[kv_column, v_start + key0], slice_lengths=[d, BLOCK_N])

        def consumer():
            _pipeline.set_max_registers(CONSUMER_REGISTERS, action="increase")
            half = wg - 1
            is_first = half == 0
            q_half = q_smem[half]
            last = steps - 1
            row0 = q_first + half.astype("i32") * HALF_M
            q_descale = _refs.load(descales[0])
            k_descale = _refs.load(descales[1])
            v_descale = _refs.load(descales[2])
            score_scale = q_descale * k_descale * scale

            def turn(wait: bool, step=None):
                take_turn(is_first, last, wait, step)

            def p_buffer(step):
                return p_smem[half, step % 2]

            give_first_turn(half)
            _refs.wait(q_full[0], False)

            tile = (HALF_M, BLOCK_N)
            zero_o = _values.constant(0.0, "f32", (HALF_M, d))
            m0 = _values.constant(-math.inf, "f32", (HALF_M,))
            l0 = _values.constant(0.0, "f32", (HALF_M,))

            @_cf.for_loop(0, steps, carry=(m0, l0, zero_o))
            def carry(j, m, l, acc):
                stage = j % stages
                previous = j - 1
                previous_stage = previous % stages
                _refs.wait(k_full[stage], parity(j))
                turn(wait=True)
                s = _refs.wgmma(_values.constant(0.0, "f32", tile), q_half, k_smem[stage].T,
                                async_=True)

                def previous_pv():
                    _refs.wait(v_full[previous_stage], parity(previous))
                    return _refs.wgmma(acc, p_buffer(previous), v_smem[previous_stage].T,
                                       async_=True)

                acc_pv = _cf.if_(j > 0, otherwise=lambda: acc, results=acc)(previous_pv)
                turn(wait=False, step=j)
                _refs.wgmma_wait(0)
                _cf.if_(j > 0)(lambda: _refs.arrive(empty[previous_stage]))

                # The online softmax, in base 2, P scaled by 2^P_SHIFT.
                scores = s * score_scale
                unmasked = scores
                key0 = j.astype("i32") * BLOCK_N
                scores = _cf.if_(j == last, otherwise=lambda: unmasked, results=unmasked)(
                    lambda: mask(config, unmasked, row0, key0, length))
                m_new = _values.maximum(m, scores.reduce("max", 1))
                p_new = _values.exp2(scores - _values.broadcast_in_dim(m_new - P_SHIFT, tile,
                                                                       [0]))
                alpha = _values.exp2(m - m_new)
                l_new = l * alpha + p_new.reduce("add", 1)
                acc_new = acc_pv * _values.broadcast_in_dim(alpha, (HALF_M, d), [0])
                _refs.vector_store(p_new.astype(dtype), p_buffer(j))
                return m_new, l_new, acc_new

            m, l, acc = carry
            last_stage = last % stages
            _refs.wait(v_full[last_stage], parity(last))
            acc = _refs.wgmma(acc, p_buffer(last), v_smem[last_stage].T)
            _refs.arrive(empty[last_stage])

            # Epilogue: O * v_descale / l and the LSE. Rows past the
            # sequence's end are not stored.
            out = (acc * _values.broadcast_in_dim((1.0 / l) * v_descale, (HALF_M, d),
                                                  [0])).astype(O_DTYPE)
            row_lse = (m + _values.log2(l) - P_SHIFT) * math.log(2)
            store_output(config, out, row_lse, o, lse,
                         o_smem[half] if staged_output(config) else None, head=head,
                         b=sequence_index, start=start, row0=row0, length=length,
                         column=q_column)

        _cf.if_(q_first < length)(lambda: _cf.if_(wg == 0, otherwise=consumer)(producer))

    return attention


def quantize(x):
    """``x`` quantized per tensor as a training recipe does: (the e4m3
    array, its descale) with descale = amax / 448 (1 for an all-zero
    ``x``) and the array x / descale rounded to nearest; x ~ array *
    descale. The descale is a float32 NumPy scalar."""
    import numpy as np
    x64 = np.asarray(x, np.float64)
    amax = float(np.abs(x64).max()) if x64.size else 0.0
    descale = np.float32(amax / E4M3_MAX if amax > 0 else 1.0)
    return (x64 / np.float64(descale)).astype(_dtypes.f8e4m3fn.numpy), descale


def dequantize(x, descale):
    """``x * descale`` in float64: what the kernel's inputs stand for."""
    import numpy as np
    return np.asarray(x).astype(np.float64) * np.float64(descale)


def transpose_v(config: Config, v, cu_seqlens=None):
    """V (tokens, kv_heads * d) as the kernel takes it: V^T (kv_heads * d,
    batch * padded_seq(config)), sequence b's token t in column b *
    padded_seq + t, the padding zeros. A packed batch's sequences are
    where ``cu_seqlens`` says (each takes padded_seq columns, as long as
    the longest)."""
    import numpy as np
    from . import reference
    v = np.asarray(v)
    width = padded_seq(config)
    v_t = np.zeros((config.key_heads * config.head_dim, config.batch * width), v.dtype)
    for b, (start, length) in enumerate(reference.sequences(config, cu_seqlens)):
        v_t[:, b * width:b * width + length] = v[start:start + length].T
    return v_t


def descales(q_descale, k_descale, v_descale):
    """The kernel's descales input: [q, k, v] as a (3,) f32 array."""
    import numpy as np
    return np.array([q_descale, k_descale, v_descale], np.float32)


def run(config: Config, q, k, v, q_descale, k_descale, v_descale, cu_seqlens=None,
        backend: str | None = None):
    """O (tokens, heads * d) bf16 and the LSE (heads, tokens) f32 of the
    e4m3 arrays ``q``, ``k`` and ``v`` (as ``config.shapes()``, V not
    transposed) and their descales (``quantize``), for a packed batch at
    the offsets ``cu_seqlens``: transposes V and launches the kernel of
    ``build(config)``."""
    import numpy as np
    kernel = build(config)
    arrays = [q, k, transpose_v(config, v, cu_seqlens), descales(q_descale, k_descale, v_descale)]
    if config.varlen:
        _config.seqlens_check(config, cu_seqlens)
        arrays.append(np.asarray(cu_seqlens, np.int32))
    return kernel.launch(*arrays, backend=backend)


def inputs(config: Config, seed: int = 0):
    """Test inputs: Gaussian Q, K and V of different magnitudes (so each
    descale matters), quantized; (q, k, v, q_descale, k_descale,
    v_descale), the arrays e4m3 as ``config.shapes()``."""
    import numpy as np
    rng = np.random.default_rng(seed)
    shapes_ = config.shapes()
    # Scores of standard deviation 3 * 0.75 = 2.25: peaked rows and flat ones.
    q, q_descale = quantize(3.0 * rng.standard_normal(shapes_["q"]))
    k, k_descale = quantize(0.75 * rng.standard_normal(shapes_["k"]))
    v, v_descale = quantize(0.1 * rng.standard_normal(shapes_["v"]))
    return q, k, v, q_descale, k_descale, v_descale


def check_results(config: Config, q, k, v, q_descale, k_descale, v_descale, o, lse,
                  cu_seqlens=None):
    """Compares the kernel's O and LSE with reference.forward in float64
    on the dequantized inputs; (passed, summary).

    Tolerance, per element of O (row i, column c of a head), with w_ij the
    reference's softmax weights, M_ic = sum_j w_ij |v_jc| (the size of the
    sum) and N = seq (the longest sequence's keys):

      2^-7 |O_ic|                             bf16 rounding of O (2 u)
    + 3 sqrt(sum_j (h_ij v_jc)^2)             P rounded to e4m3
    + 2^-11 ceil(N / 32) M_ic                 P V accumulated in the tensor core
    + 2 max_j ds_ij M_ic                      S accumulated in the tensor core

    P rounded to e4m3: the kernel's P is 256 exp(s - m) with m the running
    row max, so P <= 256 and the row sum l >= 256 (the max's term is
    256). e4m3 rounds a normal x to within 2^-4 x (3 mantissa bits: half an
    ulp is 2^-5 to 2^-4 of x) and a subnormal (below 2^-6) to within
    2^-10; rescaled by the later maxima's alpha <= 1 and normalized by l,
    each weight's error is at most h_ij = max(2^-4 w_ij, 2^-18). l sums the
    unrounded P, so the errors are not renormalized away: O's error is
    sum_j e_ij v_jc, errors that round to nearest independently. 3 times
    their root sum square is at least their worst-case sum when at most 9
    terms dominate a row, and about 7 standard deviations of the sum when
    many do (a rounding error is uniform within half an ulp: its standard
    deviation is at most h / sqrt(3), and on average about 0.4 h).
    P V accumulation: the products of e4m3 values are exact, and the
    tensor core adds each 32-key step's products to the accumulator
    aligned to the largest addend, truncated about 13 bits below it
    (docs/RationaleTensorCore.md; gemm_fp8.py measured its unpromoted sum's
    error at 2^-8 of the products' magnitude over 16 steps, 2^-12 a step);
    the accumulator, whose size is at most M_ic l, takes ceil(N / 32)
    steps without promotion, each allowed 2^-11 M_ic (twice the measured).
    S accumulation: Q K^T's d products per score take d / 32 steps, at
    most d / 128 of gemm_fp8.py's 128-K steps, whose largest error it
    measured at 2^-10 of the products' magnitude; allowing 4 times that
    per 128 (at least one), a score's error (natural log units) is ds_ij
    = 2^-8 max(1, d / 128) sqrt(sum_c (q_ic k_jc)^2) / sqrt(d), which
    changes each weight by the factor exp(ds - mean ds): at most 2 max ds
    of M. f32's own roundings (the scale, exp2,
    l, 1 / l) are below 2^-20 of these and are covered by the margins.

    LSE: max_j ds_ij (the scores' error moves the LSE by at most the
    largest of it) + 2^-18 (|lse_i| + 1) for f32's roundings of m, log2(l)
    and the shift. The LSE does not see P's rounding.

    A wrong kernel is off by about M itself (a wrong V layout, a missed
    scale, a stage read twice), which is 8 to 16 times these bounds at the
    test's sizes."""
    import numpy as np
    from . import reference
    d = config.head_dim
    q64, k64, v64 = (dequantize(x, s).reshape(config.total_tokens, -1, d)
                     for x, s in ((q, q_descale), (k, k_descale), (v, v_descale)))
    ref_o, ref_lse = reference.forward(config, q64, k64, v64, cu_seqlens)
    out = np.asarray(o).astype(np.float64).reshape(ref_o.shape)
    lse = np.asarray(lse, np.float64)
    if not config.varlen:
        # (batch, heads, seq) as (heads, tokens), the rows the bounds index.
        ref_lse, lse = (x.transpose(1, 0, 2).reshape(config.heads, -1) for x in (ref_lse, lse))
    allowed = np.zeros(ref_o.shape)
    lse_allowed = np.zeros(ref_lse.shape)
    steps = -(-config.seq // 32)
    for start, length in reference.sequences(config, cu_seqlens):
        if not length:
            continue
        rows = slice(start, start + length)
        w, _ = reference._probabilities(config, q64, k64, start, length)
        qs = q64[rows].transpose(1, 0, 2)
        ks = np.repeat(k64[rows].transpose(1, 0, 2), config.group, axis=0)
        vs = np.repeat(v64[rows].transpose(1, 0, 2), config.group, axis=0)
        score_error = (2.0 ** -8 * max(1, d // 128) / math.sqrt(d)
                       * np.sqrt((qs ** 2) @ (ks ** 2).transpose(0, 2, 1)))
        if config.causal:
            keys = np.arange(length)
            score_error = np.where(keys[None, :] <= keys[:, None], score_error, 0.0)
        worst_score = score_error.max(axis=-1)
        size = w @ np.abs(vs)
        h = np.maximum(2.0 ** -4 * w, 2.0 ** -18)
        rounding = 3 * np.sqrt((h ** 2) @ (vs ** 2))
        bound = (2.0 ** -7 * np.abs(ref_o[rows].transpose(1, 0, 2)) + rounding
                 + 2.0 ** -11 * steps * size + 2 * worst_score[..., None] * size)
        allowed[rows] = bound.transpose(1, 0, 2)
        lse_allowed[:, rows] = worst_score + 2.0 ** -18 * (np.abs(ref_lse[:, rows]) + 1)

    def compare(name, value, reference_value, tolerance):
        error = np.abs(value - reference_value)
        bad = ~(error <= tolerance)  # NaN fails
        worst = float(np.max(error / tolerance)) if error.size else 0.0
        text = (f"{name}: max |err| / tolerance {worst:.3g}, {int(bad.sum())} of {value.size} "
                "outside")
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            text += f" (first at {where}: {value[where]:.6g} vs {reference_value[where]:.6g})"
        return not bad.any(), text

    o_passed, o_text = compare("O", out, ref_o, allowed)
    lse_passed, lse_text = compare("LSE", lse, ref_lse, lse_allowed)
    return o_passed and lse_passed, f"{o_text}; {lse_text}"
