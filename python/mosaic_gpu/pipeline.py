"""Warp specialization: warpgroup register reallocation
(``set_max_registers``), grouped tile rasterization (``grouped_tile``) and
the warp-specialized producer/consumer pipeline (``WarpSpecializedPipeline``),
in the spirit of JAX Mosaic GPU's ``emit_pipeline_warp_specialized``.

A warp-specialized kernel gives its warpgroups roles. Warpgroup 0, the
producer, gives registers back and only issues TMA: for every step it waits
until a stage of the shared-memory rings is empty, then fills it. The
consumer warpgroups (1, 2, ...) take those registers, wait until a stage is
full, compute on it with wgmma kept in flight, and release it once the
wgmma that read it has completed. Two arrays of mbarriers carry the
handshake:

- ``full[s]``: one producer arrival plus the stage's TMA bytes: stage s
  holds data;
- ``empty[s]``: one arrival per consumer warpgroup of every block whose
  stage s the producer fills (a multicast load writes the stage of every
  block of its cluster): stage s may be refilled.

Both count the steps of every tile together, so the stage and the phase
follow from one running step counter: step i uses stage ``i % stages`` in
round ``r = i // stages``. Consumers wait on ``full`` for the phase of
parity ``r % 2``; the producer waits on ``empty`` for parity
``(r + 1) % 2``, the phase the consumers completed in round r - 1, which a
fresh barrier counts as complete in round 0. examples/gemm_bf16_ws.mlir is
the same kernel written by hand; python/examples/gemm_ws.py uses this
helper.
"""

from __future__ import annotations

import builtins
from typing import Any, Callable, NamedTuple, Sequence, Union

from . import _mosaic
from .builder import current, launch_shape, location
from .control_flow import Carry, for_loop, if_, while_loop
from .kernels import Barriers
from .refs import BarrierRef, Ref, arrive, arrive_expect_tx, wait, wgmma_wait
from .values import Scalar, block_id, cluster_block_id, constant, minimum, warpgroup_id

__all__ = ["OutputTile", "WarpSpecializedPipeline", "grouped_tile", "set_max_registers",
           "stream_k_parts", "stream_k_unit"]

# The register file of an SM: what the warpgroups of one block may hold
# together (setmaxnreg moves registers between them, within it).
REGISTERS_PER_BLOCK = 65536
THREADS_PER_WARPGROUP = 128
# setmaxnreg takes a multiple of 8 in 24..256 (PTX ISA, setmaxnreg).
REGISTER_GRANULE, MIN_REGISTERS, MAX_REGISTERS = 8, 24, 256
# ptxas gives a thread at most 255 registers.
MAX_KERNEL_REGISTERS = 255
# A producer that only issues TMA needs few registers (examples/gemm_bf16_ws.mlir
# and CUTLASS's warp-specialized kernels keep 40); the consumers share what
# it gives back: 232 each for two, 40 + 2 * 232 = 3 * 168.
DEFAULT_PRODUCER_REGISTERS = 40
# An mbarrier's transaction count stays within +-(2^20 - 1) bytes.
MAX_STAGE_BYTES = 2 ** 20 - 1

_ACTIONS = {"increase": _mosaic.RegisterAction.increase,
            "decrease": _mosaic.RegisterAction.decrease}


def _check_registers(count: Any, what: str) -> int:
    if not isinstance(count, int) or isinstance(count, bool):
        raise TypeError(f"`{what}` must be an int, got {count!r}")
    if not MIN_REGISTERS <= count <= MAX_REGISTERS or count % REGISTER_GRANULE:
        raise ValueError(f"`{what}` must be a multiple of {REGISTER_GRANULE} in "
                         f"{MIN_REGISTERS}..{MAX_REGISTERS} (setmaxnreg), got {count}")
    return count


