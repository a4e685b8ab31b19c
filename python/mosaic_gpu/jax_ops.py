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
        _check_array(array, shape, dtype, f"input {i}")
    return kernel


def _check_array(array: Any, shape: Sequence[int], dtype: Any, what: str) -> None:
    """``array`` has the kernel's ``shape`` and ``dtype`` for ``what``."""
    name = _dtype_name(array.dtype, what)
    if name != dtype.name:
        raise TypeError(f"{what} has dtype {name}, the kernel expects {dtype}")
    if tuple(array.shape) != tuple(shape):
        raise ValueError(f"{what} has shape {tuple(array.shape)}, the kernel expects "
                         f"{tuple(shape)}")


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


def _check_initial_values(fixed: Kernel, initialized: Sequence[int],
                          values: Sequence[Any]) -> None:
    """The kernel has the outputs ``initialized`` names, and the initial
    values (as many as given) match them, checked as the launcher checks
    outputs: the same messages."""
    for position in initialized:
        if position >= len(fixed.outputs):
            raise ValueError(f"initialized_outputs names output {position}, but "
                             f"{fixed.name} has {len(fixed.outputs)} outputs")
    for position, value in zip(initialized, values):
        _check_array(value, *fixed.outputs[position], f"output {position}")


def _callback(jax: Any, fixed: Kernel, arrays: Sequence[Any], initialized: Sequence[int],
              results: list[Any]) -> Any:
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
    inputs = len(fixed.inputs)

    def on_host(*host_arrays: Any) -> Any:
        outputs = [numpy.empty(result.shape, result.dtype) for result in results]
        for position, value in zip(initialized, host_arrays[inputs:]):
            outputs[position][...] = value
        fixed(*[numpy.ascontiguousarray(a) for a in host_arrays[:inputs]], *outputs,
              backend="emulator")
        return tuple(outputs)

    return jax.pure_callback(on_host, tuple(results), *arrays, vmap_method="sequential")


def to_jax(kernel: Kernel | GenericKernel, *,
           initialized_outputs: Sequence[int] = ()) -> Callable[..., Any]:
    """A function of JAX arrays, one per kernel input, returning the
    kernel's outputs as new arrays (one array, or a tuple), for use inside
    ``jax.jit``, ``jax.vmap`` and ``shard_map``. The kernel is compiled
    (once, through the compile cache) when the call is traced. On the CPU
    platform it runs on the PTX emulator, on CUDA on XLA's stream.

    An output starts uninitialized, unless its position is in
    ``initialized_outputs``: then the function takes its initial value
    too, after the inputs (in the order of ``initialized_outputs``), for a
    kernel that accumulates into the output. XLA aliases the value's
    buffer to the output's, so the kernel updates it in place.

    Raises TypeError for something that is not a kernel, ValueError for
    bad ``initialized_outputs``, ImportError without JAX."""
    jax = _jax()
    import numpy

    if not isinstance(kernel, (Kernel, GenericKernel)):
        raise TypeError(f"to_jax takes a mosaic_gpu Kernel or @jit kernel, got "
                        f"{type(kernel).__name__}")
    if not isinstance(initialized_outputs, (tuple, list)) or not all(
            isinstance(p, int) and not isinstance(p, bool) and p >= 0
            for p in initialized_outputs):
        raise ValueError("initialized_outputs must be a list of output positions (ints from "
                         f"0), got {initialized_outputs!r}")
    if len(set(initialized_outputs)) != len(initialized_outputs):
        raise ValueError(f"initialized_outputs names an output twice: {initialized_outputs!r}")
    initialized = list(initialized_outputs)
    if isinstance(kernel, Kernel):  # a generic kernel's outputs are known per call
        _check_initial_values(kernel, initialized, [])
    inputs = len(kernel.input_names if isinstance(kernel, GenericKernel) else kernel.inputs)

    def call(*arrays: Any) -> Any:
        arrays = [jax.numpy.asarray(a) for a in arrays]
        if initialized and len(arrays) != inputs + len(initialized):
            raise TypeError(f"{kernel.name} takes its {inputs} inputs, then the initial values "
                            f"of outputs {initialized}; got {len(arrays)} arrays")
        fixed = _specialized(kernel, arrays[:len(arrays) - len(initialized)])
        _check_initial_values(fixed, initialized, arrays[inputs:])
        results = [jax.ShapeDtypeStruct(tuple(shape), numpy.dtype(dtype.numpy))
                   for shape, dtype in fixed.outputs]
        if _ffi_handlers(jax):
            manifest = _launch.compile_cached(fixed.module)
            aliases = {inputs + i: position for i, position in enumerate(initialized)}
            made = jax.ffi.ffi_call(FFI_TARGET, results, vmap_method="sequential",
                                    input_output_aliases=aliases)(
                *arrays, inputs=numpy.int64(inputs), manifest=manifest)
        else:
            made = _callback(jax, fixed, arrays, initialized, results)
        return made[0] if len(made) == 1 else tuple(made)

    call.__name__ = getattr(kernel, "name", "kernel")
    call.__doc__ = f"The mosaic_gpu kernel {call.__name__} as a JAX function (to_jax)."
    return call
