"""Shape-generic kernels: ``@jit`` takes shapes and dtypes from the arrays
a kernel is called with.

The decorated function is the same kernel body ``@kernel`` takes, and it
sees static shapes: on each call, the inputs' (shape, dtype) signature
picks a ``Kernel`` built for exactly those shapes, made the first time the
signature is seen and kept in memory; its CUBIN comes from the on-disk
cache (``launch.compile_cached``: keyed by the module's text, the compile
options and the toolchain); ``GenericKernel.precompile`` fills that cache
for several signatures ahead of their calls, compiling them side by side.
What depends on the shapes (grid, outputs, scratch memory) is given as
functions of the inputs' ``Spec``s, which say what breaks the kernel's
assumptions (``spec.tiles(dim, tile)``).
"""

from __future__ import annotations

import concurrent.futures
import functools
import inspect
import math
import os
from typing import Any, Callable, Sequence, Union

from . import launch as _launch
from .builder import check_shape
from .dtypes import DType, DTypeLike, as_dtype
from .kernels import Kernel, kernel

__all__ = ["GenericKernel", "Spec", "jit"]


class Spec:
    """The shape and dtype of one input of a call, named as the parameter
    of ``outputs`` it is passed to (``x``), for the functions that derive
    the grid, the outputs and the scratch memory from it."""

    def __init__(self, shape: Sequence[int], dtype: DTypeLike, name: str = "array") -> None:
        self.shape = check_shape(shape, name)
        self.dtype = as_dtype(dtype, name)
        self.name = name

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def tiles(self, dim: int, tile: int) -> int:
        """How many ``tile``-sized pieces dim ``dim`` holds: a ValueError
        naming the array, the dim and both numbers when ``tile`` does not
        divide it."""
        if not isinstance(dim, int) or not -self.ndim <= dim < self.ndim:
            raise ValueError(f"`{self.name}` has {self.ndim} dims; there is no dim {dim!r}")
        size = self.shape[dim]
        if not isinstance(tile, int) or tile <= 0:
            raise ValueError(f"the tile of `{self.name}` dim {dim} must be a positive int, "
                             f"got {tile!r}")
        if size % tile:
            raise ValueError(f"`{self.name}` has shape {self.shape}: dim {dim} ({size}) is not "
                             f"a multiple of the kernel's tile ({tile})")
        return size // tile

    def check_dtype(self, *dtypes: DTypeLike) -> DType:
        """This input's dtype, which must be one of ``dtypes``: a TypeError
        naming the array and the dtypes the kernel takes otherwise."""
        allowed = [as_dtype(d, "dtypes") for d in dtypes]
        if self.dtype not in allowed:
            raise TypeError(f"`{self.name}` is {self.dtype}; the kernel takes "
                            f"{' or '.join(map(str, allowed))}")
        return self.dtype

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, Spec) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self) -> int:
        return hash((self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"{self.name}: {self.dtype}{list(self.shape)}"


def input_specs(inputs: Sequence[Any], names: Sequence[str]) -> tuple[Spec, ...]:
    """The ``Spec`` of each input (an array, a Spec or a (shape, dtype)
    pair), named by ``names``."""
    specs = []
    for i, (value, name) in enumerate(zip(inputs, names)):
        if isinstance(value, Spec):
            specs.append(Spec(value.shape, value.dtype, name))
        elif (isinstance(value, tuple) and len(value) == 2
              and isinstance(value[0], (tuple, list))):
            specs.append(Spec(value[0], value[1], name))
        else:
            argument = _launch._Argument(value, f"input {i} (`{name}`)")
            specs.append(Spec(argument.shape, argument.dtype, name))
    return tuple(specs)


# An output, as `outputs` may give it: a Spec (an output like that input)
# or a (shape, dtype) pair.
OutputLike = Union[Spec, tuple]
# A value fixed for every call, or a function of the inputs' Specs.
PerCall = Union[Any, Callable[..., Any]]


class GenericKernel:
    """A kernel built for the shapes it is called with (``@jit``).

    ``kernel(*arrays, backend=None, stream=None, **options)`` launches it
    as ``Kernel.__call__`` does; ``kernel.specialize(*inputs)`` (arrays,
    Specs or (shape, dtype) pairs) is the ``Kernel`` a call with such
    inputs runs, for reading its MLIR, its layouts or compiling it;
    ``kernel.signatures`` lists the signatures built so far."""

    def __init__(self, body: Callable[..., Any], grid: PerCall, block: Sequence[int],
                 outputs: Callable[..., Sequence[OutputLike]], cluster: Sequence[int],
                 smem: PerCall, name: str | None, flush_denormals: bool = False) -> None:
        if not callable(outputs):
            raise TypeError("`outputs` must be a function of the inputs' Specs returning "
                            f"their (shape, dtype) pairs or Specs, got {outputs!r}")
        parameters = inspect.signature(outputs).parameters.values()
        if any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters):
            raise TypeError("`outputs` must take one positional parameter per input (no "
                            "*args, **kwargs or keyword-only parameters): its parameters "
                            "say how many inputs the kernel has")
        self.input_names = [p.name for p in parameters]
        self.body, self.grid, self.block, self.cluster = body, grid, block, cluster
        self.outputs, self.smem = outputs, smem
        self.flush_denormals = flush_denormals
        self.name = name or body.__name__
        self._kernels: dict[tuple[Spec, ...], Kernel] = {}
        functools.update_wrapper(self, body)

    @property
    def signatures(self) -> list[tuple[Spec, ...]]:
        """The input signatures built so far, in the order they were first
        called."""
        return list(self._kernels)

    def _resolve(self, value: PerCall, specs: Sequence[Spec]) -> Any:
        return value(*specs) if callable(value) else value

    def specialize(self, *inputs: Any) -> Kernel:
        """The ``Kernel`` for inputs like ``inputs`` (arrays, Specs or
        (shape, dtype) pairs), built on first use and kept."""
        if len(inputs) != len(self.input_names):
            raise TypeError(f"{self.name} has {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}); got {len(inputs)}")
        specs = input_specs(inputs, self.input_names)
        if specs not in self._kernels:
            self._kernels[specs] = self._build(specs)
        return self._kernels[specs]

    def _build(self, specs: tuple[Spec, ...]) -> Kernel:
        where = f"{self.name}({', '.join(map(repr, specs))})"
        try:
            outputs = [(o.shape, o.dtype) if isinstance(o, Spec) else o
                       for o in self.outputs(*specs)]
            smem = self._resolve(self.smem, specs)
            grid = self._resolve(self.grid, specs)
            decorate = kernel(grid=grid, block=self.block, cluster=self.cluster,
                              inputs=[(s.shape, s.dtype) for s in specs], outputs=outputs,
                              smem=smem, name=self.name,
                              flush_denormals=self.flush_denormals)
            return decorate(self.body)
        except (TypeError, ValueError) as error:
            if type(error) not in (TypeError, ValueError):
                raise  # a subclass may not take a message alone
            # Which signature broke the kernel's assumptions, with the reason.
            raise type(error)(f"{where}: {error}") from error

    def precompile(self, *signatures: Sequence[Any], workers: int | None = None,
                   **options: Any) -> list[Kernel]:
        """Builds the kernel for each of ``signatures`` and compiles them all
        on ``workers`` threads (default: one per CPU, at most one per
        signature), so that later calls with such inputs (and the same
        compile ``options``, as a call takes them) find their CUBIN in the
        cache (``launch.compile_cached``: in memory and on disk). A
        signature is a tuple with one entry per input: an array, a Spec or a
        (shape, dtype) pair; a kernel of one input also takes that entry
        alone. Returns the ``Kernel`` of each signature, in order.

        The kernels are built on the calling thread, one after another (the
        builders are not thread-safe); compiling releases the GIL, so the
        compiles run side by side. Raises TypeError / ValueError for a bad
        signature or ``workers`` before compiling anything, and the first
        compile error (in the order of ``signatures``) after every compile
        has finished, with a note naming its signature."""
        if workers is not None and (not isinstance(workers, int) or isinstance(workers, bool)):
            raise TypeError(f"`workers` must be a positive int or None, got {workers!r}")
        if workers is not None and workers < 1:
            raise ValueError(f"`workers` must be at least 1, got {workers}")
        for name in ("backend", "stream"):
            if name in options:
                raise TypeError(f"precompile only compiles, for every backend: `{name}` is an "
                                "argument of the calls")
        kernels = [self.specialize(*self._signature_inputs(signature, i))
                   for i, signature in enumerate(signatures)]
        # One compile per distinct kernel: a signature given twice shares it.
        distinct = list({id(k): k for k in kernels}.values())
        if not distinct:
            return kernels
        _launch.toolchain_version()  # once, before the threads
        count = min(workers or os.cpu_count() or 1, len(distinct))
        with concurrent.futures.ThreadPoolExecutor(count) as pool:
            futures = [pool.submit(_launch.compile_cached, k.module, **options)
                       for k in distinct]
        for built, future in zip(distinct, futures):
            error = future.exception()
            if error is not None:
                specs = next(s for s, k in self._kernels.items() if k is built)
                error.add_note(f"while compiling {self.name}"
                               f"({', '.join(map(repr, specs))})")
                raise error
        return kernels

    def _signature_inputs(self, signature: Any, index: int) -> tuple[Any, ...]:
        """The inputs one signature of ``precompile`` gives, checked for
        their count."""
        count = len(self.input_names)
        # One input's entry rather than a tuple of inputs: an array, a Spec
        # or a (shape, dtype) pair.
        pair = (isinstance(signature, (tuple, list)) and len(signature) == 2
                and isinstance(signature[0], (tuple, list))
                and all(isinstance(d, int) for d in signature[0])
                and not isinstance(signature[1], (tuple, list, Spec))
                and not hasattr(signature[1], "shape"))
        alone = pair or isinstance(signature, Spec) or not isinstance(signature, (tuple, list))
        if count == 1 and alone:
            return (signature,)
        if alone:
            raise TypeError(f"signature {index} of {self.name}.precompile must be a tuple of "
                            f"its {count} inputs ({', '.join(self.input_names)}), "
                            f"got {signature!r}")
        if len(signature) != count:
            raise TypeError(f"signature {index} of {self.name}.precompile has "
                            f"{len(signature)} entries; {self.name} has {count} inputs "
                            f"({', '.join(self.input_names)})")
        return tuple(signature)

    def __call__(self, *arrays: Any, backend: str | None = None, stream: Any = None,
                 **options: Any) -> Any:
        """Builds (once per input signature) and launches the kernel on
        ``arrays``: its inputs, or its inputs and outputs."""
        count = len(self.input_names)
        if len(arrays) < count:
            raise TypeError(f"{self.name} takes its {count} inputs "
                            f"({', '.join(self.input_names)}), then optionally its outputs; "
                            f"got {len(arrays)} arrays")
        return self.specialize(*arrays[:count])(*arrays, backend=backend, stream=stream,
                                                **options)

    def __repr__(self) -> str:
        return f"<GenericKernel {self.name}: {len(self._kernels)} signatures built>"


def jit(block: Sequence[int], outputs: Callable[..., Sequence[OutputLike]],
        grid: PerCall = (1, 1, 1), cluster: Sequence[int] = (1, 1, 1),
        smem: PerCall = (), name: str | None = None,
        flush_denormals: bool = False) -> Callable[[Callable[..., Any]], GenericKernel]:
    """Decorates a kernel body (as ``kernel`` does) whose shapes and dtypes
    come from the arrays it is called with. ``outputs`` is a function of
    the inputs' ``Spec``s, one parameter per input (so its parameters say
    how many inputs there are), returning each output as a Spec (an array
    like that one) or a (shape, dtype) pair; ``grid`` and ``smem`` are
    values or functions of the same Specs; ``flush_denormals`` is
    ``kernel``'s. Each input signature builds and compiles the kernel once.

        @jit(block=(128, 1, 1), outputs=lambda x: [x],
             grid=lambda x: (x.tiles(0, 64), 1, 1))
        def double(x, out):
            rows = ds(block_id("x") * 64, 64)
            vector_store(vector_load(x[rows, :]) * 2.0, out[rows, :])
    """
    if not isinstance(flush_denormals, bool):
        raise TypeError(f"`flush_denormals` must be a bool, got {flush_denormals!r}")

    def decorate(body: Callable[..., Any]) -> GenericKernel:
        return GenericKernel(body, grid, block, outputs, cluster, smem, name, flush_denormals)
    return decorate
