"""docs/PythonTutorial.md works as written: its python blocks, in order,
run as one script (in a process of its own, which loads the emulator's
driver) and their asserts hold."""
import importlib.util
import os
import pathlib
import re
import subprocess
import sys

import pytest

import mosaic_gpu as mgpu
from conftest import REPO

TUTORIAL = REPO / "docs" / "PythonTutorial.md"


def python_blocks():
    return re.findall(r"^```python\n(.*?)^```", TUTORIAL.read_text(), re.S | re.M)


def test_the_tutorial_has_its_sections():
    text = TUTORIAL.read_text()
    for heading in ["## 1. Write", "## 2. Inspect", "## 3. Compile", "## 4. Run",
                    "## 5. Debug a layout-inference error"]:
        assert heading in text
    assert len(python_blocks()) >= 8


def test_the_tutorial_runs(tmp_path):
    if not hasattr(mgpu._mosaic, "LoadedKernel"):
        pytest.skip("built without runtime/ (no cuda.h): nothing to launch on")
    if mgpu.find_ptxas() is None:
        pytest.skip("ptxas not found: launches compile to a CUBIN")
    script = tmp_path / "tutorial.py"
    script.write_text("\n".join(python_blocks()))
    package = pathlib.Path(mgpu.__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(package), MOSAIC_GPU_CACHE_DIR=str(tmp_path / "cache"))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "<OpLayouts math.rsqrt at" in result.stdout
    assert "registers:" in result.stdout
    assert "error: no layout for operand #0 of 'mosaic_gpu.layout_cast'" in result.stdout
    # The JAX section runs where JAX is installed (ctest python-jax).
    if importlib.util.find_spec("jax") and hasattr(mgpu._mosaic, "jax_ffi_handlers"):
        assert "1 custom call" in result.stdout
