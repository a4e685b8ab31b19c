"""Arrays from other libraries and the launch's stream: CUDA arrays (and
PyTorch CUDA tensors) used in place without a copy and on their stream,
checked through the fake driver, whose device memory is host memory; CPU
arrays read through DLPack (bf16 included) and written in place;
``stream=`` and its errors; the GIL released while compiling and
launching."""
import ctypes
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import mosaic_gpu as mgpu
from mosaic_gpu import launch
from conftest import REPO, needs_emulator
from test_launch import FAKE_DRIVER

TESTS = pathlib.Path(__file__).resolve().parent


def dlpack_capsule(pointer, shape, code, bits, device=(1, 0), strides=None):
    """A DLPack capsule for `shape` elements at `pointer` on `device`
    ((1, 0): the CPU; (2, 0): CUDA device 0), row-major unless `strides`
    (in elements) say otherwise; returns the capsule and what it points
    into, which must outlive it."""
    ndim = len(shape)
    shape_array = (ctypes.c_int64 * ndim)(*shape)
    strides_array = (ctypes.c_int64 * ndim)(*strides) if strides else None
    tensor = launch._DLTensor(pointer, launch._DLDevice(*device), ndim,
                              launch._DLDataType(code, bits, 1),
                              ctypes.cast(shape_array, ctypes.POINTER(ctypes.c_int64)),
                              ctypes.cast(strides_array, ctypes.POINTER(ctypes.c_int64))
                              if strides else None, 0)
    # DLManagedTensor: the tensor, then manager_ctx and deleter (null here).
    managed = (ctypes.c_byte * (ctypes.sizeof(tensor) + 16))()
    ctypes.memmove(managed, ctypes.byref(tensor), ctypes.sizeof(tensor))
    new = ctypes.pythonapi.PyCapsule_New
    new.restype = ctypes.py_object
    new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(ctypes.addressof(managed), b"dltensor", None), (managed, shape_array,
                                                              strides_array)


class CpuBf16:
    """A bf16 CPU array of another library: NumPy cannot read it through its
    own from_dlpack."""

    def __init__(self, bits, strides=None, shape=None):
        self.bits = bits  # uint16 storage
        self.shape = shape or bits.shape
        self.strides = strides

    def __dlpack__(self, stream=None):
        capsule, self.keep = dlpack_capsule(self.bits.ctypes.data, self.shape, 4, 16,
                                            strides=self.strides)
        return capsule

    def __dlpack_device__(self):
        return (1, 0)


def test_cpu_dlpack_bf16_is_viewed_in_place():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.arange(12, dtype=np.float32).reshape(3, 4).astype(ml_dtypes.bfloat16)
    storage = values.view(np.uint16).copy()
    argument = launch._Argument(CpuBf16(storage), "input 0")
    assert (argument.dtype, argument.shape) == ("bf16", (3, 4))
    assert np.shares_memory(argument.host, storage)
    assert (argument.host.astype(np.float32) == values.astype(np.float32)).all()
    argument.original[1, 2] = 100.0  # an output is written where the array is
    assert storage[1, 2] == np.array(100.0, ml_dtypes.bfloat16).view(np.uint16)


def test_strided_cpu_dlpack_is_copied_and_written_back():
    pytest.importorskip("ml_dtypes")
    storage = np.zeros((4, 8), np.uint16)
    # Every other column: shape (4, 4), strides (8, 2) elements.
    argument = launch._Argument(CpuBf16(storage, strides=(8, 2), shape=(4, 4)), "output 0")
    assert argument.host.flags.c_contiguous and not np.shares_memory(argument.host, storage)
    assert np.shares_memory(argument.original, storage)
    argument.original[...] = 1.0
    assert (storage[:, ::2] == 0x3F80).all() and (storage[:, 1::2] == 0).all()


@pytest.mark.parametrize("stream, handle", [
    (None, 0), (0, 0), (0x1234, 0x1234),
    (type("TorchLike", (), {"cuda_stream": 0x77})(), 0x77),
    (type("Protocol", (), {"__cuda_stream__": lambda self: (0, 0x99)})(), 0x99),
])
def test_stream_handles(stream, handle):
    assert launch.stream_handle(stream, "cuda", []) == handle


@pytest.mark.parametrize("stream, backend, exception, message", [
    ("default", "cuda", TypeError, "`stream` must be a CUstream handle .* got 'default'"),
    (True, "cuda", TypeError, "`stream` must be a CUstream handle"),
    (1.5, "cuda", TypeError, "`stream` must be a CUstream handle"),
    (-1, "cuda", ValueError, r"`stream` must be a CUstream handle \(0 to 2\*\*64 - 1\), got -1"),
    (type("Bad", (), {"cuda_stream": "x"})(), "cuda", TypeError, "`stream` must be"),
    (0x10, "emulator", ValueError, "`stream` is 0x10, but the emulator backend runs kernels on "
                                   "its default stream: pass stream=None or 0"),
])
def test_bad_streams(stream, backend, exception, message):
    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((128,), "f32")],
                 outputs=[((128,), "f32")])
    def copy(x, out):
        mgpu.vector_store(mgpu.vector_load(x), out)

    with pytest.raises(exception, match=message):
        copy.launch(np.zeros(128, np.float32), backend=backend, stream=stream)