def set_max_registers(count: int, *, action: str) -> None:
    """Reallocates the executing warpgroup's registers
    (``mosaic_gpu.set_max_registers``): every thread ends up with ``count``
    (a multiple of 8 in 24..256). ``action="decrease"`` gives registers back
    to the block's pool, ``"increase"`` takes them from it (waiting until it
    has them). All four warps of the warpgroup must run it with the same
    count; a decrease must not ask for more registers than the warpgroup
    holds, nor an increase for fewer."""
    count = _check_registers(count, "count")
    if action not in _ACTIONS:
        raise ValueError(f"`action` must be 'increase' or 'decrease', got {action!r}")
    _mosaic.KernelBuilder.set_max_registers(current(), location(), _ACTIONS[action], count)


Index = Union[int, Scalar]


def grouped_tile(index: Index, tiles_m: int, tiles_n: int, group: int) -> tuple[Index, Index]:
    """The (row, column) of output tile ``index`` when a ``tiles_m`` x
    ``tiles_n`` grid of tiles is walked in groups of ``group`` tile rows:
    down the group's rows, then to its next column, and after its last
    column on to the next group (the last one has ``tiles_m % group`` rows
    when that is not 0). Blocks that run at the same time take neighbouring
    indices, so they share rows of A and columns of B, which stay in L2.

    ``index`` is an int (the mapping is then computed in Python, for
    checking it) or an index Scalar (in a kernel: index ops).
        >>> [grouped_tile(i, 3, 2, 2) for i in range(6)]
        [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    """
    for name, value in (("tiles_m", tiles_m), ("tiles_n", tiles_n), ("group", group)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"`{name}` must be a positive int, got {value!r}")
    if isinstance(index, Scalar):
        if index.dtype != "index":
            raise TypeError(f"`index` must be an index Scalar, got {index.dtype}")
        smaller = minimum
    elif isinstance(index, int) and not isinstance(index, bool):
        if not 0 <= index < tiles_m * tiles_n:
            raise ValueError(f"`index` {index} is not one of the {tiles_m * tiles_n} tiles")
        smaller = min
    else:
        raise TypeError(f"`index` must be an int or an index Scalar, got {index!r}")
    per_group = group * tiles_n
    first_row = index // per_group * group
    rows = smaller(tiles_m - first_row, group)
    in_group = index % per_group
    return first_row + in_group % rows, in_group // rows


class OutputTile(NamedTuple):
    """An output tile of the persistent loop: its row ``m`` and column
    ``n`` in tiles (index Scalars), and ``first_step``, the block's running
    step count at the tile's first step (step ``k`` of the tile is step
    ``first_step + k`` of the block: it fills stage ``(first_step + k) %
    stages`` in round ``(first_step + k) // stages``, which gives the phase
    of that stage's barriers to whoever else waits on them).

    With stream-K a block computes a segment of a tile: steps ``k_begin``
    .. ``k_begin + k_steps - 1`` of its K steps, the tile's segment number
    ``part`` (0 for the segment with the tile's first steps); otherwise
    every tile is one segment of all its steps."""
    m: Scalar
    n: Scalar
    first_step: Scalar | None = None
    k_begin: Scalar | int = 0
    k_steps: Scalar | int | None = None
    part: Scalar | int = 0


def stream_k_unit(iteration: Any, iterations: int, units: int) -> Any:
    """The stream-K unit that computes ``iteration`` (of ``iterations``,
    split as evenly as whole iterations allow over ``units`` units: unit u
    takes ``u * iterations // units`` up to unit u + 1's first), for ints
    or index Scalars."""
    return ((iteration + 1) * units - 1) // iterations


def stream_k_parts(tiles: int, steps: int, units: int) -> int:
    """The most segment numbers (``OutputTile.part``) one tile's segments
    take: a segment is numbered by its unit's distance from the unit of
    the tile's first step, so this is the most units from a tile's first
    step to its last, those without steps included (there are some when
    ``units`` exceeds the steps)."""
    iterations = tiles * steps
    return max(stream_k_unit((t + 1) * steps - 1, iterations, units)
               - stream_k_unit(t * steps, iterations, units) + 1 for t in builtins.range(tiles))


def _positive(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"`{what}` must be an int, got {value!r}")
    if value <= 0:
        raise ValueError(f"`{what}` must be positive, got {value}")
    return value


