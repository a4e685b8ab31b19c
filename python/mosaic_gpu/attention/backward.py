"""The fused attention backward for bf16 and f16 (the FlashAttention-2/3
algorithm): dQ, dK and dV from Q, K, V, O, dO and the forward's LSE.

Three kernels run in order (``run`` launches them):
 1. ``preprocess``: D = rowsum(dO * O) per query row and head, f32, into a
    workspace whose sequences start at whole blocks of 64 columns.
 2. ``main``: block (j, g, b) owns the 128 keys [128 j, +128) of key/value
    head g of sequence b, and keeps their K and V in shared memory. Its
    producer warpgroup streams the tiles of 64 query rows of every query
    head of the group (Q, dO, LSE and D) through a ring; each of its two
    consumer warpgroups owns 64 of the keys and, per query tile, recomputes
    the probabilities transposed, P^T = exp(K Q^T / sqrt(d) - LSE), then
        dP^T = V dO^T,   dS^T = P^T * (dP^T - D),
        dV += P^T dO,    dK += dS^T Q,    dQ_partial = dS K,
    with dV and dK accumulated in registers across all query tiles (so the
    grouped heads' sum costs nothing) and dQ_partial added into an f32 dQ
    workspace by a TMA reduce-add: every key block contributes to every
    query row, and atomic adds let the blocks run in any order at the cost
    of an f32 workspace and an order of summation that varies run to run.
    At head dim 256 a block owns 64 keys and the consumers split d instead
    (``Tiling``).
 3. ``postprocess``: dQ = the workspace / sqrt(d), in the input type.
Computing P^T (keys as rows) rather than P puts P^T and dS^T in the wgmma
accumulator layout, which is the register A operand layout for 16-bit types:
dV and dK need no shuffle. dQ needs dS with queries as rows, so dS^T goes
through shared memory and the wgmma reads it transposed. See
docs/AttentionWalkthrough.md.
"""
from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

from .. import control_flow as _cf
from .. import kernels as _kernels
from .. import layouts as _layouts
from .. import pipeline as _pipeline
from .. import refs as _refs
from .. import values as _values
from ..builder import check_type
from . import config as _config
from .config import Config
from .forward import sequence

__all__ = ["BLOCK_M", "BLOCK_N", "Backward", "Tiling", "build", "check", "padded_lse",
           "padded_seq", "run", "smem", "stats_shape", "tiling", "workspace_shape"]

BLOCK_N = 128                 # keys per block (head dims 64 and 128)
BLOCK_M = 64                  # query rows per step (head dims 64 and 128)
ROWS = 64                     # token rows per pre- and post-processing block
# The named barriers on which the consumers say their dS^T is written, and
# that they are done reading each other's K (the lowering keeps 1..3 for
# the block's 3 warpgroups).
DS_WRITTEN, KEYS_READ = 4, 5
PRODUCER_REGISTERS = 24
CONSUMER_REGISTERS = 240
DTYPES = ("bf16", "f16")
HEAD_DIMS = (64, 128, 256)
LOG2E = math.log2(math.e)


class Tiling(NamedTuple):
    """How the main kernel divides a block's work between its consumers.
    ``keys`` per block, ``queries`` rows per step; ``split`` is 'keys' (each
    consumer owns half the keys and all of d: dK and dV of 64 x d each) or
    'columns' (each owns half of d for all the keys and recomputes the
    scores: at d = 256, 64 keys x 256 of dK and dV would take 256 registers
    a thread)."""
    keys: int
    queries: int
    split: str

    @property
    def consumer_keys(self) -> int:
        return self.keys // 2 if self.split == "keys" else self.keys


def tiling(config: Config) -> Tiling:
    """The main kernel's tiling for ``config``'s head dim."""
    # At d = 256, 32 query rows a step keep the ring and dQ's staging in
    # shared memory; dQ is then computed transposed (its 32 rows are too few
    # for a wgmma's M).
    return Tiling(64, 32, "columns") if config.head_dim > 128 else Tiling(BLOCK_N, BLOCK_M, "keys")


class Backward(NamedTuple):
    """The three kernels of the backward, in launch order."""
    preprocess: _kernels.Kernel
    main: _kernels.Kernel
    postprocess: _kernels.Kernel


