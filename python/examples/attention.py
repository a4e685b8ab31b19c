"""Fused attention forward, FlashAttention-3 style: O = softmax(Q K^T /
sqrt(d)) V and the log-sum-exp (LSE) of each row, for bf16 or f16 Q, K, V of
shape (batch, heads, seq, head_dim): examples/attention_fwd.mlir in Python,
for any size, head_dim 64 or 128, with or without a causal mask.

Block (i, bh) computes the 128 query rows [128 i, +128) of head bh (of all
batch * heads) with three warpgroups:
 - warpgroup 0, the producer, keeps 24 registers and only issues TMA: Q once,
   then the K and V tiles of 128 keys into a ring of --stages stages, K and V
   on barriers of their own;
 - warpgroups 1 and 2, the consumers, take 240 registers each. Each owns 64
   query rows: for key tile j it computes S_j = Q K_j^T with wgmma, the
   online softmax of S_j in registers (row max m and row sum l in the WGMMA
   row layout, O rescaled by exp2(m_old - m_new)), and O += P_j V_j with
   P_j, converted to the input type, as the wgmma's register A operand.
The consumers take turns issuing their MMAs (S_j together with the previous
tile's P V) on named barriers 4 and 5, so one's softmax overlaps the other's
MMAs. With --causal, block i reads key tiles 0 .. i only and masks the
diagonal tile. See docs/AttentionWalkthrough.md.

    attention.py --batch 1 --heads 2 --seq 256 --head-dim 64 --causal --emulate
    attention.py --emit-mlir attention.mlir      (4 x 16 x 4096 x 128, for bench/gpu)
"""
from __future__ import annotations

import argparse
import math
import sys
from typing import NamedTuple, Sequence

import mosaic_gpu as mgpu

BLOCK_M = 128                 # query rows per block
HALF_M = BLOCK_M // 2         # query rows per consumer
BLOCK_N = 128                 # keys per tile
PRODUCER_REGISTERS = 24
CONSUMER_REGISTERS = 240
# The named barriers on which consumer 0 and consumer 1 wait for their turn
# (the lowering keeps 1..3 for the block's 3 warpgroups).
FIRST_TURN, SECOND_TURN = 4, 5
DTYPES = {"bf16": mgpu.bf16, "f16": mgpu.f16}


class Config(NamedTuple):
    batch: int
    heads: int
    seq: int
    head_dim: int = 128
    causal: bool = False
    dtype: str = "bf16"
    stages: int = 2


def smem(config: Config) -> list:
    """The Q halves, the K and V rings, the O halves, and the barriers: Q
    landed, K and V landed per stage, stage released."""
    dtype, d, stages = DTYPES[config.dtype], config.head_dim, config.stages
    return [mgpu.SmemBuffer((2, HALF_M, d), dtype),
            mgpu.SmemBuffer((stages, BLOCK_N, d), dtype),
            mgpu.SmemBuffer((stages, BLOCK_N, d), dtype),
            mgpu.SmemBuffer((2, HALF_M, d), dtype),
            mgpu.Barriers(1, arrival_count=1),
            mgpu.Barriers(stages, arrival_count=1),
            mgpu.Barriers(stages, arrival_count=1),
            mgpu.Barriers(stages, arrival_count=2)]


def check_config(config: Config) -> None:
    """Raises ValueError for a configuration the kernel cannot run."""
    if config.dtype not in DTYPES:
        raise ValueError(f"--dtype must be one of {', '.join(DTYPES)}, got {config.dtype!r}")
    if config.head_dim not in (64, 128):
        raise ValueError(f"--head-dim must be 64 or 128, got {config.head_dim}")
    for flag, value in (("--batch", config.batch), ("--heads", config.heads)):
        if value <= 0:
            raise ValueError(f"{flag} must be positive, got {value}")
    if config.batch * config.heads > 65535:
        raise ValueError(f"--batch x --heads is {config.batch * config.heads}, more than the "
                         "65535 blocks a grid's y dimension holds")
    if config.seq <= 0 or config.seq % BLOCK_M:
        raise ValueError(f"--seq {config.seq} must be a positive multiple of {BLOCK_M} "
                         "(the query rows of a block and the keys of a tile)")
    if config.stages < 2:
        raise ValueError(f"--stages must be at least 2, got {config.stages}: a stage's V is "
                         "read until the next tile's MMAs are issued")
    needed = mgpu.smem_bytes(smem(config))
    if needed > mgpu.MAX_SMEM_BYTES:
        raise ValueError(
            f"{config.stages} stages of {BLOCK_N} keys at head_dim {config.head_dim} need "
            f"{needed / 1024:.1f} KiB of shared memory, more than the "
            f"{mgpu.MAX_SMEM_BYTES // 1024} KiB of a block; use fewer stages")


