# -*- Python -*-
# lit configuration for the Mosaic regression tests.

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "Mosaic"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.mosaic_obj_root, "test")
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs"]

# Captured variables must not leak between CHECK-LABEL blocks.
config.environment["FILECHECK_OPTS"] = "--enable-var-scope"

llvm_config.use_default_substitutions()
config.substitutions.append(("%mosaic_src_root", config.mosaic_src_root))
config.substitutions.append(("%mosaic_obj_root", config.mosaic_obj_root))
# mlir-runner's support libraries, for tests that run lowered code on the host.
config.substitutions.append(
    ("%mlir_runner_libs",
     ",".join(os.path.join(config.llvm_tools_dir, "..", "lib", name)
              for name in ("libmlir_c_runner_utils.so",
                           "libmlir_runner_utils.so"))))

llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["mosaic-opt", "mosaic-compile"],
    [config.mosaic_tools_dir, config.llvm_tools_dir],
)
# mosaic-run and the PTX emulator it runs kernels on with --emulate: built
# where cuda.h is; the tests that run kernels require `emulator`.
if config.mosaic_emulator:
    config.available_features.add("emulator")
    llvm_config.add_tool_substitutions(["mosaic-run"], [config.mosaic_tools_dir])

# ptxas (CUDA 13) turns PTX into CUBINs; tests that need it run only where it
# is installed: on PATH, or under CUDA_HOME / CUDA_ROOT / /usr/local/cuda.
import shutil

def find_ptxas():
    found = shutil.which("ptxas")
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_ROOT"),
                 "/usr/local/cuda"):
        if root and os.path.exists(os.path.join(root, "bin", "ptxas")):
            return os.path.join(root, "bin", "ptxas")
    return None

ptxas = find_ptxas()
if ptxas:
    config.available_features.add("ptxas")
    llvm_config.with_environment("PATH", os.path.dirname(ptxas), append_path=True)

# The collective examples (python/examples/allgather_matmul.py and
# matmul_reduce_scatter.py) emit their kernels through this build's Python
# package, /usr/bin/python3 with PYTHONPATH=build/python; tests that run
# them require `python-collective`: the package is built and has the
# multi-device ops (docs/RationaleMultiDevice.md).
import subprocess

python_package = os.path.join(config.mosaic_obj_root, "python")
probe = subprocess.run(
    ["/usr/bin/python3", "-c", "import mosaic_gpu; mosaic_gpu.device_id"],
    env=dict(os.environ, PYTHONPATH=python_package),
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
if probe.returncode == 0:
    config.available_features.add("python-collective")
config.substitutions.append(
    ("%mosaic_python", "env PYTHONPATH=" + python_package + " /usr/bin/python3"))
