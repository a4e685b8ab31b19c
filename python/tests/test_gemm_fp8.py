"""python/examples/gemm_fp8.py: the FP8 GEMM with tensor, row and block
(DeepSeek-V3) scaling against float64 NumPy of the dequantized inputs on
the PTX emulator (hazards on: a hazard fails the launch), at tile
multiples and edge shapes, under a random schedule; a wrong scale layout
and unpromoted accumulation that the check must catch; the errors for bad
configurations; the PTX and the 8192^3 MLIR bench/gpu compiles.

Each emulator run is a process of its own (a crash fails that test only)."""
import os
import re
import runpy
import sys

import pytest

import mosaic_gpu as mgpu
from conftest import REPO, needs_emulator, run_example

EXAMPLES = REPO / "python" / "examples"
SCRIPT = EXAMPLES / "gemm_fp8.py"
# gemm_fp8.py imports gemm_ws.py's tile constants, as it does when run as
# a script from its directory.
sys.path.insert(0, str(EXAMPLES))
EXAMPLE = runpy.run_path(str(SCRIPT))
Config = EXAMPLE["Config"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """The compiled-kernel cache of this module's launches."""
    return tmp_path_factory.mktemp("gemm_fp8_cache")


def run(args, cache, script=None):
    """Runs gemm_fp8.py (or `script`, Python source) with `args` in a
    process of its own."""
    return run_example(SCRIPT, args, cache, script)


def passes(args, cache):
    pytest.importorskip("ml_dtypes")
    result = run(args + ["--emulate"], cache)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ": PASS; " in result.stdout and " 0 of " in result.stdout, result.stdout


# Each scaling at a tile multiple and at edge shapes (M, N, K not multiples
# of the 128 x TILE_N x 128 tile), with the other dtypes and outputs spread
# over them, in clusters of 2 (Bt multicast; the default) and of 1; grids
# smaller than the tile count, so blocks take several tiles.
EMULATED = [
    ("tensor", 256, 256, 512, ["--grid", "3", "--cluster", "1"]),
    ("tensor", 200, 136, 272, ["--out", "f32", "--grid", "2"]),
    ("tensor", 128, 512, 384, ["--fast-accum", "--tile-n", "256", "--stages", "3",
                               "--dtype", "e5m2"]),
    ("row", 256, 256, 512, ["--dtype", "e5m2", "--grid", "2"]),
    ("row", 77, 296, 48, ["--out", "f16", "--stages", "2", "--cluster", "1"]),
    ("block", 256, 256, 512, ["--grid", "3", "--cluster", "1"]),
    ("block", 300, 264, 400, ["--out", "f16", "--grid", "4"]),
    ("block", 256, 128, 512, ["--dtype", "e5m2", "--out", "f32", "--stages", "2"]),
    # Mixed formats: e4m3 activations times e5m2 gradients.
    ("row", 200, 136, 272, ["--b-dtype", "e5m2", "--grid", "2"]),
]


@needs_emulator
@pytest.mark.parametrize("scaling, m, n, k, args", EMULATED,
                         ids=[f"{s}-{m}x{n}x{k}" for s, m, n, k, _ in EMULATED])
def test_passes_on_the_emulator(scaling, m, n, k, args, cache):
    passes(["--scaling", scaling, "--m", str(m), "--n", str(n), "--k", str(k)] + args, cache)


@needs_emulator
@pytest.mark.parametrize("scaling", ["block", "row"])
def test_passes_under_a_random_schedule(scaling, cache, monkeypatch):
    """Warps interleaved and async operations completed in a random order;
    two blocks of two tiles each, so each reuses its stages and (row
    scaling) its scale buffers and their barriers' second phase."""
    monkeypatch.setenv("MOSAIC_EMULATOR_SCHEDULE", "random")
    monkeypatch.setenv("MOSAIC_EMULATOR_POLICY", "random")
    monkeypatch.setenv("MOSAIC_EMULATOR_SEED", "5")
    passes(["--scaling", scaling, "--m", "200", "--n", "136", "--k", "400", "--grid", "2",
            "--stages", "2"], cache)


# The block scales of A given row-major, (M, K/128) flattened, instead of
# K-block-major: every scale lands on the wrong row or K block.
WRONG_SCALE_LAYOUT = f"""
import runpy, sys
sys.path.insert(0, {str(EXAMPLES)!r})
sys.argv = [{str(SCRIPT)!r}] + sys.argv[1:]
example = runpy.run_path({str(SCRIPT)!r})
def row_major(config, a_scales, b_scales):
    return a_scales.reshape(-1), b_scales.reshape(-1)
example["main"].__globals__["kernel_scales"] = row_major
sys.exit(example["main"]())
"""


@needs_emulator
def test_a_wrong_block_scale_layout_fails(cache):
    pytest.importorskip("ml_dtypes")
    args = ["--scaling", "block", "--m", "256", "--n", "128", "--k", "512", "--grid", "2",
            "--emulate"]
    result = run(args, cache, script=WRONG_SCALE_LAYOUT)
    assert result.returncode == 1 and ": FAIL; " in result.stdout, result.stdout + result.stderr


# Row scaling whose consumers read their scales without waiting for the
# TMA load that brings them.
NO_WAIT_FOR_ROW_SCALES = f"""
import sys
source = open({str(SCRIPT)!r}).read()
wait = "                mgpu.wait(barrier, parity=tile_parity)\\n"
assert source.count(wait) == 1
sys.path.insert(0, {str(EXAMPLES)!r})
sys.argv = [{str(SCRIPT)!r}] + sys.argv[1:]
exec(compile(source.replace(wait, ""), {str(SCRIPT)!r}, "exec"), {{"__name__": "__main__"}})
"""


@needs_emulator
def test_row_scales_read_before_they_land_is_a_hazard(cache):
    pytest.importorskip("ml_dtypes")
    args = ["--scaling", "row", "--m", "256", "--n", "256", "--k", "512", "--grid", "2",
            "--emulate"]
    result = run(args, cache, script=NO_WAIT_FOR_ROW_SCALES)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ": FAIL; the launch failed: " in result.stdout, result.stdout
    assert "hazard: the TMA load" in result.stdout, result.stdout


# Accumulating K = 8192 in the tensor core's FP8 accumulator (--fast-accum)
# misses the tolerance of promoted accumulation, which the promoted kernel
# meets: the emulator models the accumulator's ~14 bits, and promotion is
# what makes up for them.
PROMOTION = f"""
import runpy, sys
sys.path.insert(0, {str(EXAMPLES)!r})
example = runpy.run_path({str(SCRIPT)!r})
Config = example["Config"]
for fast_accum in (False, True):
    config = Config(128, 128, 8192, "tensor", out="f32", grid=1, fast_accum=fast_accum,
                    cluster=1)
    a, bt, a_scales, b_scales = example["inputs"](config)
    c = example["build"](config).launch(a, bt, a_scales, b_scales, backend="emulator")
    promoted = config._replace(fast_accum=False)
    print(fast_accum, example["check"](promoted, a, bt, a_scales, b_scales, c)[0])
"""


@needs_emulator
def test_unpromoted_accumulation_misses_the_promoted_tolerance(cache):
    pytest.importorskip("ml_dtypes")
    result = run([], cache, script=PROMOTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("\n")[:2] == ["False True", "True False"], result.stdout


def test_check_finds_a_wrong_element():
    pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    config = Config(128, 128, 256, "block")
    a, bt, a_scales, b_scales = EXAMPLE["inputs"](config)
    a64 = EXAMPLE["dequantize"](a, a_scales, "block", "a")
    b64 = EXAMPLE["dequantize"](bt, b_scales, "block", "bt")
    c = (a64 @ b64.T).astype(mgpu.bf16.numpy)
    assert EXAMPLE["check"](config, a, bt, a_scales, b_scales, c)[0]
    c[5, 7] = c[5, 7] * 1.1 + 1
    passed, summary = EXAMPLE["check"](config, a, bt, a_scales, b_scales, c)
    assert not passed and "1 of 16384 elements outside it; first at (5, 7)" in summary


def test_quantized_inputs_round_trip():
    """The recipe's scales are amax / FP8_MAX per group: dequantized
    inputs are within fp8's rounding of the Gaussian data, and every
    group's largest element is +-FP8_MAX."""
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    rng = np.random.default_rng(1)
    x = rng.standard_normal((130, 300))
    for scaling, shape in (("tensor", (1,)), ("row", (130,)), ("block", (2, 3))):
        q, scales = EXAMPLE["quantize"](x, scaling, "bt", "e4m3")
        assert scales.shape == shape and scales.dtype == np.float32
        assert np.abs(q.astype(np.float64)).max() == 448.0
        back = EXAMPLE["dequantize"](q, scales, scaling, "bt")
        assert np.allclose(back, x, rtol=2 ** -3, atol=float(scales.max()) * 2 ** -6)


@pytest.mark.parametrize("args, message", [
    (["--scaling", "block", "--tile-n", "256"],
     "--scaling block needs --tile-n 128: a 256-wide tile spans two 128 x 128 scale blocks "
     "of B"),
    (["--scaling", "block", "--fast-accum"],
     "--fast-accum applies to tensor and row scaling: block scaling scales every 128-K "
     "partial sum, so it always promotes"),
    (["--scaling", "tensor", "--stages", "7"], "--stages must be 2 to 6, got 7"),
    (["--scaling", "row", "--tile-n", "64"], "--tile-n must be 128 or 256, got 64"),
    (["--scaling", "row", "--tile-n", "256"],
     "--tile-n 256 needs --fast-accum: promotion keeps a 64 x 256 f32 partial sum beside "
     "the 64 x 256 accumulator"),
    (["--scaling", "tensor", "--stages", "4", "--tile-n", "256", "--fast-accum"],
     r"4 stages of 128 x 256 tiles and their bf16 C tile need 259.0 KiB of shared memory, more "
     "than the 227 KiB of a block; use --tile-n 128 or fewer stages"),
    (["--scaling", "block", "--stages", "6", "--out", "f32"],
     r"6 stages of 128 x 128 tiles and their f32 C tile need 261.0 KiB of shared memory, more "
     "than the 227 KiB of a block; use fewer stages"),
    (["--scaling", "row", "--k", "1000"],
     "--k 1000 must be a multiple of 16: TMA needs the rows of A and Bt"),
    (["--scaling", "row", "--n", "1001", "--out", "f32"],
     r"--n 1001 must be a multiple of 4: TMA needs the rows of C \(1001 x 4 bytes\)"),
    (["--scaling", "tensor", "--m", "0"], "--m must be positive, got 0"),
    (["--scaling", "tensor", "--grid", "0"],
     r"--grid must be a positive multiple of the cluster \(2\), got 0"),
    (["--scaling", "tensor", "--grid", "131"],
     r"--grid must be a positive multiple of the cluster \(2\), got 131"),
    (["--scaling", "row", "--cluster", "4"], "--cluster must be 1 or 2, got 4"),
    (["--scaling", "channel"], "argument --scaling: invalid choice: 'channel'"),
    (["--scaling", "row", "--dtype", "e4m3fnuz"], "argument --dtype: invalid choice"),
    (["--m", "128"], "the following arguments are required: --scaling"),
])
def test_configuration_errors(args, message, capsys):
    with pytest.raises(SystemExit) as exit:
        EXAMPLE["main"](args + ["--emit-mlir", os.devnull])
    assert exit.value.code == 2
    assert re.search(f"gemm_fp8.py: error: {message}", capsys.readouterr().err)


def test_emits_its_mlir(tmp_path):
    path = tmp_path / "gemm_fp8.mlir"
    assert EXAMPLE["main"](["--scaling", "block", "--emit-mlir", str(path)]) == 0
    text = path.read_text()
    assert ("gpu.func @gemm_fp8(%arg0: memref<8192x8192xf8E4M3FN>, "
            "%arg1: memref<8192x8192xf8E4M3FN>, %arg2: memref<524288xf32>, "
            "%arg3: memref<4096xf32>, %arg4: memref<8192x8192xbf16>") in text
    assert str(mgpu.Module.parse(text)) == text


@pytest.mark.parametrize("scaling, dtype, b_dtype, fast_accum, instruction", [
    ("block", "e4m3", None, False, "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3"),
    ("row", "e5m2", None, True, "wgmma.mma_async.sync.aligned.m64n256k32.f32.e5m2.e5m2"),
    ("row", "e4m3", "e5m2", False, "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e5m2"),
])
def test_ptx(scaling, dtype, b_dtype, fast_accum, instruction):
    config = Config(8192, 8192, 8192, scaling, dtype, stages=3, fast_accum=fast_accum,
                    b_dtype=b_dtype)
    ptx = EXAMPLE["build"](config).compile(emit="ptx").ptx
    assert ptx.count(instruction) == 4  # 4 k32 instructions per 128-K step
    # In clusters of 2 (the default) Bt's stage is multicast.
    assert ptx.count("global.tile.mbarrier::complete_tx::bytes.multicast::cluster") == 1
    # No accumulator goes through shared memory for a relayout: the only
    # shared stores are the C tile's stmatrix.
    assert "st.shared" not in ptx


@pytest.mark.parametrize("scaling, stages, fast_accum", [
    ("tensor", 4, False), ("row", 4, False), ("block", 4, False),
    ("tensor", 3, True), ("row", 3, True),  # 128 x 256 tiles
])
def test_compiles_without_spills(scaling, stages, fast_accum, ptxas):
    config = Config(8192, 8192, 8192, scaling, stages=stages, fast_accum=fast_accum)
    ptxas_info = EXAMPLE["build"](config).compile().manifest["ptxas"]
    assert (ptxas_info["spill_stores"], ptxas_info["spill_loads"]) == (0, 0)