def build(config: Config) -> mgpu.Kernel:
    """The attention kernel for ``config``; ValueError for a bad one."""
    check_config(config)
    dtype, d = DTYPES[config.dtype], config.head_dim
    heads = config.batch * config.heads
    rows = (heads, config.seq, d)
    tile_bytes = BLOCK_N * d * dtype.itemsize
    # exp(x / sqrt(d)) = exp2(x * log2(e) / sqrt(d)): scores in base 2.
    scale = math.log2(math.e) / math.sqrt(d)
    name = "attention_causal_fwd" if config.causal else "attention_fwd"

    @mgpu.kernel(grid=(config.seq // BLOCK_M, heads, 1), block=(384, 1, 1),
                 inputs=[(rows, dtype)] * 3, outputs=[(rows, dtype), (rows[:2], "f32")],
                 smem=smem(config), name=name, flush_denormals=True)
    def attention(q, k, v, o, lse, q_smem, k_smem, v_smem, o_smem, q_full, k_full, v_full,
                  empty):
        stages = config.stages
        q_block = mgpu.block_id("x")
        head = mgpu.block_id("y")
        q_row = q_block * BLOCK_M
        # Causal: block i needs key tiles 0 .. i, and masks tile i.
        steps = q_block + 1 if config.causal else mgpu.constant(config.seq // BLOCK_N)
        wg = mgpu.warpgroup_id()

        def parity(step):
            return (step // stages).astype("i64").astype("i1")

        def producer():
            mgpu.set_max_registers(PRODUCER_REGISTERS, action="decrease")
            mgpu.arrive_expect_tx(q_full[0], 2 * HALF_M * d * dtype.itemsize)
            for half in range(2):
                mgpu.async_load(q, q_smem[half], q_full[0],
                                indices=[head, q_row + half * HALF_M, 0],
                                slice_lengths=[-1, HALF_M, d])

            @mgpu.for_loop(0, steps)
            def _(j):
                stage = j % stages
                # Round r refills a stage the consumers released in round r - 1.
                mgpu.wait(empty[stage], parity(j + stages))
                for ring, source, full in ((k_smem, k, k_full), (v_smem, v, v_full)):
                    mgpu.arrive_expect_tx(full[stage], tile_bytes)
                    mgpu.async_load(source, ring[stage], full[stage],
                                    indices=[head, j * BLOCK_N, 0], slice_lengths=[-1, BLOCK_N, d])

        def consumer():
            mgpu.set_max_registers(CONSUMER_REGISTERS, action="increase")
            half = wg - 1
            is_first = half == 0
            q_half, o_half = q_smem[half], o_smem[half]
            last = steps - 1

            def turn(wait: bool, step=None):
                """Waits for this consumer's turn, or passes the turn on to
                the other consumer."""
                def first():
                    if wait:
                        mgpu.named_barrier(FIRST_TURN, 2)
                    else:
                        mgpu.named_barrier(SECOND_TURN, 2, arrive=True)

                def second():
                    if wait:
                        mgpu.named_barrier(SECOND_TURN, 2)
                    else:
                        # Consumer 0 passes one turn more: the one after
                        # consumer 1's last is nobody's.
                        mgpu.if_(step < last)(
                            lambda: mgpu.named_barrier(FIRST_TURN, 2, arrive=True))

                mgpu.if_(is_first, otherwise=second)(first)

            # Consumer 0 takes the first turn.
            mgpu.if_(half == 1)(lambda: mgpu.named_barrier(FIRST_TURN, 2, arrive=True))
            mgpu.wait(q_full[0], False)

            tile = (HALF_M, BLOCK_N)
            zero_o = mgpu.constant(0.0, "f32", (HALF_M, d))
            m0 = mgpu.constant(-math.inf, "f32", (HALF_M,))
            l0 = mgpu.constant(0.0, "f32", (HALF_M,))
            p0 = mgpu.constant(0.0, dtype, tile)

            @mgpu.for_loop(0, steps, carry=(m0, l0, zero_o, p0))
            def carry(j, m, l, acc, p):
                stage = j % stages
                previous = j - 1
                previous_stage = previous % stages
                mgpu.wait(k_full[stage], parity(j))
                turn(wait=True)
                s = mgpu.wgmma(mgpu.constant(0.0, "f32", tile), q_half, k_smem[stage].T,
                               async_=True)

                def previous_pv():
                    mgpu.wait(v_full[previous_stage], parity(previous))
                    return mgpu.wgmma(acc, p, v_smem[previous_stage], async_=True)

                acc_pv = mgpu.if_(j > 0, otherwise=lambda: acc, results=acc)(previous_pv)
                turn(wait=False, step=j)
                mgpu.wgmma_wait(0)
                mgpu.if_(j > 0)(lambda: mgpu.arrive(empty[previous_stage]))

                # The online softmax, in base 2.
                scores = s * scale
                if config.causal:
                    unmasked = scores
                    scores = mgpu.if_(j == last, otherwise=lambda: unmasked, results=unmasked)(
                        lambda: causal_mask(unmasked, is_first))
                m_new = mgpu.maximum(m, scores.reduce("max", 1))
                p_new = mgpu.exp2(scores - mgpu.broadcast_in_dim(m_new, tile, [0]))
                alpha = mgpu.exp2(m - m_new)
                l_new = l * alpha + p_new.reduce("add", 1)
                acc_new = acc_pv * mgpu.broadcast_in_dim(alpha, (HALF_M, d), [0])
                return m_new, l_new, acc_new, p_new.astype(dtype)

            m, l, acc, p = carry
            # The last tile's P V.
            last_stage = last % stages
            mgpu.wait(v_full[last_stage], parity(last))
            acc = mgpu.wgmma(acc, p, v_smem[last_stage])
            mgpu.arrive(empty[last_stage])

            # Epilogue: O / l through shared memory with TMA, and the LSE.
            # One division per row, not per element.
            out = acc * mgpu.broadcast_in_dim(1.0 / l, (HALF_M, d), [0])
            mgpu.vector_store(out.astype(dtype), o_half)
            row0 = q_row + half * HALF_M
            mgpu.async_store(o_half, o, indices=[head, row0, 0], slice_lengths=[-1, HALF_M, d])
            mgpu.vector_store((m + mgpu.log2(l)) * math.log(2),
                              lse[head, mgpu.ds(row0, HALF_M)])

        mgpu.if_(wg == 0, otherwise=consumer)(producer)

    return attention


def causal_mask(s: mgpu.Vector, is_first: mgpu.Scalar) -> mgpu.Vector:
    """The diagonal tile of ``s`` with each key after its query at -inf.
    There key c and query row r of consumer h are c and 64 h + r past the
    block's first row: the key is visible when c - r <= 64 h."""
    shape = s.shape
    offset = mgpu.iota(shape, "i32", 1) - mgpu.iota(shape, "i32", 0)

    def masked(limit: int) -> mgpu.Vector:
        return mgpu.select(offset <= limit, s, -math.inf)

    return mgpu.if_(is_first, otherwise=lambda: masked(HALF_M), results=s)(lambda: masked(0))


def inputs(config: Config, seed: int = 0):
    """Random Q, K, V as NumPy arrays of shape (batch, heads, seq, head_dim)."""
    import numpy as np
    numpy_dtype = DTYPES[config.dtype].numpy
    if numpy_dtype is None:
        raise RuntimeError("bf16 arrays need the ml_dtypes package")
    rng = np.random.default_rng(seed)
    shape = (config.batch, config.heads, config.seq, config.head_dim)
    return tuple(rng.standard_normal(shape, dtype=np.float32).astype(numpy_dtype)
                 for _ in range(3))


def reference(config: Config, q, k, v):
    """O and LSE in float64."""
    import numpy as np
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    scores = q64 @ np.swapaxes(k64, -1, -2) / math.sqrt(config.head_dim)
    if config.causal:
        keys = np.arange(config.seq)
        scores = np.where(keys[None, :] <= keys[:, None], scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - row_max)
    total = weights.sum(axis=-1, keepdims=True)
    return (weights / total) @ v64, (row_max + np.log(total))[..., 0]


def check(config: Config, q, k, v, o, lse) -> tuple[bool, str]:
    """Compares O and LSE with the float64 reference. O may be off by its
    rounding to the input type (2^-8 of its value for bf16, 2^-11 for f16;
    twice that is allowed) plus 2^-6 of O's RMS for P's rounding to the input
    type before P V; the LSE, computed in f32 from exact scores, by 2^-14 of
    its value plus 2^-14 (the approximate exp2 and log2, and the order of
    the row sums). A key tile missing or read twice, or a wrong rescale, is
    off by far more."""
    import numpy as np
    o_ref, lse_ref = reference(config, q, k, v)
    results = []
    ok = True
    unit = 2 ** -8 if config.dtype == "bf16" else 2 ** -11
    for name, out, ref, relative, absolute in (
            ("O", o.astype(np.float64), o_ref, 2 * unit,
             2 ** -6 * float(np.sqrt(np.mean(o_ref ** 2)))),
            ("LSE", lse.astype(np.float64), lse_ref, 2 ** -14, 2 ** -14)):
        error = np.abs(out - ref)
        allowed = relative * np.abs(ref) + absolute
        bad = ~(error <= allowed)  # NaN fails
        worst = float(np.nanmax(error / allowed)) if error.size else 0.0
        text = (f"{name}: max error {np.nanmax(error):.3g}, {worst:.2f} of the tolerance, "
                f"{int(bad.sum())} of {out.size} outside")
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            text += f" (first at {where}: {out[where]:.6g} vs {ref[where]:.6g})"
            ok = False
        results.append(text)
    return ok, "; ".join(results)


def parse(argv: Sequence[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="attention.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, default=4096)
    parser.add_argument("--head-dim", type=int, default=128, help="64 or 128 (default 128)")
    parser.add_argument("--causal", action="store_true", help="mask keys after each query")
    parser.add_argument("--dtype", default="bf16", choices=list(DTYPES))
    parser.add_argument("--stages", type=int, default=2,
                        help="K/V ring stages (default 2; head_dim 64 fits up to 5)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--emulate", action="store_true",
                        help="run on the PTX emulator instead of a GPU")
    parser.add_argument("--emit-mlir", metavar="PATH",
                        help="write the kernel's MLIR to PATH and exit")
    return parser, parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    parser, args = parse(argv)
    config = Config(args.batch, args.heads, args.seq, args.head_dim, args.causal, args.dtype,
                    args.stages)
    try:
        kernel = build(config)
    except ValueError as error:
        parser.error(str(error))
    if args.emit_mlir:
        with open(args.emit_mlir, "w") as out:
            out.write(str(kernel.module))
        print(f"wrote {args.emit_mlir}")
        return 0
    q, k, v = inputs(config, args.seed)
    backend = "emulator" if args.emulate else "cuda"
    shape = (config.batch * config.heads, config.seq, config.head_dim)
    run = (f"attention {config.dtype} batch {config.batch}, heads {config.heads}, seq "
           f"{config.seq}, head_dim {config.head_dim}{', causal' if config.causal else ''}, "
           f"{config.stages} stages, on the {backend}")
    try:
        o, lse = kernel.launch(*(x.reshape(shape) for x in (q, k, v)), backend=backend)
    except RuntimeError as error:  # a driver error; on the emulator, a fault or a hazard
        print(f"{run}: FAIL; the launch failed: {error}")
        return 1
    o = o.reshape(q.shape)
    lse = lse.reshape(q.shape[:3])
    passed, summary = check(config, q, k, v, o, lse)
    print(f"{run}: {'PASS' if passed else 'FAIL'}; {summary}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
