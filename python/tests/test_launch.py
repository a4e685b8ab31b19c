"""Launching: argument checks, DLPack, the backends and the missing driver,
the cache, the whole launch path through a fake driver; the launches that
compute run on each backend: on a GPU (skipped without one) and on the PTX
emulator (where the build has one)."""
import ctypes
import json
import operator
import os
import pathlib
import runpy
import subprocess
import sys

import numpy as np
import pytest

import mosaic_gpu as mgpu
from mosaic_gpu import launch
from conftest import REPO, emulator_available, run_check_in_process


def example(name, kernel):
    return runpy.run_path(str(REPO / "python" / "examples" / f"{name}.py"))[kernel]


@pytest.fixture(scope="module")
def softmax():
    return example("softmax", "softmax")


def gpu_available():
    try:
        mgpu._mosaic.cuda_driver_version("cuda")
        mgpu._mosaic.DeviceMemory(4, "cuda")
        return True
    except (RuntimeError, AttributeError):
        return False


# The launches that compute, once per backend.
on_each_backend = pytest.mark.parametrize("backend", [
    pytest.param("cuda", marks=pytest.mark.skipif(not gpu_available(),
                                                  reason="no CUDA driver or device")),
    pytest.param("emulator", marks=pytest.mark.skipif(not emulator_available(),
                                                      reason="built without the emulator")),
])


@pytest.mark.parametrize("arrays, exception, message", [
    ([], TypeError, "softmax takes its 1 inputs, or its 1 inputs and 1 outputs; got 0"),
    ([np.zeros((4096, 128), np.float64)], TypeError, "input 0 has dtype f64, the kernel expects f32"),
    ([np.zeros((4096, 64), np.float32)], ValueError, r"input 0 has shape \(4096, 64\), the kernel expects \(4096, 128\)"),
    ([np.zeros((4096, 128), np.float32), np.zeros(3, np.float32)], ValueError, "output 0 has shape"),
    ([np.zeros((4096, 128), np.complex64)], TypeError, "input 0 has dtype complex64"),
    (["text"], TypeError, "input 0 has dtype"),
])
def test_bad_arrays(softmax, arrays, exception, message):
    with pytest.raises(exception, match=message):
        softmax(*arrays)


class DLPackOnly:
    """An array seen only through DLPack, like a CPU tensor of another
    library."""

    def __init__(self, array, device=(1, 0)):
        self.array, self.device = array, device

    def __dlpack__(self, stream=None):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return self.device


def test_dlpack_cpu_arrays_are_read_like_numpy():
    data = np.arange(12, dtype=np.int32).reshape(3, 4)
    argument = launch._Argument(DLPackOnly(data), "input 0")
    assert (argument.dtype, argument.shape) == ("i32", (3, 4))
    assert argument.pointer is None and (argument.host == data).all()


def cuda_capsule(shape, strides, code, bits, device_id=0, pointer=0x7F0000000000):
    """A DLPack capsule describing CUDA memory (never dereferenced)."""
    ndim = len(shape)
    shape_array = (ctypes.c_int64 * ndim)(*shape)
    strides_array = (ctypes.c_int64 * ndim)(*strides) if strides else None
    tensor = launch._DLTensor(pointer, launch._DLDevice(2, device_id), ndim,
                              launch._DLDataType(code, bits, 1),
                              ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64)),
                              ctypes.cast(strides_array, ctypes.POINTER(ctypes.c_int64))
                              if strides else None, 64)
    # DLManagedTensor: the tensor, then manager_ctx and deleter (null here).
    managed = (ctypes.c_byte * (ctypes.sizeof(tensor) + 16))()
    ctypes.memmove(managed, ctypes.byref(tensor), ctypes.sizeof(tensor))
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = new(ctypes.addressof(managed), b"dltensor", None)
    return capsule, (managed, shape_array, strides_array)


class FakeCudaArray:
    def __init__(self, *args, device_id=0, **kwargs):
        self.capsule, self.keep = cuda_capsule(*args, device_id=device_id, **kwargs)
        self.device_id = device_id

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (2, self.device_id)


