"""Kernels that span devices (docs/RationaleMultiDevice.md): the devices,
their symmetric memory, and launches on all of them.

In one process::

    devs = mgpu.Devices(4, backend="emulator")
    buf = devs.symmetric((8,), "i32")          # the same buffer on every device
    for d in devs.local_devices:
        buf.upload(d, np.zeros(8, np.int32))
    devs.launch(kernel, [[buf, out[d]] for d in devs.local_devices])
    buf.download(1)

One process per device, as torchrun runs them (RANK, WORLD_SIZE,
LOCAL_RANK, and a rendezvous path derived from TORCHELASTIC_RUN_ID or
MASTER_PORT, or MOSAIC_GPU_RENDEZVOUS)::

    pg = mgpu.ProcessGroup.from_environment()
    buf = pg.symmetric((8,), "i32")            # every process, same order
    pg.launch(kernel, [[buf, out]])            # this process's device only

With PyTorch's symmetric memory, the peers' addresses come from its handle
(``torch.distributed._symmetric_memory.rendezvous``)::

    peers = mgpu.PeerPointers.from_torch(handle, (8,), "i32")
    mgpu.launch_with_peers(kernel, [peers, out], device_id=rank)

``kernel`` is a compiled ``mgpu.Kernel`` or the path of a manifest
(mosaic-compile's JSON). Arguments follow the kernel's buffer parameters; a
parameter the manifest marks symmetric takes a symmetric array (or, for
``launch_with_peers``, ``PeerPointers``). NumPy arrays are copied to their
device and back after the launch.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any, Sequence

from . import _mosaic
from . import launch as _launch
from .dtypes import BUFFER_DTYPES, DType, DTypeLike, as_dtype

__all__ = ["Devices", "ProcessGroup", "SymmetricArray", "PeerPointers", "DevicePointer",
           "launch_with_peers"]


def _runtime() -> Any:
    if not hasattr(_mosaic, "DeviceGroup"):
        raise RuntimeError("mosaic_gpu was built without runtime/ (cuda.h was not found), "
                           "so it cannot launch kernels")
    return _mosaic


def _count(value: Any, what: str, minimum: int = 1) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"`{what}` must be an int, got {value!r}")
    if value < minimum:
        raise ValueError(f"`{what}` must be at least {minimum}, got {value}")
    return value


def _shape(value: Any, what: str = "shape") -> tuple[int, ...]:
    if isinstance(value, int) and not isinstance(value, bool):
        value = (value,)
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(d, int) and not isinstance(d, bool) for d in value):
        raise TypeError(f"`{what}` must be a tuple of ints, got {value!r}")
    if not value or any(d < 1 for d in value):
        raise ValueError(f"`{what}` must have positive dimensions, got {tuple(value)}")
    return tuple(value)


def _buffer_dtype(value: DTypeLike, what: str = "dtype") -> DType:
    dtype = as_dtype(value, what)
    if dtype.name not in BUFFER_DTYPES:
        raise ValueError(f"`{what}`: {dtype} is not a buffer element type (one of "
                         f"{', '.join(BUFFER_DTYPES)})")
    return dtype


class _Parameter:
    """A buffer parameter as the manifest describes it."""

    def __init__(self, entry: dict) -> None:
        self.index = entry["index"]
        self.dtype = BUFFER_DTYPES[entry["element_type"]]
        self.shape = tuple(entry["shape"])
        self.symmetric = bool(entry.get("symmetric", False))


def _manifest(kernel: Any, options: dict[str, Any]) -> tuple[str, str, list[_Parameter]]:
    """The manifest path of ``kernel`` (compiled if it is an mgpu.Kernel),
    its entry and its buffer parameters."""
    from .kernels import Kernel
    if isinstance(kernel, Kernel):
        path = _launch.compile_cached(kernel.module, **options)
    elif isinstance(kernel, (str, os.PathLike)):
        if options:
            raise TypeError(f"compile options {sorted(options)} apply to an mgpu.Kernel, not "
                            "to a manifest")
        path = os.fspath(kernel)
    else:
        raise TypeError("`kernel` must be an mgpu.Kernel or the path of a manifest, got "
                        f"{kernel!r}")
    description = json.loads(str(_mosaic.Manifest.load(path)))
    buffers = [_Parameter(p) for p in description["parameters"] if p["kind"] == "buffer"]
    return path, description["entry"], buffers


def _check(what: str, parameter: _Parameter, dtype: DType, shape: tuple[int, ...]) -> None:
    if dtype != parameter.dtype:
        raise TypeError(f"{what} has dtype {dtype}, parameter {parameter.index} is "
                        f"{parameter.dtype}")
    if shape != parameter.shape:
        raise ValueError(f"{what} has shape {shape}, parameter {parameter.index} is "
                         f"{parameter.shape}")


def _host(array: Any, what: str) -> Any:
    """A NumPy array as a kernel argument, or TypeError."""
    import numpy
    if not isinstance(array, numpy.ndarray):
        raise TypeError(f"{what} must be a NumPy array or a symmetric array "
                        f"(Devices.symmetric), got {type(array).__name__}")
    if array.dtype.name not in _launch._NUMPY_DTYPES:
        raise TypeError(f"{what} has dtype {array.dtype.name}, which kernels do not take")
    return array


class SymmetricArray:
    """A buffer of ``shape`` and ``dtype`` at the same offset of every
    device's symmetric memory. ``upload`` and ``download`` copy one device's
    copy (a device of this process)."""

    def __init__(self, devices: Devices, shape: tuple[int, ...], dtype: DType) -> None:
        self.devices, self.shape, self.dtype = devices, shape, dtype
        self.nbytes = math.prod(shape) * dtype.itemsize
        self._memory = devices._group.allocate_symmetric(self.nbytes)

    @property
    def pointers(self) -> list[int]:
        """Each device's copy, as this process addresses it."""
        return list(self._memory.pointers)

    def pointer(self, device: int) -> int:
        return self.pointers[self.devices._device(device)]

    def upload(self, device: int, array: Any) -> None:
        """Copies ``array`` (NumPy, this array's dtype and shape) to
        ``device``'s copy."""
        device = self.devices._local(device)
        host = _host(array, "`array`")
        if _launch._NUMPY_DTYPES[host.dtype.name] != self.dtype:
            raise TypeError(f"`array` has dtype {host.dtype.name}, the symmetric array holds "
                            f"{self.dtype}")
        if tuple(host.shape) != self.shape:
            raise ValueError(f"`array` has shape {tuple(host.shape)}, the symmetric array "
                             f"{self.shape}")
        import numpy
        self._memory.upload(device, _launch._bytes_view(numpy.ascontiguousarray(host)))

    def download(self, device: int) -> Any:
        """``device``'s copy as a new NumPy array."""
        device = self.devices._local(device)
        host = _launch._new_output(self.shape, self.dtype, [])
        self._memory.download(device, _launch._bytes_view(host))
        return host

    def zero(self, device: int | None = None) -> None:
        """Sets ``device``'s copy (default: every local device's) to zero
        bytes; semaphores start so."""
        devices = self.devices.local_devices if device is None else [self.devices._local(device)]
        for d in devices:
            self._memory.fill(d, 0)

    def __repr__(self) -> str:
        return f"<SymmetricArray {self.dtype} {self.shape} on {self.devices.device_count} devices>"


