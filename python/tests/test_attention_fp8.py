"""mosaic_gpu.attention.forward_fp8: the FP8 attention forward against
reference.forward in float64 on the dequantized inputs, within the
tolerance forward_fp8.check_results derives, on the PTX emulator (a
hazard fails the launch): head dims 64, 128 and 256, causal, grouped
heads, lengths that are not tile multiples, a packed batch, several ring
depths, a random schedule; two broken kernels the tests must catch (one
P buffer per consumer: a hazard; V not transposed: wrong values); the
quantization helpers; the configuration errors; and the machine code (no
spills, QGMMA, the register split).

Each emulator run is a process of its own (a crash fails that test only)."""
import importlib.metadata
import os
import pathlib
import re
import shutil
import subprocess

import pytest

from mosaic_gpu.attention import Config, forward_fp8
from conftest import needs_emulator, run_check_in_process

MODULE = "test_attention_fp8"


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("attention_fp8_cache")


# Functions the emulator tests run in a process of their own.


def passes(fields, cu_seqlens=None):
    """Runs forward_fp8.run on the emulator for Config(**fields) (a packed
    batch at the offsets ``cu_seqlens``) and asserts that
    forward_fp8.check_results passes."""
    config = Config(dtype="fp8", **fields)
    q, k, v, q_descale, k_descale, v_descale = forward_fp8.inputs(config)
    o, lse = forward_fp8.run(config, q, k, v, q_descale, k_descale, v_descale, cu_seqlens,
                             backend="emulator")
    passed, summary = forward_fp8.check_results(config, q, k, v, q_descale, k_descale,
                                                v_descale, o, lse, cu_seqlens)
    print(summary)
    assert passed, summary


def one_p_buffer_is_a_hazard(fields):
    """The kernel with one P buffer per consumer: a warp stores P_j while
    another warp's part of the P_{j-1} V wgmma may still read the buffer."""
    source = pathlib.Path(forward_fp8.__file__).read_text()
    two_buffers = "                return p_smem[half, step % 2]\n"
    assert source.count(two_buffers) == 1
    namespace = {"__name__": forward_fp8.__name__, "__package__": forward_fp8.__package__}
    exec(compile(source.replace(two_buffers, "                return p_smem[half, 0]\n"),
                 forward_fp8.__file__, "exec"), namespace)
    config = Config(dtype="fp8", **fields)
    q, k, v, q_descale, k_descale, v_descale = forward_fp8.inputs(config)
    kernel = namespace["build"](config)
    with pytest.raises(RuntimeError) as failure:
        kernel.launch(q, k, forward_fp8.transpose_v(config, v),
                      forward_fp8.descales(q_descale, k_descale, v_descale), backend="emulator")
    assert re.search(r"hazard: a generic-proxy write of shared address \d+ may overwrite data "
                     r"that the wgmma.mma_async of warpgroup \d", str(failure.value)), \
        str(failure.value)


def untransposed_v_fails(fields):
    """V passed as it is, (tokens, d), where the kernel takes V^T: O is
    wrong (and the LSE, which V does not enter, right)."""
    config = Config(dtype="fp8", **fields)
    assert config.seq % forward_fp8.BLOCK_N == 0 and config.key_heads * config.head_dim \
        == forward_fp8.shapes(config)["v_t"][0]
    q, k, v, q_descale, k_descale, v_descale = forward_fp8.inputs(config)
    o, lse = forward_fp8.build(config).launch(
        q, k, v.reshape(forward_fp8.shapes(config)["v_t"]),
        forward_fp8.descales(q_descale, k_descale, v_descale), backend="emulator")
    passed, summary = forward_fp8.check_results(config, q, k, v, q_descale, k_descale,
                                                v_descale, o, lse)
    assert not passed and re.search(r"O: .*, [1-9]\d* of \d+ outside.*LSE: .* 0 of", summary), \
        summary


# The emulator runs: each head dim, causal or not, 1 to 8 key tiles (the
# rings wrap), lengths that are not tile multiples (a partial last query
# block and key tile), batch and grouped heads, 2 to 4 stages.
EMULATED = [
    pytest.param(dict(batch=1, heads=1, seq=256, head_dim=64), id="seq256-d64"),
    pytest.param(dict(batch=1, heads=2, seq=384, head_dim=128, causal=True),
                 id="seq384-d128-causal"),
    pytest.param(dict(batch=2, heads=4, kv_heads=2, seq=200, head_dim=64, causal=True),
                 id="seq200-d64-batch2-gqa-causal"),
    pytest.param(dict(batch=2, heads=2, kv_heads=1, seq=144, head_dim=128, stages=3),
                 id="seq144-d128-batch2-mqa-s3"),
    pytest.param(dict(batch=1, heads=1, seq=1024, head_dim=64, causal=True, stages=4),
                 id="seq1024-d64-causal-s4"),
    # O stored from registers, not staged.
    pytest.param(dict(batch=1, heads=1, seq=384, head_dim=256, causal=True),
                 id="seq384-d256-causal"),
    pytest.param(dict(batch=2, heads=2, kv_heads=1, seq=200, head_dim=256),
                 id="seq200-d256-batch2-mqa"),
]


