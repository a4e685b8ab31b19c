"""Importing mosaic_gpu where its C++ extension cannot load (on a machine
without Debian's LLVM/MLIR 22, most often) raises an ImportError that says
what is missing and how to get it, not the loader's bare message."""
import shutil
import subprocess
import sys

import mosaic_gpu

PACKAGE = __import__("pathlib").Path(mosaic_gpu.__file__).resolve().parent


def import_with_a_failing_extension(tmp_path, loader_message):
    """Imports a copy of the package whose extension fails as the loader
    would, in a process of its own; returns that process's stderr."""
    copy = tmp_path / "mosaic_gpu"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("_mosaic*", "__pycache__"))
    (copy / "_mosaic.py").write_text(f"raise ImportError({loader_message!r})\n")
    result = subprocess.run([sys.executable, "-c", "import mosaic_gpu"], cwd=tmp_path,
                            capture_output=True, text=True, env={"PYTHONPATH": str(tmp_path),
                                                                 "PATH": "/usr/bin:/bin"})
    assert result.returncode != 0
    return result.stderr


def test_missing_llvm_names_the_library_and_the_packages(tmp_path):
    stderr = import_with_a_failing_extension(
        tmp_path, "libLLVM.so.22.1: cannot open shared object file: No such file or directory")
    assert ("ImportError: mosaic_gpu's C++ extension needs libLLVM.so.22.1 from Debian's "
            "LLVM/MLIR 22 packages (llvm-22-dev and libmlir-22; the project's "
            "scripts/install-deps.sh installs them)") in stderr
    assert "The loader said: libLLVM.so.22.1: cannot open shared object file" in stderr


def test_another_failure_says_to_build_or_reinstall(tmp_path):
    stderr = import_with_a_failing_extension(tmp_path, "undefined symbol: _ZN4mlir7Context")
    assert ("mosaic_gpu's C++ extension (mosaic_gpu._mosaic) did not load: undefined symbol: "
            "_ZN4mlir7Context. Build it (scripts/build.sh) or reinstall the package") in stderr
