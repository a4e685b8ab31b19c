"""Tests of bench.py's table logic; they need no GPU (python3 -m pytest bench/gpu)."""
import json
import pathlib
import sys

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
    assert bench.describe_shape("gemm", GEMM) == "4096x1024x2048"
    assert bench.describe_shape("softmax", SOFTMAX) == "4096x128"


def test_find_manifests_skips_other_json(tmp_path):
    (tmp_path / "gemm.json").write_text(json.dumps(GEMM))
    (tmp_path / "gemm.result.json").write_text(json.dumps({"passed": True}))
    (tmp_path / "broken.json").write_text("{")
    (tmp_path / "list.json").write_text("[1]")
    found = bench.find_manifests(tmp_path)
    assert [path.name for path, _ in found] == ["gemm.json"]
    assert found[0][1]["entry"] == "gemm"


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


def test_markdown_table():
    row = {"kernel": "gemm_bf16", "shape": "4096x4096x4096", "ours": "0.300 ms (458 TFLOP/s)",
           "peer": "torch.matmul (cuBLAS)", "peer_time": "0.200 ms (687 TFLOP/s)",
           "ratio": "0.67x"}
    assert bench.markdown_table([row]).splitlines() == [
        "| kernel | shape | ours | peer | peer time | ratio (peer / ours) |",
        "|---|---|---:|---|---:|---:|",
        "| gemm_bf16 | 4096x4096x4096 | 0.300 ms (458 TFLOP/s) | torch.matmul (cuBLAS) "
        "| 0.200 ms (687 TFLOP/s) | 0.67x |"]


def test_docs_section_records_date_gpu_and_command():
    section = bench.docs_section("2026-11-22", "NVIDIA H100 80GB HBM3 (driver 580.159.04)",
                                 "bench/gpu/run.sh build/kernels", 10, 100, "TABLE",
                                 ["a note"])
    lines = section.splitlines()
    assert lines[0] == "## Kernel time on NVIDIA H100 80GB HBM3 (driver 580.159.04) (2026-11-22)"
    assert "```sh" in lines and "bench/gpu/run.sh build/kernels" in lines
    assert "median of 100 runs after 10 warm-up runs" in section
    assert "TABLE" in lines and "- a note" in lines


def test_peer_only_gemm_sizes_leave_out_ours():
    assert bench.gemm_sizes_without_ours([(4096, 4096, 4096)]) == [
        (8192, 8192, 8192), (2048, 2048, 2048)]
    assert bench.gemm_sizes_without_ours([]) == bench.GEMM_SIZES