@needs_emulator
@pytest.mark.parametrize("fields", EMULATED)
def test_passes_on_the_emulator(fields, cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process(MODULE, "passes", cache, fields)


@needs_emulator
def test_packed_batch_passes_on_the_emulator(cache):
    """Sequences of 17, 283, 0 and 120 tokens: starts that are not
    multiples of 8, an empty sequence, grouped heads, causal."""
    pytest.importorskip("ml_dtypes")
    run_check_in_process(MODULE, "passes", cache,
                         dict(batch=4, heads=2, kv_heads=1, seq=283, head_dim=64, causal=True,
                              tokens=420), [0, 17, 300, 300, 420])


@needs_emulator
def test_passes_under_a_random_schedule(cache, monkeypatch):
    """Warps interleaved and async operations completed in a random order;
    3 key tiles through 2 stages, so the ring wraps."""
    pytest.importorskip("ml_dtypes")
    monkeypatch.setenv("MOSAIC_EMULATOR_SCHEDULE", "random")
    monkeypatch.setenv("MOSAIC_EMULATOR_POLICY", "random")
    monkeypatch.setenv("MOSAIC_EMULATOR_SEED", "5")
    run_check_in_process(MODULE, "passes", cache,
                         dict(batch=1, heads=1, seq=384, head_dim=64, causal=True))


@needs_emulator
def test_one_p_buffer_per_consumer_is_a_hazard(cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process(MODULE, "one_p_buffer_is_a_hazard", cache,
                         dict(batch=1, heads=1, seq=384, head_dim=64))


@needs_emulator
def test_v_not_transposed_fails_the_check(cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process(MODULE, "untransposed_v_fails", cache,
                         dict(batch=1, heads=1, seq=256, head_dim=64))


# The host-side helpers.


def test_quantize_maps_amax_to_448():
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    x = np.random.default_rng(0).standard_normal((64, 32)) * 3
    x[5, 7] = -20.0
    q, descale = forward_fp8.quantize(x)
    assert q.dtype == np.dtype("float8_e4m3fn") and descale.dtype == np.float32
    assert descale == np.float32(20.0 / 448)
    assert float(q[5, 7]) == -448.0
    # e4m3 keeps 3 mantissa bits: within 2^-4 relative for normals, 2^-10
    # of the descale for subnormals.
    error = np.abs(forward_fp8.dequantize(q, descale) - x)
    assert (error <= np.maximum(2.0 ** -4 * np.abs(x), 2.0 ** -10 * descale)).all()
    zeros, one = forward_fp8.quantize(np.zeros((4, 4)))
    assert one == 1.0 and not np.asarray(zeros, np.float32).any()


def test_transpose_v_places_each_sequence_at_a_tile():
    np = pytest.importorskip("numpy")
    config = Config(2, 2, 136, 64, dtype="fp8", kv_heads=1)
    v = np.arange(2 * 136 * 64, dtype=np.float32).reshape(2 * 136, 64)
    v_t = forward_fp8.transpose_v(config, v)
    assert v_t.shape == forward_fp8.shapes(config)["v_t"] == (64, 2 * 256)
    assert (v_t[:, :136] == v[:136].T).all() and (v_t[:, 256:392] == v[136:].T).all()
    assert not v_t[:, 136:256].any() and not v_t[:, 392:].any()
    packed = Config(3, 2, 136, 64, dtype="fp8", kv_heads=1, tokens=200)
    v_t = forward_fp8.transpose_v(packed, v[:200], [0, 136, 136, 200])
    assert v_t.shape == forward_fp8.shapes(packed)["v_t"] == (64, 3 * 256)
    assert (v_t[:, :136] == v[:136].T).all() and (v_t[:, 512:576] == v[136:200].T).all()
    assert not v_t[:, 136:512].any() and not v_t[:, 576:].any()


def test_check_catches_wrong_results():
    np = pytest.importorskip("numpy")
    pytest.importorskip("ml_dtypes")
    from mosaic_gpu.attention import reference
    config = Config(1, 2, 256, 64, causal=True, dtype="fp8")
    q, k, v, q_descale, k_descale, v_descale = forward_fp8.inputs(config)
    dequantized = [forward_fp8.dequantize(x, s).reshape(256, 2, 64)
                   for x, s in ((q, q_descale), (k, k_descale), (v, v_descale))]
    o, lse = reference.forward(config, *dequantized)
    o = o.reshape(256, 128).astype(np.dtype("bfloat16"))

    def check(o, lse, v_descale=v_descale):
        return forward_fp8.check_results(config, q, k, v, q_descale, k_descale, v_descale, o,
                                         lse)

    assert check(o, lse)[0]
    passed, summary = check(o, lse, v_descale * 1.25)
    assert not passed and "O: " in summary
    wrong = o.copy()
    wrong[7, 3] = -wrong[7, 3] + 0.01
    passed, summary = check(wrong, lse)
    assert not passed and "1 of 32768 outside (first at (7, 0, 3)" in summary
    passed, summary = check(o, lse + 0.01)
    assert not passed and "LSE: " in summary and "0 of 32768 outside" in summary


@pytest.mark.parametrize("fields, message", [
    (dict(head_dim=96), "head_dim must be one of 64, 128, 256, got 96"),
    (dict(dtype="bf16"), "dtype must be one of fp8, got 'bf16'"),
    (dict(stages=6), r"6 stages of 128 keys at head_dim 128 need 275.0 KiB of shared memory, "
                     r"more than the 227 KiB of a block; use fewer stages"),
    (dict(head_dim=256, stages=3), r"3 stages of 128 keys at head_dim 256 need 259.0 KiB"),
])
def test_configuration_errors(fields, message):
    config = Config(**dict(dict(batch=2, heads=2, seq=256, dtype="fp8"), **fields))
    with pytest.raises(ValueError, match=message):
        forward_fp8.build(config)


def nvdisasm():
    """nvdisasm from the PyPI package nvidia-cuda-nvdisasm, else on PATH."""
    try:
        files = importlib.metadata.distribution("nvidia-cuda-nvdisasm").files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == "nvdisasm" and os.access(file.locate(), os.X_OK):
            return pathlib.Path(file.locate())
    found = shutil.which("nvdisasm")
    return pathlib.Path(found) if found else None


@pytest.mark.parametrize("head_dim", [64, 128, 256])
def test_machine_code(head_dim, ptxas, tmp_path):
    """At 4 x 16 heads of 4096 tokens, causal: ptxas spills nothing and
    warns of no serialized wgmma; the producer keeps 24 registers and the
    consumers take 240; the wgmmas are QGMMA (8-bit inputs) with A from
    shared memory (P is stored, not passed in registers), 3 groups of
    d / 32 or 128 / 32 instructions: S, the loop's P V and the last."""
    kernel = forward_fp8.build(Config(4, 16, 4096, head_dim, causal=True, dtype="fp8"))
    compiled = kernel.compile(line_info=False)
    report = compiled.manifest["ptxas"]
    assert (report["spill_stores"], report["spill_loads"]) == (0, 0), report["report"]
    assert "Potential Performance Loss" not in report["report"]
    for instruction in ("setmaxnreg.dec.sync.aligned.u32 \t24;",
                        "setmaxnreg.inc.sync.aligned.u32 \t240;"):
        assert instruction in compiled.ptx, instruction
    tool = nvdisasm()
    if tool is None:
        pytest.skip("nvdisasm not found (pip install nvidia-cuda-nvdisasm)")
    cubin = tmp_path / "attention_fp8.cubin"
    cubin.write_bytes(compiled.cubin)
    sass = subprocess.run([str(tool), "-c", str(cubin)], capture_output=True, text=True,
                          check=True).stdout
    mmas = re.findall(r"\b([QH]GMMA|HMMA)\.(\S+) [^;]*?, (gdesc\[UR\d+\]|R\d+),", sass)
    assert {(name, shape) for name, shape, _ in mmas} == \
        {("QGMMA", f"64x{head_dim}x32.F32.E4M3.E4M3"), ("QGMMA", "64x128x32.F32.E4M3.E4M3")}
    assert all(a.startswith("gdesc") for _, _, a in mmas)
    assert len(mmas) == head_dim // 32 + 2 * 128 // 32
    assert re.search(r"USETMAXREG\.DEALLOC\.CTAPOOL 0x18\b", sass)
    assert re.search(r"USETMAXREG\.TRY_ALLOC\.CTAPOOL UP0, 0xf0\b", sass)
