"""Mosaic GPU kernels from Python: write, parse, transform, compile and
launch them.

The work is done by the project's C++ libraries, through the extension
module ``mosaic_gpu._mosaic``; see python/README.md for the API.

    import mosaic_gpu as mg

    module = mg.Module.parse_file("examples/gemm_bf16.mlir")
    kernel = mg.compile(module)              # CUBIN, as mosaic-compile does
    print(kernel.manifest["ptxas"]["registers"])

Kernels are written with the @kernel decorator (kernels.py; the ops in
values.py, refs.py and control_flow.py, dtypes in dtypes.py, layouts and
transforms in layouts.py, the warp-specialized pipeline in pipeline.py) and
launched by calling them (launch.py):

    @mg.kernel(grid=(64, 1, 1), block=(128, 1, 1),
               inputs=[((4096, 128), "f32")], outputs=[((4096, 128), "f32")])
    def double(x, out):
        rows = mg.ds(mg.block_id("x") * 64, 64)
        mg.vector_store(mg.vector_load(x[rows, :]) * 2.0, out[rows, :])

``@autotune`` (autotuner.py) picks one of a kernel factory's configurations
per input signature.

MLIR diagnostics (parse, verifier, pass and inference errors) are raised as
:class:`MosaicError`, whose message holds every diagnostic with its location
and notes.
"""

import re as _re


def _explain_extension_error(error: ImportError) -> str:
    """What to do when the C++ extension does not load: most often Debian's
    LLVM/MLIR 22 shared libraries, which it links, are not installed."""
    said = str(error)
    missing = _re.search(r"(lib(?:LLVM|MLIR)[\w.+-]*\.so[\w.]*)", said)
    if missing:
        return (f"mosaic_gpu's C++ extension needs {missing.group(1)} from Debian's LLVM/MLIR 22 "
                "packages (llvm-22-dev and libmlir-22; the project's scripts/install-deps.sh "
                "installs them), which this machine does not have or the loader cannot find "
                f"(add /usr/lib/llvm-22/lib to LD_LIBRARY_PATH if they are elsewhere). The "
                f"loader said: {said}")
    return (f"mosaic_gpu's C++ extension (mosaic_gpu._mosaic) did not load: {said}. Build it "
            "(scripts/build.sh) or reinstall the package (pip install .)")


try:
    from . import _mosaic
except ImportError as _error:
    raise ImportError(_explain_extension_error(_error)) from _error

from . import _tools
from . import autotuner as _autotuner
from . import control_flow as _control_flow
from . import dtypes as _dtypes
from . import generic as _generic
from . import kernels as _kernels
from . import layouts as _layouts
from . import multi_device as _multi_device
from . import pipeline as _pipeline
from . import refs as _refs
from . import values as _values
from ._mosaic import (
    CompiledKernel,
    Context,
    Diagnostic,
    Module,
    MosaicError,
    OpLayouts,
    compile,
    find_ptxas,
    infer_layouts,
    run_passes,
    run_pipeline,
)
from .autotuner import *  # noqa: F401,F403
from .control_flow import *  # noqa: F401,F403  (the authoring API)
from .dtypes import *  # noqa: F401,F403
from .kernels import *  # noqa: F401,F403
from .layouts import *  # noqa: F401,F403
from .multi_device import *  # noqa: F401,F403
from .generic import *  # noqa: F401,F403
from .launch import cache_dir, compile_cached
from .jax_ops import to_jax
from .torch_ops import to_torch
from .pipeline import *  # noqa: F401,F403
from .refs import *  # noqa: F401,F403
from .values import *  # noqa: F401,F403

__version__ = "0.1.0"  # pyproject.toml's

# An installed package carries its own emulator (python/mosaic_gpu/_tools.py).
if _tools.packaged_emulator() and hasattr(_mosaic, "set_emulator_library"):
    _mosaic.set_emulator_library(str(_tools.packaged_emulator()))

__all__ = [
    "CompiledKernel",
    "Context",
    "Diagnostic",
    "Module",
    "MosaicError",
    "OpLayouts",
    "compile",
    "find_ptxas",
    "infer_layouts",
    "run_passes",
    "run_pipeline",
    "cache_dir",
    "compile_cached",
    "to_jax",
    "to_torch",
    "__version__",
] + (_kernels.__all__ + _generic.__all__ + _values.__all__ + _refs.__all__ + _control_flow.__all__
     + _dtypes.__all__ + _layouts.__all__ + _pipeline.__all__ + _multi_device.__all__
     + _autotuner.__all__)
