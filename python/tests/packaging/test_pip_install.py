"""`pip install .` and `pip install -e .` from a clean clone, each in a
fresh virtual environment, used from outside the source tree
(pip_install.sh does the work; ctest runs this as `python-pip-install`,
apart from the `python` tests because it builds the package: minutes with
a warm ccache, more without)."""
import os
import pathlib
import re
import shutil
import subprocess

import pytest

HERE = pathlib.Path(__file__).resolve().parent
REPO = HERE.parents[2]


def test_pip_install_from_a_clean_clone(tmp_path_factory):
    if not (REPO / ".git").exists() or shutil.which("git") is None:
        pytest.skip("not a git checkout: nothing to clone")
    try:
        import scikit_build_core  # noqa: F401  (the build backend, preinstalled)
    except ImportError:
        pytest.fail("scikit-build-core is not installed: run scripts/install-deps.sh")
    work = pathlib.Path(os.environ.get("MOSAIC_PIP_TEST_DIR")
                        or tmp_path_factory.mktemp("pip-install"))
    result = subprocess.run([str(HERE / "pip_install.sh"), str(REPO), str(work)],
                            capture_output=True, text=True)
    print(result.stdout)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"pip install \.: \d+ s", lines[0]), lines
    assert "venv/lib/python" in lines[1] and "a kernel ran on the emulator" in lines[1]
    assert re.fullmatch(r"pip install -e \.: \d+ s", lines[2]), lines
    assert lines[3].startswith(f"mosaic_gpu 0.1.0 from {work}/src/python/mosaic_gpu:")