class Devices:
    """The devices of kernels that span devices, all in this process:
    devices 0 to ``count - 1`` of ``backend`` ('cuda' or 'emulator'; None:
    $MOSAIC_GPU_BACKEND, else 'cuda'). Every pair must reach each other
    (the error names the first that cannot). Symmetric memory comes in
    segments of ``segment_bytes`` (rounded up to the driver's
    granularity)."""

    def __init__(self, count: int, backend: str | None = None, *,
                 segment_bytes: int = 64 << 20) -> None:
        count = _count(count, "count")
        _count(segment_bytes, "segment_bytes")
        self.backend = _launch.backend(backend)
        self._group = _runtime().DeviceGroup(count, self.backend, segment_bytes)
        self._kernels: dict[str, Any] = {}  # manifest path -> loaded on every device

    @property
    def device_count(self) -> int:
        """D: the devices of a launch, all processes together."""
        return self._group.device_count

    @property
    def local_devices(self) -> list[int]:
        """The devices this process runs."""
        return list(self._group.local_devices)

    def _device(self, device: Any) -> int:
        _count(device, "device", 0)
        if device >= self.device_count:
            raise ValueError(f"`device` is {device}, but there are {self.device_count} devices")
        return device

    def _local(self, device: Any) -> int:
        device = self._device(device)
        if device not in self.local_devices:
            raise ValueError(f"`device` {device} belongs to another process (rank {device})")
        return device

    def symmetric(self, shape: Sequence[int] | int, dtype: DTypeLike) -> SymmetricArray:
        """A new symmetric array, uninitialized."""
        return SymmetricArray(self, _shape(shape), _buffer_dtype(dtype))

    def launch(self, kernel: Any, per_device_args: Sequence[Sequence[Any]],
               **options: Any) -> None:
        """Runs ``kernel`` on every local device: ``per_device_args[i]`` are
        the arrays of ``local_devices[i]``, one per buffer parameter
        (symmetric arrays, the same one on every device, for the symmetric
        parameters; NumPy arrays, copied in and back out, for the others).
        Each device's collective table is filled; every device is launched
        before any is waited on. Raises TypeError/ValueError naming the
        argument, RuntimeError naming the device for the driver's errors."""
        path, entry, parameters = _manifest(kernel, options)
        local = self.local_devices
        if not isinstance(per_device_args, (list, tuple)) or len(per_device_args) != len(local):
            raise TypeError(f"`per_device_args` must hold one list of arrays per local device "
                            f"({len(local)}), got {per_device_args!r:.80}")
        arguments, copies = [], []
        for i, (device, arrays) in enumerate(zip(local, per_device_args)):
            if not isinstance(arrays, (list, tuple)) or len(arrays) != len(parameters):
                raise TypeError(f"`per_device_args[{i}]` must hold {len(parameters)} arrays "
                                f"(the buffer parameters of `{entry}`), got {arrays!r:.80}")
            row = []
            for j, (array, parameter) in enumerate(zip(arrays, parameters)):
                what = f"`per_device_args[{i}][{j}]`"
                if isinstance(array, SymmetricArray):
                    if array.devices is not self:
                        raise ValueError(f"{what} is symmetric memory of other devices")
                    _check(what, parameter, array.dtype, array.shape)
                    row.append((array._memory, parameter.dtype.name, list(parameter.shape)))
                    continue
                if parameter.symmetric:
                    raise ValueError(f"{what}: parameter {parameter.index} of `{entry}` is "
                                     "symmetric; pass an array from Devices.symmetric")
                host = _host(array, what)
                _check(what, parameter, _launch._NUMPY_DTYPES[host.dtype.name],
                       tuple(host.shape))
                import numpy
                contiguous = numpy.ascontiguousarray(host)
                memory = self._group.allocate(device, contiguous.nbytes)
                memory.upload(_launch._bytes_view(contiguous))
                copies.append((memory, host, contiguous))
                row.append((memory.pointer, parameter.dtype.name, list(parameter.shape)))
            arguments.append(row)
        self._loaded(path).launch(arguments)
        for memory, host, contiguous in copies:
            if host.flags.writeable:
                memory.download(_launch._bytes_view(contiguous))
                if contiguous is not host:
                    host[...] = contiguous

    def _loaded(self, path: str) -> Any:
        if path not in self._kernels:
            self._kernels[path] = self._group.load(path)
        return self._kernels[path]

    def barrier(self) -> None:
        """Waits for this process's devices (and, in a process group, for
        every process to get here)."""
        self._group.barrier()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.device_count} devices on {self.backend}>"


