"""``GenericKernel.precompile``: the kernels of several signatures built on
the calling thread and compiled side by side, so that later calls find
their CUBIN in the cache; the same CUBINs as compiling one at a time; the
errors for bad signatures and worker counts. Compile-only (ptxas)."""
import pathlib
import runpy

import numpy as np
import pytest

import mosaic_gpu as mgpu
from conftest import REPO, compiles_meet_in_pairs

SIGNATURES = [(((64, 64), "f32"), ((64,), "f32"), ((64,), "f32")),
              (((128, 64), "f32"), ((64,), "f32"), ((64,), "f32"))]


@pytest.fixture(scope="module")
def layer_norm():
    return runpy.run_path(str(REPO / "python" / "examples" / "layer_norm.py"))["layer_norm"]


@mgpu.jit(block=(128, 1, 1), outputs=lambda x: [x], grid=lambda x: (x.tiles(0, 64), 1, 1))
def double(x, out):
    rows = mgpu.ds(mgpu.block_id("x") * 64, 64)
    mgpu.vector_store(mgpu.vector_load(x[rows, :]) * 2.0, out[rows, :])


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """An empty compile cache: on disk in tmp_path, and in memory."""
    monkeypatch.setenv("MOSAIC_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(mgpu.launch, "_compiled", {})
    return tmp_path


def refuse_to_compile(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("compiled again")
    monkeypatch.setattr(mgpu._mosaic, "compile", refuse)


def test_later_calls_find_every_signature_compiled(layer_norm, cache, monkeypatch, ptxas):
    kernels = layer_norm.precompile(*SIGNATURES, workers=2, line_info=False)
    assert kernels == [layer_norm.specialize(*signature) for signature in SIGNATURES]
    assert len(list(cache.glob("*/*.cubin"))) == 2
    # What a call compiles with the same options comes from the cache.
    refuse_to_compile(monkeypatch)
    for kernel in kernels:
        manifest = pathlib.Path(mgpu.compile_cached(kernel.module, line_info=False))
        assert manifest.with_suffix(".cubin").is_file()
    # Precompiling again compiles nothing either.
    assert layer_norm.precompile(*SIGNATURES, line_info=False) == kernels


def test_parallel_compiles_give_the_serial_cubins(layer_norm, cache, monkeypatch, ptxas):
    def cubins(workers):
        monkeypatch.setenv("MOSAIC_GPU_CACHE_DIR", str(cache / f"workers{workers}"))
        monkeypatch.setattr(mgpu.launch, "_compiled", {})
        kernels = layer_norm.precompile(*SIGNATURES, workers=workers)
        return [pathlib.Path(mgpu.compile_cached(k.module)).with_suffix(".cubin").read_bytes()
                for k in kernels]
    serial = cubins(1)
    assert cubins(2) == serial and serial[0] != serial[1]


def test_the_compiles_run_side_by_side(layer_norm, cache, monkeypatch, ptxas):
    """Two compiles meet at a barrier: one at a time, they would time out."""
    compiles_meet_in_pairs(monkeypatch, timeout=30)
    assert len(layer_norm.precompile(*SIGNATURES, workers=2)) == 2


def test_a_kernel_of_one_input_takes_its_entries_alone(cache, ptxas):
    x = np.ones((64, 32), np.float32)
    kernels = double.precompile(((128, 32), "f32"), mgpu.Spec((64, 32), "f32"), (x,),
                                [((128, 32), "f32")])
    assert [k.grid for k in kernels] == [(2, 1, 1), (1, 1, 1), (1, 1, 1), (2, 1, 1)]
    assert kernels[0] is kernels[3] and kernels[1] is kernels[2]
    assert len(list(cache.glob("*/*.cubin"))) == 2


def test_a_compile_error_names_its_signature(layer_norm, cache, monkeypatch):
    second = layer_norm.specialize(*SIGNATURES[1]).module

    def fail_the_second(module, **options):
        if str(module) == str(second):
            raise ValueError("no such option")
        return "compiled"
    monkeypatch.setattr(mgpu.launch, "compile_cached", fail_the_second)
    with pytest.raises(ValueError, match="no such option") as raised:
        layer_norm.precompile(*SIGNATURES)
    assert raised.value.__notes__ == [
        "while compiling layer_norm(x: f32[128, 64], gamma: f32[64], beta: f32[64])"]


@pytest.mark.parametrize("signatures, workers, exception, message", [
    (SIGNATURES, 0, ValueError, r"`workers` must be at least 1, got 0"),
    (SIGNATURES, 1.5, TypeError, r"`workers` must be a positive int or None, got 1.5"),
    (SIGNATURES, True, TypeError, r"`workers` must be a positive int or None, got True"),
    ([SIGNATURES[0][:2]], None, TypeError,
     r"signature 0 of layer_norm.precompile has 2 entries; layer_norm has 3 inputs "
     r"\(x, gamma, beta\)"),
    ([SIGNATURES[0], ((64, 64), "f32")], None, TypeError,
     r"signature 1 of layer_norm.precompile must be a tuple of its 3 inputs "
     r"\(x, gamma, beta\), got \(\(64, 64\), 'f32'\)"),
    ([mgpu.Spec((64, 64), "f32")], None, TypeError,
     r"signature 0 of layer_norm.precompile must be a tuple of its 3 inputs"),
    ([(((100, 64), "f32"), ((64,), "f32"), ((64,), "f32"))], None, ValueError,
     r"layer_norm\(x: f32\[100, 64\], .*\): `x` has shape \(100, 64\): dim 0 \(100\) is not "
     r"a multiple of the kernel's tile \(64\)"),
])
def test_bad_arguments(layer_norm, monkeypatch, signatures, workers, exception, message):
    # Refused before anything compiles.
    refuse_to_compile(monkeypatch)
    with pytest.raises(exception, match=message):
        layer_norm.precompile(*signatures, workers=workers)


def test_launch_arguments_are_refused(layer_norm, monkeypatch):
    refuse_to_compile(monkeypatch)
    with pytest.raises(TypeError, match="precompile only compiles, for every backend: "
                                        "`backend` is an argument of the calls"):
        layer_norm.precompile(*SIGNATURES, backend="emulator")


def test_no_signatures_compile_nothing(layer_norm, monkeypatch):
    refuse_to_compile(monkeypatch)
    assert layer_norm.precompile() == []
