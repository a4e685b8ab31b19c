"""Kernels as PyTorch operators.

``to_torch(kernel, name)`` registers a kernel (a fixed-shape ``Kernel`` or
a shape-generic ``@jit`` kernel) as the custom operator
``torch.ops.mosaic_gpu.<name>`` (``torch.library.custom_op``): a function of
its input tensors returning new output tensors. Its fake implementation
gives the outputs' shapes and dtypes from the kernel's signature without
running anything, so ``torch.compile`` traces through the call instead of
breaking the graph, and the same checks as our launcher's raise the same
errors at trace time. CUDA tensors launch on PyTorch's current stream;
CPU tensors run on the PTX emulator, so a model that uses our kernels runs
(slowly) and is tested on a machine without a GPU.

PyTorch is optional: importing ``mosaic_gpu`` never imports it, and
``to_torch`` says so when it is missing.
"""

from __future__ import annotations

import keyword
from typing import Any, Sequence

from . import launch as _launch
from .generic import GenericKernel, Spec
from .kernels import Kernel

__all__ = ["to_torch"]

# Our element types by PyTorch's name for them (launch's map, inverted).
_FROM_TORCH = {torch_name: name for name, torch_name in _launch._TORCH_DTYPES.items()}


def _torch() -> Any:
    try:
        import torch
    except ImportError as error:
        raise ImportError("mosaic_gpu.to_torch needs PyTorch (pip install torch, or "
                          "pip install .[torch])") from error
    if not hasattr(torch.library, "custom_op"):
        raise ImportError(f"mosaic_gpu.to_torch needs torch.library.custom_op (PyTorch 2.4 or "
                          f"newer); this is PyTorch {torch.__version__}")
    return torch


def _input_names(kernel: Kernel | GenericKernel) -> list[str]:
    if isinstance(kernel, GenericKernel):
        return list(kernel.input_names)
    return [f"input{i}" for i in range(len(kernel.inputs))]


def _dtype_name(tensor: Any, what: str) -> str:
    torch_name = str(tensor.dtype).removeprefix("torch.")
    if torch_name not in _FROM_TORCH:
        raise TypeError(f"{what} has dtype {tensor.dtype}, which mosaic_gpu kernels do not take")
    return _FROM_TORCH[torch_name]


def _specialized(kernel: Kernel | GenericKernel, tensors: Sequence[Any],
                 names: Sequence[str]) -> Kernel:
    """The fixed-shape kernel for ``tensors``, checked as the launcher
    checks its arguments: the same TypeError / ValueError messages."""
    if isinstance(kernel, GenericKernel):
        return kernel.specialize(*[Spec(tuple(t.shape), _dtype_name(t, name), name)
                                   for t, name in zip(tensors, names)])
    for i, (tensor, (shape, dtype)) in enumerate(zip(tensors, kernel.inputs)):
        if _dtype_name(tensor, f"input {i}") != dtype.name:
            raise TypeError(f"input {i} has dtype {_dtype_name(tensor, f'input {i}')}, the "
                            f"kernel expects {dtype}")
        if tuple(tensor.shape) != tuple(shape):
            raise ValueError(f"input {i} has shape {tuple(tensor.shape)}, the kernel expects "
                             f"{tuple(shape)}")
    return kernel


def _device_backend(tensors: Sequence[Any], qualified: str) -> str:
    """'cuda' for CUDA tensors, 'emulator' for CPU ones; one kind only."""
    kinds = {t.device.type for t in tensors}
    if kinds <= {"cuda"}:
        return "cuda"
    if kinds <= {"cpu"}:
        return "emulator"
    raise ValueError(f"{qualified} takes its tensors on one kind of device (CUDA, or the CPU "
                     f"for the emulator); got tensors on {sorted(kinds)}")


