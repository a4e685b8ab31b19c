"""Fixtures of the SASS test: the tools, and each example compiled to a CUBIN
and disassembled once per session.

Run by ctest as `sass` (MOSAIC_COMPILE names the build's mosaic-compile), or
by hand from the repository root:
    /usr/bin/python3 -m pytest test/Examples/SASS
(MOSAIC_COMPILE=path/to/mosaic-compile for a build other than build/).
"""
from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[3]
CUDA_ROOTS = ("CUDA_HOME", "CUDA_ROOT", "CUDA_PATH")
NVDISASM_PACKAGE = "nvidia-cuda-nvdisasm"


def find_cuda_tool(name: str) -> pathlib.Path | None:
    """`name` on PATH or under $CUDA_HOME, $CUDA_ROOT, $CUDA_PATH or
    /usr/local/cuda: where mosaic-compile looks for ptxas."""
    found = shutil.which(name)
    if found:
        return pathlib.Path(found)
    roots = [os.environ.get(variable) for variable in CUDA_ROOTS] + ["/usr/local/cuda"]
    for root in filter(None, roots):
        path = pathlib.Path(root) / "bin" / name
        if os.access(path, os.X_OK):
            return path
    return None


def find_nvdisasm() -> pathlib.Path | None:
    """nvdisasm from the PyPI package (scripts/install-deps.sh installs it;
    it keeps the binary under nvidia/cu13/bin/), else CUDA's own."""
    try:
        files = importlib.metadata.distribution(NVDISASM_PACKAGE).files or []
    except importlib.metadata.PackageNotFoundError:
        files = []
    for file in files:
        if file.name == "nvdisasm":
            path = pathlib.Path(file.locate()).resolve()
            if os.access(path, os.X_OK):
                return path
    return find_cuda_tool("nvdisasm")


@dataclasses.dataclass
class CompiledKernel:
    """An example compiled by mosaic-compile and disassembled by nvdisasm."""
    name: str
    manifest: dict
    sass: str

    @property
    def ptxas(self) -> dict:
        """ptxas's numbers and its whole `-v` report, from the manifest."""
        return self.manifest["ptxas"]

    @property
    def threads(self) -> int:
        block = self.manifest["block"]
        return block[0] * block[1] * block[2]


# What the terminal summary prints: one line per compiled kernel.
RESOURCES: dict[str, str] = {}


@pytest.fixture(scope="session")
def mosaic_compile() -> pathlib.Path:
    """ctest names the build's mosaic-compile (a missing one is an error);
    by hand the default is build/bin/mosaic-compile (a missing one skips)."""
    named = os.environ.get("MOSAIC_COMPILE")
    path = pathlib.Path(named) if named else REPO / "build" / "bin" / "mosaic-compile"
    if os.access(path, os.X_OK):
        return path
    if named:
        pytest.fail(f"MOSAIC_COMPILE={named} is not an executable")
    pytest.skip(f"no mosaic-compile at {path}: build first (scripts/build.sh) "
                "or set MOSAIC_COMPILE")


@pytest.fixture(scope="session")
def nvdisasm() -> pathlib.Path:
    path = find_nvdisasm()
    if path is None:
        pytest.skip(f"nvdisasm not found: install the PyPI package {NVDISASM_PACKAGE} "
                    "(scripts/install-deps.sh does) or put CUDA's nvdisasm on PATH")
    return path


@pytest.fixture(scope="session")
def ptxas() -> pathlib.Path:
    path = find_cuda_tool("ptxas")
    if path is None:
        pytest.skip("ptxas not found (install CUDA 13 or set CUDA_HOME): "
                    "no CUBIN to disassemble")
    return path


