"""Tests of bench.py's tables and helpers; they need no GPU
(python3 -m pytest bench/gpu; ctest runs them as `bench-gpu`)."""
import json
import pathlib
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench  # noqa: E402

GEMM = {"entry": "gemm", "cubin": "gemm.cubin", "parameters": [
    {"index": 0, "kind": "buffer", "element_type": "bf16", "shape": [4096, 2048]},
    {"index": 1, "kind": "buffer", "element_type": "bf16", "shape": [2048, 1024]},
    {"index": 2, "kind": "buffer", "element_type": "bf16", "shape": [4096, 1024]},
    {"index": 3, "kind": "tensor_map", "tensor_map": 0}]}
SOFTMAX = {"entry": "softmax", "cubin": "softmax.cubin", "parameters": [
    {"index": 0, "kind": "buffer", "element_type": "f32", "shape": [4096, 128]},
    {"index": 1, "kind": "buffer", "element_type": "f32", "shape": [4096, 128]}]}


def test_shapes():
    assert bench.buffers(GEMM) == [("bf16", (4096, 2048)), ("bf16", (2048, 1024)),
                                   ("bf16", (4096, 1024))]
    assert bench.gemm_dims(GEMM) == (4096, 1024, 2048)
    assert bench.shape_label(bench.gemm_dims(GEMM)) == "4096x1024x2048"
    assert bench.describe_shape(SOFTMAX) == "4096x128"


def test_find_manifests_skips_other_json(tmp_path):
    (tmp_path / "gemm.json").write_text(json.dumps(GEMM))
    (tmp_path / "gemm.result.json").write_text(json.dumps({"passed": True}))
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "list.json").write_text("[1]")
    found = bench.find_manifests(tmp_path)
    assert [path.name for path, _ in found] == ["gemm.json"]
    assert found[0][1]["entry"] == "gemm"


def test_reference_kind_by_entry_name():
    assert bench.reference_kind("gemm") == "gemm"
    assert bench.reference_kind("gemm_ws") == "gemm"
    assert bench.reference_kind("tma_roundtrip") == "tma_roundtrip"
    assert bench.reference_kind("gemmx") is None
    assert bench.reference_kind("matmul") is None


def test_kernel_family_strips_the_shape():
    assert bench.kernel_family("gemm_bf16_ws_4096x4096x512") == "gemm_bf16_ws"
    assert bench.kernel_family("gemm_bf16_ws") == "gemm_bf16_ws"
    assert bench.kernel_family("gemm_bf16") == "gemm_bf16"
    assert bench.kernel_family("softmax_64x128") == "softmax_64x128"


def test_group_gemms_prefers_the_example():
    chosen, notes = bench.group_gemms([
        ("gemm_bf16_ws_8192x8192x8192", (8192, 8192, 8192)),
        ("gemm_bf16_ws_4096x4096x512", (4096, 4096, 512)),
        ("gemm_bf16_ws", (8192, 8192, 8192)),
        ("gemm_bf16", (4096, 4096, 4096))])
    assert chosen == {("gemm_bf16_ws", (8192, 8192, 8192)): "gemm_bf16_ws",
                      ("gemm_bf16_ws", (4096, 4096, 512)): "gemm_bf16_ws_4096x4096x512",
                      ("gemm_bf16", (4096, 4096, 4096)): "gemm_bf16"}
    assert notes == ["gemm_bf16_ws_8192x8192x8192 not run: gemm_bf16_ws has the same "
                     "shape (8192x8192x8192)."]


def test_gemm_shapes():
    """Every shape fits the warp-specialized kernel's tiling (a cluster of
    two 128x256 tiles, K steps of 64), none repeats, each says why it is
    there, and the issue's shapes are among them."""
    dims = [(s.m, s.n, s.k) for s in bench.GEMM_SHAPES]
    assert len(set(dims)) == len(dims)
    assert {(8192, 8192, 8192), (4096, 4096, 512), (4096, 4096, 4096)} <= set(dims)
    for shape in bench.GEMM_SHAPES:
        assert shape.m % 256 == 0 and shape.n % 256 == 0 and shape.k % 64 == 0, shape
        assert shape.why
    notes = bench.gemm_shape_notes()
    assert notes[0].startswith("8192x8192x8192: the headline")


