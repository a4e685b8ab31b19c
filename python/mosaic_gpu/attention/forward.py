"""The fused attention forward for bf16 and f16, FlashAttention-3 style:
O = softmax(Q K^T / sqrt(d)) V and the LSE of each query row.

Block (i, h, b) computes query rows [128 i, +128) of query head h of
sequence b with three warpgroups:
 - warpgroup 0, the producer, keeps 24 registers and only issues TMA: Q
   once, then the K and V tiles of ``block_n`` keys of key/value head
   h / group into rings of ``stages`` stages; K and V each have a landed
   and a released barrier per stage, so K's stage is refilled as soon as
   both consumers' S read it;
 - warpgroups 1 and 2, the consumers, take 240 registers each. Each owns 64
   query rows. Iteration j issues S_j = Q K_j^T, then O += P_{j-1} V_{j-1}
   (P in registers, the wgmma's A operand), waits for S_j only and
   computes the online softmax of S_j (one FMA and one ex2 per score)
   while P_{j-1} V_{j-1} still runs (FlashAttention-3's intra-warpgroup
   overlap); iteration j + 1 waits for it. S_0 and its softmax come before
   the loop, the last P V after it.
The consumers take turns issuing their MMAs on named barriers (ping-pong),
so one's softmax also overlaps the other's MMAs. Keys past the
sequence's end, and with the causal mask those after a query, are masked;
query rows past the end are computed but not stored. Each
consumer stages its O in its own half of Q's buffer, free once its last S
completed. See docs/AttentionWalkthrough.md.
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

__all__ = ["BLOCK_M", "BLOCK_N", "DEFAULT_BLOCK_N", "build", "check", "default_block_n", "smem"]

BLOCK_M = 128                 # query rows per block
HALF_M = BLOCK_M // 2         # query rows per consumer
BLOCK_N = 128                 # keys per tile, unless the head dim says otherwise
# Registers per thread, set with setmaxnreg: the producer keeps the least a
# warpgroup may have (its SASS names fewer than 16), the consumers split
# the rest: 24 + 2 x 240 = 504 = 3 x 168, the registers ptxas gives each of
# the 384 threads at entry (65536 / 384, rounded down to 8). The tiles
# below are sized to the consumers' 240 (their SASS names up to R236).
PRODUCER_REGISTERS = 24
CONSUMER_REGISTERS = 240
# The named barriers on which consumer 0 and consumer 1 wait for their turn
# (the lowering keeps 1..3 for the block's 3 warpgroups).
FIRST_TURN, SECOND_TURN = 4, 5
DTYPES = ("bf16", "f16")
HEAD_DIMS = (64, 128, 256)
# Keys per tile, by head dim: the widest power of two (no partial last tile
# at the usual sequence lengths) for which ptxas allocates the consumer
# loop in 240 registers without spills. During the softmax of S_j a
# consumer holds S_j (64 x block_n f32: block_n / 2 registers a thread),
# P_{j-1} (block_n / 4, the operand of the P V still in flight) and O
# (head_dim / 2, its accumulator), plus ptxas's temporaries: 160 registers
# at head dim 128, 176 at 256, 128 at 64. FlashAttention-3's wider tiles
# spill with that overlap (head dim 128 at 176 keys: 760 bytes; 256 at 80:
# 72 bytes); the counts are in docs/AttentionWalkthrough.md.
DEFAULT_BLOCK_N = {64: BLOCK_N, 128: BLOCK_N, 256: 64}


def default_block_n(config: Config) -> int:
    """The keys per tile ``build`` uses unless told otherwise."""
    return DEFAULT_BLOCK_N[config.head_dim]


def smem(config: Config, block_n: int | None = None) -> list:
    """The Q halves (later O's), the K and V rings, and the barriers: Q,
    then each stage's K and V, landed (one arrival and the TMA bytes);
    each stage's K, then V, released (one arrival per consumer)."""
    dtype, d, stages = config.element, config.head_dim, config.stages
    block_n = block_n or default_block_n(config)
    return [_kernels.SmemBuffer((2, HALF_M, d), dtype),
            _kernels.SmemBuffer((stages, block_n, d), dtype),
            _kernels.SmemBuffer((stages, block_n, d), dtype),
            _kernels.Barriers(1 + 2 * stages, arrival_count=1),
            _kernels.Barriers(2 * stages, arrival_count=2)]


def check(config: Config, block_n: int | None = None) -> None:
    """Raises ValueError for a configuration this kernel cannot run."""
    check_type(config, Config, "config")
    _config.check(config, HEAD_DIMS, DTYPES)
    if block_n is not None:
        if not isinstance(block_n, int) or isinstance(block_n, bool):
            raise TypeError(f"`block_n` must be an int, got {block_n!r}")
        # P V's reduction runs over the keys in steps of 16; S's wgmma is
        # at most 256 wide.
        if not (16 <= block_n <= 256 and block_n % 16 == 0):
            raise ValueError(f"`block_n` must be a multiple of 16 in 16..256, got {block_n}")
    block_n = block_n or default_block_n(config)
    needed = _kernels.smem_bytes(smem(config, block_n))
    if needed > _kernels.MAX_SMEM_BYTES:
        raise ValueError(
            f"{config.stages} stages of {block_n} keys at head_dim {config.head_dim} need "
            f"{needed / 1024:.1f} KiB of shared memory, more than the "
            f"{_kernels.MAX_SMEM_BYTES // 1024} KiB of a block; use fewer stages or a smaller "
            "block_n")


def sequence(config: Config, cu_seqlens, b):
    """(first token, length) of sequence ``b``, as i32 Scalars: static for
    a fixed length, read from ``cu_seqlens`` for a packed batch."""
    if not config.varlen:
        return b.astype("i32") * config.seq, _values.constant(config.seq, "i32")
    start = _refs.load(cu_seqlens[b])
    return start, _refs.load(cu_seqlens[b + 1]) - start


def build(config: Config, *, block_n: int | None = None) -> _kernels.Kernel:
    """The forward kernel for ``config``; ValueError for a bad one. Inputs
    q, k, v (and cu_seqlens for a packed batch), outputs o and lse, shaped
    as ``config.shapes()`` says. ``block_n``, the keys per tile, defaults to
    ``default_block_n(config)``."""
    check(config, block_n)
    block_n = block_n or default_block_n(config)
    dtype, d, stages = config.element, config.head_dim, config.stages
    shapes = config.shapes()
    tile_bytes = block_n * d * dtype.itemsize
    # exp(x / sqrt(d)) = exp2(x * log2(e) / sqrt(d)): scores in base 2.
    scale = math.log2(math.e) / math.sqrt(d)
    name = "attention_causal_fwd" if config.causal else "attention_fwd"
    inputs = [(shapes[n], dtype) for n in ("q", "k", "v")]
    if config.varlen:
        inputs.append((shapes["cu_seqlens"], "i32"))

    @_kernels.kernel(grid=(-(-config.seq // BLOCK_M), config.heads, config.batch),
                     block=(384, 1, 1), inputs=inputs,
                     outputs=[(shapes["o"], dtype), (shapes["lse"], "f32")],
                     smem=smem(config, block_n), name=name, flush_denormals=True)
    def attention(*refs):
        q, k, v = refs[:3]
        cu_seqlens = refs[3] if config.varlen else None
        o, lse, q_smem, k_smem, v_smem, landed, released = refs[3 + config.varlen:]
        q_full = landed[0]
        k_full, v_full = landed[_refs.ds(1, stages)], landed[_refs.ds(1 + stages, stages)]
        k_empty, v_empty = released[_refs.ds(0, stages)], released[_refs.ds(stages, stages)]
        q_block = _values.block_id("x")
        head = _values.block_id("y")
        # Each head is a column block of d in its (tokens, heads * d) array.
        q_column = head.astype("i32") * d
        kv_column = (head // config.group).astype("i32") * d
        b = _values.block_id("z")
        start, length = sequence(config, cu_seqlens, b)
        # Query rows of the block, from the sequence's first, as i32.
        q_first = q_block.astype("i32") * BLOCK_M
        key_tiles = (length + (block_n - 1)) // block_n
        if config.causal:
            # The block's last query sees keys up to q_first + BLOCK_M - 1;
            # tiles from the one holding key q_first on cross the diagonal.
            visible_tiles = (q_first + (BLOCK_M + block_n - 1)) // block_n
            tiles = _values.minimum(key_tiles, visible_tiles)
            first_masked = q_first // block_n
        else:
            tiles = key_tiles
            first_masked = key_tiles - 1
        # Tile numbers are i32 (the loops' index variables converted): an
        # index (i64) kept across the loop takes two registers.
        steps = tiles.astype("index")
        wg = _values.warpgroup_id()

        def parity(step):
            return (step // stages).astype("i1")

        def producer():
            _pipeline.set_max_registers(PRODUCER_REGISTERS, action="decrease")
            _refs.arrive_expect_tx(q_full, 2 * HALF_M * d * dtype.itemsize)
            for half in range(2):
                _refs.async_load(q, q_smem[half], q_full,
                                 indices=[start + q_first + half * HALF_M, q_column],
                                 slice_lengths=[HALF_M, d])

            def load(ring, source, full, empty, j):
                """Loads tile j of K or V into its stage once the consumers
                released it: round r refills what they released in round
                r - 1."""
                stage = j % stages
                _refs.wait(empty[stage], parity(j + stages))
                _refs.arrive_expect_tx(full[stage], tile_bytes)
                _refs.async_load(source, ring[stage], full[stage],
                                 indices=[start + j * block_n, kv_column],
                                 slice_lengths=[block_n, d])

            # K runs one tile ahead of V, in the order the consumers read
            # them (iteration j reads K_j and V_{j-1}): loaded after V_j,
            # K_{j+1} would wait for V_j's stage, which the consumers release
            # later than K's.
            load(k_smem, k, k_full, k_empty, _values.constant(0, "i32"))

            @_cf.for_loop(1, steps)
            def _(j):
                j = j.astype("i32")
                load(k_smem, k, k_full, k_empty, j)
                load(v_smem, v, v_full, v_empty, j - 1)

            load(v_smem, v, v_full, v_empty, tiles - 1)

        def consumer():
            _pipeline.set_max_registers(CONSUMER_REGISTERS, action="increase")
            half = wg - 1
            is_first = half == 0
            q_half = q_smem[half]
            last = tiles - 1
            # This consumer's first query row, from the sequence's first.
            row0 = q_first + half.astype("i32") * HALF_M
            tile = (HALF_M, block_n)

            def turn(wait: bool, step=None):
                take_turn(is_first, last, wait, step)

            def issue_scores(j):
                """Waits for K_j and this consumer's turn, and issues
                S_j = Q K_j^T (in flight when it returns)."""
                stage = j % stages
                _refs.wait(k_full[stage], parity(j))
                turn(wait=True)
                return _refs.wgmma(_values.constant(0.0, "f32", tile), q_half,
                                   k_smem[stage].T, async_=True)

            def softmax(j, s, m=None):
                """Tile j's masked scores ``s`` (unscaled), the row maxima
                ``m`` so far (None for the first tile): the new maxima, P
                (f32) and the factor the old O and row sums shrink by (None
                for the first tile)."""
                key0 = j * block_n
                s = _cf.if_(j >= first_masked, otherwise=lambda: s, results=s)(
                    lambda: mask(config, s, row0, key0, length))
                row_max = s.reduce("max", 1)
                m_new = row_max if m is None else _values.maximum(m, row_max)
                # exp2(s * scale - m_new * scale) is one FMA and one ex2
                # per score; the maxima are taken unscaled (scale > 0).
                shift = -(m_new * scale)
                p = _values.exp2(_values.fma(s, scale, _values.broadcast_in_dim(shift, tile, [0])))
                alpha = None if m is None else _values.exp2(_values.fma(m, scale, shift))
                return m_new, p, alpha

            # Consumer 0 takes the first turn.
            give_first_turn(half)
            _refs.wait(q_full, False)

            # Tile 0: S_0 alone, and its softmax.
            zero = _values.constant(0, "i32")
            s = issue_scores(zero)
            turn(wait=False, step=zero)
            _refs.wgmma_wait(0)
            _refs.arrive(k_empty[0])
            m, p, _ = softmax(zero, s)
            l0 = p.reduce("add", 1)
            zero_o = _values.constant(0.0, "f32", (HALF_M, d))
            one = _values.constant(1.0, "f32", (HALF_M,))

            def finish_pv(j, acc, p, alpha):
                """Waits for P_{j-2} V_{j-2} (issued one iteration earlier,
                it ran through the softmax of S_{j-1}), releases its V and
                returns O rescaled by the softmax's factor and P_{j-1} in
                the input type, the operands of P_{j-1} V_{j-1}."""
                _refs.wgmma_wait(0)
                _cf.if_(j > 1)(lambda: _refs.arrive(v_empty[(j - 2) % stages]))
                return acc * _values.broadcast_in_dim(alpha, (HALF_M, d), [0]), p.astype(dtype)

            def previous_pv(j, acc, p):
                """Waits for V_{j-1} and issues O += P_{j-1} V_{j-1} (in
                flight when it returns)."""
                previous = j - 1
                _refs.wait(v_full[previous % stages], parity(previous))
                return _refs.wgmma(acc, p, v_smem[previous % stages], async_=True)

            # P_{j-1} V_{j-1} is waited for at the top of iteration j + 1, not
            # after the softmax of S_j: ptxas moves a wgmma wait up within its
            # basic block (to the nearest mbarrier arrive), ahead of half to
            # all of the exponentials, but not across the loop's back edge
            # (docs/AttentionWalkthrough.md). P crosses the back edge in f32:
            # the 16-bit P_{j-1} is the in-flight wgmma's operand until then,
            # and a 16-bit carry would be written into its registers.
            @_cf.for_loop(1, steps, carry=(m, l0, zero_o, p, one))
            def carry(j, m, l, acc, p, alpha):
                j = j.astype("i32")
                stage = j % stages
                acc, p = finish_pv(j, acc, p, alpha)
                s = issue_scores(j)
                acc = previous_pv(j, acc, p)
                turn(wait=False, step=j)
                # S_j, issued first, is complete; P_{j-1} V_{j-1} may run on.
                _refs.wgmma_wait(1)
                _refs.arrive(k_empty[stage])
                m_new, p_new, alpha = softmax(j, s, m)
                l_new = l * alpha + p_new.reduce("add", 1)
                return m_new, l_new, acc, p_new, alpha

            m, l, acc, p, alpha = carry
            # The last tile's P V.
            acc, p = finish_pv(tiles, acc, p, alpha)
            last_stage = last % stages
            _refs.wait(v_full[last_stage], parity(last))
            acc = _refs.wgmma(acc, p, v_smem[last_stage])
            _refs.arrive(v_empty[last_stage])

            # Epilogue: O / l and the LSE, one division per row. Rows past the
            # sequence's end are not stored: they may be the next sequence's.
            # O is staged in this consumer's Q half, which only its own S
            # wgmmas read, all complete.
            out = (acc * _values.broadcast_in_dim(1.0 / l, (HALF_M, d), [0])).astype(dtype)
            row_lse = _values.fma(m, scale, _values.log2(l)) * math.log(2)
            store_output(config, out, row_lse, o, lse, q_half, head=head, b=b, start=start,
                         row0=row0, length=length, column=q_column)

        _cf.if_(q_first < length)(lambda: _cf.if_(wg == 0, otherwise=consumer)(producer))

    return attention


def store_output(config: Config, out, row_lse, o, lse, staging, *, head, b, start, row0,
                 length, column) -> None:
    """Stores a consumer's 64 rows of O (its column block at ``column``) and
    their LSE: a tile within its sequence through ``staging`` (shared
    memory) and TMA, or straight from registers when ``staging`` is None; a
    tile that reaches past the sequence's end from registers with bounded
    stores, since the rows past it may be the next sequence's. ``row0`` is
    the tile's first row from the sequence's first, which starts at token
    ``start``."""
    d = config.head_dim
    rows = _values.minimum(length - row0, HALF_M)
    token = start + row0
    lse_rows = lse[head, _refs.ds(token, HALF_M)] if config.varlen \
        else lse[b, head, _refs.ds(row0, HALF_M)]

    def whole():
        _refs.vector_store(out, staging)
        _refs.async_store(staging, o, indices=[token, column], slice_lengths=[HALF_M, d])
        _refs.vector_store(row_lse, lse_rows)

    def partial():
        _refs.vector_store(out, o[_refs.ds(token, HALF_M), _refs.ds(column, d)], valid=[rows, d])
        _refs.vector_store(row_lse, lse_rows, valid=[rows])

    if staging is None:
        _cf.if_(rows > 0)(partial)
    else:
        _cf.if_(rows == HALF_M, otherwise=lambda: _cf.if_(rows > 0)(partial))(whole)


def take_turn(is_first, last, wait: bool, step=None) -> None:
    """The two consumers' ping-pong on named barriers FIRST_TURN and
    SECOND_TURN: with ``wait``, waits for this consumer's turn to issue its
    MMAs; else passes the turn to the other consumer. Every phase needs
    both consumers' 256 threads, so arrivals and waits pair one for one:
    consumer 1 does not pass on its ``last`` step's turn (the one after it
    is nobody's)."""
    def first():
        if wait:
            _refs.named_barrier(FIRST_TURN, 2)
        else:
            _refs.named_barrier(SECOND_TURN, 2, arrive=True)

    def second():
        if wait:
            _refs.named_barrier(SECOND_TURN, 2)
        else:
            _cf.if_(step < last)(lambda: _refs.named_barrier(FIRST_TURN, 2, arrive=True))

    _cf.if_(is_first, otherwise=second)(first)


def give_first_turn(half) -> None:
    """Consumer 1 hands consumer 0 the first turn."""
    _cf.if_(half == 1)(lambda: _refs.named_barrier(FIRST_TURN, 2, arrive=True))


def mask(config: Config, s, row0, key0, length):
    """A key tile with the keys each query row may not see at -inf: those
    past the sequence's end and, with the causal mask, those after the row.
    ``row0`` and ``key0`` are the tile's first query row and key from the
    sequence's first, ``length`` its length."""
    shape = s.shape
    key = _values.iota(shape, "i32", 1) + key0
    visible = key < length
    if config.causal:
        visible = visible & (key <= _values.iota(shape, "i32", 0) + row0)
    return _values.select(visible, s, -math.inf)
