"""The fused attention forward for bf16 and f16, FlashAttention-3 style:
O = softmax(Q K^T / sqrt(d)) V and the LSE of each query row.

Block (i, h, b) computes query rows [128 i, +128) of query head h of
sequence b with three warpgroups:
 - warpgroup 0, the producer, keeps 24 registers and only issues TMA: Q
   once, then the K and V tiles of 128 keys of key/value head h / group into
   a ring of ``stages`` stages, K and V on barriers of their own;
 - warpgroups 1 and 2, the consumers, take 240 registers each. Each owns 64
   query rows: for key tile j it computes S_j = Q K_j^T with wgmma, the
   online softmax of S_j in registers, and O += P_j V_j with P_j, converted
   to the input type, as the wgmma's register A operand.
The consumers take turns issuing their MMAs (S_j together with the previous
tile's P V) on named barriers, so one's softmax overlaps the other's MMAs.
Key tiles past the sequence's end, and with the causal mask those after the
block's queries, are masked in the last tile a block reads; query rows past
the end are computed but not stored. See docs/AttentionWalkthrough.md.
"""
from __future__ import annotations

import math

from .. import control_flow as _cf
from .. import kernels as _kernels
from .. import pipeline as _pipeline
from .. import refs as _refs
from .. import values as _values
from ..builder import check_type
from . import config as _config
from .config import Config

__all__ = ["BLOCK_M", "BLOCK_N", "build", "check", "smem"]

BLOCK_M = 128                 # query rows per block
HALF_M = BLOCK_M // 2         # query rows per consumer
BLOCK_N = 128                 # keys per tile
PRODUCER_REGISTERS = 24
CONSUMER_REGISTERS = 240
# The named barriers on which consumer 0 and consumer 1 wait for their turn
# (the lowering keeps 1..3 for the block's 3 warpgroups).
FIRST_TURN, SECOND_TURN = 4, 5
DTYPES = ("bf16", "f16")
HEAD_DIMS = (64, 128)


def smem(config: Config) -> list:
    """The Q halves, the K and V rings, the O halves, and the barriers: Q
    landed, K and V landed per stage, stage released."""
    dtype, d, stages = config.element, config.head_dim, config.stages
    return [_kernels.SmemBuffer((2, HALF_M, d), dtype),
            _kernels.SmemBuffer((stages, BLOCK_N, d), dtype),
            _kernels.SmemBuffer((stages, BLOCK_N, d), dtype),
            _kernels.SmemBuffer((2, HALF_M, d), dtype),
            _kernels.Barriers(1, arrival_count=1),
            _kernels.Barriers(stages, arrival_count=1),
            _kernels.Barriers(stages, arrival_count=1),
            _kernels.Barriers(stages, arrival_count=2)]


def check(config: Config) -> None:
    """Raises ValueError for a configuration this kernel cannot run."""
    check_type(config, Config, "config")
    _config.check(config, HEAD_DIMS, DTYPES)
    needed = _kernels.smem_bytes(smem(config))
    if needed > _kernels.MAX_SMEM_BYTES:
        raise ValueError(
            f"{config.stages} stages of {BLOCK_N} keys at head_dim {config.head_dim} need "
            f"{needed / 1024:.1f} KiB of shared memory, more than the "
            f"{_kernels.MAX_SMEM_BYTES // 1024} KiB of a block; use fewer stages")


def sequence(config: Config, cu_seqlens, b):
    """(first token, length) of sequence ``b``, as i32 Scalars: static for
    a fixed length, read from ``cu_seqlens`` for a packed batch."""
    if not config.varlen:
        return b.astype("i32") * config.seq, _values.constant(config.seq, "i32")
    start = _refs.load(cu_seqlens[b])
    return start, _refs.load(cu_seqlens[b + 1]) - start


