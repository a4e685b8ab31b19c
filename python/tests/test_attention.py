"""python/examples/attention.py: the attention kernels of mosaic_gpu.attention
against the float64 NumPy reference on the PTX emulator (a hazard fails the
launch): the forward and the backward at several sequence lengths (any
length, not only whole tiles), head dims, grouped heads, packed batches,
causal or not, bf16 and f16, fp8 forward, under the default and a random
schedule; broken kernels the emulator must catch (a missing wait, a stage
released early, dQ's staging buffer rewritten before its reduce-add read it,
dQ stored instead of added); the checks' own sensitivity; the example's
errors for bad configurations; its MLIR; and the Python ops the kernels
added (exp2, log2, select, named_barrier(arrive=True)).

Each emulator run is a process of its own (a crash fails that test only)."""
import math
import os
import re
import runpy
import subprocess
import sys

import pytest

import mosaic_gpu as mgpu
from mosaic_gpu import attention
from conftest import REPO, needs_emulator, run_example

SCRIPT = REPO / "python" / "examples" / "attention.py"
EXAMPLE = runpy.run_path(str(SCRIPT))
Config = attention.Config


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("attention_cache")


def run(args, cache, script=None, env=None):
    if env is None:
        return run_example(SCRIPT, args, cache, script)
    environment = dict(os.environ, MOSAIC_GPU_CACHE_DIR=str(cache), **env)
    command = [sys.executable] + (["-c", script] if script else [str(SCRIPT)]) + list(args)
    return subprocess.run(command, env=environment, capture_output=True, text=True, cwd=REPO)


def passes(result, outputs=("O", "LSE")):
    """The run passed, and said so for every output it checks."""
    assert result.returncode == 0, result.stdout + result.stderr
    assert ": PASS;" in result.stdout, result.stdout
    for name in outputs:
        assert re.search(rf"\b{name}: .* 0 of \d+ outside", result.stdout), (name, result.stdout)


GRADIENTS = ("O", "LSE", "dQ", "dK", "dV")

# On the emulator, forward only: sequences of 1 to 8 blocks of queries and
# lengths that are no multiple of a tile (so the last key tile is masked and
# the last query rows are not stored), both 16-bit head dims, both dtypes,
# several ring depths, batch and heads above 1.
FORWARD = [
    pytest.param(["--seq", "128", "--head-dim", "64"], id="seq128-d64"),
    pytest.param(["--seq", "512", "--head-dim", "128", "--causal"], id="seq512-d128-causal"),
    pytest.param(["--seq", "640", "--head-dim", "64", "--dtype", "f16", "--stages", "3"],
                 id="seq640-d64-f16-s3"),
    pytest.param(["--seq", "1024", "--head-dim", "64", "--causal", "--stages", "4"],
                 id="seq1024-d64-causal-s4"),
    pytest.param(["--seq", "100", "--head-dim", "128", "--batch", "3"], id="seq100-d128-batch3"),
    pytest.param(["--seq", "257", "--head-dim", "64", "--causal", "--batch", "2"],
                 id="seq257-d64-causal-batch2"),
    pytest.param(["--seq", "200", "--head-dim", "128", "--heads", "4", "--kv-heads", "1",
                  "--causal"], id="seq200-d128-mqa-causal"),
]

# The backward (and the forward it needs): whole and partial tiles, causal
# or not, both head dims, f16, grouped heads (dK and dV summed over a
# group), batch above 1, and packed batches whose sequences start anywhere
# (an empty one included).
BACKWARD = [
    pytest.param(["--seq", "128", "--head-dim", "64"], id="seq128-d64"),
    pytest.param(["--seq", "384", "--head-dim", "128", "--causal"], id="seq384-d128-causal"),
    pytest.param(["--seq", "300", "--head-dim", "64", "--causal", "--batch", "2"],
                 id="seq300-d64-causal-batch2"),
    pytest.param(["--seq", "190", "--head-dim", "128", "--dtype", "f16"], id="seq190-d128-f16"),
    pytest.param(["--seq", "256", "--head-dim", "64", "--heads", "4", "--kv-heads", "2",
                  "--causal", "--stages", "3"], id="seq256-d64-gqa-causal-s3"),
    pytest.param(["--varlen", "17,300,0,129", "--head-dim", "128", "--heads", "2",
                  "--kv-heads", "1"], id="varlen-d128-mqa"),
    pytest.param(["--varlen", "250,7,64", "--head-dim", "64", "--causal"],
                 id="varlen-d64-causal"),
    pytest.param(["--seq", "200", "--head-dim", "256", "--causal", "--heads", "2",
                  "--kv-heads", "1"], id="seq200-d256-mqa-causal"),
    pytest.param(["--varlen", "33,150", "--head-dim", "256"], id="varlen-d256"),
]


