"""Launching a Kernel: argument checks, DLPack and NumPy arrays, the
backend, and the compiled-kernel cache.

``kernel(*arrays)`` checks every array against the kernel's description
before it touches the driver, compiles the kernel (once per content hash),
loads it through runtime/ and runs it on device 0 of a backend: "cuda" (a
GPU) or "emulator" (the PTX emulator, which runs the kernel's PTX on the
host), chosen by ``backend=`` or else ``$MOSAIC_GPU_BACKEND``, on a stream
(``stream=``, else the current PyTorch stream of a CUDA tensor argument,
else the default stream). NumPy arrays (and other arrays on the CPU, read
through DLPack) are copied to the device and the outputs copied back into
them; arrays on a CUDA device are passed by pointer, read through DLPack,
and the outputs the launch makes for PyTorch inputs are tensors on their
device.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import math
import os
import pathlib
import shutil
import subprocess
import tempfile
from typing import TYPE_CHECKING, Any, Sequence

from . import _mosaic
from .dtypes import BUFFER_DTYPES, DType, bf16, f16, f32, f64, i8, i16, i32, i64

if TYPE_CHECKING:
    from .kernels import Kernel

__all__ = ["BACKENDS", "backend", "cache_dir", "compile_cached", "toolchain_version"]

BACKENDS = ("cuda", "emulator")

# DLPack's device types and type codes (dlpack.h).
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_INT, _DL_FLOAT, _DL_BFLOAT = 0, 2, 4
_DTYPES = {(_DL_FLOAT, 16): f16, (_DL_FLOAT, 32): f32, (_DL_FLOAT, 64): f64,
           (_DL_BFLOAT, 16): bf16, (_DL_INT, 8): i8, (_DL_INT, 16): i16,
           (_DL_INT, 32): i32, (_DL_INT, 64): i64}
# NumPy dtype names (ml_dtypes' bfloat16 and fp8 included).
_NUMPY_DTYPES = {dtype.numpy_name: dtype for dtype in BUFFER_DTYPES.values()}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]


def backend(name: str | None = None) -> str:
    """The backend a launch runs on: ``name`` ("cuda" or "emulator"), or
    when it is None ``$MOSAIC_GPU_BACKEND``, "cuda" when that is unset.
    Raises ValueError for another name."""
    if name is None:
        chosen = os.environ.get("MOSAIC_GPU_BACKEND") or "cuda"
        if chosen not in BACKENDS:
            raise ValueError(f"MOSAIC_GPU_BACKEND is {chosen!r}; expected 'cuda' or 'emulator'")
        return chosen
    if name not in BACKENDS:
        raise ValueError(f"backend must be 'cuda' or 'emulator', got {name!r}")
    return name


def cache_dir() -> pathlib.Path:
    """Where compiled kernels are kept: ``$MOSAIC_GPU_CACHE_DIR``, else
    ``~/.cache/mosaic_gpu``."""
    return pathlib.Path(os.environ.get("MOSAIC_GPU_CACHE_DIR")
                        or pathlib.Path.home() / ".cache" / "mosaic_gpu")


@functools.lru_cache(maxsize=None)
def toolchain_version() -> str:
    """What the compiled kernels depend on besides the module and the
    options: this build of the compiler (the extension's size and time, so
    a rebuilt compiler misses the cache) and the ptxas it runs (its path and
    its ``--version``)."""
    extension = os.stat(_mosaic.__file__)
    ptxas = _mosaic.find_ptxas()
    version = ""
    if ptxas:
        try:
            version = subprocess.run([ptxas, "--version"], capture_output=True, text=True,
                                     timeout=60).stdout.strip().splitlines()[-1:]
        except (OSError, subprocess.SubprocessError):
            version = ["unknown"]
    return f"mosaic_gpu {extension.st_size}:{extension.st_mtime_ns}; ptxas {ptxas} {version}"


_compiled: dict[str, str] = {}


def compile_cached(module: _mosaic.Module, **options: Any) -> str:
    """The manifest path of ``module`` compiled to a CUBIN with ``options``
    (its PTX beside it, for the emulator), compiling it only when neither
    this process nor the cache directory has a kernel of the same key: the
    module's text, the options and ``toolchain_version()``. The GIL is
    released while it compiles."""
    key = hashlib.sha256("\n".join([
        str(module), repr(sorted(options.items())), toolchain_version()]).encode()).hexdigest()
    if key in _compiled:
        return _compiled[key]
    directory = cache_dir() / key[:32]
    manifests = [path for path in directory.glob("*.json") if _names_its_ptx(path)] \
        if directory.is_dir() else []
    if not manifests:
        kernel = _mosaic.compile(module, emit="cubin", **options)
        # Written beside the entry, then renamed into place: another process
        # filling the same entry never sees half of it.
        directory.parent.mkdir(parents=True, exist_ok=True)
        staging = pathlib.Path(tempfile.mkdtemp(prefix=key[:32] + ".", dir=directory.parent))
        kernel.write(str(staging / f"{kernel.entry}.cubin"))
        try:
            if directory.is_dir():  # an entry without its PTX: replaced
                shutil.rmtree(directory)
            staging.rename(directory)
        except OSError:  # another process put its entry there first
            shutil.rmtree(staging, ignore_errors=True)
        manifests = [directory / f"{kernel.entry}.json"]
    _compiled[key] = str(manifests[0])
    return _compiled[key]


def _names_its_ptx(manifest: pathlib.Path) -> bool:
    """Whether a cached manifest names its PTX and the file is there; those
    written before manifests named the PTX are compiled again."""
    try:
        ptx = _mosaic.Manifest.load(str(manifest)).ptx_path
    except ValueError:
        return False
    return bool(ptx) and pathlib.Path(ptx).is_file()


def _library(array: Any) -> str:
    """The top-level module of an array's type: 'numpy', 'torch', ..."""
    return type(array).__module__.split(".")[0]