def test_dlpack_cuda_arrays_are_passed_by_pointer():
    argument = launch._Argument(FakeCudaArray((64, 128), (128, 1), 4, 16), "input 0")
    assert (argument.dtype, argument.shape) == ("bf16", (64, 128))
    assert argument.pointer == 0x7F0000000000 + 64 and argument.host is None
    assert launch._Argument(FakeCudaArray((8,), None, 2, 32), "x").dtype == "f32"


@pytest.mark.parametrize("array, message", [
    (FakeCudaArray((64, 128), (1, 64), 2, 32), "input 0 is not contiguous"),
    (FakeCudaArray((4,), None, 2, 32, device_id=1), "input 0 is on CUDA device 1"),
    (FakeCudaArray((4,), None, 5, 8), "input 0 has DLPack dtype code 5"),
    (DLPackOnly(np.zeros(4), device=(8, 0)), "input 0 is on DLPack device type 8"),
])
def test_bad_dlpack_arrays(array, message):
    with pytest.raises((TypeError, ValueError), match=message):
        launch._Argument(array, "input 0")


@pytest.mark.parametrize("backend, environment, message", [
    ("tpu", None, "backend must be 'cuda' or 'emulator', got 'tpu'"),
    (None, "tpu", "MOSAIC_GPU_BACKEND is 'tpu'; expected 'cuda' or 'emulator'"),
])
def test_unknown_backend_is_a_value_error(softmax, backend, environment, message, monkeypatch):
    monkeypatch.setenv("MOSAIC_GPU_BACKEND", environment or "cuda")
    with pytest.raises(ValueError, match=message):
        softmax.launch(np.zeros((4096, 128), np.float32), backend=backend)


@pytest.mark.skipif(not hasattr(mgpu._mosaic, "LoadedKernel"),
                    reason="built without runtime/ (no cuda.h)")
def test_unknown_backend_in_the_bindings_is_a_value_error(monkeypatch):
    with pytest.raises(ValueError, match="backend must be 'cuda' or 'emulator', got 'tpu'"):
        mgpu._mosaic.cuda_driver_version("tpu")
    monkeypatch.setenv("MOSAIC_GPU_BACKEND", "tpu")
    with pytest.raises(ValueError, match='MOSAIC_GPU_BACKEND is "tpu"; expected "cuda"'):
        mgpu._mosaic.DeviceMemory(4)


def test_the_emulator_takes_no_cuda_arrays(softmax):
    """The emulator's memory is its own: an array on a GPU cannot be
    passed by pointer."""
    with pytest.raises(ValueError, match="input 0 is on a CUDA device, but the emulator"):
        softmax.launch(FakeCudaArray((4096, 128), (128, 1), 2, 32), backend="emulator")


@pytest.mark.skipif(not hasattr(mgpu._mosaic, "LoadedKernel"),
                    reason="built without runtime/ (no cuda.h)")
def test_no_cuda_driver_is_a_clear_error():
    """With no driver library (MOSAIC_CUDA_DRIVER names none), a launch
    raises the runtime's message."""
    script = ("import runpy, numpy as np\n"
              f"k = runpy.run_path({str(REPO / 'python/examples/softmax.py')!r})['softmax']\n"
              "try:\n"
              "    k(np.zeros((4096, 128), np.float32))\n"
              "except RuntimeError as error:\n"
              "    print(error)\n")
    env = dict(os.environ, MOSAIC_CUDA_DRIVER="/nonexistent/libcuda.so.1")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, check=True)
    assert result.stdout.startswith("no CUDA driver: dlopen(/nonexistent/libcuda.so.1) failed"), result.stdout
    # The emulator backend opens MOSAIC_CUDA_DRIVER too.
    script = script.replace("k(np.zeros((4096, 128), np.float32))",
                            "k.launch(np.zeros((4096, 128), np.float32), backend='emulator')")
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, check=True)
    assert result.stdout.startswith("no CUDA driver: dlopen(/nonexistent/libcuda.so.1) failed"), result.stdout