class WarpSpecializedPipeline:
    """A warp-specialized, persistent producer/consumer pipeline over a
    ring of ``stages`` shared-memory stages (see the module docstring).

    ``consumers`` consumer warpgroups follow the producer warpgroup, so the
    block has ``128 * (1 + consumers)`` threads (``block``). With
    ``cluster`` > 1 the kernel runs in clusters of that many blocks along
    x, which take consecutive tiles in lockstep and may share (multicast)
    stages: their consumers then release each stage in every block of the
    cluster, and ``empty`` counts ``consumers * cluster`` arrivals. With
    ``pair_along="m"`` (a 2x1 cluster tile) the blocks take consecutive
    tile rows of one tile column and share B's stages; with ``"n"`` (1x2)
    consecutive tile columns of one tile row, sharing A's. The producer keeps ``producer_registers`` registers
    per thread and each consumer takes ``consumer_registers``: multiples of
    8 in 24..256. Each thread starts with what ptxas gives it (65536 /
    threads in multiples of 8, at most 255 and at most
    ``consumer_registers``: 168 for 384 threads); the producer may only
    give registers back, and the consumers take only what it gave (the
    block keeps its 65536 / threads). The defaults are 40 and what that
    leaves the consumers: 232 each for two, 256 for one, 152 for three.

    Declare the barriers with the kernel's scratch, then call ``emit`` in
    its body::

        pipeline = WarpSpecializedPipeline(stages=3, consumers=2)

        @kernel(grid=(132, 1, 1), block=pipeline.block, ...,
                smem=[a_ring, b_ring, c_tile, *pipeline.barriers])
        def gemm(a, b, c, a_smem, b_smem, c_smem, full, empty):
            pipeline.emit(full, empty, rings=[a_smem, b_smem], ...)
    """

    def __init__(self, stages: int, consumers: int = 2, cluster: int = 1,
                 producer_registers: int = DEFAULT_PRODUCER_REGISTERS,
                 consumer_registers: int | None = None, pair_along: str = "m") -> None:
        self.stages = _positive(stages, "stages")
        if stages < 2:
            raise ValueError(f"`stages` must be at least 2, got {stages}: a consumer releases "
                             "a stage one step after it issued the wgmma that reads it, while "
                             "the next stage is being read")
        self.consumers = _positive(consumers, "consumers")
        threads = THREADS_PER_WARPGROUP * (1 + consumers)
        if threads > 1024:
            raise ValueError(f"`consumers` is {consumers}: a block of {1 + consumers} "
                             f"warpgroups has {threads} threads, more than 1024")
        self.cluster = _positive(cluster, "cluster")
        if pair_along not in ("m", "n"):
            raise ValueError(f"`pair_along` must be 'm' (the blocks of a cluster take "
                             f"consecutive tile rows) or 'n' (tile columns), got {pair_along!r}")
        self.pair_along = pair_along
        self.producer_registers = _check_registers(producer_registers, "producer_registers")
        warpgroups = 1 + consumers
        # ptxas gives every thread of the block the same count: 65536 /
        # threads in multiples of 8, at most 255, and no more than the
        # largest setmaxnreg.inc asks for (docs/RationaleEmulator.md,
        # "The count at launch").
        most = REGISTERS_PER_BLOCK // threads // REGISTER_GRANULE * REGISTER_GRANULE
        most = min(MAX_KERNEL_REGISTERS, most)
        if consumer_registers is None:  # what the producer gives back, shared
            spare = warpgroups * most - producer_registers
            consumer_registers = min(MAX_REGISTERS,
                                     spare // consumers // REGISTER_GRANULE * REGISTER_GRANULE)
        self.consumer_registers = _check_registers(consumer_registers, "consumer_registers")
        start = min(most, consumer_registers)
        if producer_registers > start:
            raise ValueError(f"`producer_registers` {producer_registers} is more than the "
                             f"{start} each thread starts with (a {threads}-thread block, "
                             f"consumers at {consumer_registers}); the producer can only give "
                             "registers back")
        # The consumers take only what the producer gave back: the block
        # keeps the registers it started with.
        if producer_registers + consumers * consumer_registers > warpgroups * start:
            raise ValueError(
                f"{producer_registers} producer + {consumers} x {consumer_registers} consumer "
                f"registers per thread are more than the {warpgroups} x {start} the block's "
                f"warpgroups start with ({threads} threads: 65536 / threads, at most 255, in "
                "multiples of 8): consumers can only take what the producer gives back")

    @property
    def block(self) -> tuple[int, int, int]:
        """The kernel's block: one producer and the consumer warpgroups."""
        return (THREADS_PER_WARPGROUP * (1 + self.consumers), 1, 1)

    @property
    def cluster_shape(self) -> tuple[int, int, int]:
        """The kernel's cluster: ``cluster`` blocks along x."""
        return (self.cluster, 1, 1)

    @property
    def barriers(self) -> list[Barriers]:
        """The ``full`` and ``empty`` barrier arrays, for the kernel's
        ``smem``; the kernel passes their refs to ``emit``."""
        return [Barriers(count=self.stages, arrival_count=1),
                Barriers(count=self.stages, arrival_count=self.consumers * self.cluster)]

    def _check_kernel(self, tiles_m: int, tiles_n: int) -> int:
        """Checks the kernel being built against the pipeline; returns the
        number of clusters of its grid."""
        shape = launch_shape()
        if shape.block != self.block:
            raise ValueError(f"the kernel's block is {shape.block}, but the pipeline's "
                             f"{1 + self.consumers} warpgroups need {self.block} (pipeline.block)")
        if shape.cluster != self.cluster_shape:
            raise ValueError(f"the kernel's cluster is {shape.cluster}, but the pipeline's is "
                             f"{self.cluster_shape} (pipeline.cluster_shape)")
        grid = shape.grid
        if grid[1:] != (1, 1):
            raise ValueError(f"the persistent loop runs over a 1-D grid of blocks; the kernel's "
                             f"grid is {grid}")
        if grid[0] % self.cluster:
            raise ValueError(f"the grid ({grid[0]} blocks) is not a whole number of clusters "
                             f"of {self.cluster}")
        paired, what = ((tiles_m, "rows of one tile column") if self.pair_along == "m"
                        else (tiles_n, "columns of one tile row"))
        if paired % self.cluster:
            raise ValueError(f"`tiles` has {paired} tile {what.split()[0]}, not a multiple of the "
                             f"cluster ({self.cluster}): the blocks of a cluster take "
                             f"consecutive tile {what}")
        return grid[0] // self.cluster

    def _check_barriers(self, full: Any, empty: Any) -> None:
        for name, ref, count in (("full", full, 1),
                                 ("empty", empty, self.consumers * self.cluster)):
            if not isinstance(ref, BarrierRef) or ref.shape != (self.stages,):
                raise TypeError(f"`{name}` must be an array of {self.stages} barriers "
                                f"(pipeline.barriers), got {ref!r}")
            if ref.arrival_count != count:
                raise ValueError(
                    f"`{name}` barriers count {ref.arrival_count} arrivals, but the pipeline "
                    f"needs {count}: declare them with pipeline.barriers")

    def _stage_bytes(self, rings: Sequence[Ref], stage_bytes: int | None) -> int:
        rings = list(rings)
        if not rings:
            raise ValueError("`rings` must name the shared-memory rings the stages live in")
        ring_bytes = 0
        for i, ring in enumerate(rings):
            if not isinstance(ring, Ref) or isinstance(ring, BarrierRef) or not ring.smem:
                raise TypeError(f"`rings[{i}]` must be a shared-memory Ref, got {ring!r}")
            if not ring.shape or ring.shape[0] != self.stages:
                raise ValueError(f"`rings[{i}]` has shape {ring.shape}; a ring's dim 0 is its "
                                 f"{self.stages} stages")
            per_stage = 1
            for dim in ring.shape[1:]:
                per_stage *= dim
            ring_bytes += per_stage * ring.dtype.itemsize
        if stage_bytes is None:
            stage_bytes = ring_bytes
        stage_bytes = _positive(stage_bytes, "stage_bytes")
        if stage_bytes > ring_bytes:
            raise ValueError(f"`stage_bytes` {stage_bytes} is more than a stage of the rings "
                             f"holds ({ring_bytes} bytes)")
        if stage_bytes > MAX_STAGE_BYTES:
            raise ValueError(f"`stage_bytes` {stage_bytes} exceeds the {MAX_STAGE_BYTES} bytes "
                             "an mbarrier can expect")
        return stage_bytes

    def _tile(self, index: Scalar, tiles_m: int, tiles_n: int, group: int) -> OutputTile:
        if self.pair_along == "n":
            row, columns = grouped_tile(index, tiles_m, tiles_n // self.cluster, group)
            if self.cluster > 1:
                columns = columns * self.cluster + cluster_block_id("x")
            return OutputTile(row, columns)
        rows, column = grouped_tile(index, tiles_m // self.cluster, tiles_n,
                                    group // self.cluster)
        if self.cluster > 1:
            rows = rows * self.cluster + cluster_block_id("x")
        return OutputTile(rows, column)

    def _release(self, empty: BarrierRef, stage: Scalar) -> None:
        if self.cluster > 1:
            arrive(empty[stage], collective="x")
        else:
            arrive(empty[stage])

    def emit(self, full: BarrierRef, empty: BarrierRef, *, rings: Sequence[Ref],
             tiles: tuple[int, int], steps: int,
             fetch: Callable[[OutputTile, Scalar, Scalar, BarrierRef], None],
             compute: Callable[[OutputTile, Scalar, Scalar, Scalar, Any], Carry],
             init: Callable[[], Carry],
             epilogue: Callable[[OutputTile, Scalar, Any], None],
             stage_bytes: int | None = None, group: int = 8, stream_k: bool = False) -> None:
        """Builds the pipeline into the kernel being built, whose block,
        cluster and grid it checks. Every block walks the ``tiles`` =
        (tiles_m, tiles_n) output tiles persistently, in ``grouped_tile``
        order (groups of ``group`` tile rows, a multiple of the cluster),
        from its own index (its cluster's) on, by the number of blocks
        (clusters) of the grid; each tile takes ``steps`` steps.

        - ``fetch(tile, stage, step, barrier)`` (producer) issues the TMA
          loads of step ``step`` (0 .. steps-1) of ``tile`` into ``stage``
          of the rings, completing on ``barrier``. The pipeline has waited
          until the stage is empty, and has arrived on ``barrier``
          expecting ``stage_bytes`` (default: one stage of every ring in
          ``rings``, whose dim 0 must be ``stages``).
        - ``init()`` (consumers) makes the carry of a tile, e.g. a zero
          accumulator.
        - ``compute(tile, consumer, stage, step, carry)`` (consumer
          ``consumer``: 0 .. consumers-1) runs once ``stage`` is full and
          returns the new carry; it issues its wgmma with ``async_=True``.
          The pipeline then waits until at most one wgmma group is in
          flight (``wgmma_wait(1)``: the previous step's is complete) and
          releases the previous step's stage.
        - ``epilogue(tile, consumer, carry)`` runs after the last step, once
          every wgmma has completed and the last stage was released.

        With ``stream_k`` the blocks (clusters) do not take whole tiles:
        the tiles' steps, tile after tile in the same order, are split as
        evenly as whole steps allow over the clusters (``stream_k_unit``),
        so every cluster runs the same number of steps (within one) however
        the tile count falls on the grid. A cluster's range may start and
        end inside tiles: each piece of a tile is a segment
        (``tile.k_begin``, ``tile.k_steps``, ``tile.part``), with its own
        ``init`` and ``epilogue``, which must combine the segments' partial
        results (at most ``stream_k_parts(...)`` per tile); ``fetch`` and
        ``compute`` get the step within the tile.
        """
        if not isinstance(tiles, (tuple, list)) or len(tiles) != 2:
            raise TypeError(f"`tiles` must be (tiles_m, tiles_n), got {tiles!r}")
        tiles_m, tiles_n = (_positive(t, "tiles") for t in tiles)
        steps = _positive(steps, "steps")
        group = _positive(group, "group")
        if not isinstance(stream_k, bool):
            raise TypeError(f"`stream_k` must be a bool, got {stream_k!r}")
        if self.pair_along == "m" and group % self.cluster:
            raise ValueError(f"`group` ({group} tile rows) must be a multiple of the cluster "
                             f"({self.cluster})")
        for name, body in (("fetch", fetch), ("compute", compute), ("init", init),
                           ("epilogue", epilogue)):
            if not callable(body):
                raise TypeError(f"`{name}` must be callable, got {body!r}")
        clusters = self._check_kernel(tiles_m, tiles_n)
        self._check_barriers(full, empty)
        stage_bytes = self._stage_bytes(rings, stage_bytes)
        cluster_tiles = tiles_m * tiles_n // self.cluster
        stages = self.stages

        def tile_loop(body: Callable[[OutputTile, Scalar], None]) -> None:
            """Runs ``body(tile, first_step)`` for each tile (segment) of
            this block."""
            first = block_id("x") // self.cluster if self.cluster > 1 else block_id("x")
            if stream_k:
                segment_loop(first, body)
                return

            @for_loop(first, cluster_tiles, step=clusters, carry=constant(0, "index"))
            def _(index, first_step):
                tile = self._tile(index, tiles_m, tiles_n, group)
                body(tile._replace(first_step=first_step, k_steps=steps), first_step)
                return first_step + steps

        def segment_loop(unit: Scalar, body: Callable[[OutputTile, Scalar], None]) -> None:
            iterations = cluster_tiles * steps
            begin = unit * iterations // clusters
            end = (unit + 1) * iterations // clusters

            @while_loop(lambda iteration, first_step: iteration < end,
                        carry=(begin, constant(0, "index")))
            def _(iteration, first_step):
                index = iteration // steps
                k_begin = iteration % steps
                k_steps = minimum(end - iteration, steps - k_begin)
                part = unit - stream_k_unit(index * steps, iterations, clusters)
                tile = self._tile(index, tiles_m, tiles_n, group)
                body(tile._replace(first_step=first_step, k_begin=k_begin, k_steps=k_steps,
                                   part=part), first_step)
                return iteration + k_steps, first_step + k_steps

        def producer() -> None:
            set_max_registers(self.producer_registers, action="decrease")

            def produce(tile: OutputTile, first_step: Scalar) -> None:
                @for_loop(0, tile.k_steps)
                def _(k):
                    step = first_step + k
                    stage = step % stages
                    # Round r refills what the consumers released in round
                    # r - 1: the phase of parity (r + 1) % 2, complete in a
                    # fresh barrier for round 0.
                    wait(empty[stage], _low_bit(step // stages + 1))
                    barrier = full[stage]
                    arrive_expect_tx(barrier, stage_bytes)
                    fetch(tile, stage, _in_tile(tile, k), barrier)

            tile_loop(produce)

        role = warpgroup_id()

        def consumer() -> None:
            set_max_registers(self.consumer_registers, action="increase")
            consumer_index = role - 1

            def consume(tile: OutputTile, first_step: Scalar) -> None:
                @for_loop(0, tile.k_steps, carry=init())
                def carry(k, carry):
                    step = first_step + k
                    stage = step % stages
                    wait(full[stage], _low_bit(step // stages))
                    carry = compute(tile, consumer_index, stage, _in_tile(tile, k), carry)
                    # The previous step's wgmma is complete: its stage may
                    # be refilled.
                    wgmma_wait(1)

                    @if_(k > 0)
                    def _():
                        self._release(empty, (step - 1) % stages)
                    return carry

                wgmma_wait(0)
                self._release(empty, (first_step + tile.k_steps - 1) % stages)
                epilogue(tile, consumer_index, carry)

            tile_loop(consume)

        if_(role == 0, otherwise=consumer)(producer)


def _in_tile(tile: OutputTile, k: Scalar) -> Scalar:
    """Step ``k`` of a segment as a step of its tile."""
    return k if isinstance(tile.k_begin, int) and tile.k_begin == 0 else tile.k_begin + k


def _low_bit(value: Scalar) -> Scalar:
    """An index's parity as an i1."""
    return value.astype("i64").astype("i1")
