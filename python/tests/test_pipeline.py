"""The warp-specialized pipeline (mosaic_gpu.WarpSpecializedPipeline,
grouped_tile) and python/examples/gemm_ws.py, built with it: the kernel
against NumPy on the PTX emulator (a hazard fails the launch) at several
shapes, stage counts and dtypes, the example script itself, a broken
pipeline the emulator must catch, and the errors for bad configurations.

Each emulator run is a process of its own (a crash fails that test only)."""
import os
import re
import runpy

import pytest

import mosaic_gpu as mgpu
from conftest import REPO, needs_emulator, run_example

SCRIPT = REPO / "python" / "examples" / "gemm_ws.py"
EXAMPLE = runpy.run_path(str(SCRIPT))
Config = EXAMPLE["Config"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The compiled-kernel cache of this module's launches."""
    return tmp_path_factory.mktemp("pipeline_cache")


def run(args, cache, script=None):
    """Runs gemm_ws.py (or `script`, Python source) with `args` in a process
    of its own."""
    return run_example(SCRIPT, args, cache, script)


# grouped_tile


@pytest.mark.parametrize("tiles_m, tiles_n, group", [
    (1, 1, 1), (8, 4, 8), (64, 32, 8), (3, 2, 2), (5, 7, 3), (10, 3, 4), (7, 5, 16),
])
def test_grouped_tile_visits_every_tile_once_in_groups(tiles_m, tiles_n, group):
    order = [mgpu.grouped_tile(i, tiles_m, tiles_n, group) for i in range(tiles_m * tiles_n)]
    assert sorted(order) == [(m, n) for m in range(tiles_m) for n in range(tiles_n)]
    for i, (m, n) in enumerate(order):
        first = i // (group * tiles_n) * group
        assert first <= m < min(first + group, tiles_m)
        if i and order[i - 1][0] + 1 < min(first + group, tiles_m) and order[i - 1][1] == n:
            assert m == order[i - 1][0] + 1  # down the group's column first


@pytest.mark.parametrize("args, exception, message", [
    ((-1, 2, 2, 1), ValueError, "`index` -1 is not one of the 4 tiles"),
    ((4, 2, 2, 1), ValueError, "`index` 4 is not one of the 4 tiles"),
    ((0, 0, 2, 1), ValueError, "`tiles_m` must be a positive int, got 0"),
    ((0, 2, 2, 0), ValueError, "`group` must be a positive int"),
    ((0.0, 2, 2, 1), TypeError, "`index` must be an int or an index Scalar"),
])
def test_grouped_tile_bad_arguments(args, exception, message):
    with pytest.raises(exception, match=message):
        mgpu.grouped_tile(*args)


# The pipeline's configuration


def test_defaults_and_properties():
    pipeline = mgpu.WarpSpecializedPipeline(stages=4)
    assert pipeline.block == (384, 1, 1) and pipeline.cluster_shape == (1, 1, 1)
    assert (pipeline.producer_registers, pipeline.consumer_registers) == (40, 232)
    full, empty = pipeline.barriers
    assert (full.count, full.arrival_count) == (4, 1)
    assert (empty.count, empty.arrival_count) == (4, 2)
    # Other consumer counts get what the block's registers leave them.
    assert mgpu.WarpSpecializedPipeline(stages=2, consumers=1).consumer_registers == 256
    three = mgpu.WarpSpecializedPipeline(stages=2, consumers=3)
    assert three.block == (512, 1, 1) and three.consumer_registers == 152


@pytest.mark.parametrize("arguments, exception, message", [
    (dict(stages=1), ValueError, "`stages` must be at least 2, got 1"),
    (dict(stages=0), ValueError, "`stages` must be positive, got 0"),
    (dict(stages="3"), TypeError, "`stages` must be an int, got '3'"),
    (dict(stages=3, consumers=0), ValueError, "`consumers` must be positive"),
    (dict(stages=3, consumers=8), ValueError, "a block of 9 warpgroups has 1152 threads"),
    (dict(stages=3, cluster=0), ValueError, "`cluster` must be positive"),
    (dict(stages=3, cluster=2, pair_along="k"), ValueError,
     r"`pair_along` must be 'm' \(the blocks of a cluster take consecutive tile rows\) or 'n' "
     r"\(tile columns\), got 'k'"),
    (dict(stages=3, producer_registers=36), ValueError,
     r"`producer_registers` must be a multiple of 8 in 24..256 \(setmaxnreg\), got 36"),
    (dict(stages=3, producer_registers=16), ValueError, "got 16"),
    (dict(stages=3, consumer_registers=264), ValueError,
     "`consumer_registers` must be a multiple of 8 in 24..256"),
    (dict(stages=3, consumer_registers=240), ValueError,
     r"40 producer \+ 2 x 240 consumer registers per thread are more than the 3 x 168 the "
     r"block's warpgroups start with \(384 threads: 65536 / threads, at most 255, in multiples "
     r"of 8\): consumers can only take what the producer gives back"),
    # Within 65536 registers (48 + 2 x 232 = 512 = 65536 / 128), but not
    # within what the block starts with.
    (dict(stages=3, producer_registers=48, consumer_registers=232), ValueError,
     r"48 producer \+ 2 x 232 consumer registers per thread are more than the 3 x 168"),
    (dict(stages=3, producer_registers=176, consumer_registers=176), ValueError,
     r"`producer_registers` 176 is more than the 168 each thread starts with \(a 384-thread "
     r"block, consumers at 176\); the producer can only give registers back"),
    (dict(stages=3, producer_registers=160, consumer_registers=152), ValueError,
     "`producer_registers` 160 is more than the 152 each thread starts with"),
])
def test_bad_configurations(arguments, exception, message):
    with pytest.raises(exception, match=message):
        mgpu.WarpSpecializedPipeline(**arguments)


def small_kernel(pipeline, grid=(4, 1, 1), block=None, cluster=None, barriers=None, **emit):
    """A 256x256x128 bf16 GEMM-shaped kernel that calls pipeline.emit with
    `emit` over the defaults."""
    options = dict(tiles=(2, 1), steps=2, fetch=lambda tile, stage, step, bar: None,
                   compute=lambda tile, consumer, stage, step, acc: acc,
                   init=lambda: mgpu.constant(0.0, "f32", (64, 256)),
                   epilogue=lambda tile, consumer, acc: None)
    options.update(emit)
    smem = [mgpu.SmemBuffer((pipeline.stages, 2, 64, 64), "bf16"),
            mgpu.SmemBuffer((pipeline.stages, 64, 256), "bf16")]

    @mgpu.kernel(grid=grid, block=block or pipeline.block,
                 cluster=cluster or pipeline.cluster_shape, inputs=[], outputs=[],
                 smem=smem + (barriers or pipeline.barriers), name="small")
    def small(a_ring, b_ring, full, empty):
        options.setdefault("rings", [a_ring, b_ring])
        rings = options.pop("rings")
        if callable(rings):
            rings = rings(a_ring, b_ring)
        pipeline.emit(full, empty, rings=rings, **options)

    return small


def test_emit_builds_both_roles():
    pipeline = mgpu.WarpSpecializedPipeline(stages=3)
    text = str(small_kernel(pipeline).module)
    assert re.search(r"set_max_registers\s+decrease 40", text)
    assert re.search(r"set_max_registers\s+increase 232", text)
    assert re.search(r"mosaic_gpu.arrive_expect_tx %\w+, 49152 :", text)
    assert text.count("mosaic_gpu.wait ") == 2 and text.count("mosaic_gpu.arrive ") == 2
    assert "mosaic_gpu.wgmma_wait 1" in text and "mosaic_gpu.wgmma_wait 0" in text


@pytest.mark.parametrize("kernel, exception, message", [
    (dict(block=(256, 1, 1)), ValueError,
     r"the kernel's block is \(256, 1, 1\), but the pipeline's 3 warpgroups need \(384, 1, 1\)"),
    (dict(cluster=(2, 1, 1), grid=(4, 1, 1)), ValueError,
     r"the kernel's cluster is \(2, 1, 1\), but the pipeline's is \(1, 1, 1\)"),
    (dict(grid=(4, 2, 1)), ValueError, r"1-D grid of blocks; the kernel's grid is \(4, 2, 1\)"),
    (dict(barriers=[mgpu.Barriers(3, 1), mgpu.Barriers(3, 1)]), ValueError,
     "`empty` barriers count 1 arrivals, but the pipeline needs 2: declare them with "
     "pipeline.barriers"),
    (dict(barriers=[mgpu.Barriers(2, 1), mgpu.Barriers(3, 2)]), TypeError,
     "`full` must be an array of 3 barriers"),
    (dict(rings=lambda a, b: [a[0], b]), ValueError,
     r"`rings\[0\]` has shape \(2, 64, 64\); a ring's dim 0 is its 3 stages"),
    (dict(rings=[]), ValueError, "`rings` must name the shared-memory rings"),
    (dict(stage_bytes=49153), ValueError,
     r"`stage_bytes` 49153 is more than a stage of the rings holds \(49152 bytes\)"),
    (dict(steps=0), ValueError, "`steps` must be positive, got 0"),
    (dict(tiles=(2,)), TypeError, r"`tiles` must be \(tiles_m, tiles_n\)"),
    (dict(group=0), ValueError, "`group` must be positive"),
    (dict(stream_k=1), TypeError, "`stream_k` must be a bool, got 1"),
    (dict(fetch=None), TypeError, "`fetch` must be callable"),
    (dict(compute=lambda tile, consumer, stage, step, acc: None), TypeError,
     "`for_loop body` returned"),
])
def test_bad_kernels(kernel, exception, message):
    pipeline = mgpu.WarpSpecializedPipeline(stages=3)
    with pytest.raises(exception, match=message):
        small_kernel(pipeline, **kernel)


@pytest.mark.parametrize("kernel, message", [
    (dict(tiles=(3, 1)), r"`tiles` has 3 tile rows, not a multiple of the cluster \(2\): the "
                         "blocks of a cluster take consecutive tile rows of one tile column"),
    (dict(grid=(3, 1, 1)), r"the grid \(3 blocks\) is not a whole number of clusters of 2"),
    (dict(group=3), r"`group` \(3 tile rows\) must be a multiple of the cluster \(2\)"),
    (dict(barriers=[mgpu.Barriers(3, 1), mgpu.Barriers(3, 2)]),
     "`empty` barriers count 2 arrivals, but the pipeline needs 4"),
])
def test_bad_kernels_in_clusters(kernel, message):
    pipeline = mgpu.WarpSpecializedPipeline(stages=3, cluster=2)
    assert pipeline.cluster_shape == (2, 1, 1) and pipeline.barriers[1].arrival_count == 4
    with pytest.raises(ValueError, match=message):
        small_kernel(pipeline, **kernel)


def test_clusters_release_stages_in_every_block():
    pipeline = mgpu.WarpSpecializedPipeline(stages=3, cluster=2)
    text = str(small_kernel(pipeline).module)
    assert text.count("{collective = [#mosaic_gpu.dim<x>]}") == 2
    assert "gpu.cluster_block_id  x" in text and "arrival_count = 4" in text


def test_emit_needs_a_kernel():
    pipeline = mgpu.WarpSpecializedPipeline(stages=3)
    with pytest.raises(RuntimeError, match="inside a @mosaic_gpu.kernel"):
        pipeline.emit(None, None, rings=[], tiles=(1, 1), steps=1, fetch=print, compute=print,
                      init=print, epilogue=print)


def test_the_readme_example_builds_and_compiles():
    readme = (REPO / "python" / "README.md").read_text()
    section = readme[readme.index("### Warp-specialized pipelines"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    names = {"mgpu": mgpu, "M": 256, "N": 512, "K": 512}
    exec(compile(code, "README.md", "exec"), names)
    ptx = names["gemm"].compile(emit="ptx").ptx
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16" in ptx


# python/examples/gemm_ws.py


@pytest.mark.parametrize("args, message", [
    (["--stages", "7"], "--stages must be 2 to 6, got 7"),
    (["--stages", "1"], "--stages must be 2 to 6, got 1"),
    (["--stages", "4", "--tile-n", "256"],
     r"4 stages of 128 x 256 tiles need 257.0 KiB of shared memory \(4 x 48 KiB stages \+ a "
     r"64 KiB bf16 C tile \+ barriers\), more than the 227 KiB of a block; use --tile-n 128 or "
     "fewer stages"),
    (["--tile-n", "64"], "--tile-n must be 128 or 256, got 64"),
    (["--m", "0"], "--m must be positive, got 0"),
    (["--k", "-8"], "--k must be positive, got -8"),
    (["--k", "1001"], "--k 1001: a row of A is 2002 bytes, but TMA needs rows that start "
                      "16-byte aligned, so K must be a multiple of 8 here"),
    (["--n", "50257"], r"--n 50257: a row of B is 100514 bytes, but TMA needs rows that start "
                       r"16-byte aligned, so N must be a multiple of 8 here"),
    (["--n", "1001", "--b-layout", "nk", "--epilogue", "residual"],
     "--n 1001: a row of the residual is 2002 bytes, but TMA needs rows that start 16-byte "
     "aligned, so N must be a multiple of 8 here"),
    (["--dtype", "fp8", "--k", "1000"],
     "--k 1000: a row of A is 1000 bytes, but TMA needs rows that start 16-byte aligned, so K "
     "must be a multiple of 16 here"),
    (["--n", "8008"], r"--n 8008 must be a multiple of 64 when B is K x N \(wgmma tiles an "
                      r"N-major B by 64 columns, which TMA fills only whole\); --b-layout nk "
                      r"\(B given as N x K\) takes any N"),
    (["--dtype", "fp8", "--b-layout", "kn"], "--dtype fp8 takes B as Bt"),
    (["--b-layout", "mn"], "argument --b-layout: invalid choice: 'mn'"),
    (["--split-k", "9"], "--split-k must be 1 to 8 or auto, got 9"),
    (["--split-k", "0"], "--split-k must be 1 to 8 or auto, got 0"),
    (["--split-k", "two"], "--split-k must be 1 to 8 or auto, got 'two'"),
    (["--split-k", "4", "--k", "128"], r"--split-k 4 is more than the 2 K steps of 64 "
                                       r"\(K = 128\)"),
    (["--split-k", "2", "--tile-n", "256"],
     r"3 stages of 128 x 256 tiles need 273.0 KiB of shared memory \(3 x 48 KiB stages \+ a "
     r"128 KiB f32 C tile \+ barriers\)"),
    (["--reduction", "random"], "argument --reduction: invalid choice: 'random'"),
    (["--stream-k", "--split-k", "2"],
     "--stream-k and --split-k are two ways to split K: give one"),
    (["--epilogue", "tanh"], "argument --epilogue: invalid choice: 'tanh'"),
    (["--cluster", "3"], "--cluster must be 1 or 2, got 3"),
    (["--grid", "0"], r"--grid must be a positive multiple of the cluster \(2\), got 0"),
    (["--grid", "131"], r"--grid must be a positive multiple of the cluster \(2\), got 131"),
])
def test_example_configuration_errors(args, message, capsys):
    with pytest.raises(SystemExit) as exit:
        EXAMPLE["main"](args + ["--emit-mlir", os.devnull])
    assert exit.value.code == 2
    assert re.search(f"gemm_ws.py: error: {message}", capsys.readouterr().err)


@pytest.mark.parametrize("m, n, k, split", [
    (1024, 1024, 32768, 2),   # the deep-K row: 64 128 x 128 tiles, 128 units
    (8192, 8192, 8192, 1),    # enough tiles already
    (128, 128, 256, 1),       # too few K steps to split
    (128, 128, 8192, 8),      # one tile: the most splits
])
def test_split_for_fills_the_sms(m, n, k, split):
    assert EXAMPLE["split_for"](m, n, k) == split


def test_example_check_finds_a_wrong_element():
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    config = Config(128, 256, 64, cluster=1)
    a, b = EXAMPLE["inputs"](config)
    c = (a.astype(np.float64) @ b.astype(np.float64)).astype(mgpu.bf16.numpy)
    assert EXAMPLE["check"](config, a, b, c)[0]
    c[5, 7] += 1
    passed, summary = EXAMPLE["check"](config, a, b, c)
    assert not passed and "1 of 32768 elements outside it; first at (5, 7)" in summary


def test_example_fails_on_a_wrong_result(monkeypatch, capsys):
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    monkeypatch.setattr(mgpu.Kernel, "launch", lambda kernel, a, b, backend: np.zeros(
        kernel.outputs[0][0], mgpu.bf16.numpy))
    assert EXAMPLE["main"](["--m", "128", "--n", "256", "--k", "64", "--cluster", "1",
                            "--emulate"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("gemm_ws bf16 128x256x64, 128x256 tiles, 3 stages, cluster 1, grid "
                          "132, on the emulator: FAIL; ")


def test_example_emits_its_mlir(tmp_path):
    path = tmp_path / "gemm_ws.mlir"
    assert EXAMPLE["main"](["--emit-mlir", str(path)]) == 0
    text = path.read_text()
    assert "gpu.func @gemm_ws(%arg0: memref<8192x8192xbf16>" in text
    assert "known_grid_size = array<i32: 132, 1, 1>" in text
    assert str(mgpu.Module.parse(text)) == text


def test_example_is_the_twin_of_the_mlir_example(ptxas):
    """At its defaults (8192^3, 3 stages, 128x256 tiles, clusters of 2) the
    kernel is examples/gemm_bf16_ws.mlir's: the same registers, no spills,
    the same cluster, and the same instructions but for a handful of
    integer ones that compute the loop bounds and tile offsets."""
    python = EXAMPLE["build"](Config(8192, 8192, 8192)).compile(line_info=False)
    mlir = mgpu.compile(mgpu.Module.parse_file(str(REPO / "examples" / "gemm_bf16_ws.mlir")),
                        line_info=False)
    for kernel in (python, mlir):
        report = kernel.manifest["ptxas"]
        assert (report["registers"], report["spill_stores"], report["spill_loads"]) == (168, 0, 0)
        assert kernel.manifest["cluster"] == [2, 1, 1]
    for instruction in ("setmaxnreg.dec.sync.aligned.u32 \t40;",
                        "setmaxnreg.inc.sync.aligned.u32 \t232;",
                        "wgmma.wait_group.sync.aligned \t1;"):
        assert instruction in python.ptx and instruction in mlir.ptx, instruction

    def instructions(ptx):
        return sorted(line.split()[0] for line in ptx.splitlines()
                      if line.startswith("\t") and not line.startswith(("\t//", "\t.", "\t{")))

    difference = set(instructions(python.ptx)) ^ set(instructions(mlir.ptx))
    assert len(difference) < 12, difference
    assert instructions(python.ptx).count("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16") \
        == instructions(mlir.ptx).count("wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16")


# On the emulator: shapes whose tile count is not a multiple of the grid,
# K steps not a multiple of the stages, every stage count, fp8.
EMULATED = [
    # m, n, k, extra arguments
    pytest.param(384, 512, 320, ["--stages", "2", "--grid", "4"], id="bf16-s2-6tiles-grid4-k5"),
    pytest.param(384, 512, 320, ["--stages", "3", "--grid", "4"], id="bf16-s3-6tiles-grid4-k5"),
    pytest.param(256, 384, 448, ["--stages", "4", "--grid", "5"], id="bf16-s4-6tiles-grid5-k7"),
    pytest.param(128, 640, 576, ["--stages", "5", "--grid", "3"], id="bf16-s5-5tiles-grid3-k9"),
    pytest.param(384, 256, 832, ["--stages", "6", "--grid", "2"], id="bf16-s6-6tiles-grid2-k13"),
    pytest.param(256, 512, 128, ["--stages", "3", "--grid", "8"], id="bf16-more-blocks-than-tiles"),
    pytest.param(1152, 256, 192, ["--stages", "2", "--grid", "3"], id="bf16-2-groups-of-rows"),
    pytest.param(384, 512, 640, ["--dtype", "fp8", "--grid", "4"], id="fp8-s3-6tiles-grid4-k5"),
    pytest.param(256, 384, 896, ["--dtype", "fp8", "--stages", "6", "--grid", "4"],
                 id="fp8-s6-6tiles-grid4-k7"),
]
# Clusters of 2 (B multicast): cluster tiles of 256 rows.
EMULATED_CLUSTER = [
    pytest.param(512, 768, 320, ["--stages", "3", "--grid", "4"], id="bf16-s3-6tiles-2clusters-k5"),
    pytest.param(512, 384, 448, ["--stages", "4", "--grid", "4"], id="bf16-s4-6tiles-2clusters-k7"),
    pytest.param(768, 256, 640, ["--stages", "6", "--grid", "6"], id="bf16-s6-6tiles-3clusters-k10"),
    pytest.param(256, 512, 128, ["--stages", "2", "--grid", "6"],
                 id="bf16-s2-more-clusters-than-tiles"),
    pytest.param(2304, 256, 128, ["--stages", "2", "--grid", "4"], id="bf16-2-groups-of-rows"),
    pytest.param(512, 512, 640, ["--dtype", "fp8", "--grid", "6"], id="fp8-s3-4tiles-3clusters"),
    # 1x2: the blocks of a cluster take two tile columns and share A.
    pytest.param(384, 1024, 320, ["--cluster-shape", "1x2", "--grid", "4"],
                 id="bf16-1x2-s3-6tiles-2clusters-k5"),
    pytest.param(256, 512, 256, ["--cluster-shape", "1x2", "--stages", "5", "--grid", "4"],
                 id="bf16-1x2-s5-tile128"),
    pytest.param(256, 1024, 256, ["--cluster-shape", "1x2", "--dtype", "fp8", "--grid", "2"],
                 id="fp8-1x2"),
]


# Shapes that are not multiples of the tile: the edge tiles cross the
# tensor's edges, where TMA fills zeros and clips the stores. 1, tile - 8,
# tile + 8 and primes (M and N; K's rows must be 16-byte aligned for TMA).
# C's rows when they are not 16-byte aligned (N odd): stored from registers,
# each element under a bounds check.
EMULATED_EDGES = [
    pytest.param(3, 50257, 72, ["--b-layout", "nk", "--grid", "16"], id="gpt2-vocab-N"),
    pytest.param(1, 3, 8, ["--b-layout", "nk", "--grid", "2"], id="1x3x8"),
    pytest.param(131, 137, 200, ["--b-layout", "nk", "--grid", "4", "--epilogue",
                                 "bias_gelu_tanh"], id="primes-epilogue"),
    pytest.param(131, 101, 520, ["--b-layout", "nk", "--grid", "4", "--split-k", "2"],
                 id="primes-split-k"),
    pytest.param(131, 137, 520, ["--b-layout", "nk", "--grid", "4", "--stream-k",
                                 "--reduction", "atomic", "--epilogue", "fp8_amax"],
                 id="primes-stream-k-fp8"),
    pytest.param(1, 8, 8, ["--b-layout", "nk", "--grid", "2"], id="1x8x8"),
    pytest.param(131, 136, 200, ["--b-layout", "nk", "--grid", "4"], id="primeM-Bt"),
    pytest.param(127, 120, 56, ["--b-layout", "nk", "--grid", "2", "--cluster", "1"],
                 id="tile-minus"),
    pytest.param(129, 264, 72, ["--b-layout", "nk", "--grid", "4", "--cluster", "1",
                                "--tile-n", "128", "--stages", "4"], id="tile-plus"),
    pytest.param(257, 192, 1000, ["--grid", "4"], id="B-kn-N64-K1000"),
    pytest.param(200, 136, 240, ["--dtype", "fp8", "--grid", "4"], id="fp8-edges"),
    pytest.param(251, 392, 136, ["--b-layout", "nk", "--cluster-shape", "1x2", "--grid", "4"],
                 id="1x2-edges"),
]

# Split-K: the deterministic (S, M, N) workspace and the atomic one.
EMULATED_SPLIT = [
    pytest.param(256, 256, 2048, ["--split-k", "4", "--grid", "16"], id="split4-deterministic"),
    pytest.param(200, 136, 1000, ["--split-k", "3", "--b-layout", "nk", "--grid", "8",
                                  "--reduction", "atomic"], id="split3-atomic-edges"),
    pytest.param(131, 72, 520, ["--split-k", "auto", "--b-layout", "nk", "--grid", "6",
                                "--cluster", "1"], id="split-auto-edges"),
    # Stream-K: the tiles' steps split evenly over the clusters, a tile's
    # segments summed by the fix-up.
    pytest.param(256, 256, 2048, ["--stream-k", "--grid", "6"], id="stream-k-deterministic"),
    pytest.param(200, 136, 1000, ["--stream-k", "--b-layout", "nk", "--grid", "10",
                                  "--reduction", "atomic"], id="stream-k-atomic-edges"),
    pytest.param(128, 128, 128, ["--stream-k", "--grid", "8", "--cluster", "1"],
                 id="stream-k-more-blocks-than-steps"),
    pytest.param(131, 144, 520, ["--stream-k", "--b-layout", "nk", "--grid", "4", "--cluster",
                                 "1", "--epilogue", "bias_gelu_tanh"], id="stream-k-epilogue"),
    # The fix-up kernel applies the epilogue.
    pytest.param(200, 144, 1000, ["--split-k", "3", "--b-layout", "nk", "--grid", "8",
                                  "--epilogue", "bias_gelu_tanh", "--reduction", "atomic"],
                 id="split3-atomic-bias-gelu"),
    pytest.param(131, 144, 520, ["--split-k", "2", "--b-layout", "nk", "--grid", "4",
                                 "--epilogue", "fp8_amax"], id="split2-fp8-amax"),
    pytest.param(131, 144, 520, ["--split-k", "2", "--b-layout", "nk", "--grid", "4",
                                 "--epilogue", "residual"], id="split2-residual"),
]


def passes(m, n, k, args, cache):
    pytest.importorskip("ml_dtypes")
    result = run(["--m", str(m), "--n", str(n), "--k", str(k), "--emulate"] + args, cache)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ": PASS;" in result.stdout and " 0 of " in result.stdout, result.stdout


@needs_emulator
@pytest.mark.parametrize("m, n, k, args", EMULATED)
def test_example_passes_on_the_emulator(m, n, k, args, cache):
    passes(m, n, k, args + ["--cluster", "1"], cache)


@needs_emulator
@pytest.mark.parametrize("m, n, k, args", EMULATED_CLUSTER)
def test_example_passes_on_the_emulator_in_clusters(m, n, k, args, cache):
    passes(m, n, k, args + ["--cluster", "2"], cache)


@needs_emulator
@pytest.mark.parametrize("m, n, k, args", EMULATED_EDGES)
def test_example_passes_at_edge_shapes(m, n, k, args, cache):
    passes(m, n, k, args, cache)


@needs_emulator
@pytest.mark.parametrize("m, n, k, args", EMULATED_SPLIT)
def test_example_passes_with_split_k(m, n, k, args, cache):
    passes(m, n, k, args, cache)


# Every named epilogue, at a shape whose edge tiles get zeros for the
# operands past the edge (N = 144: rows of an e4m3 C are 16-byte aligned).
@needs_emulator
@pytest.mark.parametrize("epilogue", list(EXAMPLE["EPILOGUES"]))
def test_example_passes_with_each_epilogue(epilogue, cache):
    passes(200, 144, 200, ["--b-layout", "nk", "--grid", "4", "--epilogue", epilogue], cache)


def test_shipped_tuning_defaults_are_the_benchmark_shapes():
    import json
    table = json.loads((REPO / "python" / "examples" / "gemm_ws_tuned.json").read_text())
    bench = runpy.run_path(str(REPO / "bench" / "gpu" / "bench.py"))
    assert set(table) == {f"a: bf16[{s.m}, {s.k}], b: bf16[{s.k}, {s.n}]"
                          for s in bench["GEMM_SHAPES"]}
    for config in table.values():
        assert mgpu.Config(**config) in EXAMPLE["TUNING_CONFIGS"], config


# A user's own epilogue: a clamp with a per-row scale, passed as an
# Epilogue rather than a name.
CUSTOM_EPILOGUE = f"""
import runpy, mosaic_gpu as mgpu
example = runpy.run_path({str(SCRIPT)!r})
clamp = example["Epilogue"](
    lambda acc, ops: mgpu.minimum(mgpu.maximum(acc * ops["scale"], -1.0), 1.0),
    lambda acc, ops: (acc * ops["scale"]).clip(-1, 1), row_vectors=("scale",), out="f32")
config = example["Config"](131, 144, 200, b_layout="nk", grid=4, epilogue=clamp)
a, b = example["inputs"](config)
extras = example["epilogue_inputs"](config)
c = example["build"](config).launch(a, b, *extras, backend="emulator")
passed, summary = example["check"](config, a, b, c, extras)
print(passed, summary)
assert passed and c.dtype.name == "float32"
"""


@needs_emulator
def test_a_custom_epilogue(cache):
    pytest.importorskip("ml_dtypes")
    result = run([], cache, script=CUSTOM_EPILOGUE)
    assert result.returncode == 0 and result.stdout.startswith("True"), \
        result.stdout + result.stderr


@pytest.mark.parametrize("epilogue, exception, message", [
    (42, TypeError, "`epilogue` must be an Epilogue or the name of one of EPILOGUES, got 42"),
    ("tanh", ValueError, "--epilogue must be one of relu, "),
    (dict(out="e5m2"), ValueError, "the epilogue's `out` must be one of bf16, f16, f32, e4m3"),
    (dict(row_vectors=("x",), column_vectors=("x",)), ValueError,
     r"the epilogue's operands must have distinct str names, got \['x', 'x'\]"),
    (dict(function=None), TypeError, "the epilogue's `function` must be callable"),
])
def test_bad_epilogues(epilogue, exception, message):
    if isinstance(epilogue, dict):
        fields = dict(function=lambda acc, ops: acc, reference=lambda acc, ops: acc)
        epilogue = EXAMPLE["Epilogue"](**{**fields, **epilogue})
    with pytest.raises(exception, match=message):
        EXAMPLE["build"](Config(128, 128, 64, cluster=1, epilogue=epilogue))


def test_epilogue_check_finds_a_wrong_function():
    """The check holds C to the epilogue's NumPy reference: the plain
    product fails it for GELU, a missing bias fails it too."""
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    config = Config(64, 128, 64, cluster=1, b_layout="nk", epilogue="bias_gelu_tanh")
    a, b = EXAMPLE["inputs"](config)
    extras = EXAMPLE["epilogue_inputs"](config)
    right = EXAMPLE["reference"](config, a, b, extras).astype(mgpu.bf16.numpy)
    assert EXAMPLE["check"](config, a, b, right, extras)[0]
    plain = EXAMPLE["reference"](config._replace(epilogue=None), a, b)
    assert not EXAMPLE["check"](config, a, b, plain.astype(mgpu.bf16.numpy), extras)[0]
    no_bias = EXAMPLE["_numpy_gelu_tanh"](plain).astype(mgpu.bf16.numpy)
    assert not EXAMPLE["check"](config, a, b, no_bias, extras)[0]


@needs_emulator
@pytest.mark.parametrize("m, n, k, args", [
    pytest.param(131, 136, 200, ["--b-layout", "nk", "--grid", "4", "--split-k", "2"],
                 id="edges-split-k"),
    pytest.param(200, 144, 1000, ["--b-layout", "nk", "--grid", "10", "--stream-k",
                                  "--epilogue", "bias_gelu_tanh"], id="edges-stream-k-epilogue"),
    pytest.param(131, 144, 200, ["--b-layout", "nk", "--grid", "4", "--epilogue", "fp8_amax"],
                 id="edges-fp8-amax"),
    pytest.param(257, 192, 1000, ["--grid", "4", "--epilogue", "residual", "--stream-k",
                                  "--reduction", "atomic"], id="edges-residual-atomic"),
])
def test_new_paths_pass_under_a_random_schedule(m, n, k, args, cache, monkeypatch):
    monkeypatch.setenv("MOSAIC_EMULATOR_SCHEDULE", "random")
    monkeypatch.setenv("MOSAIC_EMULATOR_SEED", "7")
    passes(m, n, k, args, cache)


@needs_emulator
def test_deterministic_split_k_gives_the_same_bits_as_its_reference_order(cache):
    """The fix-up sums the splits in order: C is the bf16 rounding of the
    f32 partials added 0, 1, 2, ... (checked against that sum here)."""
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    source = f"""
import runpy, numpy as np, mosaic_gpu as mgpu
example = runpy.run_path({str(SCRIPT)!r})
config = example["Config"](192, 128, 1024, split_k=4, b_layout="nk", grid=8)
a, b = example["inputs"](config)
partials = example["build"](config).launch(a, b, backend="emulator")
expected = partials[0]
for part in partials[1:]:
    expected = expected + part
c = example["SplitGemm"](config)(a, b, backend="emulator")
assert partials.shape == (4, 192, 128)
assert (c == expected.astype(mgpu.bf16.numpy)).all()
print("same bits")
"""
    result = run([], cache, script=source)
    assert result.returncode == 0 and "same bits" in result.stdout, result.stdout + result.stderr


@pytest.mark.parametrize("tiles, steps, units", [
    (1, 2, 8), (32, 512, 132), (7, 3, 5), (64, 256, 66), (3, 1, 2), (5, 9, 5)])
def test_stream_k_units_cover_every_step_once_and_evenly(tiles, steps, units):
    iterations = tiles * steps
    owners = [mgpu.stream_k_unit(i, iterations, units) for i in range(iterations)]
    assert owners == sorted(owners) and 0 <= owners[0] and owners[-1] < units
    counts = [owners.count(u) for u in range(units)]
    assert max(counts) - min(counts) <= 1 and sum(counts) == iterations
    for unit in range(units):  # unit u starts at u * iterations // units
        if counts[unit]:
            assert owners.index(unit) == unit * iterations // units
    # A tile's segment is numbered by its unit from the tile's first unit,
    # so the slots span the first to the last unit (units without steps,
    # when there are more units than steps, leave theirs empty).
    slots = [owners[(t + 1) * steps - 1] - owners[t * steps] + 1 for t in range(tiles)]
    assert mgpu.stream_k_parts(tiles, steps, units) == max(slots)
    assert max(len(set(owners[t * steps:(t + 1) * steps])) for t in range(tiles)) <= max(slots)


# A stream-K segment numbered one too high: the first segment of a tile
# lands in a slot past the workspace's (dropped by TMA) or on another's.
SHIFTED_PARTS = f"""
import runpy, sys
from mosaic_gpu import pipeline
unit = pipeline.stream_k_unit
pipeline.stream_k_unit = lambda iteration, iterations, units: unit(iteration, iterations,
                                                                   units) - 1
sys.argv = [{str(SCRIPT)!r}] + sys.argv[1:]
runpy.run_path({str(SCRIPT)!r}, run_name="__main__")
"""


@needs_emulator
def test_stream_k_with_misnumbered_segments_fails(cache):
    pytest.importorskip("ml_dtypes")
    args = ["--m", "256", "--n", "256", "--k", "2048", "--stream-k", "--grid", "6",
            "--emulate"]
    result = run(args, cache, script=SHIFTED_PARTS)
    assert result.returncode == 1 and ": FAIL;" in result.stdout, result.stdout + result.stderr
    assert run(args, cache).returncode == 0


# Splits one K step too short: the last step of every split is never
# computed, which the check must catch.
SHORT_SPLITS = f"""
import sys
source = open({str(SCRIPT)!r}).read()
assert "split_steps = ceil_div(steps, split)" in source
source = source.replace("split_steps = ceil_div(steps, split)",
                        "split_steps = ceil_div(steps, split) - 1")
sys.argv = [{str(SCRIPT)!r}] + sys.argv[1:]
exec(compile(source, {str(SCRIPT)!r}, "exec"), {{"__name__": "__main__",
                                                  "__file__": {str(SCRIPT)!r}}})
"""


@needs_emulator
def test_split_k_that_skips_k_steps_fails(cache):
    pytest.importorskip("ml_dtypes")
    args = ["--m", "128", "--n", "128", "--k", "1024", "--split-k", "4", "--grid", "4",
            "--cluster", "1", "--b-layout", "nk", "--emulate"]
    result = run(args, cache, script=SHORT_SPLITS)
    assert result.returncode == 1 and ": FAIL;" in result.stdout, result.stdout + result.stderr


# A pipeline whose consumers skip wgmma_wait(1): they release a stage while
# the wgmma that reads it may still be in flight, and the producer refills it.
BROKEN = f"""
import runpy, sys
from mosaic_gpu import pipeline
wait = pipeline.wgmma_wait
pipeline.wgmma_wait = lambda pending: None if pending == 1 else wait(pending)
sys.argv = [{str(SCRIPT)!r}] + sys.argv[1:]
runpy.run_path({str(SCRIPT)!r}, run_name="__main__")
"""


@needs_emulator
def test_a_stage_released_before_its_wgmma_completes_is_a_hazard(cache):
    pytest.importorskip("ml_dtypes")
    args = ["--m", "256", "--n", "256", "--k", "512", "--grid", "2", "--emulate"]
    result = run(args, cache, script=BROKEN)
    assert result.returncode == 1
    assert ": FAIL; the launch failed: " in result.stdout, result.stdout
    assert "hazard: the TMA load" in result.stdout, result.stdout
    assert "may still read it" in result.stdout, result.stdout
    assert run(args, cache).returncode == 0  # the same kernel with its waits passes


# Consumers of a cluster that release stages in their own block only: the
# producers wait for the peer's consumers forever.
LOCAL_RELEASE = BROKEN.replace(
    "wait = pipeline.wgmma_wait\npipeline.wgmma_wait = lambda pending: None if pending == 1 else "
    "wait(pending)",
    "arrive = pipeline.arrive\npipeline.arrive = lambda barrier, collective=(): arrive(barrier)")


@needs_emulator
def test_a_stage_released_in_one_block_of_a_cluster_is_a_deadlock(cache):
    pytest.importorskip("ml_dtypes")
    assert "collective=()" in LOCAL_RELEASE
    result = run(["--m", "256", "--n", "256", "--k", "512", "--grid", "2", "--cluster", "2",
                  "--emulate"], cache, script=LOCAL_RELEASE)
    assert result.returncode == 1
    assert "FAIL; the launch failed: " in result.stdout and "hazard: deadlock" in result.stdout, \
        result.stdout