def _parse_capsule(capsule: Any, what: str) -> tuple[_DLTensor, DType, tuple[int, ...]]:
    tensor = ctypes.cast(_capsule_pointer(capsule, b"dltensor"),
                         ctypes.POINTER(_DLTensor)).contents
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    dtype = (tensor.dtype.code, tensor.dtype.bits)
    if tensor.dtype.lanes != 1 or dtype not in _DTYPES:
        raise TypeError(f"{what} has DLPack dtype code {dtype[0]}, {dtype[1]} bits, "
                        f"{tensor.dtype.lanes} lanes, which kernels do not take")
    return tensor, _DTYPES[dtype], shape


def _is_contiguous(tensor: _DLTensor, shape: tuple[int, ...]) -> bool:
    if not tensor.strides:
        return True
    expected = 1
    for i in reversed(range(len(shape))):
        if shape[i] != 1 and tensor.strides[i] != expected:
            return False
        expected *= shape[i]
    return True


class _Argument:
    """One array as the kernel sees it: element type, shape, and either a
    device pointer or a host array to copy. ``stream`` is the stream the
    kernel will run on, which DLPack producers order their work before."""

    def __init__(self, array, what, stream=0):
        self.what = what
        self.host = None
        self.pointer = None
        self.array = array
        if hasattr(array, "__dlpack_device__") and hasattr(array, "__dlpack__"):
            device_type, device_id = array.__dlpack_device__()
            if device_type in (_DL_CUDA, _DL_CUDA_MANAGED):
                self._from_dlpack(array, device_id, what, stream)
                return
            if device_type not in (_DL_CPU, _DL_CUDA_HOST):
                raise ValueError(f"{what} is on DLPack device type {device_type}; "
                                 "kernels take CPU or CUDA arrays")
        self._from_host(array, what)

    def _from_host(self, array, what):
        import numpy
        if isinstance(array, numpy.ndarray) or not hasattr(array, "__dlpack__"):
            try:
                host = numpy.asarray(array)
            except (TypeError, ValueError) as error:
                raise TypeError(f"{what} is not an array: {error}") from None
        else:
            host = self._view_host_dlpack(array, what)
        if host.dtype.name not in _NUMPY_DTYPES:
            raise TypeError(f"{what} has dtype {host.dtype.name}, which kernels do not take")
        self.host = numpy.ascontiguousarray(host)
        self.original = host
        self.dtype = _NUMPY_DTYPES[host.dtype.name]
        self.shape = tuple(host.shape)

    def _view_host_dlpack(self, array, what):
        """A NumPy view of a CPU array's memory, read through DLPack (NumPy's
        own from_dlpack knows no bfloat16): outputs are written in place."""
        import numpy
        capsule = array.__dlpack__()
        tensor, dtype, shape = _parse_capsule(capsule, what)
        numpy_dtype = dtype.numpy
        if numpy_dtype is None:
            raise TypeError(f"{what} holds {dtype}, which NumPy reads only with the "
                            "ml_dtypes package")
        itemsize = numpy_dtype.itemsize
        # DLPack strides count elements (none: row-major); the elements the
        # view spans run from the first to the last one it reaches.
        steps = ([tensor.strides[i] for i in range(len(shape))] if tensor.strides
                 else [math.prod(shape[i + 1:]) for i in range(len(shape))])
        if any(step < 0 for step in steps):
            raise ValueError(f"{what} has negative strides")
        extent = 1 + sum((d - 1) * step for d, step in zip(shape, steps)) if all(shape) else 0
        address = (tensor.data or 0) + tensor.byte_offset
        memory = (ctypes.c_byte * (extent * itemsize)).from_address(address)
        flat = numpy.frombuffer(memory, numpy_dtype, count=extent)
        view = numpy.lib.stride_tricks.as_strided(flat, shape, [s * itemsize for s in steps])
        self.keep_alive = (array, capsule, memory)
        return view

    def _from_dlpack(self, array, device_id, what, stream):
        if device_id != 0:
            raise ValueError(f"{what} is on CUDA device {device_id}; kernels run on device 0")
        # DLPack's stream numbering: 1 is CUDA's legacy default stream (0 is
        # ambiguous and not allowed).
        capsule = array.__dlpack__(stream=stream or 1)
        tensor, self.dtype, self.shape = _parse_capsule(capsule, what)
        if not _is_contiguous(tensor, self.shape):
            raise ValueError(f"{what} is not contiguous (row-major)")
        self.pointer = (tensor.data or 0) + tensor.byte_offset
        self.keep_alive = (array, capsule)