def test_list_gemm_shapes_needs_no_torch():
    out = subprocess.run([sys.executable, str(pathlib.Path(bench.__file__)),
                          "--list-gemm-shapes"], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [f"{s.m} {s.n} {s.k}" for s in bench.GEMM_SHAPES]


def test_gemm_table_shapes_keep_order_and_add_ours():
    shapes = bench.gemm_table_shapes([(8192, 8192, 8192), (512, 512, 512), (256, 256, 256)])
    assert shapes[:len(bench.GEMM_SHAPES)] == [(s.m, s.n, s.k) for s in bench.GEMM_SHAPES]
    assert shapes[len(bench.GEMM_SHAPES):] == [(256, 256, 256), (512, 512, 512)]


def test_gemm_columns():
    assert bench.gemm_columns({"gemm_bf16", "gemm_fp8"}) == [
        bench.CUBLAS, "gemm_bf16_ws", "gemm_bf16", "gemm_fp8", bench.TRITON_TMA,
        bench.TRITON_BLOCKED]


def test_times_and_rates():
    assert bench.format_time(0.0123) == "12.3 us"
    assert bench.format_time(1.5) == "1.500 ms"
    assert bench.format_time(None) == "-"
    # 2 * 8192^3 flops in 1.4 ms: 785 TFLOP/s.
    assert bench.format_rate(1.4, 2 * 8192 ** 3, 0) == "785 TFLOP/s"
    # 12 MiB in 5 us: 2517 GB/s.
    assert bench.format_rate(0.005, 0, 12 << 20) == "2517 GB/s"
    assert bench.format_cell(0.005, 0, 12 << 20) == "5.0 us (2517 GB/s)"
    assert bench.format_cell(None, 0, 0) == "-"
    assert bench.format_cell(1.0, 0, 0, failed=True) == "FAILED"


def test_ratio_is_peer_over_ours():
    assert bench.format_ratio(2.0, 1.0) == "0.50x"
    assert bench.format_ratio(1.0, 1.25) == "1.25x"
    assert bench.format_ratio(None, 1.0) == "-"
    assert bench.format_ratio(1.0, None) == "-"


def test_gemm_cells():
    flops = 2 * 8192 ** 3
    # cuBLAS 1.4 ms, this 1.75 ms: 0.80 of cuBLAS's speed.
    assert bench.format_gemm_cell(1.75, flops, 1.4) == "1.750 ms, 628 TFLOP/s, 0.80x"
    assert bench.format_gemm_cell(1.4, flops, None) == "1.400 ms, 785 TFLOP/s"
    assert bench.format_gemm_cell(bench.FAILED, flops, 1.4) == "FAILED"
    assert bench.format_gemm_cell(bench.UNAVAILABLE, flops, 1.4) == "unavailable"
    assert bench.format_gemm_cell(None, flops, 1.4) == "-"


def test_gemm_markdown():
    columns = [bench.CUBLAS, "gemm_bf16_ws", bench.TRITON_TMA]
    rows = [((8192, 8192, 8192), {bench.CUBLAS: 1.4, "gemm_bf16_ws": 1.75,
                                  bench.TRITON_TMA: bench.UNAVAILABLE}),
            ((4096, 4096, 512), {bench.CUBLAS: bench.FAILED, "gemm_bf16_ws": 0.025})]
    assert bench.gemm_markdown(columns, rows).splitlines() == [
        "| M x N x K | cuBLAS (torch.matmul) | gemm_bf16_ws | Triton persistent TMA |",
        "|---|---:|---:|---:|",
        "| 8192x8192x8192 | 1.400 ms, 785 TFLOP/s, 1.00x | 1.750 ms, 628 TFLOP/s, 0.80x "
        "| unavailable |",
        "| 4096x4096x512 | FAILED | 25.0 us, 687 TFLOP/s | - |"]


def test_unavailable_notes_group_shapes_by_reason():
    assert bench.unavailable_notes([("Triton persistent TMA: CompilationError: x", "a"),
                                    ("Triton blocked: OutOfResources: y", "a"),
                                    ("Triton persistent TMA: CompilationError: x", "b")]) == [
        "Unavailable at a, b: Triton persistent TMA: CompilationError: x",
        "Unavailable at a: Triton blocked: OutOfResources: y"]


def test_markdown_table():
    row = {"kernel": "softmax", "shape": "4096x128", "ours": "10.0 us (420 GB/s)",
           "peer": "torch.softmax", "peer_time": "5.0 us (840 GB/s)", "ratio": "0.50x"}
    assert bench.markdown_table([row]).splitlines() == [
        "| kernel | shape | ours | peer | peer time | ratio (peer / ours) |",
        "|---|---|---:|---|---:|---:|",
        "| softmax | 4096x128 | 10.0 us (420 GB/s) | torch.softmax | 5.0 us (840 GB/s) "
        "| 0.50x |"]


def test_docs_section_records_date_gpu_and_command():
    section = bench.docs_section("2026-11-22", "NVIDIA H100 80GB HBM3 (driver 580.159.04)",
                                 "bench/gpu/run.sh build/kernels", 10, 100, "GEMM TABLE",
                                 ["a GEMM note"], "TABLE", ["a note"])
    lines = section.splitlines()
    assert lines[0] == "## Kernel time on NVIDIA H100 80GB HBM3 (driver 580.159.04) (2026-11-22)"
    assert "```sh" in lines and "bench/gpu/run.sh build/kernels" in lines
    assert "median of 100 runs after 10 warm-up runs" in section
    assert "poisoned with NaN" in section
    assert lines.index("### GEMM (bf16 in, f32 accumulation, bf16 out)") < \
        lines.index("GEMM TABLE") < lines.index("- a GEMM note") < \
        lines.index("### The other examples") < lines.index("TABLE") < lines.index("- a note")


def test_docs_section_without_other_examples():
    section = bench.docs_section("2026-11-22", "GPU", "cmd", 10, 100, "GEMM TABLE", [], "", [])
    assert "### The other examples" not in section
    assert "GEMM TABLE" in section


def test_triton_peers_compile_for_hopper():
    """The Triton GEMMs compile for sm_90a with the installed Triton (no
    GPU needed): the persistent one through TMA and wgmma."""
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    import triton_peers
    if triton_peers.TensorDescriptor is None:
        pytest.skip(f"Triton {triton.__version__} has no host-side TMA descriptors")
    signature = {"a_desc": "tensordesc<bf16[128,64]>", "b_desc": "tensordesc<bf16[64,256]>",
                 "c_desc": "tensordesc<bf16[128,128]>", "M": "i32", "N": "i32", "K": "i32"}
    constants = {"BM": 128, "BN": 256, "BK": 64, "GROUP_M": 8, "EPILOGUE_SUBTILE": True,
                 "NUM_SMS": 132}
    kernel = triton.compile(
        ASTSource(triton_peers.matmul_tma_persistent, signature, constants),
        target=GPUTarget("cuda", 90, 32), options={"num_warps": 8, "num_stages": 4})
    ptx = kernel.asm["ptx"]
    assert "cp.async.bulk.tensor" in ptx and "wgmma.mma_async" in ptx
