#!/usr/bin/env bash
# `pip install .` and `pip install -e .` from a clean clone, each into a
# fresh virtual environment, then mosaic_gpu imported and used from outside
# the source tree: a kernel run on the package's own emulator, the three
# tools run through their console entry points.
#
#   python/tests/pip_install.sh SOURCE_REPO WORK_DIR
#
# The clone is of SOURCE_REPO's HEAD (what is committed). The virtual
# environments see the system's site-packages (--system-site-packages):
# the build needs scikit-build-core (installed by scripts/install-deps.sh;
# --no-build-isolation, so nothing is downloaded) and the package needs
# NumPy and ml_dtypes, which Debian's python3 has. With ccache installed the
# compilations are the main build's (scripts/build.sh uses ccache too):
# CCACHE_BASEDIR makes paths relative to each tree, the wheel's build
# directory is `build` inside the clone, as the main build's is, and the
# compilers are the same.
set -euo pipefail
source_repo=$(cd "$1" && pwd)
work=$2
python=${PYTHON:-/usr/bin/python3}

rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
git clone --quiet --no-hardlinks "$source_repo" "$work/src"

settings=(--config-settings=build-dir=build)
# The compilers CMake picks for the main build (cc and c++): scikit-build-core
# would otherwise take Python's (x86_64-linux-gnu-g++), the same GCC under
# another name, which ccache counts as another compiler.
export CC=${CC:-cc} CXX=${CXX:-c++}
if command -v ccache >/dev/null; then
  settings+=(--config-settings=cmake.define.CMAKE_CXX_COMPILER_LAUNCHER=ccache
             --config-settings=cmake.define.CMAKE_C_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR="$work/src"
fi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}

# With MOSAIC_JAX_FFI_INCLUDE_DIR set (ctest sets it to the main build's),
# CMake reads it from the environment and the package has to_jax's XLA FFI
# handlers: checked below.

# What the installed package must do, run from $work (not the source tree).
check_package() {
  local venv=$1 expected_dir=$2
  (cd "$work" && "$venv/bin/python" - "$expected_dir" "$work/src/examples/elementwise.mlir" <<'PY'
import os, subprocess, sys
import numpy as np
import mosaic_gpu as mgpu

expected_dir, example = sys.argv[1], sys.argv[2]
where = os.path.dirname(os.path.realpath(mgpu.__file__))
assert where.startswith(os.path.realpath(expected_dir)), (where, expected_dir)
extension = os.path.realpath(mgpu._mosaic.__file__)
assert "site-packages" in extension, extension
emulator = mgpu._mosaic.driver_library("emulator")
assert emulator.startswith(os.path.dirname(extension)), emulator  # the package's own

@mgpu.jit(block=(128, 1, 1), outputs=lambda x: [x], grid=lambda x: (x.tiles(0, 1024), 1, 1))
def double(x, out):
    chunk = mgpu.ds(mgpu.block_id("x") * 1024, 1024)
    mgpu.vector_store(mgpu.vector_load(x[chunk]) * 2.0, out[chunk])

x = np.arange(4096, dtype=np.float32)
assert (double(x, backend="emulator") == 2 * x).all()
if os.environ.get("MOSAIC_JAX_FFI_INCLUDE_DIR"):
    assert sorted(mgpu._mosaic.jax_ffi_handlers()) == ["CUDA", "cpu"]
for tool in ("mosaic-opt", "mosaic-compile", "mosaic-run"):
    subprocess.run([os.path.join(sys.prefix, "bin", tool), "--help"], check=True,
                   capture_output=True)
if mgpu.find_ptxas():
    subprocess.run([os.path.join(sys.prefix, "bin", "mosaic-compile"), example, "-o",
                    "elementwise.cubin"], check=True, capture_output=True)
    run = subprocess.run([os.path.join(sys.prefix, "bin", "mosaic-run"), "elementwise.json",
                          "--emulate"], capture_output=True, text=True)
    assert run.returncode == 0 and "PASS" in run.stdout, run.stdout + run.stderr
print(f"mosaic_gpu {mgpu.__version__} from {where}: a kernel ran on the emulator, "
      "the tools run")
PY
  )
}

start=$SECONDS
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --no-build-isolation "${settings[@]}" "$work/src"
echo "pip install .: $((SECONDS - start)) s"
check_package "$work/venv" "$work/venv/lib"

start=$SECONDS
"$python" -m venv --system-site-packages "$work/venv-editable"
"$work/venv-editable/bin/python" -m pip install --quiet --no-build-isolation "${settings[@]}" \
  --editable "$work/src"
echo "pip install -e .: $((SECONDS - start)) s"
check_package "$work/venv-editable" "$work/src/python/mosaic_gpu"
