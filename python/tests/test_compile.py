"""compile(): PTX for every example, and CUBINs and manifests equal to
mosaic-compile's where ptxas is installed."""
import json
import re
import subprocess

import pytest

import mosaic_gpu as mg
from conftest import REPO

# An instruction each example's PTX must contain.
EXPECTED_PTX = {
    "elementwise": "ld.global.v4.b32",
    "softmax": "shfl.sync.bfly",
    "tma_roundtrip": "cp.async.bulk.tensor",
    "gemm_bf16": "wgmma.mma_async",
    "gemm_bf16_ws": "setmaxnreg.inc.sync.aligned.u32",
    "attention_fwd": "bar.arrive",
}


def without_compile_time(manifest):
    """The manifest minus ptxas's wall time, which differs run to run."""
    manifest["ptxas"]["report"] = re.sub(
        r"Compile time = [0-9.]+ ms", "", manifest["ptxas"]["report"])
    return manifest


def test_ptx(example):
    module = mg.Module.parse_file(str(example))
    before = str(module)
    kernel = mg.compile(module, emit="ptx")
    assert str(module) == before, "compile must leave the module alone"
    assert kernel.emit == "ptx"
    assert ".target sm_90a" in kernel.ptx
    assert f".visible .entry {kernel.entry}(" in kernel.ptx
    assert EXPECTED_PTX[example.stem] in kernel.ptx
    assert kernel.cubin is None and kernel.manifest is None
    assert list(kernel.stage_times) == [
        "inference", "tiling", "lowering", "nvvm-llvm", "llvm-to-ptx"]


def test_ptx_matches_mosaic_compile(example, mosaic_compile, tmp_path):
    out = tmp_path / "kernel.ptx"
    subprocess.run([mosaic_compile, example, "--emit=ptx", "-o", out],
                   check=True)
    kernel = mg.compile(mg.Module.parse_file(str(example)), emit="ptx")
    assert kernel.ptx == out.read_text()


def test_ptx_features():
    module = mg.Module.parse_file(str(REPO / "examples" / "elementwise.mlir"))
    kernel = mg.compile(module, emit="ptx", ptx_features="+ptx85")
    assert kernel.ptx_features == "+ptx85"
    assert ".version 8.5\n" in kernel.ptx
    with pytest.raises(mg.MosaicError, match=r"not of the requested ISA \(.version 9.1\)"):
        mg.compile(module, emit="ptx", ptx_features="+ptx91")


def test_mlir_and_llvm():
    module = mg.Module.parse_file(str(REPO / "examples" / "elementwise.mlir"))
    lowered = mg.compile(module, emit="mlir")
    assert "llvm.func @elementwise(" in lowered.mlir and lowered.ptx is None
    llvm = mg.compile(module, emit="llvm")
    assert "define ptx_kernel void @elementwise(" in llvm.llvm


def test_cubin_matches_mosaic_compile(example, mosaic_compile, ptxas, tmp_path):
    reference = tmp_path / "reference" / f"{example.stem}.cubin"
    reference.parent.mkdir()
    subprocess.run([mosaic_compile, example, "-o", reference], check=True,
                   stdout=subprocess.DEVNULL)
    expected = json.loads(reference.with_suffix(".json").read_text())

    kernel = mg.compile(mg.Module.parse_file(str(example)))
    assert kernel.cubin == reference.read_bytes()
    manifest = kernel.manifest
    assert manifest["cubin"] == f"{kernel.entry}.cubin"
    assert manifest["ptx"] == f"{kernel.entry}.ptx"
    assert expected["ptx"] == f"{example.stem}.ptx"
    assert reference.with_suffix(".ptx").read_text() == kernel.ptx
    manifest["cubin"], manifest["ptx"] = expected["cubin"], expected["ptx"]
    assert without_compile_time(manifest) == without_compile_time(expected)
    assert manifest["ptxas"]["spill_stores"] == 0
    assert manifest["ptxas"]["spill_loads"] == 0
    assert manifest["ptxas"]["registers"] > 0
    assert f"Compiling entry function '{kernel.entry}' for 'sm_90a'" in kernel.ptxas_report

    written = tmp_path / "written" / f"{example.stem}.cubin"
    written.parent.mkdir()
    kernel.write(str(written))
    assert written.read_bytes() == reference.read_bytes()
    assert written.with_suffix(".ptx").read_text() == kernel.ptx
    assert without_compile_time(json.loads(written.with_suffix(".json").read_text())) \
        == without_compile_time(expected)