class ProcessGroup(Devices):
    """This process's device of a group of one process per device: rank
    ``rank`` of ``world_size`` on CUDA device ``local_rank``, meeting the
    others at the Unix socket ``rendezvous`` (rank 0 listens) within
    ``timeout`` seconds. Symmetric arrays are allocated by every process in
    the same order; the allocations are exchanged as POSIX file
    descriptors and mapped into each process."""

    def __init__(self, rank: int, world_size: int, local_rank: int, rendezvous: str, *,
                 backend: str | None = None, timeout: float = 60.0,
                 segment_bytes: int = 64 << 20) -> None:
        world_size = _count(world_size, "world_size")
        rank = _count(rank, "rank", 0)
        if rank >= world_size:
            raise ValueError(f"`rank` is {rank}, but `world_size` is {world_size}")
        local_rank = _count(local_rank, "local_rank", 0)
        if not isinstance(rendezvous, (str, os.PathLike)):
            raise TypeError(f"`rendezvous` must be a path, got {rendezvous!r}")
        if not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ValueError(f"`timeout` must be a positive number of seconds, got {timeout!r}")
        _count(segment_bytes, "segment_bytes")
        self.backend = _launch.backend(backend)
        self.rank, self.world_size = rank, world_size
        self._group = _runtime().DeviceGroup.join(rank, world_size, local_rank,
                                                  os.fspath(rendezvous), float(timeout),
                                                  self.backend, segment_bytes)
        self._kernels = {}

    @classmethod
    def from_environment(cls, backend: str | None = None, **kwargs: Any) -> ProcessGroup:
        """The group torchrun's environment describes (RANK, WORLD_SIZE,
        LOCAL_RANK; MOSAIC_GPU_RENDEZVOUS, else a path derived from
        TORCHELASTIC_RUN_ID or MASTER_PORT). RuntimeError names a missing
        variable."""
        found = _runtime().DeviceGroup.options_from_environment()
        kwargs.setdefault("timeout", found["timeout"])
        return cls(found["rank"], found["world_size"], found["local_rank"],
                   found["rendezvous"], backend=backend, **kwargs)


