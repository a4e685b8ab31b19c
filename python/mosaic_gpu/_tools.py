"""The files the package carries besides its modules, and the console
entry points (pyproject.toml's [project.scripts]) that run its tools.

An installed package (``pip install .``) holds, beside the extension,
``bin/`` (mosaic-opt, mosaic-compile, mosaic-run) and
``lib/emulator/libcuda.so.1`` (the PTX emulator); in the build tree
(``PYTHONPATH=build/python``) the tools are in ``build/bin`` and the
runtime already knows the build's emulator. Both are found from the
extension's own file, which is in the package in both cases (an editable
install maps the modules to the source tree, but not the extension).
"""

from __future__ import annotations

import os
import pathlib
import sys
from typing import NoReturn

from . import _mosaic

TOOLS = ("mosaic-opt", "mosaic-compile", "mosaic-run")


def _package_dir() -> pathlib.Path:
    return pathlib.Path(_mosaic.__file__).resolve().parent


def packaged_emulator() -> pathlib.Path | None:
    """The emulator's driver library an installed package carries, or None
    (the build tree, whose runtime names the build's own)."""
    library = _package_dir() / "lib" / "emulator" / "libcuda.so.1"
    return library if library.is_file() else None


def tool_path(name: str) -> pathlib.Path:
    """The path of one of the tools (``TOOLS``): the installed package's
    ``bin/``, else the build tree's ``build/bin``."""
    if name not in TOOLS:
        raise ValueError(f"unknown tool {name!r}; the package carries {', '.join(TOOLS)}")
    package = _package_dir()
    for candidate in (package / "bin" / name, package.parents[1] / "bin" / name):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{name} is neither in {package / 'bin'} (an installed package) "
                            f"nor in {package.parents[1] / 'bin'} (the build tree)")


def _exec(name: str) -> NoReturn:
    path = str(tool_path(name))
    emulator = packaged_emulator()
    emulating = "--emulate" in sys.argv[1:] or os.environ.get("MOSAIC_GPU_BACKEND") == "emulator"
    if name == "mosaic-run" and emulator and emulating and not os.environ.get(
            "MOSAIC_CUDA_DRIVER"):
        # The path compiled into mosaic-run names the build directory the
        # wheel was made in; the package carries its own emulator.
        os.environ["MOSAIC_CUDA_DRIVER"] = str(emulator)
    os.execv(path, [path] + sys.argv[1:])


def mosaic_opt() -> NoReturn:
    _exec("mosaic-opt")


def mosaic_compile() -> NoReturn:
    _exec("mosaic-compile")


def mosaic_run() -> NoReturn:
    _exec("mosaic-run")