def test_dump_to(ptxas, tmp_path):
    module = mg.Module.parse_file(str(REPO / "examples" / "elementwise.mlir"))
    mg.compile(module, dump_to=str(tmp_path))
    names = {path.name for path in tmp_path.iterdir()}
    assert {"elementwise.ll", "elementwise.ptx"} <= names


def test_without_ptxas_cubin_is_an_error():
    if mg.find_ptxas() is not None:
        pytest.skip("ptxas is installed here")
    module = mg.Module.parse_file(str(REPO / "examples" / "elementwise.mlir"))
    with pytest.raises(mg.MosaicError, match="ptxas not found"):
        mg.compile(module)


@pytest.mark.parametrize("arguments, message", [
    ({"emit": "sass"}, "emit must be 'cubin', 'ptx', 'llvm' or 'mlir', got 'sass'"),
    ({"arch": "sm_80"}, "only sm_90a is supported, got 'sm_80'"),
    ({"opt_level": 4}, "optimization level must be 0 to 3, got 4"),
    ({"opt_level": -1}, "optimization level must be 0 to 3, got -1"),
])
def test_bad_arguments(arguments, message):
    module = mg.Module.parse_file(str(REPO / "examples" / "elementwise.mlir"))
    with pytest.raises(ValueError, match=re.escape(message)):
        mg.compile(module, **arguments)


def test_kernel_errors_are_diagnostics():
    inputs = REPO / "test" / "Tools" / "Inputs"
    with pytest.raises(mg.MosaicError, match="expects exactly one gpu.func kernel, found 0"):
        mg.compile(mg.Module.parse_file(str(inputs / "no-kernel.mlir")), emit="ptx")
    with pytest.raises(mg.MosaicError) as raised:
        mg.compile(mg.Module.parse_file(str(inputs / "odd-block.mlir")), emit="ptx")
    [diagnostic] = raised.value.diagnostics
    assert diagnostic.message.startswith("the block has 96 threads")
    assert diagnostic.location.startswith(str(inputs / "odd-block.mlir") + ":")


def fake_ptxas(directory, release, fails):
    """A ptxas on PATH that reports CUDA `release` and, when `fails`, exits
    with an error instead of compiling."""
    script = directory / "ptxas"
    script.write_text(
        "#!/bin/sh\n"
        f'if [ "$1" = --version ]; then echo "Cuda compilation tools, release {release}, V{release}"; exit 0; fi\n'
        + ('echo "ptxas fatal   : fake failure" >&2; exit 1\n' if fails else "exit 0\n"))
    script.chmod(0o755)
    return script


def test_ptxas_failure_is_reported(tmp_path, monkeypatch):
    fake_ptxas(tmp_path, "13.0", fails=True)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    # The PTX stays in a temporary directory, for the command to reproduce.
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert mg.find_ptxas() == str(tmp_path / "ptxas")
    module = mg.Module.parse_file(str(REPO / "examples" / "elementwise.mlir"))
    with pytest.raises(mg.MosaicError) as raised:
        mg.compile(module)
    message = str(raised.value)
    assert "ptxas failed; reproduce with:" in message
    assert "-arch sm_90a -v -O3 -lineinfo" in message
    assert "ptxas fatal   : fake failure" in message


def test_old_ptxas_is_reported(tmp_path, monkeypatch):
    fake_ptxas(tmp_path, "11.8", fails=False)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    module = mg.Module.parse_file(str(REPO / "examples" / "elementwise.mlir"))
    with pytest.raises(mg.MosaicError, match="is from CUDA 11.8; sm_90a needs CUDA 12.0 or newer"):
        mg.compile(module, emit="ptx")
