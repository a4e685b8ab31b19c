"""python/examples/attention.py: the fused attention kernel against the
float64 NumPy reference on the PTX emulator (a hazard fails the launch) at
several sequence lengths, both head dims, with and without the causal mask,
bf16 and f16, and several ring depths; a broken kernel the emulator must
catch (P V reading V before it lands); the example's errors for bad configurations; its twin,
examples/attention_fwd.mlir; and the Python ops it added (exp2, log2,
select, named_barrier(arrive=True)).

Each emulator run is a process of its own (a crash fails that test only)."""
import math
import os
import re
import runpy
import subprocess
import sys

import pytest

import mosaic_gpu as mgpu
from conftest import REPO, needs_emulator, run_example

SCRIPT = REPO / "python" / "examples" / "attention.py"
EXAMPLE = runpy.run_path(str(SCRIPT))
Config = EXAMPLE["Config"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("attention_cache")


def run(args, cache, script=None):
    return run_example(SCRIPT, args, cache, script)


# On the emulator: sequences of 1 to 8 blocks of queries (so the causal
# blocks read 1 to 8 key tiles, and the rings wrap), both head dims, both
# dtypes, batch and heads above 1.
EMULATED = [
    pytest.param(["--seq", "128", "--head-dim", "64"], id="seq128-d64"),
    pytest.param(["--seq", "128", "--head-dim", "128", "--causal"], id="seq128-d128-causal"),
    pytest.param(["--seq", "384", "--head-dim", "64", "--causal"], id="seq384-d64-causal"),
    pytest.param(["--seq", "512", "--head-dim", "128"], id="seq512-d128"),
    pytest.param(["--seq", "512", "--head-dim", "128", "--causal"], id="seq512-d128-causal"),
    pytest.param(["--seq", "640", "--head-dim", "64", "--dtype", "f16", "--stages", "3"],
                 id="seq640-d64-f16-s3"),
    pytest.param(["--seq", "768", "--head-dim", "128", "--dtype", "f16", "--causal"],
                 id="seq768-d128-f16-causal"),
    pytest.param(["--seq", "1024", "--head-dim", "64", "--causal", "--stages", "4"],
                 id="seq1024-d64-causal-s4"),
    pytest.param(["--seq", "1024", "--head-dim", "128", "--batch", "2", "--heads", "1"],
                 id="seq1024-d128-batch2"),
    pytest.param(["--seq", "256", "--head-dim", "64", "--batch", "2", "--heads", "3",
                  "--causal", "--stages", "5"], id="seq256-d64-6heads-causal-s5"),
]


@needs_emulator
@pytest.mark.parametrize("args", EMULATED)
def test_example_passes_on_the_emulator(args, cache):
    pytest.importorskip("ml_dtypes")
    defaults = ["--batch", "1", "--heads", "2"]
    result = run(defaults + args + ["--emulate"], cache)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ": PASS;" in result.stdout, result.stdout
    assert re.search(r"O: .* 0 of \d+ outside; LSE: .* 0 of \d+ outside", result.stdout), \
        result.stdout


@needs_emulator
def test_random_schedule_passes(cache):
    """Warps interleaved and async operations completed in a random order."""
    pytest.importorskip("ml_dtypes")
    env = dict(os.environ, MOSAIC_GPU_CACHE_DIR=str(cache), MOSAIC_EMULATOR_SCHEDULE="random",
               MOSAIC_EMULATOR_POLICY="random", MOSAIC_EMULATOR_SEED="5")
    result = subprocess.run([sys.executable, str(SCRIPT), "--batch", "1", "--heads", "1",
                             "--seq", "512", "--head-dim", "64", "--causal", "--emulate"],
                            env=env, capture_output=True, text=True, cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr


# A kernel whose consumers issue P V without waiting for V to land: the
# wgmma reads shared memory that a TMA load is still writing.
NO_WAIT_FOR_V = f"""
import inspect, runpy, sys
import mosaic_gpu
wait = mosaic_gpu.wait
def wait_except_for_v(*args, **kwargs):
    if inspect.stack()[1].function != "previous_pv":
        wait(*args, **kwargs)
mosaic_gpu.wait = wait_except_for_v
sys.argv = [{str(SCRIPT)!r}] + sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


@needs_emulator
def test_reading_v_before_it_lands_is_a_hazard(cache):
    pytest.importorskip("ml_dtypes")
    result = run(["--batch", "1", "--heads", "1", "--seq", "512", "--head-dim", "64",
                  "--emulate"], cache, script=NO_WAIT_FOR_V)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL; the launch failed" in result.stdout
    assert re.search(r"hazard: the wgmma.mma_async .* reads shared address \d+, which the TMA "
                     "load", result.stdout), result.stdout


def test_check_finds_a_wrong_element():
    pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    config = Config(1, 2, 128, 64, causal=True)
    q, k, v = EXAMPLE["inputs"](config)
    o, lse = EXAMPLE["reference"](config, q, k, v)
    o = o.astype(mgpu.bf16.numpy)
    assert EXAMPLE["check"](config, q, k, v, o, lse)[0]
    o[0, 1, 5, 7] += 1
    passed, summary = EXAMPLE["check"](config, q, k, v, o, lse)
    assert not passed and "1 of 16384 outside (first at (0, 1, 5, 7)" in summary
    # Not masking is caught in the LSE.
    unmasked = EXAMPLE["reference"](config._replace(causal=False), q, k, v)
    passed, summary = EXAMPLE["check"](config, q, k, v, unmasked[0].astype(mgpu.bf16.numpy),
                                       unmasked[1])
    assert not passed and "LSE: " in summary


def test_reference_is_softmax_attention():
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    config = Config(1, 1, 4, 2, causal=True)
    q = np.array([[[[1, 0], [0, 1], [1, 1], [0, 0]]]], np.float32)
    k = np.array([[[[1, 0], [0, 2], [1, 1], [3, 0]]]], np.float32)
    v = np.array([[[[1, 2], [3, 4], [5, 6], [7, 8]]]], np.float32)
    o, lse = EXAMPLE["reference"](config, q, k, v)
    # Query 0 sees key 0 only; query 1 keys 0 and 1 with scores 0 and 2 / sqrt(2).
    assert o[0, 0, 0] == pytest.approx([1, 2])
    weights = np.exp([0, 2 / math.sqrt(2)])
    assert o[0, 0, 1] == pytest.approx((weights / weights.sum()) @ [[1, 2], [3, 4]])
    assert lse[0, 0, 1] == pytest.approx(math.log(weights.sum()))


def test_example_fails_on_a_wrong_result(monkeypatch, capsys):
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    monkeypatch.setattr(mgpu.Kernel, "launch", lambda kernel, q, k, v, backend: (
        np.zeros(kernel.outputs[0][0], mgpu.bf16.numpy), np.zeros(kernel.outputs[1][0],
                                                                    np.float32)))
    assert EXAMPLE["main"](["--batch", "1", "--heads", "1", "--seq", "128", "--emulate"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("attention bf16 batch 1, heads 1, seq 128, head_dim 128, 2 stages, on "
                          "the emulator: FAIL; O: ")


@pytest.mark.parametrize("args, message", [
    (["--head-dim", "96"], "--head-dim must be 64 or 128, got 96"),
    (["--seq", "100"], r"--seq 100 must be a positive multiple of 128 \(the query rows of a "
                       r"block and the keys of a tile\)"),
    (["--seq", "0"], "--seq 0 must be a positive multiple of 128"),
    (["--batch", "0"], "--batch must be positive, got 0"),
    (["--heads", "-2"], "--heads must be positive, got -2"),
    (["--batch", "256", "--heads", "256"], "--batch x --heads is 65536, more than the 65535 "
                                           "blocks a grid's y dimension holds"),
    (["--stages", "1"], "--stages must be at least 2, got 1"),
    (["--stages", "3"], r"3 stages of 128 keys at head_dim 128 need 259.0 KiB of shared memory, "
                        r"more than the 227 KiB of a block; use fewer stages"),
    (["--head-dim", "64", "--stages", "7"], "7 stages of 128 keys at head_dim 64 need"),
])
def test_example_configuration_errors(args, message, capsys):
    with pytest.raises(SystemExit) as exit:
        EXAMPLE["main"](args + ["--emit-mlir", os.devnull])
    assert exit.value.code == 2
    assert re.search(f"attention.py: error: {message}", capsys.readouterr().err)


def test_example_rejects_a_bad_dtype(capsys):
    with pytest.raises(SystemExit) as exit:
        EXAMPLE["main"](["--dtype", "f32", "--emit-mlir", os.devnull])
    assert exit.value.code == 2
    assert "invalid choice: 'f32'" in capsys.readouterr().err


def test_example_emits_its_mlir(tmp_path):
    path = tmp_path / "attention.mlir"
    assert EXAMPLE["main"](["--emit-mlir", str(path), "--causal"]) == 0
    text = path.read_text()
    assert "gpu.func @attention_causal_fwd(%arg0: memref<64x4096x128xbf16>" in text
    assert "known_grid_size = array<i32: 32, 64, 1>" in text
    assert str(mgpu.Module.parse(text)) == text


def test_example_is_the_twin_of_the_mlir_example(ptxas):
    """At its defaults (4 x 16 heads of 4096 queries, head_dim 128, not
    causal) the kernel is examples/attention_fwd.mlir's: no spills, the same
    register split, both wgmmas (S from shared memory, P V with P in
    registers) as often, and the same instructions but for a few integer
    ones."""
    python = EXAMPLE["build"](Config(4, 16, 4096)).compile(line_info=False)
    mlir = mgpu.compile(mgpu.Module.parse_file(str(REPO / "examples" / "attention_fwd.mlir")),
                        line_info=False)
    for kernel in (python, mlir):
        report = kernel.manifest["ptxas"]
        assert (report["registers"], report["spill_stores"], report["spill_loads"]) == (168, 0, 0)
        assert "Potential Performance Loss" not in report["report"]
    for instruction in ("setmaxnreg.dec.sync.aligned.u32 \t24;",
                        "setmaxnreg.inc.sync.aligned.u32 \t240;", "bar.arrive",
                        "ex2.approx.ftz.f32"):
        assert instruction in python.ptx and instruction in mlir.ptx, instruction

    def instructions(ptx):
        return sorted(line.split()[0] for line in ptx.splitlines()
                      if line.startswith("\t") and not line.startswith(("\t//", "\t.", "\t{")))

    difference = set(instructions(python.ptx)) ^ set(instructions(mlir.ptx))
    assert len(difference) < 12, difference
    mma = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.bf16\.bf16 \{[^}]*\}, "
                     r"(\{%r\d+, %r\d+, %r\d+, %r\d+\}|%rd\d+),")
    for kernel in (python, mlir):
        a_operands = [match.group(1)[0] for match in mma.finditer(kernel.ptx)]
        assert a_operands.count("{") == 16 and a_operands.count("%") == 8, a_operands


# The ops the example added to the authoring API.


def build(body, inputs=(((64, 128), "f32"),), outputs=(((64, 128), "f32"),)):
    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=list(inputs), outputs=list(outputs))
    def kernel(*refs):
        body(*refs)
    return kernel


def test_exp2_log2_select_build():
    def body(x, out):
        v = mgpu.vector_load(x)
        w = mgpu.select(v > 0.0, mgpu.exp2(v), mgpu.log2(v * v))
        mgpu.vector_store(mgpu.select(v < -1.0, -math.inf, w), out)
    text = str(build(body).module)
    for op in ("math.exp2", "math.log2", "arith.select", "arith.cmpf ogt", "0xFF800000"):
        assert op in text, op


@pytest.mark.parametrize("make, exception, message", [
    (lambda v: mgpu.exp2(1.0), TypeError, "`x` must be"),
    (lambda v: mgpu.log2(mgpu.constant(1.0, "f32")), TypeError, "`x` must be"),
    (lambda v: mgpu.select(v, v, v), TypeError, "`condition` must be i1"),
    (lambda v: mgpu.select(v > 0.0, 1.0, 2.0), TypeError,
     "`if_true` or `if_false` must be a Vector or Scalar"),
    (lambda v: mgpu.select(mgpu.constant(1, "i32") > 0, v, v), ValueError,
     r"`condition` must match the values \(shape \[64, 128\]\), got a scalar"),
    (lambda v: mgpu.select(v > 0.0, v, v.astype("f16")), ValueError,
     "operands are f32"),
    (lambda v: mgpu.named_barrier(4, 1, arrive=1), TypeError, "`arrive` must be"),
])
def test_bad_arguments(make, exception, message):
    def body(x, out):
        make(mgpu.vector_load(x))
    with pytest.raises(exception, match=message):
        build(body)


def test_flush_denormals():
    text = str(build(lambda x, out: None).module)
    assert "mosaic_gpu.flush_denormals" not in text

    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[], outputs=[((128,), "f32")],
                 flush_denormals=True)
    def flushing(out):
        pass
    assert "mosaic_gpu.flush_denormals" in str(flushing.module)
    with pytest.raises(TypeError, match="`flush_denormals` must be a bool, got 1"):
        mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[], outputs=[((128,), "f32")],
                    flush_denormals=1)


def test_named_barrier_arrive_builds():
    @mgpu.kernel(grid=(1, 1, 1), block=(384, 1, 1), inputs=[], outputs=[((128,), "f32")])
    def kernel(out):
        mgpu.named_barrier(4, 2, arrive=True)
        mgpu.named_barrier(4, 2)
    text = str(kernel.module)
    assert "mosaic_gpu.named_barrier arrive 4, warpgroups = 2" in text
    assert "mosaic_gpu.named_barrier 4, warpgroups = 2" in text