def padded_seq(config: Config) -> int:
    """Each sequence's columns in the per-query workspaces (the LSE, D and,
    at head dim 256, dQ^T): its longest length rounded up to whole blocks of
    ROWS, so that every tile a kernel reads starts at a multiple of 32
    columns. TMA is given no box whose innermost coordinate is not 16-byte
    aligned: whether Hopper faults on one is not settled
    (docs/RationaleEmulator.md, "Tensor copies across the tensor's edge")."""
    return -(-config.seq // ROWS) * ROWS


def stats_shape(config: Config) -> tuple[int, int]:
    """The LSE and D workspaces: (heads, batch * padded_seq) f32, sequence b
    at columns [b * padded_seq, +padded_seq)."""
    return config.heads, config.batch * padded_seq(config)


def workspace_shape(config: Config) -> tuple[int, int]:
    """The f32 dQ workspace: dQ's shape, or at head dim 256 (dQ computed
    transposed) dQ^T's, (heads * d, batch * padded_seq)."""
    if tiling(config).split == "keys":
        return config.shapes()["q"]
    return config.heads * config.head_dim, config.batch * padded_seq(config)


def smem(config: Config) -> list:
    """The main kernel's shared memory: the block's K and V halves, the ring
    of Q, dO, LSE and D tiles, two alternating pairs of the consumers' dS^T,
    each consumer's half of the dQ partial, and the barriers: K and V
    landed, a ring stage landed, a stage released."""
    dtype, d, stages = config.element, config.head_dim, config.stages
    tiles = tiling(config)
    keys, queries = tiles.consumer_keys, tiles.queries
    if tiles.split == "keys":
        # Two alternating pairs of dS^T; dQ's (queries, d / 2) halves.
        ds, dq = (2, 2, keys, queries), (2, queries, d // 2)
    else:
        # Each consumer's own dS^T; dQ^T's (d / 2, queries) halves.
        ds, dq = (2, keys, queries), (2, d // 2, queries)
    halves = 2 if tiles.split == "keys" else 1
    return [_kernels.SmemBuffer((halves, tiles.keys // halves, d), dtype),
            _kernels.SmemBuffer((halves, tiles.keys // halves, d), dtype),
            _kernels.SmemBuffer((stages, queries, d), dtype),
            _kernels.SmemBuffer((stages, queries, d), dtype),
            _kernels.SmemBuffer((stages, queries), "f32"),
            _kernels.SmemBuffer((stages, queries), "f32"),
            _kernels.SmemBuffer(ds, dtype),
            _kernels.SmemBuffer(dq, "f32"),
            _kernels.Barriers(1, arrival_count=1),
            _kernels.Barriers(stages, arrival_count=1),
            _kernels.Barriers(stages, arrival_count=2)]


def check(config: Config) -> None:
    """Raises ValueError for a configuration the backward cannot run."""
    check_type(config, Config, "config")
    _config.check(config, HEAD_DIMS, DTYPES)
    needed = _kernels.smem_bytes(smem(config))
    if needed > _kernels.MAX_SMEM_BYTES:
        raise ValueError(
            f"the backward's {config.stages} stages of {tiling(config).queries} query rows at "
            f"head_dim {config.head_dim} need {needed / 1024:.1f} KiB of shared memory, more "
            f"than the {_kernels.MAX_SMEM_BYTES // 1024} KiB of a block; use fewer stages")


def _preprocess(config: Config) -> _kernels.Kernel:
    """D[h, b, r] = sum_i dO O over head h's columns, f32, for each query
    row r of sequence b, into the (heads, batch * padded_seq) workspace. The
    rows past a sequence's end hold whatever follows it (TMA's zeros past
    the array): the main kernel masks them."""
    dtype, d = config.element, config.head_dim
    shapes = config.shapes()
    width = padded_seq(config)
    inputs = [(shapes["o"], dtype), (shapes["o"], dtype)]
    if config.varlen:
        inputs.append((shapes["cu_seqlens"], "i32"))

    @_kernels.kernel(grid=(width // ROWS, config.heads, config.batch), block=(128, 1, 1),
                     inputs=inputs, outputs=[(stats_shape(config), "f32")],
                     smem=[_kernels.SmemBuffer((2, ROWS, d), dtype),
                           _kernels.Barriers(1, arrival_count=1)],
                     name="attention_bwd_preprocess")
    def preprocess(*refs):
        o, do = refs[:2]
        cu_seqlens = refs[2] if config.varlen else None
        delta, tiles, landed = refs[2 + config.varlen:]
        row = _values.block_id("x").astype("i32") * ROWS
        head = _values.block_id("y")
        b = _values.block_id("z").astype("i32")
        start, _ = sequence(config, cu_seqlens, b)
        _refs.arrive_expect_tx(landed[0], 2 * ROWS * d * dtype.itemsize)
        for i, source in enumerate((o, do)):
            _refs.async_load(source, tiles[i], landed[0],
                             indices=[start + row, head.astype("i32") * d],
                             slice_lengths=[ROWS, d])
        _refs.wait(landed[0], False)
        product = _refs.vector_load(tiles[0]).astype("f32") * \
            _refs.vector_load(tiles[1]).astype("f32")
        _refs.vector_store(product.reduce("add", 1),
                           delta[head, _refs.ds(b * width + row, ROWS)])

    return preprocess


def _postprocess(config: Config) -> _kernels.Kernel:
    """dQ = the f32 workspace / sqrt(d), in the input type."""
    if tiling(config).split == "columns":
        return _postprocess_transposed(config)
    dtype, d = config.element, config.head_dim
    shape = config.shapes()["q"]
    scale = 1 / math.sqrt(d)

    @_kernels.kernel(grid=(-(-config.total_tokens // ROWS), config.heads, 1),
                     block=(128, 1, 1), inputs=[(shape, "f32")], outputs=[(shape, dtype)],
                     smem=[_kernels.SmemBuffer((ROWS, d), "f32"),
                           _kernels.SmemBuffer((ROWS, d), dtype),
                           _kernels.Barriers(1, arrival_count=1)],
                     name="attention_bwd_postprocess")
    def postprocess(accumulated, dq, accumulated_tile, dq_tile, landed):
        indices = [_values.block_id("x").astype("i32") * ROWS,
                   _values.block_id("y").astype("i32") * d]
        _refs.arrive_expect_tx(landed[0], ROWS * d * 4)
        _refs.async_load(accumulated, accumulated_tile, landed[0], indices=indices,
                         slice_lengths=[ROWS, d])
        _refs.wait(landed[0], False)
        _refs.vector_store((_refs.vector_load(accumulated_tile) * scale).astype(dtype), dq_tile)
        # TMA clips the rows past the last token.
        _refs.async_store(dq_tile, dq, indices=indices, slice_lengths=[ROWS, d])

    return postprocess


def _postprocess_transposed(config: Config) -> _kernels.Kernel:
    """dQ = (the f32 dQ^T workspace / sqrt(d))^T, in the input type, per
    tile of 64 query rows of a sequence. The transpose is a wgmma: dQ = I
    (dQ^T)^T, reading the (d, 64) tile of dQ^T, rounded to the input type,
    as a K-major B; multiplying by the identity is exact, so this is the
    rounding the plain postprocess does. A tile that reaches past its
    sequence's end is stored from registers, bounded: the rows past it are
    the next sequence's."""
    dtype, d = config.element, config.head_dim
    scale = 1 / math.sqrt(d)
    width = padded_seq(config)
    inputs = [(workspace_shape(config), "f32")]
    if config.varlen:
        inputs.append((config.shapes()["cu_seqlens"], "i32"))

    @_kernels.kernel(grid=(width // ROWS, config.heads, config.batch),
                     block=(128, 1, 1), inputs=inputs,
                     outputs=[(config.shapes()["q"], dtype)],
                     smem=[_kernels.SmemBuffer((d, ROWS), "f32"),
                           _kernels.SmemBuffer((d, ROWS), dtype),
                           _kernels.SmemBuffer((ROWS, ROWS), dtype),
                           _kernels.SmemBuffer((ROWS, d), dtype),
                           _kernels.Barriers(1, arrival_count=1)],
                     name="attention_bwd_postprocess")
    def postprocess(*refs):
        accumulated = refs[0]
        cu_seqlens = refs[1] if config.varlen else None
        dq, transposed_tile, rounded_tile, identity, dq_tile, landed = refs[1 + config.varlen:]
        row = _values.block_id("x").astype("i32") * ROWS
        column = _values.block_id("y").astype("i32") * d
        b = _values.block_id("z").astype("i32")
        start, length = sequence(config, cu_seqlens, b)
        rows = _values.minimum(length - row, ROWS)

        def convert():
            _refs.arrive_expect_tx(landed[0], ROWS * d * 4)
            _refs.async_load(accumulated, transposed_tile, landed[0],
                             indices=[column, b * width + row], slice_lengths=[d, ROWS])
            shape = (ROWS, ROWS)
            diagonal = _values.iota(shape, "i32", 0) == _values.iota(shape, "i32", 1)
            _refs.vector_store(
                _values.select(diagonal, 1.0, _values.constant(0.0, dtype, shape)), identity)
            _refs.wait(landed[0], False)
            _refs.vector_store((_refs.vector_load(transposed_tile) * scale).astype(dtype),
                               rounded_tile)
            result = _refs.wgmma(_values.constant(0.0, "f32", (ROWS, d)), identity,
                                 rounded_tile.T).astype(dtype)

            def whole():
                _refs.vector_store(result, dq_tile)
                _refs.async_store(dq_tile, dq, indices=[start + row, column],
                                  slice_lengths=[ROWS, d])

            def partial():
                _refs.vector_store(result, dq[_refs.ds(start + row, ROWS), _refs.ds(column, d)],
                                   valid=[rows, d])

            _cf.if_(rows == ROWS, otherwise=partial)(whole)

        _cf.if_(rows > 0)(convert)

    return postprocess


def _main(config: Config) -> _kernels.Kernel:
    dtype, d, stages, group = config.element, config.head_dim, config.stages, config.group
    tiles = tiling(config)
    by_keys = tiles.split == "keys"
    queries, consumer_keys = tiles.queries, tiles.consumer_keys
    # The d columns of dK, dV and dQ a consumer computes.
    columns_owned = d if by_keys else d // 2
    shapes = config.shapes()
    width = padded_seq(config)
    # P = exp(S / sqrt(d) - LSE) = exp2((S - LSE sqrt(d)) log2(e) / sqrt(d)).
    score_scale = LOG2E / math.sqrt(d)
    gradient_scale = 1 / math.sqrt(d)
    inputs = [(shapes[n], dtype) for n in ("q", "k", "v", "o")]
    inputs[3] = (shapes["o"], dtype)  # dO, shaped as O
    # The LSE and D, each sequence's rows at whole blocks (``run`` lays out
    # the LSE so, the preprocess D).
    inputs += [(stats_shape(config), "f32"), (stats_shape(config), "f32")]
    if config.varlen:
        inputs.append((shapes["cu_seqlens"], "i32"))
    outputs = [(shapes["k"], dtype), (shapes["v"], dtype), (workspace_shape(config), "f32")]
    name = "attention_causal_bwd" if config.causal else "attention_bwd"

    @_kernels.kernel(grid=(-(-config.seq // tiles.keys), config.key_heads, config.batch),
                     block=(384, 1, 1), inputs=inputs, outputs=outputs, smem=smem(config),
                     name=name, flush_denormals=True)
    def attention_bwd(*refs):
        q, k, v, do, lse, delta = refs[:6]
        cu_seqlens = refs[6] if config.varlen else None
        (dk, dv, dq_accumulated, k_smem, v_smem, q_smem, do_smem, lse_smem, delta_smem,
         ds_smem, dq_smem, kv_full, q_full, empty) = refs[6 + config.varlen:]
        key_block = _values.block_id("x")
        kv_head = _values.block_id("y")
        b = _values.block_id("z").astype("i32")
        start, length = sequence(config, cu_seqlens, b)
        # The block's first key, from the sequence's first, as i32.
        key0 = key_block.astype("i32") * tiles.keys
        query_tiles = (length + (queries - 1)) // queries
        # Causal: query rows before the block's first key see none of its keys.
        first_tile = key0 // queries if config.causal else _values.constant(0, "i32")
        tile_count = query_tiles - first_tile
        steps = (tile_count * group).astype("index")
        kv_column = kv_head.astype("i32") * d
        wg = _values.warpgroup_id()

        def parity(step):
            return (step // stages).astype("i64").astype("i1")

        def tile_of(step):
            """The query head and the first query row (from the sequence's
            first) of step ``step``: the group's heads one after another."""
            step = step.astype("i32")
            head = kv_head.astype("i32") * group + step // tile_count
            return head, (first_tile + step % tile_count) * queries

        def producer():
            _pipeline.set_max_registers(PRODUCER_REGISTERS, action="decrease")
            _refs.arrive_expect_tx(kv_full[0], 2 * tiles.keys * d * dtype.itemsize)
            rows = tiles.keys // k_smem.shape[0]
            for part in range(k_smem.shape[0]):
                for source, buffer in ((k, k_smem), (v, v_smem)):
                    _refs.async_load(source, buffer[part], kv_full[0],
                                     indices=[start + key0 + part * rows, kv_column],
                                     slice_lengths=[rows, d])

            @_cf.for_loop(0, steps)
            def _(step):
                stage = step % stages
                # Round r refills a stage the consumers released in round r - 1.
                _refs.wait(empty[stage], parity(step + stages))
                head, q0 = tile_of(step)
                token = start + q0
                _refs.arrive_expect_tx(q_full[stage], 2 * queries * (d * dtype.itemsize + 4))
                for source, ring in ((q, q_smem), (do, do_smem)):
                    _refs.async_load(source, ring[stage], q_full[stage],
                                     indices=[token, head * d], slice_lengths=[queries, d])
                # Past a sequence's end the rows are padding: masked.
                for source, ring in ((lse, lse_smem), (delta, delta_smem)):
                    _refs.async_load(source, ring[stage], q_full[stage],
                                     indices=[head, b * width + q0],
                                     slice_lengths=[-1, queries])

        def consumer():
            _pipeline.set_max_registers(CONSUMER_REGISTERS, action="increase")
            half = wg - 1
            # This consumer's keys (all of the block's when it owns columns),
            # their first from the sequence's first, and its columns of d.
            k_mine, v_mine = (k_smem[half], v_smem[half]) if by_keys else (k_smem[0], v_smem[0])
            key_first = key0 + half.astype("i32") * consumer_keys if by_keys else key0
            column0 = 0 if by_keys else half.astype("i32") * columns_owned
            mine = _refs.ds(column0, columns_owned)
            dq_half = dq_smem[half]
            _refs.wait(kv_full[0], False)
            tile = (consumer_keys, queries)
            zero = _values.constant(0.0, "f32", (consumer_keys, columns_owned))

            def columns(ring, stage):
                """A (queries,) tile of per-query values, broadcast down the
                transposed scores' columns: loaded straight into the
                layout of one column of the accumulator, so no data moves."""
                values = _values.layout_cast(_refs.vector_load(ring[stage]),
                                             _layouts.WGMMA_COLUMN)
                return _values.broadcast_in_dim(values, tile, [1])

            def dq_by_keys(step, dst_in, head, q0):
                """dQ = dS K over the block's 128 keys, each consumer taking
                half of dQ's columns: dQ needs dS with queries as rows, so
                both consumers' dS^T go through shared memory, read
                transposed. The buffers alternate by step: a consumer writes
                one while the other may still read the other one. Returns
                the in-flight result and where it adds into the workspace."""
                ds_buffers = ds_smem[step % 2]
                _refs.vector_store(dst_in, ds_buffers[half])
                columns_half = _refs.ds(half * (d // 2), d // 2)
                # Its own keys first: that wgmma fences the write above for
                # the async proxy, before the barrier tells the other
                # consumer to read it.
                dq = _refs.wgmma(_values.constant(0.0, "f32", (queries, d // 2)),
                                 ds_buffers[half].T, k_mine[:, columns_half], async_=True)
                _refs.named_barrier(DS_WRITTEN, 2)
                other = 1 - half
                dq = _refs.wgmma(dq, ds_buffers[other].T, k_smem[other][:, columns_half],
                                 async_=True)
                return (dq, [start + q0, head * d + half.astype("i32") * (d // 2)],
                        [queries, d // 2])

            def dq_by_columns(step, dst_in, head, q0):
                """dQ^T = K^T dS^T for this consumer's half of d: queries are
                the wgmma's N, so 32 of them fit (dQ = dS K would need 64
                as M); K^T is an M-major view of the K buffer, dS^T this
                consumer's own copy. The workspace is dQ transposed."""
                _refs.vector_store(dst_in, ds_smem[half])
                # dQ^T's accumulator only once dV and dK completed: all three
                # at once spill.
                _refs.wgmma_wait(0)
                dqt = _refs.wgmma(_values.constant(0.0, "f32", (columns_owned, queries)),
                                  k_mine[:, mine].T, ds_smem[half], async_=True)
                return dqt, [head * d + column0, b * width + q0], [columns_owned, queries]

            @_cf.for_loop(0, steps, carry=(zero, zero))
            def gradients(step, dk_acc, dv_acc):
                stage = step % stages
                head, q0 = tile_of(step)
                _refs.wait(q_full[stage], parity(step))
                # The per-query terms start the accumulators, so they take no
                # registers of their own beside dK and dV: S^T - LSE sqrt(d),
                # whose scaled exp2 is P^T, and dP^T - D.
                k_here, v_here = k_mine, v_mine
                if not by_keys:
                    # K and V viewed through an index the compiler cannot
                    # see is 0: otherwise LLVM hoists each of the 16 K steps'
                    # wgmma descriptors of both out of the loop, and they
                    # spill.
                    opaque = _values.optimization_barrier(_values.constant(0, "index"))
                    k_here, v_here = k_smem[opaque], v_smem[opaque]
                shifted = _refs.wgmma(columns(lse_smem, stage) * -math.sqrt(d), k_here,
                                      q_smem[stage].T, async_=True)
                dpt_minus_delta = _refs.wgmma(-columns(delta_smem, stage), v_here,
                                              do_smem[stage].T, async_=True)
                _refs.wgmma_wait(0)
                logits = shifted * score_scale
                needs_mask = (q0 + queries > length) | (key_first + consumer_keys > length)
                if config.causal:
                    needs_mask = needs_mask | (q0 < key_first + consumer_keys)
                logits = _cf.if_(needs_mask, otherwise=lambda: logits, results=logits)(
                    lambda: mask(config, logits, key_first, q0, length))
                pt = _values.exp2(logits)
                dst = pt * dpt_minus_delta
                pt_in, dst_in = pt.astype(dtype), dst.astype(dtype)
                q_mine, do_mine = (q_smem[stage], do_smem[stage]) if by_keys else \
                    (q_smem[stage][:, mine], do_smem[stage][:, mine])
                dv_acc = _refs.wgmma(dv_acc, pt_in, do_mine, async_=True)
                dk_acc = _refs.wgmma(dk_acc, dst_in, q_mine, async_=True)
                dq_partial = dq_by_keys if by_keys else dq_by_columns
                dq, indices, lengths = dq_partial(step, dst_in, head, q0)
                _refs.wgmma_wait(0)
                # Q and dO of the stage are read: release it.
                _refs.arrive(empty[stage])
                # The previous step's reduce-add must have read dq_half.
                _refs.async_store_wait(0)
                _refs.vector_store(dq, dq_half)
                _refs.async_store(dq_half, dq_accumulated, indices=indices,
                                  slice_lengths=lengths, reduction="add", defer_wait=True)
                return dk_acc, dv_acc

            dk_acc, dv_acc = gradients
            _refs.async_store_wait(0)
            # The other consumer's last wgmmas may still read this one's K
            # and V (by keys: its dQ; by columns: all of them).
            _refs.named_barrier(KEYS_READ, 2)
            rows = _values.minimum(length - key_first, consumer_keys)
            token = start + key_first
            for result, out, buffer in ((dk_acc * gradient_scale, dk, k_mine),
                                        (dv_acc, dv, v_mine)):
                value = result.astype(dtype)
                target = out[_refs.ds(token, consumer_keys),
                             _refs.ds(kv_column + column0, columns_owned)]

                def whole(value=value, out=out, buffer=buffer):
                    # K and V are no longer read: their buffers stage the
                    # results for TMA.
                    _refs.vector_store(value, buffer)
                    _refs.async_store(buffer, out, indices=[token, kv_column],
                                      slice_lengths=[consumer_keys, d])

                def partial(value=value, target=target):
                    # Rows past the end may be the next sequence's keys.
                    _refs.vector_store(value, target, valid=[rows, columns_owned])

                if by_keys:
                    _cf.if_(rows == consumer_keys, otherwise=lambda partial=partial: _cf.if_(
                        rows > 0)(partial))(whole)
                else:
                    # Half of d's columns of the shared buffer are no TMA box.
                    _cf.if_(rows > 0)(partial)

        _cf.if_(key0 < length)(lambda: _cf.if_(wg == 0, otherwise=consumer)(producer))

    return attention_bwd


def mask(config: Config, logits, key_first, q0, length):
    """The transposed logits with the pairs that take no part at -inf (so
    their P is 0, and so are their dS and their share of dV, dK and dQ):
    keys or queries past the sequence's end and, with the causal mask,
    keys after their query. ``key_first`` and ``q0`` are the tile's first
    key (row) and query (column) from the sequence's first."""
    shape = logits.shape
    # Offsets from the tile's first key and query: the bounds move into
    # scalars, so each element costs two comparisons. With the causal mask
    # key <= query < length implies key < length.
    key = _values.iota(shape, "i32", 0)
    query = _values.iota(shape, "i32", 1)
    key_bound = query + (q0 - key_first) if config.causal else length - key_first - 1
    visible = (key <= key_bound) & (query < length - q0)
    return _values.select(visible, logits, -math.inf)


@functools.lru_cache(maxsize=64)
def build(config: Config) -> Backward:
    """The backward's kernels for ``config``; ValueError for a bad one. The
    preprocess takes o and do (and cu_seqlens for a packed batch) and makes
    D; the main kernel takes q, k, v, do, the LSE laid out by
    ``padded_lse``, D (and cu_seqlens), and adds into its outputs dk, dv and
    the f32 dQ workspace (``workspace_shape``), which the caller zeroes; the
    postprocess takes the workspace (and cu_seqlens) and makes dq."""
    check(config)
    return Backward(_preprocess(config), _main(config), _postprocess(config))


def _zeros(like: Any, shape: tuple[int, ...]) -> Any:
    """f32 zeros on the device and in the library of ``like``."""
    if type(like).__module__.startswith("torch"):
        import torch
        return torch.zeros(shape, dtype=torch.float32, device=like.device)
    import numpy as np
    return np.zeros(shape, np.float32)


def _empty_like(like: Any) -> Any:
    if type(like).__module__.startswith("torch"):
        import torch
        return torch.empty_like(like)
    import numpy as np
    return np.empty_like(like)


def run(config: Config, q, k, v, o, lse, do, cu_seqlens=None, backend: str | None = None):
    """dQ, dK and dV for arrays shaped as ``config.shapes()`` says (do as
    o), as NumPy arrays or PyTorch tensors like ``q``; the three kernels
    launched in order on ``backend``."""
    kernels = build(config)
    if config.varlen and cu_seqlens is None:
        raise ValueError("a packed batch (config.tokens > 0) needs cu_seqlens")
    if not config.varlen and cu_seqlens is not None:
        raise ValueError("cu_seqlens is for a packed batch; config.tokens is 0")
    extra = [cu_seqlens] if config.varlen else []
    delta = kernels.preprocess.launch(o, do, *extra, backend=backend)
    dq_accumulated = _zeros(q, workspace_shape(config))
    dk, dv = _empty_like(k), _empty_like(v)
    kernels.main.launch(q, k, v, do, padded_lse(config, lse, cu_seqlens), delta, *extra, dk,
                        dv, dq_accumulated, backend=backend)
    transposed = tiling(config).split == "columns"
    dq = kernels.postprocess.launch(dq_accumulated, *(extra if transposed else []),
                                    backend=backend)
    return dq, dk, dv


def padded_lse(config: Config, lse, cu_seqlens=None):
    """The forward's LSE ((batch, heads, seq), or (heads, tokens) for a
    packed batch) laid out as the main kernel reads it, (heads, batch *
    padded_seq), with zeros past each sequence's end; in the library and on
    the device of ``lse`` (a small copy: one value per query row)."""
    width = padded_seq(config)
    torch = type(lse).__module__.startswith("torch")
    if torch:
        import torch as library
        out = library.zeros(stats_shape(config), dtype=library.float32, device=lse.device)
    else:
        import numpy as library
        out = library.zeros(stats_shape(config), library.float32)
    if not config.varlen:
        rows = lse.permute(1, 0, 2) if torch else lse.transpose(1, 0, 2)
        out.reshape(config.heads, config.batch, width)[:, :, :config.seq] = rows
        return out
    import numpy as np
    offsets = (cu_seqlens.cpu().numpy() if hasattr(cu_seqlens, "cpu")
               else np.asarray(cu_seqlens)).astype(np.int64)
    for b in range(config.batch):
        length = int(offsets[b + 1] - offsets[b])
        out[:, b * width:b * width + length] = lse[:, int(offsets[b]):int(offsets[b + 1])]
    return out
