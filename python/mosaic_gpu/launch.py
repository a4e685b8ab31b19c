"""Launching a Kernel: argument checks, DLPack and NumPy arrays, the
backend, and the compiled-kernel cache.

``kernel(*arrays)`` checks every array against the kernel's description
before it touches the driver, compiles the kernel (once per content hash),
loads it through runtime/ and runs it on device 0 of a backend: "cuda" (a
GPU) or "emulator" (the PTX emulator, which runs the kernel's PTX on the
host), chosen by ``backend=`` or else ``$MOSAIC_GPU_BACKEND``. NumPy arrays
(and other arrays on the CPU) are copied to the device and the outputs
copied back; arrays on a CUDA device are passed by pointer, read through
DLPack.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import pathlib
from typing import TYPE_CHECKING, Any, Sequence

from . import _mosaic
from .dtypes import DType, bf16, f8e4m3fn, f8e5m2, f16, f32, f64, i8, i16, i32, i64

if TYPE_CHECKING:
    from .kernels import Kernel

__all__ = ["BACKENDS", "backend", "cache_dir", "compile_cached"]

BACKENDS = ("cuda", "emulator")

# DLPack's device types and type codes (dlpack.h).
_DL_CPU, _DL_CUDA, _DL_CUDA_HOST, _DL_CUDA_MANAGED = 1, 2, 3, 13
_DL_INT, _DL_FLOAT, _DL_BFLOAT = 0, 2, 4
_DTYPES = {(_DL_FLOAT, 16): f16, (_DL_FLOAT, 32): f32, (_DL_FLOAT, 64): f64,
           (_DL_BFLOAT, 16): bf16, (_DL_INT, 8): i8, (_DL_INT, 16): i16,
           (_DL_INT, 32): i32, (_DL_INT, 64): i64}
# NumPy dtype names (ml_dtypes' bfloat16 and fp8 included).
_NUMPY_DTYPES = {"float16": f16, "float32": f32, "float64": f64, "bfloat16": bf16,
                 "float8_e4m3fn": f8e4m3fn, "float8_e5m2": f8e5m2,
                 "int8": i8, "int16": i16, "int32": i32, "int64": i64}


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


_compiled = {}


def compile_cached(module: _mosaic.Module, **options: Any) -> str:
    """The manifest path of ``module`` compiled to a CUBIN with ``options``
    (its PTX beside it, for the emulator), compiling it only when the cache
    has no kernel of the same content hash (the module's text, the options
    and the ptxas used)."""
    key = hashlib.sha256("\n".join([
        str(module), repr(sorted(options.items())), str(_mosaic.find_ptxas())]).encode()).hexdigest()
    if key in _compiled:
        return _compiled[key]
    directory = cache_dir() / key[:32]
    manifests = [path for path in directory.glob("*.json") if _names_its_ptx(path)] \
        if directory.is_dir() else []
    if not manifests:
        kernel = _mosaic.compile(module, emit="cubin", **options)
        directory.mkdir(parents=True, exist_ok=True)
        kernel.write(str(directory / f"{kernel.entry}.cubin"))
        manifests = [directory / f"{kernel.entry}.json"]
    _compiled[key] = str(manifests[0])
    return _compiled[key]


def _names_its_ptx(manifest: pathlib.Path) -> bool:
    """Whether a cached manifest names its PTX and the file is there; those
    written before manifests named the PTX are compiled again."""
    try:
        ptx = json.loads(manifest.read_text()).get("ptx")
    except (OSError, ValueError):
        return False
    return isinstance(ptx, str) and (manifest.parent / ptx).is_file()


class _Argument:
    """One array as the kernel sees it: element type, shape, and either a
    device pointer or a host array to copy."""

    def __init__(self, array, what):
        self.what = what
        self.host = None
        self.pointer = None
        if hasattr(array, "__dlpack_device__") and hasattr(array, "__dlpack__"):
            device_type, device_id = array.__dlpack_device__()
            if device_type in (_DL_CUDA, _DL_CUDA_MANAGED):
                self._from_dlpack(array, device_id, what)
                return
            if device_type not in (_DL_CPU, _DL_CUDA_HOST):
                raise ValueError(f"{what} is on DLPack device type {device_type}; "
                                 "kernels take CPU or CUDA arrays")
        self._from_host(array, what)

    def _from_host(self, array, what):
        import numpy
        try:
            host = numpy.from_dlpack(array) if not isinstance(array, numpy.ndarray) and hasattr(
                array, "__dlpack__") else numpy.asarray(array)
        except (TypeError, RuntimeError, BufferError) as error:
            raise TypeError(f"{what} is not an array: {error}") from None
        if host.dtype.name not in _NUMPY_DTYPES:
            raise TypeError(f"{what} has dtype {host.dtype.name}, which kernels do not take")
        self.host = numpy.ascontiguousarray(host)
        self.original = array
        self.dtype = _NUMPY_DTYPES[host.dtype.name]
        self.shape = tuple(host.shape)

    def _from_dlpack(self, array, device_id, what):
        if device_id != 0:
            raise ValueError(f"{what} is on CUDA device {device_id}; kernels run on device 0")
        capsule = array.__dlpack__()
        tensor = ctypes.cast(_capsule_pointer(capsule, b"dltensor"),
                             ctypes.POINTER(_DLTensor)).contents
        self.shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        dtype = (tensor.dtype.code, tensor.dtype.bits)
        if tensor.dtype.lanes != 1 or dtype not in _DTYPES:
            raise TypeError(f"{what} has DLPack dtype code {dtype[0]}, {dtype[1]} bits, "
                            f"{tensor.dtype.lanes} lanes, which kernels do not take")
        self.dtype = _DTYPES[dtype]
        if tensor.strides:
            expected = 1
            for i in reversed(range(tensor.ndim)):
                if self.shape[i] != 1 and tensor.strides[i] != expected:
                    raise ValueError(f"{what} is not contiguous (row-major)")
                expected *= self.shape[i]
        self.pointer = (tensor.data or 0) + tensor.byte_offset
        self.keep_alive = (array, capsule)


def check_arguments(kernel: Kernel, arrays: Sequence[Any]) -> list[_Argument]:
    """The kernel's arguments from ``arrays`` (inputs, or inputs and
    outputs), and whether outputs must be made."""
    described = kernel.inputs + kernel.outputs
    if len(arrays) not in (len(kernel.inputs), len(described)):
        raise TypeError(f"{kernel.name} takes its {len(kernel.inputs)} inputs, or its "
                        f"{len(kernel.inputs)} inputs and {len(kernel.outputs)} outputs; "
                        f"got {len(arrays)} arrays")
    arguments = []
    for i, (array, (shape, dtype)) in enumerate(zip(arrays, described)):
        what = (f"input {i}" if i < len(kernel.inputs)
                else f"output {i - len(kernel.inputs)}")
        argument = _Argument(array, what)
        if argument.dtype != dtype:
            raise TypeError(f"{what} has dtype {argument.dtype}, the kernel expects {dtype}")
        if argument.shape != shape:
            raise ValueError(f"{what} has shape {argument.shape}, the kernel expects {shape}")
        arguments.append(argument)
    return arguments


def launch(kernel: Kernel, arrays: Sequence[Any], options: dict[str, Any],
           backend_name: str | None = None) -> Any:
    """Runs ``kernel`` on ``arrays`` on the backend ``backend_name`` picks
    (see ``backend``); returns the outputs it made (NumPy arrays) when only
    the inputs were given."""
    chosen = backend(backend_name)
    arguments = check_arguments(kernel, arrays)
    if chosen == "emulator":
        for argument in arguments:
            if argument.pointer is not None:
                raise ValueError(f"{argument.what} is on a CUDA device, but the emulator runs "
                                 "kernels in its own memory; pass a CPU array")
    made = []
    if len(arguments) == len(kernel.inputs):
        import numpy
        made = [numpy.empty(shape, dtype=_numpy_dtype(dtype)) for shape, dtype in kernel.outputs]
        arguments += [_Argument(output, "output") for output in made]
    if not hasattr(_mosaic, "LoadedKernel"):
        raise RuntimeError("mosaic_gpu was built without runtime/ (cuda.h was not found), "
                           "so it cannot launch kernels")
    _mosaic.cuda_driver_version(chosen)  # "no CUDA driver: ..." before compiling
    loaded = _mosaic.LoadedKernel(compile_cached(kernel.module, **options), chosen)
    device = {}
    for i, argument in enumerate(arguments):
        if argument.host is not None:
            device[i] = _mosaic.DeviceMemory(argument.host.nbytes, chosen)
            if i < len(arrays):  # the outputs made here hold nothing yet
                device[i].upload(_bytes_view(argument.host))
            argument.pointer = device[i].pointer
    loaded.launch([(a.pointer, a.dtype.name, list(a.shape)) for a in arguments])
    for i in range(len(kernel.inputs), len(arguments)):
        if i in device:
            device[i].download(_bytes_view(arguments[i].host))
            if arguments[i].host is not arguments[i].original:
                _copy_back(arguments[i])
    if made:
        return made[0] if len(made) == 1 else tuple(made)
    return None


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


def _copy_back(argument):
    """Writes a downloaded output into the caller's (non-contiguous or
    converted) array."""
    import numpy
    target = argument.original
    if isinstance(target, numpy.ndarray):
        target[...] = argument.host
    else:
        raise ValueError("an output on the CPU must be a writable NumPy array")