def test_compiled_kernels_are_cached_by_content(softmax, ptxas, tmp_path, monkeypatch):
    monkeypatch.setenv("MOSAIC_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(launch, "_compiled", {})
    path = launch.compile_cached(softmax.module)
    assert path.startswith(str(tmp_path)) and path.endswith("softmax.json")
    stamp = os.stat(path).st_mtime_ns
    monkeypatch.setattr(launch, "_compiled", {})  # a new process: the files remain
    assert launch.compile_cached(example("softmax", "softmax").module) == path
    assert os.stat(path).st_mtime_ns == stamp
    assert launch.compile_cached(softmax.module, opt_level=2) != path
    # The PTX is kept beside the CUBIN, for the emulator; an entry without
    # it (written before manifests named the PTX) is compiled again.
    ptx = pathlib.Path(path).with_name(json.loads(pathlib.Path(path).read_text())["ptx"])
    assert ".visible .entry softmax(" in ptx.read_text()
    ptx.unlink()
    monkeypatch.setattr(launch, "_compiled", {})
    assert launch.compile_cached(softmax.module) == path and ptx.exists()


# The checks that compute; each test runs one in a process of its own (a
# crash of the emulator fails that test only, and each process loads one
# backend's driver).
def check_elementwise(backend):
    x = np.random.default_rng(0).standard_normal(1048576, dtype=np.float32)
    y = np.random.default_rng(1).standard_normal(1048576, dtype=np.float32)
    out = example("elementwise", "elementwise").launch(x, y, backend=backend)
    np.testing.assert_allclose(out, x * y + x, rtol=1e-6)


def check_softmax(backend):
    softmax = example("softmax", "softmax")
    x = np.random.default_rng(0).standard_normal((4096, 128), dtype=np.float32)
    out = np.empty_like(x)
    assert softmax.launch(x, out, backend=backend) is None
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def check_tma_roundtrip(backend):
    import ml_dtypes
    x = np.random.default_rng(0).standard_normal((4096, 64), dtype=np.float32)
    x = x.astype(ml_dtypes.bfloat16)
    out = example("tma_roundtrip", "tma_roundtrip").launch(x, backend=backend)
    assert (out.astype(np.float32) == 2 * x.astype(np.float32)).all()


def check_gemm(backend):
    import ml_dtypes
    rng = np.random.default_rng(0)
    a = rng.standard_normal((4096, 4096), dtype=np.float32).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((4096, 4096), dtype=np.float32).astype(ml_dtypes.bfloat16)
    c = example("gemm_bf16", "gemm").launch(a, b, backend=backend)
    reference = a[:256].astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(c[:256].astype(np.float32), reference, rtol=2e-2, atol=0.5)


COMPARISONS = [operator.ne, operator.eq, operator.lt, operator.le, operator.gt, operator.ge]


def check_float_comparisons_with_nan(backend):
    """Each comparison on f32 vectors holding NaN and infinities against
    NumPy's (Python's): ordered, but for `!=`, true when either side is NaN."""
    n = 1024

    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((n,), "f32"), ((n,), "f32")],
                 outputs=[((n,), "i32")] * len(COMPARISONS))
    def compare(a, b, *outs):
        x, y = mgpu.vector_load(a), mgpu.vector_load(b)
        for op, out in zip(COMPARISONS, outs):
            mgpu.vector_store(op(x, y).astype("i32"), out)  # true: -1 (sign-extended)

    rng = np.random.default_rng(0)
    values = np.array([np.nan, 0.0, 1.0, -1.0, np.inf, -np.inf], np.float32)
    a, b = rng.choice(values, n), rng.choice(values, n)
    assert np.isnan(a).any() and np.isnan(b).any()
    for op, out in zip(COMPARISONS, compare.launch(a, b, backend=backend)):
        np.testing.assert_array_equal(out, -op(a, b).astype(np.int32), err_msg=op.__name__)


@pytest.fixture(scope="module")
def launch_cache(tmp_path_factory):
    """The compiled-kernel cache of the launches here, shared by the
    backends."""
    return tmp_path_factory.mktemp("launch_cache")


def run_check(check, backend, cache):
    run_check_in_process("test_launch", check, cache, backend)


@on_each_backend
def test_elementwise(backend, launch_cache):
    run_check("check_elementwise", backend, launch_cache)


@on_each_backend
def test_softmax(backend, launch_cache):
    run_check("check_softmax", backend, launch_cache)


@on_each_backend
def test_tma_roundtrip(backend, launch_cache):
    pytest.importorskip("ml_dtypes")
    run_check("check_tma_roundtrip", backend, launch_cache)


