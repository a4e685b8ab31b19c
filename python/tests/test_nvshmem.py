"""The NVSHMEM lowering of the multi-device ops (docs/RationaleMultiDevice.md,
"Across nodes: NVSHMEM") names functions of NVSHMEM's device library (LLVM
bitcode, linked into the kernel like libdevice) and host library: each must
exist in the NVSHMEM this test finds. It finds the PyPI package
nvidia-nvshmem-cu13 (importable as nvidia.nvshmem) or the folder
MOSAIC_NVSHMEM_HOME names (its lib/ and include/), and skips without one;
llvm-nm reads the bitcode's and the shared library's symbols."""

import importlib.util
import os
import pathlib
import shutil
import subprocess

import pytest

# The table of docs/RationaleMultiDevice.md: what each op, and the runtime,
# becomes under NVSHMEM.
DEVICE_FUNCTIONS = {
    "mosaic_gpu.device_id": ["nvshmem_my_pe"],
    "mosaic_gpu.device_count": ["nvshmem_n_pes"],
    "mosaic_gpu.remote_ref (NVLink peer)": ["nvshmem_ptr"],
    "async_store to a remote view, then a signal": ["nvshmemx_putmem_signal_nbi_block",
                                                    "nvshmemx_putmem_nbi_block"],
    "mosaic_gpu.semaphore_signal": ["nvshmem_fence", "nvshmem_int32_atomic_add"],
    "mosaic_gpu.semaphore_wait": ["nvshmem_int32_wait_until", "nvshmem_int32_atomic_add"],
    "signal pads (u64 signals, PyTorch's layout)": ["nvshmemx_signal_op",
                                                    "nvshmem_signal_wait_until"],
    "completion before a signal": ["nvshmem_quiet"],
}
HOST_FUNCTIONS = {
    "symmetric heap": ["nvshmem_malloc", "nvshmem_free"],
    "collective table peers[s][q]": ["nvshmem_ptr"],
    "bootstrap by unique id (over the rendezvous)": ["nvshmemx_get_uniqueid",
                                                     "nvshmemx_set_attr_uniqueid_args",
                                                     "nvshmemx_hostlib_init_attr"],
    "device state in a module loaded with cuModuleLoadData": ["nvshmemx_cumodule_init"],
    "co-resident launch on every PE": ["nvshmemx_collective_launch"],
}


def nvshmem_home():
    if os.environ.get("MOSAIC_NVSHMEM_HOME"):
        return pathlib.Path(os.environ["MOSAIC_NVSHMEM_HOME"])
    try:
        spec = importlib.util.find_spec("nvidia.nvshmem")
    except ModuleNotFoundError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(list(spec.submodule_search_locations)[0])


def llvm_nm():
    for candidate in ("/usr/lib/llvm-22/bin/llvm-nm", shutil.which("llvm-nm")):
        if candidate and os.path.exists(candidate):
            return candidate
    return None


def defined(arguments):
    """The names of the defined functions llvm-nm lists."""
    listed = subprocess.run([llvm_nm(), "--defined-only", *arguments], check=True,
                            capture_output=True, text=True).stdout
    return {line.split()[-1].split("@")[0] for line in listed.splitlines()
            if len(line.split()) >= 2 and line.split()[-2] in ("T", "W")}


@pytest.fixture
def home():
    found = nvshmem_home()
    if found is None or not (found / "lib").is_dir():
        pytest.skip("NVSHMEM not found: pip install nvidia-nvshmem-cu13, or set "
                    "MOSAIC_NVSHMEM_HOME")
    if llvm_nm() is None:
        pytest.skip("no llvm-nm")
    return found


def test_the_device_library_defines_the_mapping(home):
    bitcode = home / "lib" / "libnvshmem_device_sm_90.bc"
    assert bitcode.exists(), f"{bitcode} is missing: the sm_90 device library"
    names = defined([str(bitcode)])
    missing = {op: [f for f in functions if f not in names]
               for op, functions in DEVICE_FUNCTIONS.items()}
    assert not any(missing.values()), missing


def test_the_host_library_exports_the_mapping(home):
    library = home / "lib" / "libnvshmem_host.so.3"
    assert library.exists()
    names = defined(["-D", str(library)])
    missing = {use: [f for f in functions if f not in names]
               for use, functions in HOST_FUNCTIONS.items()}
    assert not any(missing.values()), missing
    # The bootstrap plugins the doc names.
    for plugin in ("uid", "mpi", "pmi", "pmix"):
        assert (home / "lib" / f"nvshmem_bootstrap_{plugin}.so.3").exists(), plugin
