"""The @kernel decorator, the scratch memory it lays out (SmemBuffer,
Barriers) and the Kernel it returns.

The decorated function runs once, when it is decorated, with the kernel's
builder active (``builder.building``): each call it makes (``vector_load``,
``+``, ``for_loop``, ...) makes one op through the C++ builder, located at
the Python line that made it. See python/README.md.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any, Callable, Sequence

from . import _mosaic
from . import launch as _launch
from .builder import LaunchShape, building, check_shape, location
from .dtypes import DType, DTypeLike, as_dtype, barrier as _barrier_dtype
from .layouts import Transform
from .refs import BarrierRef, Ref, with_transforms

__all__ = ["Barriers", "Kernel", "MAX_SMEM_BYTES", "SmemBuffer", "kernel", "smem_bytes"]

# Swizzled TMA transfers need 1024-byte aligned shared memory; every scratch
# buffer starts at such an offset.
SMEM_ALIGNMENT = 1024
# The shared memory an sm_90a block may have: 227 KiB, from the limits the
# compiler enforces too (mosaic/Contracts/HardwareLimits.h).
MAX_SMEM_BYTES = _mosaic.MAX_SHARED_MEMORY_PER_BLOCK

# An input or output array: (shape, dtype).
ArraySpec = tuple[tuple[int, ...], DType]


class SmemBuffer:
    """A shared-memory scratch buffer of ``shape`` and ``dtype``; with
    ``transforms`` (Tile, Swizzle) the kernel sees it through
    ``mosaic_gpu.with_transforms``."""

    def __init__(self, shape: Sequence[int], dtype: DTypeLike,
                 transforms: Sequence[Transform] = ()) -> None:
        self.shape = check_shape(shape, "shape")
        self.dtype = as_dtype(dtype, "dtype")
        self.transforms = list(transforms)
        for t in self.transforms:
            if not isinstance(t, Transform):
                raise TypeError(f"`transforms` must hold Tile or Swizzle objects, got {t!r}")

    @property
    def bytes(self) -> int:
        return math.prod(self.shape) * self.dtype.itemsize


class Barriers:
    """``count`` mbarriers in shared memory, each expecting
    ``arrival_count`` arrivals; the kernel initializes them first."""

    def __init__(self, count: int = 1, arrival_count: int = 1) -> None:
        for name, value in (("count", count), ("arrival_count", arrival_count)):
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"`{name}` must be a positive int, got {value!r}")
        self.count, self.arrival_count = count, arrival_count
        self.shape, self.dtype = (count,), _barrier_dtype

    @property
    def bytes(self) -> int:
        return self.count * self.dtype.itemsize


def _check_dims(value: Sequence[int], what: str) -> tuple[int, int, int]:
    if (not isinstance(value, (tuple, list)) or len(value) != 3
            or not all(isinstance(d, int) and not isinstance(d, bool) for d in value)):
        raise TypeError(f"`{what}` must be 3 ints (x, y, z), got {value!r}")
    if any(d <= 0 for d in value):
        raise ValueError(f"`{what}` sizes must be positive, got {tuple(value)!r}")
    return tuple(value)


def _check_arrays(arrays: Sequence[tuple[Sequence[int], DTypeLike]],
                  what: str) -> list[ArraySpec]:
    if not isinstance(arrays, (tuple, list)):
        raise TypeError(f"`{what}` must be a list of (shape, dtype) pairs, got {arrays!r}")
    checked = []
    for i, array in enumerate(arrays):
        if not isinstance(array, (tuple, list)) or len(array) != 2:
            raise TypeError(f"`{what}[{i}]` must be a (shape, dtype) pair, got {array!r}")
        checked.append((check_shape(array[0], f"{what}[{i}]"), as_dtype(array[1], f"{what}[{i}]")))
    return checked


def _check_symmetric(symmetric: Sequence[int], arguments: int) -> set[int]:
    if not isinstance(symmetric, (tuple, list)):
        raise TypeError(f"`symmetric` must be a list of argument positions, got {symmetric!r}")
    positions = set()
    for position in symmetric:
        if not isinstance(position, int) or isinstance(position, bool):
            raise TypeError(f"`symmetric` must hold ints (positions in inputs + outputs), "
                            f"got {position!r}")
        if not 0 <= position < arguments:
            raise ValueError(f"`symmetric` names argument {position}, but the kernel has "
                             f"{arguments} (inputs + outputs)")
        if position in positions:
            raise ValueError(f"`symmetric` names argument {position} twice")
        positions.add(position)
    return positions


def _smem_offsets(smem: Sequence[SmemBuffer | Barriers]) -> tuple[list[int], int]:
    offsets, end = [], 0
    for entry in smem:
        end = -(-end // SMEM_ALIGNMENT) * SMEM_ALIGNMENT
        offsets.append(end)
        end += entry.bytes
    return offsets, end


def smem_bytes(smem: Sequence[SmemBuffer | Barriers]) -> int:
    """The shared memory the scratch entries take, laid out as ``kernel``
    lays them out (in order, each at a 1024-byte aligned offset)."""
    return _smem_offsets(smem)[1]


class Kernel:
    """A kernel written in Python: ``module`` is its MLIR; ``compile`` runs
    ``mosaic_gpu.compile`` (mosaic-compile's pipeline) on it."""

    def __init__(self, module: _mosaic.Module, name: str, grid: tuple[int, int, int],
                 block: tuple[int, int, int], cluster: tuple[int, int, int],
                 inputs: list[ArraySpec], outputs: list[ArraySpec],
                 smem: list[SmemBuffer | Barriers]) -> None:
        self.module = module
        self.name = name
        self.grid, self.block, self.cluster = grid, block, cluster
        self.inputs, self.outputs, self.smem = inputs, outputs, smem
        # (backend, options) -> the kernel compiled and loaded there.
        self._loaded_kernels: dict[tuple[str, str], Any] = {}

    @property
    def smem_bytes(self) -> int:
        """The shared memory the scratch description takes."""
        return smem_bytes(self.smem)

    def compile(self, **options: Any) -> _mosaic.CompiledKernel:
        """``mosaic_gpu.compile(self.module, **options)``."""
        return _mosaic.compile(self.module, **options)

    def __call__(self, *arrays: Any, backend: str | None = None, stream: Any = None,
                 **options: Any) -> Any:
        """Runs the kernel on device 0 of ``backend`` ('cuda' or 'emulator';
        None: $MOSAIC_GPU_BACKEND, else 'cuda') on ``stream`` (see
        ``launch.stream_handle``), compiled with ``options`` (as for
        compile): ``kernel(*inputs)`` returns new outputs (NumPy arrays, or
        PyTorch tensors beside the first tensor input),
        ``kernel(*inputs, *outputs)`` writes the outputs given. Arrays on a
        CUDA device (DLPack) are used in place; CPU arrays are copied.
        Raises TypeError/ValueError for arrays that do not match the kernel,
        an unknown backend or a bad stream, RuntimeError for the driver's
        errors ('no CUDA driver: ...'; on the emulator, a fault or a hazard,
        with its report)."""
        return _launch.launch(self, arrays, options, backend, stream)

    def launch(self, *arrays: Any, backend: str | None = None, stream: Any = None,
               **options: Any) -> Any:
        """``kernel(*arrays, backend=backend, stream=stream, **options)``."""
        return _launch.launch(self, arrays, options, backend, stream)

    def _loaded(self, backend: str, options: dict[str, Any]) -> Any:
        """The kernel compiled with ``options`` and loaded on ``backend``,
        once per kernel object."""
        key = (backend, repr(sorted(options.items())))
        if key not in self._loaded_kernels:
            self._loaded_kernels[key] = _launch.load(self.module, backend, options)
        return self._loaded_kernels[key]

    def __repr__(self) -> str:
        return f"<Kernel {self.name} grid={self.grid} block={self.block}>"


def _scratch(builder: _mosaic.KernelBuilder, entry: SmemBuffer | Barriers, offset: int) -> Ref:
    """The Ref to one scratch entry: its slice of shared memory, initialized
    (barriers) or seen through its transforms."""
    handle = builder.slice_smem(location(), offset, list(entry.shape), entry.dtype.element)
    if isinstance(entry, Barriers):
        ref = BarrierRef(handle, entry.shape, arrival_count=entry.arrival_count)
        builder.initialize_barrier(location(), handle, entry.arrival_count, entry.count)
        return ref
    ref = Ref(handle, entry.shape, entry.dtype, smem=True)
    return with_transforms(ref, entry.transforms) if entry.transforms else ref


def kernel(grid: Sequence[int], block: Sequence[int],
           inputs: Sequence[tuple[Sequence[int], DTypeLike]],
           outputs: Sequence[tuple[Sequence[int], DTypeLike]],
           cluster: Sequence[int] = (1, 1, 1), smem: Sequence[SmemBuffer | Barriers] = (),
           name: str | None = None,
           flush_denormals: bool = False,
           symmetric: Sequence[int] = ()) -> Callable[[Callable[..., Any]], Kernel]:
    """Decorates a function that writes a kernel: it is called once with one
    Ref per input, per output and per ``smem`` entry (SmemBuffer or
    Barriers, laid out in order at 1024-byte aligned offsets), and returns
    a :class:`Kernel`. Dtypes are DType objects (``mosaic_gpu.f32``) or
    their names. With ``flush_denormals`` the kernel's f32 arithmetic
    flushes subnormals to zero (``mosaic_gpu.flush_denormals``: the PTX
    ``.ftz`` forms, and a single instruction for ``exp2``). ``symmetric``
    lists positions in ``inputs + outputs`` of buffers that exist on every
    device of a multi-device launch (``mosaic_gpu.symmetric``): their Refs
    accept ``remote_ref`` and the semaphore ops."""
    if not isinstance(flush_denormals, bool):
        raise TypeError(f"`flush_denormals` must be a bool, got {flush_denormals!r}")
    grid, block, cluster = (_check_dims(grid, "grid"), _check_dims(block, "block"),
                            _check_dims(cluster, "cluster"))
    inputs, outputs = _check_arrays(inputs, "inputs"), _check_arrays(outputs, "outputs")
    symmetric = _check_symmetric(symmetric, len(inputs) + len(outputs))
    for i, entry in enumerate(smem):
        if not isinstance(entry, (SmemBuffer, Barriers)):
            raise TypeError(f"`smem[{i}]` must be a SmemBuffer or Barriers, got {entry!r}")
    if smem_bytes(smem) > MAX_SMEM_BYTES:
        raise ValueError(f"`smem` takes {smem_bytes(smem)} bytes of shared memory, laid out "
                         f"1024-byte aligned; an sm_90a block has {MAX_SMEM_BYTES} (227 KiB)")

    def decorate(body: Callable[..., Any]) -> Kernel:
        code = body.__code__
        kernel_name = name or body.__name__
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", kernel_name):
            raise ValueError(f"the kernel's name must be an identifier, got {kernel_name!r}; "
                             "pass name=...")
        arrays = inputs + outputs
        builder = _mosaic.KernelBuilder.start(
            kernel_name, [(list(shape), dtype.element) for shape, dtype in arrays], grid, block,
            cluster, code.co_filename, code.co_firstlineno, flush_denormals=flush_denormals,
            symmetric=sorted(symmetric))
        with building(builder, LaunchShape(grid, block, cluster)):
            refs = [Ref(h, shape, dtype) for h, (shape, dtype) in zip(builder.arguments(), arrays)]
            for position in symmetric:
                refs[position].symmetric = True
            offsets, _ = _smem_offsets(smem)
            refs += [_scratch(builder, entry, offset) for entry, offset in zip(smem, offsets)]
            body(*refs)
            module = builder.finish()
        result = Kernel(module, kernel_name, grid, block, cluster, inputs, outputs, list(smem))
        functools.update_wrapper(result, body)
        return result

    return decorate