# Runs in a process of its own with the fake driver as the CUDA driver. A
# launch there copies the first buffer into the last one.
FAKE_DEVICE_RUN = """
import ctypes, json, sys, types
import numpy as np
sys.path.insert(0, sys.argv[2])
import mosaic_gpu as mgpu
from test_interop import dlpack_capsule

fake = ctypes.CDLL(sys.argv[1])
ctypes.c_int.in_dll(fake, "fake_param_count").value = 3
def counter(name, kind=ctypes.c_int):
    return kind.in_dll(fake, name).value

class DeviceArray:
    '''An f32 array in (fake) device memory, seen through DLPack.'''
    def __init__(self, shape):
        self.shape = tuple(shape)
        self.memory = mgpu._mosaic.DeviceMemory(4 * int(np.prod(shape)), "cuda")
        self.streams = []
    def __dlpack__(self, stream=None):
        self.streams.append(stream)
        capsule, self.keep = dlpack_capsule(self.memory.pointer, self.shape, 2, 32, device=(2, 0))
        return capsule
    def __dlpack_device__(self):
        return (2, 0)
    def values(self):  # read in place: the fake device memory is host memory
        data = (ctypes.c_float * int(np.prod(self.shape))).from_address(self.memory.pointer)
        return np.frombuffer(data, np.float32).reshape(self.shape)

# A stand-in for PyTorch with CUDA: tensors in device memory, a current
# stream, torch.empty.
torch = types.ModuleType("torch")
class Tensor(DeviceArray):
    is_cuda = True
    device = "cuda:0"
Tensor.__module__ = "torch"
torch.Tensor, torch.float32 = Tensor, "float32"
torch.empty = lambda shape, dtype, device: Tensor(shape)
torch.cuda = types.SimpleNamespace(
    current_stream=lambda device: types.SimpleNamespace(cuda_stream=0x5EED))
sys.modules["torch"] = torch

@mgpu.jit(block=(128, 1, 1), outputs=lambda x, y: [x], grid=lambda x, y: (x.tiles(0, 1024), 1, 1))
def scale(x, y, out):
    rows = mgpu.ds(mgpu.block_id("x") * 1024, 1024)
    mgpu.vector_store(mgpu.vector_load(x[rows]) * mgpu.vector_load(y[rows]), out[rows])

records = {}
x, y, out = DeviceArray((2048,)), DeviceArray((2048,)), DeviceArray((2048,))
x.values()[:] = np.arange(2048)
copies = counter("fake_copies")
scale(x, y, out, stream=0x1234)
records["arrays"] = dict(
    copies=counter("fake_copies") - copies, written=bool((out.values() == x.values()).all()),
    stream=counter("fake_launch_stream", ctypes.c_ulonglong),
    synchronized=counter("fake_synchronized_stream", ctypes.c_ulonglong),
    dlpack_streams=x.streams[-1:])

a, b = Tensor((1024,)), Tensor((1024,))
a.values()[:] = 7.0
copies = counter("fake_copies")
ctypes.c_ulonglong.in_dll(fake, "fake_synchronized_stream").value = 0
made = scale(a, b)
records["torch"] = dict(
    copies=counter("fake_copies") - copies, type=type(made).__name__,
    written=bool((made.values() == 7.0).all()),
    stream=counter("fake_launch_stream", ctypes.c_ulonglong), dlpack_streams=a.streams[-1:],
    synchronized=counter("fake_synchronized_stream", ctypes.c_ulonglong))

host = np.arange(1024, dtype=np.float32)
copies = counter("fake_copies")
result = scale(host, np.ones_like(host), stream=types.SimpleNamespace(cuda_stream=0x42))
records["numpy"] = dict(copies=counter("fake_copies") - copies,
                        written=bool((result == host).all()),
                        stream=counter("fake_launch_stream", ctypes.c_ulonglong))
print(json.dumps(records))
"""