# Kernels the Python examples build (script and arguments; --emit-mlir
# writes their MLIR), checked like the MLIR examples.
GENERATED = {
    "gemm_ws_split_k": ("gemm_ws.py", ["--m", "1024", "--n", "1024", "--k", "32768",
                                       "--split-k", "2"]),
    "gemm_ws_stream_k": ("gemm_ws.py", ["--m", "1024", "--n", "1024", "--k", "32768",
                                        "--stream-k"]),
    "gemm_ws_bias_gelu": ("gemm_ws.py", ["--epilogue", "bias_gelu_tanh"]),
    "gemm_ws_fp8_amax": ("gemm_ws.py", ["--epilogue", "fp8_amax", "--tile-n", "128",
                                        "--stages", "4"]),
    "gemm_ws_any_shape": ("gemm_ws.py", ["--m", "4000", "--n", "50304", "--k", "1000",
                                         "--b-layout", "nk"]),
    "gemm_fp8_block": ("gemm_fp8.py", ["--scaling", "block"]),
    # The attention backward's main kernel, which attention.py writes next
    # to the forward (a third entry: the suffix of the file that holds it).
    "attention_bwd_d128": ("attention.py", ["--head-dim", "128", "--causal", "--backward"],
                           "_bwd"),
    "attention_bwd_d256": ("attention.py", ["--head-dim", "256", "--backward"], "_bwd"),
}


def python_path(mosaic_compile: pathlib.Path) -> str:
    """The build's Python package, next to its bin/ (or $PYTHONPATH)."""
    built = mosaic_compile.resolve().parent.parent / "python"
    return os.pathsep.join([str(built)] + [p for p in [os.environ.get("PYTHONPATH")] if p])


@pytest.fixture(scope="session")
def compile_example(mosaic_compile, ptxas, nvdisasm, tmp_path_factory):
    """compile_example(name): examples/<name>.mlir, or the kernel GENERATED
    says, as a CompiledKernel, compiled and disassembled once per
    session."""
    folder = tmp_path_factory.mktemp("sass")
    cache: dict[str, CompiledKernel] = {}

    def generate(name: str) -> pathlib.Path:
        script, arguments, *written = GENERATED[name]
        source = folder / f"{name}.mlir"
        done = subprocess.run(
            [sys.executable, str(REPO / "python" / "examples" / script), *arguments,
             "--emit-mlir", str(source)], capture_output=True, text=True,
            env=dict(os.environ, PYTHONPATH=python_path(mosaic_compile)))
        if done.returncode != 0:
            pytest.fail(f"{script} {' '.join(arguments)} --emit-mlir failed:\n"
                        f"{done.stdout}{done.stderr}")
        return source.with_name(f"{name}{written[0]}.mlir") if written else source

    def compile_one(name: str) -> CompiledKernel:
        if name in cache:
            return cache[name]
        source = (generate(name) if name in GENERATED
                  else REPO / "examples" / f"{name}.mlir")
        cubin = folder / f"{name}.cubin"
        done = subprocess.run([str(mosaic_compile), str(source), "-o", str(cubin)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.fail(f"mosaic-compile {source} failed:\n{done.stdout}{done.stderr}")
        disassembled = subprocess.run([str(nvdisasm), "-c", str(cubin)],
                                      capture_output=True, text=True)
        if disassembled.returncode != 0:
            pytest.fail(f"{nvdisasm} -c {cubin} failed:\n{disassembled.stderr}")
        manifest = json.loads(cubin.with_suffix(".json").read_text())
        kernel = CompiledKernel(name, manifest, disassembled.stdout)
        ptxas = kernel.ptxas
        RESOURCES[name] = (f"{ptxas['registers']} registers x {kernel.threads} threads, "
                           f"{ptxas['spill_stores']} B spill stores, "
                           f"{ptxas['spill_loads']} B spill loads, "
                           f"{kernel.manifest['dynamic_smem_bytes']} B dynamic shared memory")
        cache[name] = kernel
        return kernel

    return compile_one


def pytest_terminal_summary(terminalreporter) -> None:
    if RESOURCES:
        terminalreporter.section("resource usage (ptxas -v)")
        for name, line in sorted(RESOURCES.items()):
            terminalreporter.write_line(f"{name}: {line}")
    path = find_nvdisasm()
    terminalreporter.write_line(f"nvdisasm: {path or 'not found'}")