@needs_emulator
@pytest.mark.parametrize("args", FORWARD)
def test_forward_passes_on_the_emulator(args, cache):
    pytest.importorskip("ml_dtypes")
    defaults = [] if "--batch" in args else ["--batch", "1"]
    defaults += [] if "--heads" in args else ["--heads", "2"]
    passes(run(defaults + args + ["--emulate"], cache))


@needs_emulator
@pytest.mark.parametrize("args", BACKWARD)
def test_backward_passes_on_the_emulator(args, cache):
    pytest.importorskip("ml_dtypes")
    defaults = [] if "--batch" in args or "--varlen" in args else ["--batch", "1"]
    defaults += [] if "--heads" in args else ["--heads", "1"]
    passes(run(defaults + args + ["--backward", "--emulate"], cache), GRADIENTS)


@needs_emulator
@pytest.mark.parametrize("args", [
    pytest.param(["--seq", "200", "--head-dim", "64", "--causal"], id="seq200-d64-causal"),
    pytest.param(["--varlen", "130,61", "--head-dim", "128", "--heads", "2",
                  "--kv-heads", "1"], id="varlen-d128-mqa"),
])
def test_fp8_forward_passes_on_the_emulator(args, cache):
    pytest.importorskip("ml_dtypes")
    defaults = [] if "--varlen" in args else ["--batch", "1"]
    defaults += [] if "--heads" in args else ["--heads", "2"]
    passes(run(defaults + args + ["--dtype", "fp8", "--emulate"], cache))


RANDOM = {"MOSAIC_EMULATOR_SCHEDULE": "random", "MOSAIC_EMULATOR_POLICY": "random",
          "MOSAIC_EMULATOR_SEED": "5"}


@needs_emulator
@pytest.mark.parametrize("args", [
    pytest.param(["--batch", "1", "--seq", "300", "--head-dim", "64", "--causal"],
                 id="seq300-d64-causal"),
    pytest.param(["--varlen", "100,157", "--head-dim", "128", "--heads", "2", "--kv-heads",
                  "1"], id="varlen-d128-mqa"),
    pytest.param(["--batch", "2", "--seq", "90", "--head-dim", "256", "--causal"],
                 id="seq90-d256-causal"),
])
def test_random_schedule_passes(args, cache):
    """Warps interleaved and async operations completed in a random order,
    forward and backward."""
    pytest.importorskip("ml_dtypes")
    defaults = [] if "--heads" in args else ["--heads", "1"]
    passes(run(defaults + args + ["--backward", "--emulate"], cache, env=RANDOM), GRADIENTS)


