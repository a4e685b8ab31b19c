"""Shared fixtures: the examples, mosaic-compile and ptxas.

Run with the package on the path:
    PYTHONPATH=build/python /usr/bin/python3 -m pytest python/tests
"""
import os
import pathlib
import subprocess
import sys
import threading

import pytest

import mosaic_gpu as mg

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "examples").glob("*.mlir"))


@pytest.fixture(params=EXAMPLES, ids=lambda path: path.stem)
def example(request):
    """Each example kernel's path."""
    return request.param


@pytest.fixture
def mosaic_compile():
    """The mosaic-compile of the build the package comes from."""
    # build/python/mosaic_gpu/__init__.py -> build/bin/mosaic-compile
    tool = pathlib.Path(mg.__file__).resolve().parents[2] / "bin" / "mosaic-compile"
    if not tool.exists():
        pytest.fail(f"mosaic-compile is not built: {tool}")
    return tool


@pytest.fixture
def ptxas():
    """The ptxas compile() uses; skips the test where none is installed."""
    path = mg.find_ptxas()
    if path is None:
        pytest.skip("ptxas not found (install CUDA 13 or set CUDA_HOME)")
    return path


def emulator_available():
    """Whether this build has the emulator's library: then the emulator
    tests run (and fail where it does not work)."""
    try:
        return os.path.exists(mg._mosaic.driver_library("emulator"))
    except (RuntimeError, AttributeError):
        return False


needs_emulator = pytest.mark.skipif(not emulator_available(), reason="built without the emulator")


def run_example(script, args, cache, source=None):
    """Runs the example `script` (or `source`, Python that runs it) with
    `args` in a process of its own (a crash fails that test only), its
    kernels cached in `cache`."""
    # The package this process imported, wherever PYTHONPATH pointed from.
    package = str(pathlib.Path(mg.__file__).resolve().parents[1])
    env = dict(os.environ, MOSAIC_GPU_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join(
        [package] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    command = [sys.executable] + (["-c", source] if source else [str(script)]) + list(args)
    return subprocess.run(command, env=env, capture_output=True, text=True, cwd=REPO)


def compiles_meet_in_pairs(monkeypatch, timeout):
    """Makes every compile wait at a barrier for another one: compiles run
    one at a time then time out (threading.BrokenBarrierError)."""
    barrier = threading.Barrier(2, timeout=timeout)
    compile_cached = mg.launch.compile_cached

    def meeting(module, **options):
        barrier.wait()
        return compile_cached(module, **options)
    monkeypatch.setattr(mg.launch, "compile_cached", meeting)


def run_check_in_process(module, check, cache, *args):
    """Calls `module.check(*args)` (a function of a test module here) in a
    process of its own, which loads the driver it launches on, its kernels
    cached in `cache`; fails the test with the process's output when it
    fails."""
    tests = pathlib.Path(__file__).resolve().parent
    env = dict(os.environ, MOSAIC_GPU_CACHE_DIR=str(cache), PYTHONPATH=os.pathsep.join(
        [str(tests)] + [p for p in [os.environ.get("PYTHONPATH")] if p]))
    call = f"{check}({', '.join(repr(arg) for arg in args)})"
    result = subprocess.run([sys.executable, "-c", f"import {module}; {module}.{call}"],
                            env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@mg.kernel(grid=(2, 1, 1), block=(128, 1, 1),
           inputs=[((1024,), "f32"), ((1024,), "f32")],
           outputs=[((1024,), "f32"), ((1024,), "f32")])
def sum_and_product(x, y, total, product):
    """A kernel with two inputs and two outputs, for the framework bridges'
    tests (test_torch_ops.py, test_jax_ops.py)."""
    offset = mg.block_id("x") * 512
    xv = mg.vector_load(x[mg.ds(offset, 512)])
    yv = mg.vector_load(y[mg.ds(offset, 512)])
    mg.vector_store(xv + yv, total[mg.ds(offset, 512)])
    mg.vector_store(xv * yv, product[mg.ds(offset, 512)])