def check_arguments(kernel: Kernel, arrays: Sequence[Any], stream: int = 0) -> list[_Argument]:
    """The kernel's arguments from ``arrays`` (inputs, or inputs and
    outputs), checked against the kernel's description."""
    described = kernel.inputs + kernel.outputs
    if len(arrays) not in (len(kernel.inputs), len(described)):
        raise TypeError(f"{kernel.name} takes its {len(kernel.inputs)} inputs, or its "
                        f"{len(kernel.inputs)} inputs and {len(kernel.outputs)} outputs; "
                        f"got {len(arrays)} arrays")
    arguments = []
    for i, (array, (shape, dtype)) in enumerate(zip(arrays, described)):
        what = (f"input {i}" if i < len(kernel.inputs)
                else f"output {i - len(kernel.inputs)}")
        argument = _Argument(array, what, stream)
        if i >= len(kernel.inputs) and argument.host is not None and not (
                hasattr(array, "__dlpack__") and getattr(argument.original, "flags", None)
                and argument.original.flags.writeable):
            raise ValueError(f"{what} is on the CPU, so it must be a writable NumPy array "
                             "(or DLPack tensor) the outputs are copied into")
        if argument.dtype != dtype:
            raise TypeError(f"{what} has dtype {argument.dtype}, the kernel expects {dtype}")
        if argument.shape != shape:
            raise ValueError(f"{what} has shape {argument.shape}, the kernel expects {shape}")
        arguments.append(argument)
    return arguments


def stream_handle(stream: Any, backend_name: str, arrays: Sequence[Any]) -> int:
    """The CUstream a launch runs on: ``stream`` (an int handle, or an
    object with ``cuda_stream`` (torch.cuda.Stream) or the
    ``__cuda_stream__`` protocol); when it is None, the current PyTorch
    stream of the first CUDA tensor among ``arrays``, else 0 (the default
    stream). The emulator runs on its default stream only."""
    if stream is None:
        for array in arrays:
            if _library(array) == "torch" and getattr(array, "is_cuda", False):
                import torch
                return int(torch.cuda.current_stream(array.device).cuda_stream)
        return 0
    if hasattr(stream, "__cuda_stream__"):
        handle = stream.__cuda_stream__()[1]
    elif hasattr(stream, "cuda_stream"):
        handle = stream.cuda_stream
    else:
        handle = stream
    if not isinstance(handle, int) or isinstance(handle, bool):
        raise TypeError("`stream` must be a CUstream handle (an int), a torch.cuda.Stream or "
                        f"an object with __cuda_stream__, got {stream!r}")
    if not 0 <= handle < 2 ** 64:
        raise ValueError(f"`stream` must be a CUstream handle (0 to 2**64 - 1), got {handle}")
    if handle and backend_name == "emulator":
        raise ValueError(f"`stream` is {handle:#x}, but the emulator backend runs kernels on "
                         "its default stream: pass stream=None or 0")
    return handle