class PeerPointers:
    """A symmetric buffer given by every device's address of it, as this
    process addresses it: PyTorch's symmetric memory, or any pointers."""

    def __init__(self, pointers: Sequence[int], shape: Sequence[int] | int,
                 dtype: DTypeLike) -> None:
        if not isinstance(pointers, (list, tuple)) or not pointers or not all(
                isinstance(p, int) and not isinstance(p, bool) for p in pointers):
            raise TypeError(f"`pointers` must be a non-empty list of ints, got {pointers!r:.80}")
        if any(not 0 < p < 2 ** 64 for p in pointers):
            raise ValueError(f"`pointers` must be non-null 64-bit addresses, got {pointers}")
        self.pointers = list(pointers)
        self.shape, self.dtype = _shape(shape), _buffer_dtype(dtype)

    @classmethod
    def from_torch(cls, handle: Any, shape: Sequence[int] | int, dtype: DTypeLike, *,
                   signal_pad: bool = False) -> PeerPointers:
        """From a ``torch.distributed._symmetric_memory`` handle: its
        ``buffer_ptrs`` (or ``signal_pad_ptrs``, the i32 semaphores, with
        ``signal_pad=True``)."""
        name = "signal_pad_ptrs" if signal_pad else "buffer_ptrs"
        if not hasattr(handle, name):
            raise TypeError(f"`handle` has no `{name}`: expected a "
                            "torch.distributed._symmetric_memory handle, got "
                            f"{type(handle).__name__}")
        return cls([int(p) for p in getattr(handle, name)], shape, dtype)