def to_torch(kernel: Kernel | GenericKernel, name: str, *, outputs: int | None = None,
             namespace: str = "mosaic_gpu") -> Any:
    """Registers ``kernel`` as the PyTorch operator
    ``torch.ops.<namespace>.<name>`` and returns it: called with the
    kernel's input tensors (contiguous or not; they are made contiguous),
    it returns its outputs as new tensors on their device: one tensor, or a
    tuple. A ``@jit`` kernel's outputs are decided per signature while
    PyTorch needs their count up front: give it as ``outputs``, or the
    operator returns a list. CUDA tensors run on PyTorch's current stream,
    CPU tensors on the PTX emulator. The fake implementation gives the
    outputs from the kernel's signature, so ``torch.compile``
    (``fullgraph=True`` included) traces the call as one node, and a
    mismatched input raises the launcher's TypeError / ValueError while
    tracing. Raises TypeError for something that is not a kernel,
    ValueError for a name PyTorch cannot take or one already registered,
    or an ``outputs`` that contradicts a fixed kernel, ImportError without
    PyTorch."""
    torch = _torch()
    if not isinstance(kernel, (Kernel, GenericKernel)):
        raise TypeError(f"to_torch takes a mosaic_gpu Kernel or @jit kernel, got "
                        f"{type(kernel).__name__}")
    if outputs is not None and (not isinstance(outputs, int) or isinstance(outputs, bool)
                                or outputs < 1):
        raise ValueError(f"`outputs` must be a positive int, got {outputs!r}")
    if isinstance(kernel, Kernel):
        if outputs not in (None, len(kernel.outputs)):
            raise ValueError(f"{kernel.name} has {len(kernel.outputs)} outputs, not {outputs}")
        outputs = len(kernel.outputs)
    for what, value in (("name", name), ("namespace", namespace)):
        if not isinstance(value, str) or not value.isidentifier() or keyword.iskeyword(value):
            raise ValueError(f"the operator's {what} must be a Python identifier, got {value!r}")
    qualified = f"{namespace}::{name}"
    if hasattr(getattr(torch.ops, namespace), name):
        raise ValueError(f"a PyTorch operator {qualified} is already registered; pick another "
                         "name")
    names = _input_names(kernel)
    parameters = ", ".join(f"Tensor {n}" for n in names)
    if outputs == 1:
        returns = "Tensor"
    elif outputs is not None:
        returns = "(" + ", ".join(["Tensor"] * outputs) + ")"
    else:
        returns = "Tensor[]"
    schema = f"({parameters}) -> {returns}"

    def shape_result(made: Any) -> Any:
        made = list(made) if isinstance(made, (tuple, list)) else [made]
        if outputs is None:
            return made
        if len(made) != outputs:
            raise ValueError(f"{qualified} was registered with {outputs} outputs, but the "
                             f"kernel for these inputs has {len(made)}")
        return made[0] if outputs == 1 else tuple(made)

    def run(*tensors: Any) -> Any:
        backend = _device_backend(tensors, qualified)
        fixed = _specialized(kernel, tensors, names)
        # Detached: DLPack exports no tensor that requires a gradient, and
        # a parameter does even where autograd is off (in a Function).
        contiguous = [t.detach().contiguous() for t in tensors]
        return shape_result(fixed(*contiguous, backend=backend))

    def torch_dtype(dtype: Any) -> Any:
        if dtype.name not in _launch._TORCH_DTYPES:
            raise TypeError(f"{qualified} makes a {dtype} output, which PyTorch has no "
                            "tensors of")
        return getattr(torch, _launch._TORCH_DTYPES[dtype.name])

    def fake(*tensors: Any) -> Any:
        fixed = _specialized(kernel, tensors, names)
        device = tensors[0].device if tensors else torch.device("cpu")
        made = [torch.empty(tuple(shape), dtype=torch_dtype(dtype), device=device)
                for shape, dtype in fixed.outputs]
        return shape_result(made[0] if len(made) == 1 else tuple(made))

    op = torch.library.custom_op(qualified, run, mutates_args=(), schema=schema)
    op.register_fake(fake)
    return getattr(getattr(torch.ops, namespace), name)