@on_each_backend
def test_gemm(backend, launch_cache):
    pytest.importorskip("ml_dtypes")
    run_check("check_gemm", backend, launch_cache)


@on_each_backend
def test_float_comparisons_with_nan(backend, launch_cache):
    run_check("check_float_comparisons_with_nan", backend, launch_cache)


FAKE_DRIVER = pathlib.Path(mgpu.__file__).resolve().parents[1] / "tests" / "libmosaic-fake-cuda.so"

# Runs in a process of its own: the runtime loads one driver per process.
FAKE_LAUNCH = """
import ctypes, json, runpy, sys
import numpy as np
fake = ctypes.CDLL(sys.argv[1])
def example(name, kernel):
    return runpy.run_path(sys.argv[2] + "/" + name + ".py")[kernel]
def record():
    return {"grid": list((ctypes.c_uint * 3).in_dll(fake, "fake_launch_grid")),
            "block": list((ctypes.c_uint * 3).in_dll(fake, "fake_launch_block")),
            "smem": ctypes.c_uint.in_dll(fake, "fake_launch_smem").value,
            "launches": ctypes.c_int.in_dll(fake, "fake_launches").value}
records = {}
# The fake launch copies the first buffer into the last one.
ctypes.c_int.in_dll(fake, "fake_param_count").value = 3
elementwise = example("elementwise", "elementwise")
x = np.arange(1048576, dtype=np.float32)
made = elementwise(x, np.ones_like(x))
given = np.zeros_like(x)
assert elementwise(x, np.ones_like(x), given) is None
records["elementwise"] = dict(record(), made=bool((made == x).all()), given=bool((given == x).all()))
ctypes.c_int.in_dll(fake, "fake_param_count").value = 2
x = np.random.default_rng(0).standard_normal((4096, 128), dtype=np.float32)
made = example("softmax", "softmax")(x)
records["softmax"] = dict(record(), made=bool((made == x).all()))
ctypes.c_int.in_dll(fake, "fake_param_count").value = 0
tma = example("tma_roundtrip", "tma_roundtrip")
try:
    tma(np.zeros((4096, 64), np.float32))
except TypeError as error:
    records["tma_error"] = str(error)
print(json.dumps(records))
"""


@pytest.mark.skipif(not FAKE_DRIVER.exists(), reason="built without runtime/ (no cuda.h)")
def test_launch_through_a_fake_driver(ptxas, tmp_path):
    """NumPy arrays go to the device, in parameter order, and the outputs
    come back; the launch has the kernel's grid and block."""
    env = dict(os.environ, MOSAIC_CUDA_DRIVER=str(FAKE_DRIVER),
               MOSAIC_GPU_CACHE_DIR=str(tmp_path), MOSAIC_GPU_BACKEND="cuda")
    result = subprocess.run([sys.executable, "-c", FAKE_LAUNCH, str(FAKE_DRIVER),
                             str(REPO / "python" / "examples")],
                            env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)
    assert records["elementwise"] == {"grid": [128, 1, 1], "block": [128, 1, 1], "smem": 0,
                                      "launches": 2, "made": True, "given": True}
    assert records["softmax"]["grid"] == [64, 1, 1] and records["softmax"]["made"]
    assert records["tma_error"] == "input 0 has dtype f32, the kernel expects bf16"
    assert len(list(tmp_path.glob("*/elementwise.cubin"))) == 1


@pytest.mark.skipif(not FAKE_DRIVER.exists(), reason="built without runtime/ (no cuda.h)")
def test_the_emulator_backend_needs_the_emulator():
    """MOSAIC_CUDA_DRIVER may name the emulator's library for the emulator
    backend, but no other driver."""
    script = ("import mosaic_gpu as mg\n"
              "try:\n"
              "    mg._mosaic.cuda_driver_version('emulator')\n"
              "except RuntimeError as error:\n"
              "    print(error)\n")
    env = dict(os.environ, MOSAIC_CUDA_DRIVER=str(FAKE_DRIVER))
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                            text=True, check=True)
    assert result.stdout.startswith(f"the emulator backend loaded {FAKE_DRIVER}, which is not "
                                    "the emulator"), result.stdout
