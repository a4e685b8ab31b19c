"""The README's Python quickstart works as written: it builds the softmax,
prints what inference chose and runs it on the PTX emulator against NumPy
(in a process of its own, which loads the emulator's driver)."""
import os
import pathlib
import re
import subprocess
import sys

import pytest

import mosaic_gpu as mgpu
from conftest import REPO


def test_quickstart(tmp_path):
    if not hasattr(mgpu._mosaic, "LoadedKernel"):
        pytest.skip("built without runtime/ (no cuda.h): nothing to launch on")
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("### Writing a kernel in Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    script = tmp_path / "quickstart.py"
    script.write_text(code)
    package = pathlib.Path(mgpu.__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(package), MOSAIC_GPU_CACHE_DIR=str(tmp_path))
    result = subprocess.run([sys.executable, "quickstart.py"], cwd=tmp_path, env=env,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "gpu.func @softmax" in result.stdout
    assert (f"<OpLayouts vector.multi_reduction at {script}:9:44: in [#wgmma, #wgmma_row] "
            "out [#wgmma_row]>") in result.stdout
