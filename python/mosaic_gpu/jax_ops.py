"""Kernels as JAX functions.

``to_jax(kernel)`` turns a kernel (a fixed-shape ``Kernel`` or a
shape-generic ``@jit`` kernel) into a function of JAX arrays that works
inside ``jax.jit``, ``jax.vmap`` and ``shard_map``: its outputs' shapes and
dtypes come from the kernel's signature while tracing, and a mismatched
input raises our launcher's TypeError / ValueError at trace time, where the
kernel is also compiled.

The call is an XLA FFI custom call (``jax.ffi.ffi_call``) to the handlers
in the extension (python/JaxFfi.cpp), registered for both platforms: on
CUDA the kernel runs on XLA's stream over XLA's buffers; on the CPU
platform it runs on the PTX emulator, so a JAX program that uses our
kernels runs, and is tested, on a machine without a GPU. Under ``vmap`` it
runs once per batch element. An extension built without jaxlib's FFI
headers (see python/README.md) runs kernels on the CPU platform only,
through a host callback (``jax.pure_callback``), and says so on a GPU.

JAX is optional: importing ``mosaic_gpu`` never imports it, and
``to_jax`` says so when it is missing.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

from . import _mosaic
from . import launch as _launch
from .generic import GenericKernel, Spec
from .kernels import Kernel

__all__ = ["to_jax"]

# Our element types by the name NumPy / ml_dtypes give JAX's dtypes.
_FROM_JAX = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64",
             "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
             "float8_e4m3fn": "f8E4M3FN", "float8_e5m2": "f8E5M2"}


def _jax() -> Any:
    try:
        import jax
    except ImportError as error:
        raise ImportError("mosaic_gpu.to_jax needs JAX (pip install jax)") from error
    return jax


def _dtype_name(dtype: Any, what: str) -> str:
    name = getattr(dtype, "name", str(dtype))
    if name not in _FROM_JAX:
        raise TypeError(f"{what} has dtype {name}, which mosaic_gpu kernels do not take")
    return _FROM_JAX[name]


def _specialized(kernel: Kernel | GenericKernel, arrays: Sequence[Any]) -> Kernel:
    """The fixed-shape kernel for arrays of these shapes and dtypes, checked
    as the launcher checks its arguments: the same messages."""
    if isinstance(kernel, GenericKernel):
        if len(arrays) != len(kernel.input_names):
            raise TypeError(f"{kernel.name} takes {len(kernel.input_names)} inputs "
                            f"({', '.join(kernel.input_names)}); got {len(arrays)}")
        return kernel.specialize(*[Spec(tuple(a.shape), _dtype_name(a.dtype, name), name)
                                   for a, name in zip(arrays, kernel.input_names)])
    if len(arrays) != len(kernel.inputs):
        raise TypeError(f"{kernel.name} takes its {len(kernel.inputs)} inputs; got "
                        f"{len(arrays)} arrays")
    for i, (array, (shape, dtype)) in enumerate(zip(arrays, kernel.inputs)):
        name = _dtype_name(array.dtype, f"input {i}")
        if name != dtype.name:
            raise TypeError(f"input {i} has dtype {name}, the kernel expects {dtype}")
        if tuple(array.shape) != tuple(shape):
            raise ValueError(f"input {i} has shape {tuple(array.shape)}, the kernel expects "
                             f"{tuple(shape)}")
    return kernel


# The custom call's name, registered with XLA for both platforms.
FFI_TARGET = "mosaic_gpu_kernel"
_ffi_registered = False


def _ffi_handlers(jax: Any) -> bool:
    """Whether the extension has the FFI handlers; registers them with XLA
    the first time."""
    global _ffi_registered
    handlers = getattr(_mosaic, "jax_ffi_handlers", None)
    if handlers is None:
        return False
    if not _ffi_registered:
        for platform, capsule in handlers().items():
            jax.ffi.register_ffi_target(FFI_TARGET, capsule, platform=platform)
        _ffi_registered = True
    return True


def _callback(jax: Any, fixed: Kernel, arrays: Sequence[Any], results: list[Any]) -> Any:
    """The kernel as a host callback on the emulator: for an extension
    without the FFI handlers, on the CPU platform only."""
    import numpy

    # Tracers under jit have no devices: they compile for the default
    # backend (unless placed elsewhere, which is not checked here).
    platforms = {device.platform for a in arrays
                 if not isinstance(a, jax.core.Tracer) for device in a.devices()}
    platforms = platforms or {jax.default_backend()}
    if platforms - {"cpu"}:
        raise NotImplementedError(
            f"{fixed.name} on {sorted(platforms)}: this mosaic_gpu was built without jaxlib's "
            "XLA FFI headers, so its kernels run inside JAX on the CPU platform only (on the "
            "PTX emulator); rebuild it with JAX installed (python/README.md, 'JAX functions')")

    def on_host(*host_arrays: Any) -> Any:
        made = fixed(*[numpy.ascontiguousarray(a) for a in host_arrays], backend="emulator")
        return made if isinstance(made, tuple) else (made,)

    return jax.pure_callback(on_host, tuple(results), *arrays, vmap_method="sequential")


def to_jax(kernel: Kernel | GenericKernel) -> Callable[..., Any]:
    """A function of JAX arrays, one per kernel input, returning the
    kernel's outputs as new arrays (one array, or a tuple), for use inside
    ``jax.jit``, ``jax.vmap`` and ``shard_map``. The kernel is compiled
    (once, through the compile cache) when the call is traced. On the CPU
    platform it runs on the PTX emulator, on CUDA on XLA's stream. Raises
    TypeError for something that is not a kernel, ImportError without
    JAX."""
    jax = _jax()
    import numpy

    if not isinstance(kernel, (Kernel, GenericKernel)):
        raise TypeError(f"to_jax takes a mosaic_gpu Kernel or @jit kernel, got "
                        f"{type(kernel).__name__}")

    def call(*arrays: Any) -> Any:
        arrays = [jax.numpy.asarray(a) for a in arrays]
        fixed = _specialized(kernel, arrays)
        results = [jax.ShapeDtypeStruct(tuple(shape), numpy.dtype(dtype.numpy))
                   for shape, dtype in fixed.outputs]
        if _ffi_handlers(jax):
            manifest = _launch.compile_cached(fixed.module)
            made = jax.ffi.ffi_call(FFI_TARGET, results, vmap_method="sequential")(
                *arrays, manifest=manifest)
        else:
            made = _callback(jax, fixed, arrays, results)
        return made[0] if len(made) == 1 else tuple(made)

    call.__name__ = getattr(kernel, "name", "kernel")
    call.__doc__ = f"The mosaic_gpu kernel {call.__name__} as a JAX function (to_jax)."
    return call
