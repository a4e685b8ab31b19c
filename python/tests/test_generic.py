"""Shape-generic kernels (``mgpu.jit``): one kernel body, built and compiled
once per input signature, in memory and on disk; a layer norm and a GEMM
written once match NumPy at three shapes each on the emulator; the errors
for shapes and dtypes a kernel cannot take."""
import runpy

import numpy as np
import pytest

import mosaic_gpu as mgpu
from conftest import REPO, needs_emulator, run_example

EXAMPLES = REPO / "python" / "examples"


def example(name):
    return runpy.run_path(str(EXAMPLES / f"{name}.py"))


@pytest.fixture(scope="module")
def layer_norm():
    return example("layer_norm")


@pytest.fixture(scope="module")
def gemm():
    return example("gemm_generic")


@needs_emulator
@pytest.mark.parametrize("name", ["layer_norm", "gemm_generic"])
def test_written_once_runs_at_three_shapes_on_the_emulator(name, tmp_path):
    result = run_example(EXAMPLES / f"{name}.py", ["--emulate"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 4 and lines[-1] == "PASS", result.stdout
    # One kernel per shape in the on-disk cache.
    assert len(list(tmp_path.glob("*/*.cubin"))) == 3


def test_one_kernel_per_signature(layer_norm):
    kernel = layer_norm["layer_norm"]
    x, gamma = np.zeros((128, 64), np.float32), np.zeros(64, np.float32)
    built = kernel.specialize(x, gamma, gamma)
    assert built is kernel.specialize(((128, 64), "f32"), ((64,), "f32"), ((64,), "f32"))
    assert built.grid == (2, 1, 1) and built.outputs == [((128, 64), "f32")]
    assert "vector<64x64xf32>" in str(built.module)
    other = kernel.specialize(mgpu.Spec((64, 256), "f32"), mgpu.Spec((256,), "f32"),
                              mgpu.Spec((256,), "f32"))
    assert other is not built and other.grid == (1, 1, 1)
    assert [str(s) for s in kernel.signatures[0]] == ["x: f32[128, 64]", "gamma: f32[64]",
                                                      "beta: f32[64]"]
    assert len(kernel.signatures) == 2
    # Inference sees the static shapes of the signature.
    assert any(op.op == "vector.multi_reduction" for op in mgpu.infer_layouts(other.module))


def test_the_gemm_specializes_its_grid_and_loops(gemm):
    kernel = gemm["gemm"]
    built = kernel.specialize(((256, 192), "bf16"), ((192, 384), "bf16"))
    assert built.grid == (3, 2, 1) and built.outputs == [((256, 384), "bf16")]
    text = str(built.module)
    assert "memref<256x192xbf16>" in text and text.count("scf.for") == 2


CACHED_RUN = """
import runpy, sys
import numpy as np
import mosaic_gpu as mgpu
kernel = runpy.run_path(sys.argv[1])["layer_norm"]
if sys.argv[2] == "forbid":
    def refuse(*args, **kwargs):
        raise AssertionError("compiled again")
    mgpu._mosaic.compile = refuse
x, g = np.ones((64, 128), np.float32), np.ones(128, np.float32)
print(float(kernel(x, g, g, backend="emulator").sum()))
"""


@needs_emulator
def test_a_new_process_takes_the_kernel_from_the_disk_cache(tmp_path):
    script = str(EXAMPLES / "layer_norm.py")
    first = run_example(None, [script, "compile"], tmp_path, source=CACHED_RUN)
    assert first.returncode == 0, first.stderr
    second = run_example(None, [script, "forbid"], tmp_path, source=CACHED_RUN)
    assert second.returncode == 0, second.stderr
    assert first.stdout == second.stdout == f"{64 * 128.0}\n"


def test_the_cache_key_holds_the_toolchain(monkeypatch, tmp_path, layer_norm, ptxas):
    monkeypatch.setenv("MOSAIC_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(mgpu.launch, "_compiled", {})
    module = layer_norm["layer_norm"].specialize(
        ((64, 64), "f32"), ((64,), "f32"), ((64,), "f32")).module
    path = mgpu.compile_cached(module)
    assert "ptxas" in mgpu.launch.toolchain_version()
    monkeypatch.setattr(mgpu.launch, "_compiled", {})
    monkeypatch.setattr(mgpu.launch, "toolchain_version", lambda: "another compiler")
    assert mgpu.compile_cached(module) != path


@pytest.mark.parametrize("inputs, exception, message", [
    ([np.zeros((100, 128), np.float32), np.zeros(128, np.float32), np.zeros(128, np.float32)],
     ValueError, r"layer_norm\(x: f32\[100, 128\], .*\): `x` has shape \(100, 128\): dim 0 "
                 r"\(100\) is not a multiple of the kernel's tile \(64\)"),
    ([np.zeros((64, 128), np.float64), np.zeros(128), np.zeros(128)],
     TypeError, "`x` is f64; the kernel takes f32"),
    ([np.zeros((64, 128), np.float32), np.zeros(64, np.float32), np.zeros(128, np.float32)],
     ValueError, "`gamma`, `beta` hold one value per column"),
    ([np.zeros((64, 128), np.float32)], TypeError,
     r"layer_norm takes its 3 inputs \(x, gamma, beta\), then optionally its outputs; got 1"),
    ([np.zeros((64, 128), np.float32), "gamma", np.zeros(128, np.float32)], TypeError,
     r"input 1 \(`gamma`\) has dtype str160, which kernels do not take"),
])
def test_inputs_the_kernel_cannot_take(layer_norm, inputs, exception, message):
    with pytest.raises(exception, match=message):
        layer_norm["layer_norm"](*inputs, backend="emulator")


@pytest.mark.parametrize("shapes, message", [
    (((128, 100), (100, 128)), r"`a` has shape \(128, 100\): dim 1 \(100\) is not a multiple "
                               r"of the kernel's tile \(64\)"),
    (((128, 64), (128, 128)), "must be matrices with a.shape"),
    (((192, 64), (64, 128)), r"dim 0 \(192\) is not a multiple of the kernel's tile \(128\)"),
])
def test_gemm_shapes_the_kernel_cannot_take(gemm, shapes, message):
    with pytest.raises(ValueError, match=message):
        gemm["gemm"].specialize(*[(shape, "bf16") for shape in shapes])


def test_bad_backend_and_stream_for_a_generic_kernel(layer_norm):
    x, g = np.zeros((64, 128), np.float32), np.zeros(128, np.float32)
    with pytest.raises(ValueError, match="backend must be 'cuda' or 'emulator', got 'tpu'"):
        layer_norm["layer_norm"](x, g, g, backend="tpu")
    with pytest.raises(TypeError, match="`stream` must be a CUstream handle"):
        layer_norm["layer_norm"](x, g, g, backend="emulator", stream="fast")


def test_bad_jit_arguments():
    with pytest.raises(TypeError, match="`outputs` must be a function of the inputs' Specs"):
        mgpu.jit(block=(128, 1, 1), outputs=[((64,), "f32")])(lambda x, out: None)
    with pytest.raises(TypeError, match="one positional parameter per input"):
        mgpu.jit(block=(128, 1, 1), outputs=lambda *xs: xs)(lambda x, out: None)
    with pytest.raises(ValueError, match="there is no dim 2"):
        mgpu.Spec((4, 4), "f32", "x").tiles(2, 2)
    with pytest.raises(ValueError, match="the tile of `x` dim 0 must be a positive int"):
        mgpu.Spec((4, 4), "f32", "x").tiles(0, 0)
    with pytest.raises(ValueError, match="unknown dtype 'f31'"):
        mgpu.Spec((4, 4), "f31")


def test_body_errors_name_the_signature():
    @mgpu.jit(block=(128, 1, 1), outputs=lambda x: [x], grid=(1, 1, 1))
    def copy(x, out):
        mgpu.vector_store(mgpu.vector_load(x), out[0:1])

    with pytest.raises(ValueError, match=r"copy\(x: f32\[128\]\): `value` is f32\[128\] but "
                                         r"`ref` holds f32\[1\]"):
        copy.specialize(((128,), "f32"))


def test_flush_denormals_reaches_every_signature():
    @mgpu.jit(block=(128, 1, 1), outputs=lambda x: [x], flush_denormals=True)
    def copy(x, out):
        mgpu.vector_store(mgpu.vector_load(x), out)

    for n in (128, 256):
        assert "mosaic_gpu.flush_denormals" in str(copy.specialize(((n,), "f32")).module)
    with pytest.raises(TypeError, match="`flush_denormals` must be a bool, got 1"):
        mgpu.jit(block=(128, 1, 1), outputs=lambda x: [x], flush_denormals=1)