def launch(kernel: Kernel, arrays: Sequence[Any], options: dict[str, Any],
           backend_name: str | None = None, stream: Any = None) -> Any:
    """Runs ``kernel`` on ``arrays`` on the backend ``backend_name`` picks
    (see ``backend``) and on ``stream`` (see ``stream_handle``), then waits
    for that stream, unless every array is a PyTorch CUDA tensor: that
    launch is asynchronous, as PyTorch's operators are (and so CUDA graphs
    can capture it). Returns the outputs it made when only the inputs were
    given: NumPy arrays, or PyTorch tensors on the device of the first
    tensor among the inputs."""
    chosen = backend(backend_name)
    handle = stream_handle(stream, chosen, arrays)
    arguments = check_arguments(kernel, arrays, handle)
    if chosen == "emulator":
        for argument in arguments:
            if argument.pointer is not None:
                raise ValueError(f"{argument.what} is on a CUDA device, but the emulator runs "
                                 "kernels in its own memory; pass a CPU array")
    if not hasattr(_mosaic, "LoadedKernel"):
        raise RuntimeError("mosaic_gpu was built without runtime/ (cuda.h was not found), "
                           "so it cannot launch kernels")
    _mosaic.cuda_driver_version(chosen)  # "no CUDA driver: ..." before compiling
    made = []
    if len(arguments) == len(kernel.inputs):
        made = [_new_output(shape, dtype, arrays) for shape, dtype in kernel.outputs]
        arguments += [_Argument(output, f"output {i}", handle) for i, output in enumerate(made)]
    loaded = kernel._loaded(chosen, options)
    device = {}
    for i, argument in enumerate(arguments):
        if argument.host is not None:
            device[i] = _mosaic.DeviceMemory(argument.host.nbytes, chosen)
            if i < len(arrays):  # the outputs made here hold nothing yet
                device[i].upload(_bytes_view(argument.host))
            argument.pointer = device[i].pointer
    asynchronous = all(_library(a) == "torch" and getattr(a, "is_cuda", False)
                       for a in arrays)
    loaded.launch([(a.pointer, a.dtype.name, list(a.shape)) for a in arguments], handle,
                  wait=not asynchronous)
    for i in range(len(kernel.inputs), len(arguments)):
        if i in device:
            device[i].download(_bytes_view(arguments[i].host))
            if arguments[i].host is not arguments[i].original:
                arguments[i].original[...] = arguments[i].host
    if made:
        return made[0] if len(made) == 1 else tuple(made)
    return None


def load(module: _mosaic.Module, backend_name: str, options: dict[str, Any]) -> Any:
    """``module`` compiled (``compile_cached``) and loaded on a backend."""
    return _mosaic.LoadedKernel(compile_cached(module, **options), backend_name)


def _new_output(shape: tuple[int, ...], dtype: DType, inputs: Sequence[Any]) -> Any:
    """An output the launch makes: a PyTorch tensor on the device of the
    first tensor among the inputs, else a NumPy array."""
    for array in inputs:
        if _library(array) == "torch":
            import torch
            torch_dtype = getattr(torch, _TORCH_DTYPES.get(dtype.name, ""), None)
            if torch_dtype is None:
                raise TypeError(f"PyTorch has no {dtype} tensors for the kernel's outputs; "
                                "pass the outputs instead")
            return torch.empty(shape, dtype=torch_dtype, device=array.device)
    import numpy
    return numpy.empty(shape, dtype=_numpy_dtype(dtype))


# PyTorch's names of the element types kernels take.
_TORCH_DTYPES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "f64": "float64",
                 "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64"}


def _bytes_view(array):
    """The array's bytes as uint8: the buffer protocol cannot export the
    ml_dtypes types (bf16, fp8), so copies go through a byte view."""
    return array.reshape(-1).view("uint8")


def _numpy_dtype(dtype: DType) -> Any:
    numpy_dtype = dtype.numpy
    if numpy_dtype is None:  # bf16 without ml_dtypes: NumPy has no bfloat16
        raise TypeError(f"NumPy {dtype} outputs need the ml_dtypes package; "
                        "pass the outputs instead")
    return numpy_dtype