class DevicePointer:
    """Device memory given by its address, with what it holds."""

    def __init__(self, pointer: int, shape: Sequence[int] | int, dtype: DTypeLike) -> None:
        if not isinstance(pointer, int) or isinstance(pointer, bool) or not 0 < pointer < 2 ** 64:
            raise TypeError(f"`pointer` must be a non-null device address, got {pointer!r}")
        self.pointer, self.shape, self.dtype = pointer, _shape(shape), _buffer_dtype(dtype)


def launch_with_peers(kernel: Any, arrays: Sequence[Any], *, device_id: int,
                      device: int | None = None, backend: str | None = None,
                      stream: Any = None, **options: Any) -> None:
    """Runs this process's instance of a kernel that spans devices on device
    ``device`` (a CUDA ordinal; default: $LOCAL_RANK, else ``device_id``),
    as logical device ``device_id`` of ``len(peers.pointers)`` devices:
    ``arrays`` has one entry per buffer parameter, ``PeerPointers`` for the
    symmetric ones (their pointer for ``device_id`` is this device's copy),
    a ``DevicePointer`` or a CUDA DLPack tensor (PyTorch) for the others.
    Waits for ``stream`` (see ``launch.stream_handle``)."""
    path, entry, parameters = _manifest(kernel, options)
    _count(device_id, "device_id", 0)
    if device is None:
        device = int(os.environ.get("LOCAL_RANK", device_id))
    _count(device, "device", 0)
    chosen = _launch.backend(backend)
    if not isinstance(arrays, (list, tuple)) or len(arrays) != len(parameters):
        raise TypeError(f"`arrays` must hold {len(parameters)} entries (the buffer parameters "
                        f"of `{entry}`), got {arrays!r:.80}")
    count = None
    buffers, peers = [], []
    for j, (array, parameter) in enumerate(zip(arrays, parameters)):
        what = f"`arrays[{j}]`"
        if isinstance(array, PeerPointers):
            if not parameter.symmetric:
                raise ValueError(f"{what}: parameter {parameter.index} of `{entry}` is not "
                                 "symmetric; pass a DevicePointer or a tensor")
            if count is None:
                count = len(array.pointers)
            if len(array.pointers) != count:
                raise ValueError(f"{what} has {len(array.pointers)} pointers, an earlier "
                                 f"argument {count}: one per device")
            if device_id >= count:
                raise ValueError(f"`device_id` is {device_id}, but {what} has pointers for "
                                 f"{count} devices")
            _check(what, parameter, array.dtype, array.shape)
            buffers.append((array.pointers[device_id], parameter.dtype.name,
                            list(parameter.shape)))
            peers.append(array.pointers)
            continue
        if parameter.symmetric:
            raise ValueError(f"{what}: parameter {parameter.index} of `{entry}` is symmetric; "
                             "pass PeerPointers (e.g. PeerPointers.from_torch)")
        if isinstance(array, DevicePointer):
            pointer, dtype, shape = array.pointer, array.dtype, array.shape
        elif hasattr(array, "__dlpack__"):
            capsule = array.__dlpack__()
            tensor, dtype, shape = _launch._parse_capsule(capsule, what)
            if not _launch._is_contiguous(tensor, shape):
                raise ValueError(f"{what} is not contiguous (row-major)")
            pointer = (tensor.data or 0) + tensor.byte_offset
        else:
            raise TypeError(f"{what} must be PeerPointers, a DevicePointer or a CUDA tensor, "
                            f"got {type(array).__name__}")
        _check(what, parameter, dtype, tuple(shape))
        buffers.append((pointer, parameter.dtype.name, list(parameter.shape)))
    handle = _launch.stream_handle(stream, chosen, arrays)
    loaded = _runtime().LoadedKernel(path, chosen, device)
    collective = (device_id, count, peers) if count is not None else None
    loaded.launch(buffers, handle, collective)