def build(config: Config) -> _kernels.Kernel:
    """The forward kernel for ``config``; ValueError for a bad one. Inputs
    q, k, v (and cu_seqlens for a packed batch), outputs o and lse, shaped
    as ``config.shapes()`` says."""
    check(config)
    dtype, d = config.element, config.head_dim
    shapes = config.shapes()
    tile_bytes = BLOCK_N * d * dtype.itemsize
    # exp(x / sqrt(d)) = exp2(x * log2(e) / sqrt(d)): scores in base 2.
    scale = math.log2(math.e) / math.sqrt(d)
    name = "attention_causal_fwd" if config.causal else "attention_fwd"
    inputs = [(shapes[n], dtype) for n in ("q", "k", "v")]
    if config.varlen:
        inputs.append((shapes["cu_seqlens"], "i32"))

    @_kernels.kernel(grid=(-(-config.seq // BLOCK_M), config.heads, config.batch),
                     block=(384, 1, 1), inputs=inputs,
                     outputs=[(shapes["o"], dtype), (shapes["lse"], "f32")],
                     smem=smem(config), name=name, flush_denormals=True)
    def attention(*refs):
        q, k, v = refs[:3]
        cu_seqlens = refs[3] if config.varlen else None
        (o, lse, q_smem, k_smem, v_smem, o_smem, q_full, k_full, v_full,
         empty) = refs[3 + config.varlen:]
        stages = config.stages
        q_block = _values.block_id("x")
        head = _values.block_id("y")
        # Each head is a column block of d in its (tokens, heads * d) array.
        q_column = head.astype("i32") * d
        kv_column = (head // config.group).astype("i32") * d
        b = _values.block_id("z")
        start, length = sequence(config, cu_seqlens, b)
        # Query rows of the block, from the sequence's first, as i32.
        q_first = q_block.astype("i32") * BLOCK_M
        key_tiles = (length + (BLOCK_N - 1)) // BLOCK_N
        # Causal: block i needs key tiles 0 .. i, and masks tile i.
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
                # Round r refills a stage the consumers released in round r - 1.
                _refs.wait(empty[stage], parity(j + stages))
                key = start + j.astype("i32") * BLOCK_N
                for ring, source, full in ((k_smem, k, k_full), (v_smem, v, v_full)):
                    _refs.arrive_expect_tx(full[stage], tile_bytes)
                    _refs.async_load(source, ring[stage], full[stage],
                                     indices=[key, kv_column], slice_lengths=[BLOCK_N, d])

        def consumer():
            _pipeline.set_max_registers(CONSUMER_REGISTERS, action="increase")
            half = wg - 1
            is_first = half == 0
            q_half, o_half = q_smem[half], o_smem[half]
            last = steps - 1
            # This consumer's first query row, from the sequence's first.
            row0 = q_first + half.astype("i32") * HALF_M

            def turn(wait: bool, step=None):
                """Waits for this consumer's turn, or passes the turn on to
                the other consumer."""
                def first():
                    if wait:
                        _refs.named_barrier(FIRST_TURN, 2)
                    else:
                        _refs.named_barrier(SECOND_TURN, 2, arrive=True)

                def second():
                    if wait:
                        _refs.named_barrier(SECOND_TURN, 2)
                    else:
                        # Consumer 0 passes one turn more: the one after
                        # consumer 1's last is nobody's.
                        _cf.if_(step < last)(
                            lambda: _refs.named_barrier(FIRST_TURN, 2, arrive=True))

                _cf.if_(is_first, otherwise=second)(first)

            # Consumer 0 takes the first turn.
            _cf.if_(half == 1)(lambda: _refs.named_barrier(FIRST_TURN, 2, arrive=True))
            _refs.wait(q_full[0], False)

            tile = (HALF_M, BLOCK_N)
            zero_o = _values.constant(0.0, "f32", (HALF_M, d))
            m0 = _values.constant(-math.inf, "f32", (HALF_M,))
            l0 = _values.constant(0.0, "f32", (HALF_M,))
            p0 = _values.constant(0.0, dtype, tile)

            @_cf.for_loop(0, steps, carry=(m0, l0, zero_o, p0))
            def carry(j, m, l, acc, p):
                stage = j % stages
                previous = j - 1
                previous_stage = previous % stages
                _refs.wait(k_full[stage], parity(j))
                turn(wait=True)
                s = _refs.wgmma(_values.constant(0.0, "f32", tile), q_half, k_smem[stage].T,
                                async_=True)

                def previous_pv():
                    _refs.wait(v_full[previous_stage], parity(previous))
                    return _refs.wgmma(acc, p, v_smem[previous_stage], async_=True)

                acc_pv = _cf.if_(j > 0, otherwise=lambda: acc, results=acc)(previous_pv)
                turn(wait=False, step=j)
                _refs.wgmma_wait(0)
                _cf.if_(j > 0)(lambda: _refs.arrive(empty[previous_stage]))

                # The online softmax, in base 2.
                scores = s * scale
                unmasked = scores
                key0 = j.astype("i32") * BLOCK_N
                scores = _cf.if_(j == last, otherwise=lambda: unmasked, results=unmasked)(
                    lambda: mask(config, unmasked, row0, key0, length))
                m_new = _values.maximum(m, scores.reduce("max", 1))
                p_new = _values.exp2(scores - _values.broadcast_in_dim(m_new, tile, [0]))
                alpha = _values.exp2(m - m_new)
                l_new = l * alpha + p_new.reduce("add", 1)
                acc_new = acc_pv * _values.broadcast_in_dim(alpha, (HALF_M, d), [0])
                return m_new, l_new, acc_new, p_new.astype(dtype)

            m, l, acc, p = carry
            # The last tile's P V.
            last_stage = last % stages
            _refs.wait(v_full[last_stage], parity(last))
            acc = _refs.wgmma(acc, p, v_smem[last_stage])
            _refs.arrive(empty[last_stage])

            # Epilogue: O / l and the LSE, one division per row. Rows past the
            # sequence's end are not stored: they may be the next sequence's.
            out = (acc * _values.broadcast_in_dim(1.0 / l, (HALF_M, d), [0])).astype(dtype)
            row_lse = (m + _values.log2(l)) * math.log(2)
            rows = _values.minimum(length - row0, HALF_M)
            token = start + row0

            lse_rows = lse[head, _refs.ds(token, HALF_M)] if config.varlen \
                else lse[b, head, _refs.ds(row0, HALF_M)]

            def whole():
                _refs.vector_store(out, o_half)
                _refs.async_store(o_half, o, indices=[token, q_column],
                                  slice_lengths=[HALF_M, d])
                _refs.vector_store(row_lse, lse_rows)

            def partial():
                o_rows = o[_refs.ds(token, HALF_M), _refs.ds(q_column, d)]
                _refs.vector_store(out, o_rows, valid=[rows, d])
                _refs.vector_store(row_lse, lse_rows, valid=[rows])

            _cf.if_(rows == HALF_M, otherwise=lambda: _cf.if_(rows > 0)(partial))(whole)

        _cf.if_(q_first < length)(lambda: _cf.if_(wg == 0, otherwise=consumer)(producer))

    return attention


def mask(config: Config, s, row0, key0, length):
    """The last key tile a block reads, with the keys each query row may not
    see at -inf: those past the sequence's end and, with the causal mask,
    those after the row. ``row0`` and ``key0`` are the tile's first query
    row and key from the sequence's first, ``length`` its length."""
    shape = s.shape
    key = _values.iota(shape, "i32", 1) + key0
    visible = key < length
    if config.causal:
        visible = visible & (key <= _values.iota(shape, "i32", 0) + row0)
    return _values.select(visible, s, -math.inf)
