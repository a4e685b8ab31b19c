"""The Triton peers of the example kernels, for bench.py.

Imported only where Triton is; `load()` returns the launchers and says which
are missing and why. The GEMM peers take the operands our kernels take:
bf16 A [M, K] and B [K, N], both row-major, and write bf16 C [M, N].

- `matmul`: one program per 128x128 tile of C, pointer loads, Triton's own
  software pipelining (the style of Triton's tutorial 03).
- `matmul_tma_persistent`: the persistent TMA GEMM of Triton's tutorial
  09-persistent-matmul: one program per SM walks the tiles of C in groups of
  GROUP_M tile rows (so that neighbours share A and B in L2), loads A and B
  through host-built TMA descriptors (`triton.tools.tensor_descriptor`) and
  stores C through one, optionally in two halves (EPILOGUE_SUBTILE) to free
  shared memory for another stage. Autotuned per shape (tma_configs).

The FP8 GEMM peer takes what our gemm_fp8 takes: e4m3 A [M, K] and Bt
[N, K] (K-major, as wgmma reads 8-bit B) with f32 scales, and writes bf16 C
[M, N].

- `matmul_fp8`: a persistent GEMM in the style of `matmul_tma_persistent`
  (one program per SM walking the tiles in groups of GROUP_M tile rows, A,
  Bt and C through host-built TMA descriptors, 128-wide K steps), with the
  scales of a training recipe: per tensor (one f32 each, applied to the
  tile in the epilogue), per row (A's per row of C, Bt's per column, also
  in the epilogue) or per block (DeepSeek-V3: A's per 1 x 128, Bt's per 128
  x 128, applied as each K step's product is added to the accumulator, as
  DeepGEMM and vLLM's Triton block-FP8 GEMM do). The block scales' layouts:
  A's (ceil(K/128), M), K-block-major; Bt's (ceil(N/128), ceil(K/128)),
  row-major. On sm_90 Triton adds FP8 products in the tensor core's
  reduced-precision accumulator unless a dot says when to promote
  (max_num_imprecise_acc; Triton's default there never promotes): the
  tensor and row scalings promote every 128 of K, as our kernel and
  cuBLAS (torch._scaled_mm without use_fast_accum) do; the block scaling
  starts each K step's product from zero. Autotuned per shape and scaling
  (fp8_configs).

The attention peer takes what our attention kernel takes: bf16 Q, K, V
[heads, seq, head_dim] (heads counting batch too), and writes bf16 O of that
shape and the f32 log-sum-exp LSE [heads, seq].

- `attention_fwd`: a fused attention forward in the style of Triton's
  fused-attention tutorial (06): one program per 128 query rows of one head,
  Q loaded once, a loop over blocks of BLOCK_N keys with the online softmax
  in base 2 (running row maximum and row sum, the output rescaled when the
  maximum grows), Q, K, V and O through host-built TMA descriptors. With the
  causal mask, the key blocks left of the diagonal run unmasked and only the
  diagonal's are masked. Autotuned per sequence length (attention_configs).

The FP8 attention peer takes what our forward_fp8 takes, per head: e4m3 Q
and K [heads * seq, head_dim] and V transposed, V^T [heads * head_dim, seq]
(wgmma reads 8-bit B operands only K-major, and P V's K dim is the keys),
with per-tensor descales; it writes bf16 O and the f32 LSE.

- `attention_fp8_fwd`: `attention_fwd` with e4m3 operands: the descales of
  Q and K folded into the scores' scale, P = exp2(s - max + 8) (at most 256,
  under e4m3's 448, so that small weights keep e4m3's normal precision, as
  forward_fp8 does) converted to e4m3 for P V, and O times V's descale.
  Autotuned per sequence length (attention_configs, V^T's box transposed).
"""
import math

import triton
import triton.language as tl

try:
    # Host-side TMA descriptors; older Triton releases had only the
    # experimental descriptor API, which this peer does not use.
    from triton.tools.tensor_descriptor import TensorDescriptor
except ImportError:
    TensorDescriptor = None


@triton.jit
def elementwise(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x * y + x, mask=mask)


