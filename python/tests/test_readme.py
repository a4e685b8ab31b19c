"""The README's Python quickstart works as written."""
import re

import pytest

import mosaic_gpu as mgpu
from conftest import REPO


def test_quickstart(capsys):
    readme = (REPO / "README.md").read_text()
    section = readme[readme.index("### Writing a kernel in Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    try:
        exec(compile(code, "quickstart.py", "exec"), {})
    except RuntimeError as error:
        # The last line launches; without a GPU it must say why.
        assert str(error).startswith(("no CUDA", "mosaic_gpu was built without runtime/")), error
    printed = capsys.readouterr().out
    assert "gpu.func @softmax" in printed
    assert "<OpLayouts vector.multi_reduction at quickstart.py:9:44: in [#wgmma, #wgmma_row] out [#wgmma_row]>" in printed
