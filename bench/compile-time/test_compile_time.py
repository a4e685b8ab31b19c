"""Tests of the compile-time benchmarks: the timing reports they parse, and
llvm_stages.py, jit_warmup.py and fixed_costs.py run end to end on small kernels (they skip
without the build, LLVM 22's tools or ptxas). triton_peer.py needs Triton
and is not run here.

    MOSAIC_BUILD=build python3 -m pytest bench/compile-time
"""
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import llvm_stages  # noqa: E402


def build_folder():
    """$MOSAIC_BUILD, else this tree's build/ (which may not exist)."""
    return pathlib.Path(os.environ.get("MOSAIC_BUILD", ROOT / "build"))


def run_script(name, *args):
    """Runs bench/compile-time/NAME with the build's package on the path
    (after any PYTHONPATH already set)."""
    package = build_folder() / "python"
    if not (package / "mosaic_gpu").is_dir():
        pytest.skip(f"no built package in {package}")
    path = os.pathsep.join([p for p in [os.environ.get("PYTHONPATH")] if p] + [str(package)])
    env = dict(os.environ, PYTHONPATH=path, PYTHONDONTWRITEBYTECODE="1")
    result = subprocess.run([sys.executable, str(HERE / name), *args], env=env,
                            capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_llvm_pass_times_reads_user_plus_system_and_skips_the_files():
    report = """\
===-------------------------------------------------------------------------===
                          Pass execution timing report
===-------------------------------------------------------------------------===
  Total Execution Time: 0.0338 seconds (0.0339 wall clock)

   ---User Time---   --System Time--   --User+System--   ---Wall Time---  --- Name ---
   0.0126 ( 43.2%)   0.0003 (  7.3%)   0.0129 ( 38.2%)   0.0130 ( 38.2%)  InstCombinePass
   0.0043 ( 14.9%)   0.0037 ( 79.3%)   0.0081 ( 23.8%)   0.0081 ( 23.9%)  SLPVectorizerPass
   0.0010 (  2.0%)   0.0000 (  0.0%)   0.0010 (  2.0%)   0.0010 (  2.0%)  InstCombinePass
   0.0018 (  5.0%)   0.0000 (  0.0%)   0.0018 (  5.0%)   0.0018 (  5.0%)  Parse IR
   0.0338 (100.0%)   0.0041 (100.0%)   0.0379 (100.0%)   0.0339 (100.0%)  Total
"""
    times = llvm_stages.llvm_pass_times("analysis report first\n" + report)
    assert times == pytest.approx({"InstCombinePass": 13.9, "SLPVectorizerPass": 8.1})


def test_mlir_pass_times_reads_the_list_display():
    report = """\
  ----Wall Time----  ----Name----
    0.0499 (100.0%)  root
    0.0187 ( 37.6%)  Parser
    0.0042 (  8.4%)  ConvertVectorToLLVMPass
    0.0029 (  5.8%)  'gpu.module' Pipeline
    0.0013 (  2.5%)  Rest
    0.0499 (100.0%)  Total
"""
    assert llvm_stages.mlir_pass_times(report) == pytest.approx(
        {"Parser": 18.7, "ConvertVectorToLLVMPass": 4.2, "'gpu.module' Pipeline": 2.9})


def test_the_gpu_modules_body_becomes_a_module():
    text = """\
module {
  gpu.module @kernels [#nvvm.target<O = 3, chip = "sm_90a">] {
    llvm.func @k() {
      llvm.return
    }
  }
}"""
    module = llvm_stages.llvm_dialect_module(text, 'llvm.target_triple = "nvptx64-nvidia-cuda"')
    assert module == ('module attributes {llvm.target_triple = "nvptx64-nvidia-cuda"} {\n'
                      "    llvm.func @k() {\n      llvm.return\n    }\n}\n")


def test_llvm_stages_on_the_elementwise_example(tmp_path):
    mosaic_opt = build_folder() / "bin" / "mosaic-opt"
    if not mosaic_opt.exists():
        pytest.skip(f"{mosaic_opt} is not built")
    if not (llvm_stages.LLVM / "opt").exists() or not shutil.which("ptxas") and not (
            llvm_stages.CUDA / "bin" / "ptxas").exists():
        pytest.skip("LLVM 22's tools or ptxas are missing")
    output = run_script("llvm_stages.py", "--repeats", "1", "--mosaic-opt", str(mosaic_opt),
                        "--keep", str(tmp_path), "examples/elementwise.mlir")
    assert "### elementwise" in output and "libdevice functions called: none" in output
    rows = [line for line in output.splitlines() if line.startswith("| O")]
    assert [row.split(" | ")[0] for row in rows] == ["| " + label for label, _, _ in
                                                      llvm_stages.LLVM_VARIANTS]
    # O3's own row compares equal with itself.
    assert rows[0].split(" | ")[6] == "yes"
    assert (tmp_path / "elementwise" / "o3_now.ptx").is_file()


def test_jit_warmup_times_both_worker_counts():
    if shutil.which("ptxas") is None and not pathlib.Path("/usr/local/cuda/bin/ptxas").exists():
        pytest.skip("ptxas is missing")
    output = run_script("jit_warmup.py", "--rounds", "1", "--shapes", "64x64,128x64")
    assert "| 1 |" in output and "| 2 |" in output


def test_fixed_costs_on_the_elementwise_example():
    if shutil.which("ptxas") is None and not pathlib.Path("/usr/local/cuda/bin/ptxas").exists():
        pytest.skip("ptxas is missing")
    output = run_script("fixed_costs.py", "--repeats", "1", "examples/elementwise.mlir")
    assert "| elementwise | `ptxas --version`" in output
    assert "| elementwise | wall time outside the stages |" in output