@triton.jit
def softmax(x_ptr, out_ptr, columns, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offsets = tl.arange(0, BLOCK)
    mask = offsets < columns
    x = tl.load(x_ptr + row * columns + offsets, mask=mask, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + row * columns + offsets, e / tl.sum(e, axis=0), mask=mask)


@triton.jit
def tile_position(tile, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """(row, column) of C tile number `tile` when tiles are walked in groups
    of GROUP_M tile rows, column by column inside a group."""
    per_group = GROUP_M * tiles_n
    first_m = (tile // per_group) * GROUP_M
    rows = tl.minimum(tiles_m - first_m, GROUP_M)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
           BK: tl.constexpr, GROUP_M: tl.constexpr):
    # M, N, K are multiples of the blocks.
    pid_m, pid_n = tile_position(tl.program_id(0), M // BM, N // BN, GROUP_M)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc = tl.dot(tl.load(a), tl.load(b), acc)
        a += BK
        b += BK * N
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16))


def set_block_shapes(nargs):
    """Autotuning pre-hook: each configuration's TMA boxes."""
    bm, bn, bk = nargs["BM"], nargs["BN"], nargs["BK"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bk, bn]
    nargs["c_desc"].block_shape = [bm, bn // 2 if nargs["EPILOGUE_SUBTILE"] else bn]


def tma_configs():
    """A subset of tutorial 09's configurations: 128-row tiles on 8 warps
    (two warpgroups of 64 rows, the split our kernel's consumers use), 128
    or 256 columns, 64-wide K steps, 3 or 4 stages, with and without the
    split epilogue. Those that do not fit shared memory fail to compile and
    the autotuner passes over them."""
    return [
        triton.Config({"BM": 128, "BN": bn, "BK": 64, "GROUP_M": 8,
                       "EPILOGUE_SUBTILE": subtile},
                      num_stages=stages, num_warps=8, pre_hook=set_block_shapes)
        for bn in (128, 256) for stages in (3, 4) for subtile in (False, True)
    ]


@triton.jit
def matmul_tma_persistent(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr,
                          BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
                          EPILOGUE_SUBTILE: tl.constexpr, NUM_SMS: tl.constexpr):
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    k_steps = tl.cdiv(K, BK)
    # The epilogue recomputes its tile from its own counter, as the
    # tutorial does, so that the flattened loop's prologue and epilogue do
    # not share a value.
    tile_c = tl.program_id(0) - NUM_SMS
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS, flatten=True):
        pid_m, pid_n = tile_position(tile, tiles_m, tiles_n, GROUP_M)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(k_steps):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([k * BK, pid_n * BN])
            acc = tl.dot(a, b, acc)
        tile_c += NUM_SMS
        pid_m, pid_n = tile_position(tile_c, tiles_m, tiles_n, GROUP_M)
        if EPILOGUE_SUBTILE:
            halves = tl.permute(tl.reshape(acc, (BM, 2, BN // 2)), (0, 2, 1))
            left, right = tl.split(halves)
            c_desc.store([pid_m * BM, pid_n * BN], left.to(tl.bfloat16))
            c_desc.store([pid_m * BM, pid_n * BN + BN // 2], right.to(tl.bfloat16))
        else:
            c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))


# matmul_fp8's scalings, as the SCALING constexpr.
FP8_SCALINGS = {"tensor": 0, "row": 1, "block": 2}
FP8_BLOCK = 128


def set_fp8_block_shapes(nargs):
    """Autotuning pre-hook: each configuration's TMA boxes."""
    bm, bn, bk = nargs["BM"], nargs["BN"], nargs["BK"]
    nargs["a_desc"].block_shape = [bm, bk]
    nargs["b_desc"].block_shape = [bn, bk]
    nargs["c_desc"].block_shape = [bm, bn]


def fp8_configs():
    """128-row tiles on 8 warps, 128-wide K steps (128 bytes of e4m3), 128
    or 256 columns, 3 or 4 stages. Block scaling takes only 128 columns (a
    tile then has one Bt scale per K step); prune_fp8_configs drops the
    others for it. Those that do not fit shared memory fail to compile and
    the autotuner passes over them."""
    return [
        triton.Config({"BM": 128, "BN": bn, "BK": FP8_BLOCK, "GROUP_M": 8},
                      num_stages=stages, num_warps=8, pre_hook=set_fp8_block_shapes)
        for bn in (128, 256) for stages in (3, 4)
    ]


def prune_fp8_configs(configs, named_args, **kwargs):
    if named_args.get("SCALING", kwargs.get("SCALING")) == FP8_SCALINGS["block"]:
        return [config for config in configs if config.kwargs["BN"] == FP8_BLOCK]
    return configs


@triton.jit
def matmul_fp8(a_desc, b_desc, c_desc, a_scale_ptr, b_scale_ptr, M, N, K,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr,
               SCALING: tl.constexpr, NUM_SMS: tl.constexpr):
    # SCALING: 0 per tensor, 1 per row, 2 per block (BN == BK == 128).
    tiles_m = tl.cdiv(M, BM)
    tiles_n = tl.cdiv(N, BN)
    k_steps = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), tiles_m * tiles_n, NUM_SMS):
        pid_m, pid_n = tile_position(tile, tiles_m, tiles_n, GROUP_M)
        rows = pid_m * BM + tl.arange(0, BM)
        columns = pid_n * BN + tl.arange(0, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(k_steps):
            a = a_desc.load([pid_m * BM, k * BK])
            b = b_desc.load([pid_n * BN, k * BK])
            if SCALING == 2:
                a_scales = tl.load(a_scale_ptr + k * M + rows, mask=rows < M, other=0.0)
                b_scale = tl.load(b_scale_ptr + pid_n * k_steps + k)
                partial = tl.dot(a, b.T)
                acc += partial * (a_scales * b_scale)[:, None]
            else:
                acc = tl.dot(a, b.T, acc, max_num_imprecise_acc=BK)
        if SCALING == 0:
            acc = acc * (tl.load(a_scale_ptr) * tl.load(b_scale_ptr))
        elif SCALING == 1:
            a_scales = tl.load(a_scale_ptr + rows, mask=rows < M, other=0.0)
            b_scales = tl.load(b_scale_ptr + columns, mask=columns < N, other=0.0)
            acc = acc * a_scales[:, None] * b_scales[None, :]
        c_desc.store([pid_m * BM, pid_n * BN], acc.to(tl.bfloat16))


ATTENTION_BLOCK_M = 128
LN_2 = tl.constexpr(math.log(2))


@triton.jit
def attend_keys(acc, row_sum, row_max, q, k_desc, v_desc, head_row, first_key, end_key,
                query_rows, scale_log2, BLOCK_N: tl.constexpr, MASKED: tl.constexpr):
    """Folds keys [first_key, end_key) of one head into the running output
    `acc` (not yet divided by `row_sum`), the row sums and the row maxima, all
    in base 2. head_row: the head's first row in the [heads * seq, head_dim]
    views. MASKED hides each key after its query."""
    for start in tl.range(first_key, end_key, BLOCK_N):
        k = k_desc.load([head_row + start, 0])
        scores = tl.dot(q, tl.trans(k)) * scale_log2
        if MASKED:
            keys = start + tl.arange(0, BLOCK_N)
            scores = tl.where(keys[None, :] <= query_rows[:, None], scores, -float("inf"))
        # Keys are visited in order and key 0 is every query's, so the
        # maximum is finite from the first block on: no -inf - -inf.
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        p = tl.math.exp2(scores - new_max[:, None])
        alpha = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * alpha + tl.sum(p, 1)
        v = v_desc.load([head_row + start, 0])
        acc = tl.dot(p.to(v.dtype), v, acc * alpha[:, None])
        row_max = new_max
    return acc, row_sum, row_max


@triton.jit
def attention_fwd(q_desc, k_desc, v_desc, o_desc, lse_ptr, seq, scale_log2,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                  CAUSAL: tl.constexpr):
    # seq is a multiple of BLOCK_M and BLOCK_N: no block crosses a head.
    head_row = tl.program_id(1) * seq
    first_query = tl.program_id(0) * BLOCK_M
    query_rows = first_query + tl.arange(0, BLOCK_M)
    q = q_desc.load([head_row + first_query, 0])
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    row_max = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    if CAUSAL:
        # Only the diagonal block pays for the mask.
        acc, row_sum, row_max = attend_keys(acc, row_sum, row_max, q, k_desc, v_desc, head_row,
                                            0, first_query, query_rows, scale_log2, BLOCK_N,
                                            False)
        acc, row_sum, row_max = attend_keys(acc, row_sum, row_max, q, k_desc, v_desc, head_row,
                                            first_query, first_query + BLOCK_M, query_rows,
                                            scale_log2, BLOCK_N, True)
    else:
        acc, row_sum, row_max = attend_keys(acc, row_sum, row_max, q, k_desc, v_desc, head_row,
                                            0, seq, query_rows, scale_log2, BLOCK_N, False)
    o_desc.store([head_row + first_query, 0], (acc / row_sum[:, None]).to(q.dtype))
    # The LSE in base e, as our kernel and the float64 reference give it.
    tl.store(lse_ptr + head_row + query_rows, (row_max + tl.math.log2(row_sum)) * LN_2)


# P = exp2(s - max + P_SHIFT) in the FP8 attention: at most 2^8 = 256.
P_SHIFT = tl.constexpr(8)


@triton.jit
def attend_keys_fp8(acc, row_sum, row_max, q, k_desc, vt_desc, head_row, head_column,
                    first_key, end_key, query_rows, scale_log2, BLOCK_N: tl.constexpr,
                    MASKED: tl.constexpr):
    """attend_keys for e4m3 Q, K and V^T: P scaled by 2^P_SHIFT and
    converted to e4m3. head_column: the head's first row of V^T."""
    for start in tl.range(first_key, end_key, BLOCK_N):
        k = k_desc.load([head_row + start, 0])
        scores = tl.dot(q, tl.trans(k)) * scale_log2
        if MASKED:
            keys = start + tl.arange(0, BLOCK_N)
            scores = tl.where(keys[None, :] <= query_rows[:, None], scores, -float("inf"))
        new_max = tl.maximum(row_max, tl.max(scores, 1))
        p = tl.math.exp2(scores - new_max[:, None] + P_SHIFT)
        alpha = tl.math.exp2(row_max - new_max)
        row_sum = row_sum * alpha + tl.sum(p, 1)
        vt = vt_desc.load([head_column, start])
        acc = tl.dot(p.to(vt.dtype), tl.trans(vt), acc * alpha[:, None])
        row_max = new_max
    return acc, row_sum, row_max


@triton.jit
def attention_fp8_fwd(q_desc, k_desc, vt_desc, o_desc, lse_ptr, seq, scale_log2, v_descale,
                      HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      CAUSAL: tl.constexpr):
    # seq is a multiple of BLOCK_M and BLOCK_N: no block crosses a head.
    head = tl.program_id(1)
    head_row, head_column = head * seq, head * HEAD_DIM
    first_query = tl.program_id(0) * BLOCK_M
    query_rows = first_query + tl.arange(0, BLOCK_M)
    q = q_desc.load([head_row + first_query, 0])
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    row_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    row_max = tl.full([BLOCK_M], -float("inf"), dtype=tl.float32)
    if CAUSAL:
        acc, row_sum, row_max = attend_keys_fp8(acc, row_sum, row_max, q, k_desc, vt_desc,
                                                head_row, head_column, 0, first_query,
                                                query_rows, scale_log2, BLOCK_N, False)
        acc, row_sum, row_max = attend_keys_fp8(acc, row_sum, row_max, q, k_desc, vt_desc,
                                                head_row, head_column, first_query,
                                                first_query + BLOCK_M, query_rows, scale_log2,
                                                BLOCK_N, True)
    else:
        acc, row_sum, row_max = attend_keys_fp8(acc, row_sum, row_max, q, k_desc, vt_desc,
                                                head_row, head_column, 0, seq, query_rows,
                                                scale_log2, BLOCK_N, False)
    o_desc.store([head_row + first_query, 0], (acc * (v_descale / row_sum[:, None])).to(
        o_desc.dtype))
    tl.store(lse_ptr + head_row + query_rows,
             (row_max + tl.math.log2(row_sum) - P_SHIFT) * LN_2)


def set_attention_block_shapes(nargs):
    """Autotuning pre-hook: each configuration's TMA boxes."""
    rows, keys, d = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["HEAD_DIM"]
    nargs["q_desc"].block_shape = [rows, d]
    nargs["o_desc"].block_shape = [rows, d]
    nargs["k_desc"].block_shape = [keys, d]
    if "vt_desc" in nargs:
        nargs["vt_desc"].block_shape = [d, keys]
    else:
        nargs["v_desc"].block_shape = [keys, d]


def attention_configs():
    """128 query rows on 8 warps (two warpgroups of 64 rows, as in our
    kernel), key blocks of 64 or 128, 2 to 4 stages. Those that do not fit
    shared memory (128 keys in 4 stages) fail to compile and the autotuner
    passes over them."""
    return [
        triton.Config({"BLOCK_M": ATTENTION_BLOCK_M, "BLOCK_N": keys}, num_stages=stages,
                      num_warps=8, pre_hook=set_attention_block_shapes)
        for keys in (64, 128) for stages in (2, 3, 4)
    ]


def attention_runner():
    """A launcher of attention_fwd, autotuned per (seq, causal). The
    descriptors are built once per tensor set (each configuration's pre-hook
    sets its boxes), so that a timed launch is the kernel's."""
    tuned = triton.autotune(configs=attention_configs(), key=["seq", "CAUSAL"])(attention_fwd)
    descriptors = {}

    def run(q, k, v, o, lse, causal):
        heads, seq, d = q.shape
        if seq % ATTENTION_BLOCK_M:
            raise ValueError(f"the Triton attention needs seq a multiple of "
                             f"{ATTENTION_BLOCK_M}, got {seq}")
        key = tuple(t.data_ptr() for t in (q, k, v, o)) + (q.shape,)
        if key not in descriptors:
            # Placeholder boxes; set_attention_block_shapes sets each config's.
            descriptors.clear()
            descriptors[key] = tuple(
                TensorDescriptor.from_tensor(t.view(heads * seq, d), [ATTENTION_BLOCK_M, d])
                for t in (q, k, v, o))
        # exp(x / sqrt(d)) = exp2(x * log2(e) / sqrt(d)): scores in base 2.
        scale_log2 = math.log2(math.e) / math.sqrt(d)
        tuned[(seq // ATTENTION_BLOCK_M, heads)](*descriptors[key], lse, seq, scale_log2,
                                                 HEAD_DIM=d, CAUSAL=causal)

    run.config = lambda: describe_config(getattr(tuned, "best_config", None))
    return run


def attention_fp8_runner():
    """A launcher of attention_fp8_fwd, autotuned per (seq, causal): q, k
    e4m3 [heads, seq, d], vt e4m3 [heads, d, seq], o bf16 [heads, seq, d],
    lse f32 [heads, seq], the descales floats."""
    tuned = triton.autotune(configs=attention_configs(), key=["seq", "CAUSAL"])(
        attention_fp8_fwd)
    descriptors = {}

    def run(q, k, vt, o, lse, causal, q_descale, k_descale, v_descale):
        heads, seq, d = q.shape
        if seq % ATTENTION_BLOCK_M:
            raise ValueError(f"the Triton FP8 attention needs seq a multiple of "
                             f"{ATTENTION_BLOCK_M}, got {seq}")
        key = tuple(t.data_ptr() for t in (q, k, vt, o)) + (q.shape,)
        if key not in descriptors:
            descriptors.clear()
            descriptors[key] = (
                TensorDescriptor.from_tensor(q.view(heads * seq, d), [ATTENTION_BLOCK_M, d]),
                TensorDescriptor.from_tensor(k.view(heads * seq, d), [ATTENTION_BLOCK_M, d]),
                TensorDescriptor.from_tensor(vt.view(heads * d, seq), [d, ATTENTION_BLOCK_M]),
                TensorDescriptor.from_tensor(o.view(heads * seq, d), [ATTENTION_BLOCK_M, d]))
        scale_log2 = q_descale * k_descale * math.log2(math.e) / math.sqrt(d)
        tuned[(seq // ATTENTION_BLOCK_M, heads)](*descriptors[key], lse, seq, scale_log2,
                                                 v_descale, HEAD_DIM=d, CAUSAL=causal)

    run.config = lambda: describe_config(getattr(tuned, "best_config", None))
    return run


def run_elementwise(x, y, out):
    n = x.numel()
    elementwise[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)


def run_softmax(x, out):
    rows, columns = x.shape
    softmax[(rows,)](x, out, columns, BLOCK=triton.next_power_of_2(columns))


def run_matmul(a, b, c):
    (m, k), n = a.shape, b.shape[1]
    bm, bn, bk = 128, 128, 64
    if m % bm or n % bn or k % bk:
        raise ValueError(f"the Triton matmul needs multiples of {bm}x{bn}x{bk}")
    matmul[(m // bm * (n // bn),)](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, GROUP_M=8,
                                   num_warps=8, num_stages=4)


def tma_persistent_runner(num_sms):
    """A launcher of matmul_tma_persistent, autotuned per (M, N, K), on
    `num_sms` programs at most. The descriptors are built once per operand
    set (each configuration's pre-hook sets its boxes), so that a timed
    launch is the kernel's."""
    tuned = triton.autotune(configs=tma_configs(), key=["M", "N", "K"])(matmul_tma_persistent)
    descriptors = {}

    def run(a, b, c):
        key = (a.data_ptr(), b.data_ptr(), c.data_ptr(), a.shape, b.shape)
        if key not in descriptors:
            # Placeholder boxes; set_block_shapes sets each config's.
            descriptors.clear()
            descriptors[key] = (TensorDescriptor.from_tensor(a, [128, 64]),
                                TensorDescriptor.from_tensor(b, [64, 128]),
                                TensorDescriptor.from_tensor(c, [128, 128]))
        a_desc, b_desc, c_desc = descriptors[key]
        (m, k), n = a.shape, b.shape[1]

        def grid(meta):
            return (min(num_sms, triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"])),)

        tuned[grid](a_desc, b_desc, c_desc, m, n, k, NUM_SMS=num_sms)

    run.config = lambda: describe_config(getattr(tuned, "best_config", None))
    return run


def fp8_runner(num_sms):
    """A launcher of matmul_fp8, autotuned per (M, N, K, scaling), on
    `num_sms` programs at most: run(a, bt, a_scales, b_scales, c, scaling),
    the scales as the module docstring says. The descriptors are built once
    per operand set, so that a timed launch is the kernel's."""
    tuned = triton.autotune(configs=fp8_configs(), key=["M", "N", "K", "SCALING"],
                            prune_configs_by={"early_config_prune": prune_fp8_configs})(
        matmul_fp8)
    descriptors = {}

    def run(a, bt, a_scales, b_scales, c, scaling):
        (m, k), n = a.shape, bt.shape[0]
        if scaling == "block" and (k % FP8_BLOCK or n % FP8_BLOCK):
            raise ValueError(f"the Triton FP8 GEMM's block scaling needs N and K multiples "
                             f"of {FP8_BLOCK}, got N={n}, K={k}")
        key = (a.data_ptr(), bt.data_ptr(), c.data_ptr(), a.shape, bt.shape)
        if key not in descriptors:
            # Placeholder boxes; set_fp8_block_shapes sets each config's.
            descriptors.clear()
            descriptors[key] = (TensorDescriptor.from_tensor(a, [128, FP8_BLOCK]),
                                TensorDescriptor.from_tensor(bt, [128, FP8_BLOCK]),
                                TensorDescriptor.from_tensor(c, [128, 128]))

        def grid(meta):
            return (min(num_sms, triton.cdiv(m, meta["BM"]) * triton.cdiv(n, meta["BN"])),)

        tuned[grid](*descriptors[key], a_scales, b_scales, m, n, k,
                    SCALING=FP8_SCALINGS[scaling], NUM_SMS=num_sms)

    run.config = lambda: describe_config(getattr(tuned, "best_config", None))
    return run


def describe_config(config):
    """A Triton config in a table note: 'BM=128 BN=256 ..., 4 stages, 8 warps'."""
    if config is None:
        return "not tuned"
    knobs = " ".join(f"{name}={value}" for name, value in config.kwargs.items())
    return f"{knobs}, {config.num_stages} stages, {config.num_warps} warps"


def load(num_sms):
    """(launchers by name, notes on the missing ones). num_sms: the GPU's
    multiprocessor count, the persistent GEMM's grid."""
    launchers = {"elementwise": run_elementwise, "softmax": run_softmax,
                 "matmul": run_matmul, "version": triton.__version__}
    notes = []
    if TensorDescriptor is None:
        notes.append(f"Triton {triton.__version__} has no "
                     "triton.tools.tensor_descriptor.TensorDescriptor (host-side TMA "
                     "descriptors): the persistent TMA GEMM, the fused attention "
                     "and the FP8 GEMM columns are empty.")
        return launchers, notes
    for name, what, make in (("matmul_tma_persistent", "the persistent TMA GEMM",
                              lambda: tma_persistent_runner(num_sms)),
                             ("attention", "the fused attention", attention_runner),
                             ("attention_fp8", "the FP8 attention", attention_fp8_runner),
                             ("matmul_fp8", "the FP8 GEMM", lambda: fp8_runner(num_sms))):
        try:
            launchers[name] = make()
        except Exception as error:  # noqa: BLE001: an autotuning API this Triton lacks
            notes.append(f"Triton {triton.__version__} cannot autotune {what} "
                         f"({type(error).__name__}: {error}): its column is empty.")
    return launchers, notes