# Broken kernels: mosaic_gpu's ops patched, for the calls made from one
# function of the attention package, before the example runs.
BREAK = """
import inspect, runpy, sys
import mosaic_gpu.refs as refs
original = getattr(refs, {op!r})
def broken(*args, **kwargs):
    caller = inspect.stack()[1].function
    {body}
setattr(refs, {op!r}, broken)
sys.argv = [{script!r}] + sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def broken(op, body):
    return BREAK.format(op=op, body=body, script=str(SCRIPT))


BROKEN = [
    # The forward's P V issued without waiting for V: the wgmma reads shared
    # memory a TMA load is still writing.
    pytest.param(
        [], broken("wait", "if caller != 'previous_pv': original(*args, **kwargs)"),
        # (Or the consumers release stages whose loads are still in flight.)
        r"hazard: (the wgmma.mma_async .* reads shared address \d+, which the TMA load|"
        r"mbarrier misuse)",
        id="forward-no-wait-for-v"),
    # The backward's consumers read Q and dO without waiting for them.
    pytest.param(
        ["--backward"],
        broken("wait", "if caller != 'gradients': original(*args, **kwargs)"),
        # The consumers race ahead and release stages the producer is still
        # filling: its next expect_tx finds the barrier's phase incomplete.
        r"hazard: (the wgmma.mma_async .* reads shared address \d+, which the TMA load|"
        r"mbarrier misuse)",
        id="backward-no-wait-for-q"),
    # A consumer releases its ring stage twice, so the producer refills it
    # while the other consumer's wgmmas still read it.
    pytest.param(
        ["--backward"],
        broken("arrive", "original(*args, **kwargs)\n"
                         "    if caller == 'gradients': original(*args, **kwargs)"),
        r"hazard: (the wgmma.mma_async .* reads shared address \d+, which the TMA load|"
        r"mbarrier misuse)",
        id="backward-stage-released-early"),
    # dQ's staging buffer rewritten before the previous reduce-add read it.
    pytest.param(
        ["--backward"],
        broken("async_store_wait", "if caller != 'gradients': original(*args, **kwargs)"),
        r"hazard: (the TMA reduction .* reads shared address \d+, which .* `st\.shared|"
        r"a generic-proxy write of shared address \d+ .*TMA)",
        id="backward-dq-staging-reused-early"),
]


@needs_emulator
@pytest.mark.parametrize("args, script, error", BROKEN)
def test_broken_kernels_are_hazards(args, script, error, cache):
    pytest.importorskip("ml_dtypes")
    result = run(["--batch", "1", "--heads", "1", "--seq", "512", "--head-dim", "64",
                  "--emulate"] + args, cache, script)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "FAIL; the launch failed" in result.stdout, result.stdout
    assert re.search(error, result.stdout), result.stdout


@needs_emulator
def test_dq_stored_instead_of_added_is_wrong(cache):
    """dQ's partial sums overwrite each other instead of adding up: the
    check finds dQ wrong, and only dQ."""
    pytest.importorskip("ml_dtypes")
    script = broken("async_store", "if caller == 'gradients': kwargs.pop('reduction')\n"
                                   "    original(*args, **kwargs)")
    result = run(["--batch", "1", "--heads", "1", "--seq", "512", "--head-dim", "64",
                  "--backward", "--emulate"], cache, script)
    assert result.returncode == 1, result.stdout + result.stderr
    assert ": FAIL;" in result.stdout
    assert re.search(r"dQ: .* [1-9]\d* of 32768 outside", result.stdout), result.stdout
    assert re.search(r"dK: .* 0 of 32768 outside; dV: .* 0 of 32768 outside",
                     result.stdout), result.stdout


def test_checks_find_a_wrong_element():
    pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    reference = attention.reference
    config = Config(1, 2, 128, 64, causal=True)
    q, k, v, do = EXAMPLE["inputs"](config)
    o, lse = reference.forward(config, q, k, v)
    o = o.astype(mgpu.bf16.numpy)
    assert EXAMPLE["check_forward"](config, q, k, v, o, lse)[0]
    o[5, 1, 7] += 1
    passed, summary = EXAMPLE["check_forward"](config, q, k, v, o, lse)
    assert not passed and "1 of 16384 outside (first at (5, 1, 7)" in summary
    # Not masking is caught in the LSE.
    unmasked = reference.forward(config._replace(causal=False), q, k, v)
    passed, summary = EXAMPLE["check_forward"](config, q, k, v,
                                               unmasked[0].astype(mgpu.bf16.numpy), unmasked[1])
    assert not passed and "LSE: " in summary
    # The gradients: exact ones pass, one a key off fails.
    o, _ = reference.forward(config, q, k, v)
    grads = [g.astype(mgpu.bf16.numpy) for g in reference.backward(config, q, k, v, do)]
    assert EXAMPLE["check_backward"](config, q, k, v, o, do, *grads)[0]
    grads[1][3, 0, 2] += 0.05
    passed, summary = EXAMPLE["check_backward"](config, q, k, v, o, do, *grads)
    assert not passed and "dK: " in summary and "1 of 16384 outside (first at (3, 0, 2)" in summary


def test_reference_is_softmax_attention():
    np = pytest.importorskip("numpy")
    reference = attention.reference
    config = Config(1, 1, 4, 2, causal=True)
    # (tokens, heads, head_dim)
    q = np.array([[1, 0], [0, 1], [1, 1], [0, 0]], np.float32)[:, None]
    k = np.array([[1, 0], [0, 2], [1, 1], [3, 0]], np.float32)[:, None]
    v = np.array([[1, 2], [3, 4], [5, 6], [7, 8]], np.float32)[:, None]
    o, lse = reference.forward(config, q, k, v)
    # Query 0 sees key 0 only; query 1 keys 0 and 1 with scores 0 and 2 / sqrt(2).
    assert o[0, 0] == pytest.approx([1, 2])
    weights = np.exp([0, 2 / math.sqrt(2)])
    assert o[1, 0] == pytest.approx((weights / weights.sum()) @ [[1, 2], [3, 4]])
    assert lse[0, 0, 1] == pytest.approx(math.log(weights.sum()))


def test_reference_gradients_are_the_derivatives():
    """reference.backward against central differences of reference.forward,
    with grouped heads, a packed batch and the causal mask."""
    np = pytest.importorskip("numpy")
    reference = attention.reference
    config = Config(2, 4, 5, head_dim=8, causal=True, kv_heads=2, tokens=7)
    cu_seqlens = np.array([0, 5, 7])
    rng = np.random.default_rng(0)
    q, do = (rng.standard_normal((7, 4, 8)) for _ in range(2))
    k, v = (rng.standard_normal((7, 2, 8)) for _ in range(2))
    grads = dict(zip("qkv", reference.backward(config, q, k, v, do, cu_seqlens)))

    def loss(**arrays):
        inputs = {**dict(q=q, k=k, v=v), **arrays}
        return (reference.forward(config, inputs["q"], inputs["k"], inputs["v"],
                                  cu_seqlens)[0] * do).sum()

    for name, array in (("q", q), ("k", k), ("v", v)):
        for index in [(6, 1, 3), (2, 0, 5), (0, 1, 1)]:
            plus, minus = array.copy(), array.copy()
            plus[index] += 1e-6
            minus[index] -= 1e-6
            numeric = (loss(**{name: plus}) - loss(**{name: minus})) / 2e-6
            assert grads[name][index] == pytest.approx(numeric, abs=1e-7), (name, index)


def test_example_fails_on_a_wrong_result(monkeypatch, capsys):
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    monkeypatch.setattr(mgpu.Kernel, "launch", lambda kernel, *arrays, backend: (
        np.zeros(kernel.outputs[0][0], mgpu.bf16.numpy), np.zeros(kernel.outputs[1][0],
                                                                    np.float32)))
    assert EXAMPLE["main"](["--batch", "1", "--heads", "1", "--seq", "128", "--emulate"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("attention bf16 batch 1, seq 128, heads 1, head_dim 128, 2 stages, "
                          "on the emulator: FAIL; O: ")


@pytest.mark.parametrize("args, message", [
    (["--head-dim", "96"], "head_dim must be one of 64, 128, 256, got 96"),
    (["--dtype", "fp8", "--backward"], "--backward is bf16 and f16 only"),
    (["--seq", "0"], "seq must be positive, got 0"),
    (["--batch", "0"], "batch must be positive, got 0"),
    (["--heads", "-2"], "heads must be positive, got -2"),
    (["--heads", "6", "--kv-heads", "4"], r"kv_heads \(4\) must divide heads \(6\)"),
    (["--batch", "70000", "--seq", "8"], "batch is 70000, more than the 65535 blocks"),
    (["--varlen", "3,x"], "--varlen takes comma-separated lengths, got '3,x'"),
    (["--varlen", "0,0"], "--varlen lengths must be non-negative and not all 0"),
    (["--varlen", "3,4", "--seq", "4"], "--varlen gives the batch and its lengths: drop "
                                        "--batch and --seq"),
    (["--stages", "1"], "stages must be at least 2, got 1"),
    (["--stages", "4"], r"4 stages of 128 keys at head_dim 128 need 289.1 KiB of shared memory, "
                        r"more than the 227 KiB of a block; use fewer stages"),
])
def test_example_configuration_errors(args, message, capsys):
    with pytest.raises(SystemExit) as exit:
        EXAMPLE["main"](args + ["--emit-mlir", os.devnull])
    assert exit.value.code == 2
    assert re.search(f"attention.py: error: {message}", capsys.readouterr().err)


def test_backward_shared_memory_limit():
    """The backward's ring is deeper than the forward's at the same shared
    memory; too deep a one is a clear error."""
    attention.backward.check(Config(1, 1, 128, 64, stages=5))
    with pytest.raises(ValueError, match=r"the backward's 9 stages of 64 query rows at head_dim "
                                         r"128 need .* KiB of shared memory, more than the 227 "
                                         r"KiB of a block; use fewer stages"):
        attention.backward.check(Config(1, 1, 128, 128, stages=9))


def test_example_rejects_a_bad_dtype(capsys):
    with pytest.raises(SystemExit) as exit:
        EXAMPLE["main"](["--dtype", "f32", "--emit-mlir", os.devnull])
    assert exit.value.code == 2
    assert "invalid choice: 'f32'" in capsys.readouterr().err


def test_example_emits_its_mlir(tmp_path):
    path = tmp_path / "attention.mlir"
    assert EXAMPLE["main"](["--emit-mlir", str(path), "--causal"]) == 0
    text = path.read_text()
    assert "gpu.func @attention_causal_fwd(%arg0: memref<16384x2048xbf16>" in text
    assert "known_grid_size = array<i32: 32, 16, 4>" in text
    assert str(mgpu.Module.parse(text)) == text
    # With the backward, its three kernels beside it.
    assert EXAMPLE["main"](["--emit-mlir", str(path), "--backward", "--seq", "256"]) == 0
    for name, entry in (("attention_bwd_preprocess", "attention_bwd_preprocess"),
                        ("attention_bwd", "attention_bwd"),
                        ("attention_bwd_postprocess", "attention_bwd_postprocess")):
        assert f"gpu.func @{entry}(" in (tmp_path / f"{name}.mlir").read_text()


def test_kernels_compile_without_spills(ptxas):
    """At 4 x 16 heads of 4096 queries, head_dim 64, 128 and 256, causal or
    not: the forward and the backward's main kernel keep the 24 / 240
    register split with no spills and no serialized wgmma; the backward
    reads its transposed dS^T (and at 256, K^T) with an M-major A
    (imm-trans-a 1)."""
    for d in (64, 128, 256):
        for causal in (False, True):
            config = Config(4, 16, 4096, d, causal=causal)
            for kernel in (attention.forward.build(config),
                           attention.backward.build(config).main):
                compiled = kernel.compile(line_info=False)
                report = compiled.manifest["ptxas"]
                assert (report["registers"], report["spill_stores"],
                        report["spill_loads"]) == (168, 0, 0), (kernel.name, d, report)
                assert "Potential Performance Loss" not in report["report"], kernel.name
                for instruction in ("setmaxnreg.dec.sync.aligned.u32 \t24;",
                                    "setmaxnreg.inc.sync.aligned.u32 \t240;"):
                    assert instruction in compiled.ptx, (kernel.name, instruction)
    transposed_a = re.compile(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.bf16\.bf16 "
                              r"\{[^}]*\}, %rd\d+, %rd\d+, p, 1,\s+1, 1,\s+1;")
    assert transposed_a.search(compiled.ptx)


# The ops the kernels added to the authoring API.


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
    (lambda v: v + mgpu.constant(1, "i32"), ValueError,
     r"operands are f32\[64, 128\] and a i32 scalar; use astype"),
    (lambda v: mgpu.named_barrier(4, 1, arrive=1), TypeError, "`arrive` must be"),
])
def test_bad_arguments(make, exception, message):
    def body(x, out):
        make(mgpu.vector_load(x))
    with pytest.raises(exception, match=message):
        build(body)


def test_scalars_combine_with_vectors():
    """A run-time Scalar in a vector expression is splat (Splat layout),
    and a Scalar value under a vector condition too."""
    def body(x, out):
        v = mgpu.vector_load(x)
        n = mgpu.block_id("x").astype("i32").astype("f32") + 1.0
        mgpu.vector_store(mgpu.select(v > n, n, v * n), out)
    text = str(build(body).module)
    assert text.count("vector.broadcast") == 3, text  # one per use


@needs_emulator
def test_load_reads_one_element(tmp_path):
    """mgpu.load reads a run-time scalar from global memory: here the
    offsets of a packed batch."""
    np = pytest.importorskip("numpy")

    @mgpu.kernel(grid=(3, 1, 1), block=(128, 1, 1), inputs=[((4,), "i32")],
                 outputs=[((3, 128), "f32")])
    def lengths(cu_seqlens, out):
        b = mgpu.block_id("x")
        start = mgpu.load(cu_seqlens[b])
        length = mgpu.load(cu_seqlens[b + 1]) - start
        column = mgpu.iota((128,), "i32", 0)
        mgpu.vector_store(mgpu.select(column < length, length.astype("f32"), -1.0), out[b])
    out = lengths.launch(np.array([0, 5, 7, 20], np.int32), backend="emulator")
    expected = np.full((3, 128), -1.0, np.float32)
    for b, length in enumerate((5, 2, 13)):
        expected[b, :length] = length
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("make, exception, message", [
    (lambda x: mgpu.load(x), ValueError, r"`ref` must be one element \(index every dim\), got "
                                         r"shape \[64, 128\]"),
    (lambda x: mgpu.load(1), TypeError, "`ref` must be"),
])
def test_load_errors(make, exception, message):
    with pytest.raises(exception, match=message):
        build(lambda x, out: make(x))


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
