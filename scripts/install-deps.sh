#!/usr/bin/env bash
# Installs the Debian 12 packages the build and the tests need, skipping the
# ones already present. CUDA 13 is expected at /usr/local/cuda (or CUDA_HOME);
# it is not a Debian package, so this script only reports whether it is there.
set -euo pipefail

packages=(
  cmake ninja-build g++ python3 python3-dev python3-pytest python3-numpy
  llvm-22-dev libmlir-22-dev mlir-22-tools llvm-22-tools
  pybind11-dev libgtest-dev python3-pip
  # The pip install test (python/tests/packaging/): fresh virtual
  # environments, and ccache so that its build of the package reuses the
  # main build's compilations (scripts/build.sh uses ccache when present).
  python3-venv ccache
  # clang and libFuzzer for the fuzz test (fuzz/, docs/Fuzzing.md); without
  # them it is skipped.
  clang-22 libclang-rt-22-dev
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if ((${#missing[@]})); then
  echo "Installing: ${missing[*]}"
  sudo=""
  if [[ $(id -u) != 0 ]]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "All Debian packages are present."
fi

# bf16 and fp8 NumPy arrays for the Python tests (PyPI: Debian has no
# package). 0.3.2 is the newest release that works with Debian 12's NumPy
# 1.24; newer ones would pull NumPy 2 over the system's.
if ! /usr/bin/python3 -c "import ml_dtypes" 2>/dev/null; then
  echo "Installing ml_dtypes 0.3.2 from PyPI"
  /usr/bin/python3 -m pip install --quiet --break-system-packages \
    "ml_dtypes==0.3.2"
fi

# scikit-build-core, the build backend of pyproject.toml (`pip install .`):
# preinstalled, so that the pip install test builds without build isolation
# and downloads nothing.
if ! /usr/bin/python3 -c "import scikit_build_core" 2>/dev/null; then
  echo "Installing scikit-build-core 1.1.2 from PyPI"
  /usr/bin/python3 -m pip install --quiet --break-system-packages \
    "scikit-build-core==1.1.2"
fi

# nvdisasm for the SASS test (test/Examples/SASS/): NVIDIA ships it on PyPI
# (the binary lands in site-packages/nvidia/cu13/bin/); a CUDA install that
# has ptxas need not have it. Without it the SASS checks are skipped.
if ! /usr/bin/python3 -c "import importlib.metadata as m; m.distribution('nvidia-cuda-nvdisasm')" \
    2>/dev/null; then
  echo "Installing nvidia-cuda-nvdisasm 13.5.37 from PyPI"
  /usr/bin/python3 -m pip install --quiet --break-system-packages \
    "nvidia-cuda-nvdisasm==13.5.37"
fi

# JAX for mosaic_gpu.to_jax's tests (python/tests/test_jax_ops.py, ctest
# `python-jax`), CPU only: JAX 0.10 needs NumPy 2, which would replace
# Debian 12's NumPy under the system Python, so it gets a virtual
# environment of its own, beside the build (build-jax-venv/, ignored by git).
jax_venv="$(cd "$(dirname "$0")/.." && pwd)/build-jax-venv"
if ! "$jax_venv/bin/python" -c "import jax, ml_dtypes, pytest" 2>/dev/null; then
  echo "Installing JAX 0.10.2 (CPU) into $jax_venv"
  /usr/bin/python3 -m venv "$jax_venv"
  "$jax_venv/bin/python" -m pip install --quiet "jax==0.10.2" "jaxlib==0.10.2" \
    "ml_dtypes==0.6.0" "pytest==9.2.0"
fi

cuda_home="${CUDA_HOME:-/usr/local/cuda}"
if [[ -x "$cuda_home/bin/ptxas" ]]; then
  echo "CUDA: $("$cuda_home/bin/ptxas" --version | tail -n 1)"
else
  echo "note: no ptxas under $cuda_home; compiling to CUBIN will need CUDA 13 there (set CUDA_HOME)."
fi