@pytest.mark.skipif(not FAKE_DRIVER.exists(), reason="built without runtime/ (no cuda.h)")
def test_device_arrays_round_trip_without_copies_on_their_stream(ptxas, tmp_path):
    """CUDA arrays and PyTorch CUDA tensors go to the kernel by pointer and
    the outputs are made on the device: no copy through the driver; the
    kernel runs on the given stream (or the tensors' current stream), which
    DLPack producers are told and which is synchronized, but for PyTorch's
    tensors."""
    env = dict(os.environ, MOSAIC_CUDA_DRIVER=str(FAKE_DRIVER),
               MOSAIC_GPU_CACHE_DIR=str(tmp_path), MOSAIC_GPU_BACKEND="cuda")
    result = subprocess.run([sys.executable, "-c", FAKE_DEVICE_RUN, str(FAKE_DRIVER),
                             str(TESTS)], env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    records = json.loads(result.stdout)
    assert records["arrays"] == dict(copies=0, written=True, stream=0x1234,
                                     synchronized=0x1234, dlpack_streams=[0x1234])
    # PyTorch's tensors: asynchronous, as PyTorch's operators are.
    assert records["torch"] == dict(copies=0, type="Tensor", written=True, stream=0x5EED,
                                    dlpack_streams=[0x5EED], synchronized=0)
    # NumPy arrays: two inputs up, the output down; on the stream given.
    assert records["numpy"] == dict(copies=3, written=True, stream=0x42)


GIL_RUN = """
import runpy, sys, threading
import numpy as np
import mosaic_gpu as mgpu

counter = 0

def counted_during(call):
    '''How often the main thread counted while `call` ran in another
    thread: about nothing when the call holds the GIL.'''
    seen = []
    def work():
        before = counter
        call()
        seen.append(counter - before)
    worker = threading.Thread(target=work)
    worker.start()
    global counter
    while worker.is_alive():
        counter += 1
    return seen[0]

def rate():
    '''Counts in one switch interval with the GIL to itself.'''
    import time
    n, end = 0, time.perf_counter() + 0.1
    while time.perf_counter() < end:
        n += 1
    return n / 0.1 * sys.getswitchinterval()

gemm = runpy.run_path(sys.argv[1] + "/gemm_bf16.py")["gemm"]
softmax = runpy.run_path(sys.argv[1] + "/softmax.py")["softmax"]
loaded = softmax._loaded("emulator", {})
memory = [mgpu._mosaic.DeviceMemory(4096 * 128 * 4, "emulator") for _ in range(2)]
buffers = [(m.pointer, "f32", [4096, 128]) for m in memory]
interval = rate()
compiling = max(counted_during(lambda: mgpu.compile(gemm.module, emit="ptx")) for _ in range(3))
launching = max(counted_during(lambda: loaded.launch(buffers)) for _ in range(3))
print(compiling / interval, launching / interval)
"""


@needs_emulator
def test_the_gil_is_released_while_compiling_and_launching(tmp_path):
    """Another Python thread runs while a kernel compiles and while it runs
    (on the emulator here): it counts for many switch intervals, where a
    call holding the GIL lets it count for about one."""
    env = dict(os.environ, MOSAIC_GPU_CACHE_DIR=str(tmp_path), MOSAIC_EMULATOR_THREADS="1")
    result = subprocess.run([sys.executable, "-c", GIL_RUN, str(REPO / "python" / "examples")],
                            env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    compiling, launching = map(float, result.stdout.split())
    assert compiling > 3 and launching > 3, result.stdout


# A stand-in for PyTorch on the CPU: tensors over NumPy storage, seen only
# through DLPack; runs on the emulator in a process of its own.
CPU_TORCH_RUN = """
import sys, types
import numpy as np
import mosaic_gpu as mgpu

torch = types.ModuleType("torch")
class Tensor:
    is_cuda = False
    device = "cpu"
    def __init__(self, storage):
        self._storage = storage
    def __dlpack__(self, stream=None):
        return self._storage.__dlpack__()
    def __dlpack_device__(self):
        return (1, 0)
Tensor.__module__ = "torch"
torch.Tensor, torch.float32 = Tensor, "float32"
torch.empty = lambda shape, dtype, device: Tensor(np.full(shape, np.nan, dtype))
sys.modules["torch"] = torch

@mgpu.jit(block=(128, 1, 1), outputs=lambda x: [x], grid=lambda x: (x.tiles(0, 1024), 1, 1))
def double(x, out):
    chunk = mgpu.ds(mgpu.block_id("x") * 1024, 1024)
    mgpu.vector_store(mgpu.vector_load(x[chunk]) * 2.0, out[chunk])

x = Tensor(np.arange(2048, dtype=np.float32))
made = double(x, backend="emulator")
assert type(made) is Tensor and (made._storage == 2 * x._storage).all()
given = Tensor(np.zeros(2048, np.float32))
double(x, given, backend="emulator")
assert (given._storage == 2 * x._storage).all()
print("ok")
"""


@needs_emulator
def test_cpu_tensors_in_and_out(tmp_path):
    """CPU tensors are read through DLPack, the outputs the launch makes are
    tensors, and given outputs are written in place."""
    env = dict(os.environ, MOSAIC_GPU_CACHE_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", CPU_TORCH_RUN], env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0 and result.stdout == "ok\n", result.stdout + result.stderr
