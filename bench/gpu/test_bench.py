"""Tests of bench.py's tables and helpers; they need no GPU
(python3 -m pytest bench/gpu; ctest runs them as `bench-gpu`)."""
import json
import math
import os
import pathlib
import random
import subprocess
import sys
import textwrap

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import bench  # noqa: E402

try:  # checks.py and its tests need NumPy and ml_dtypes
    import checks
    import ml_dtypes
    import numpy as np
    BF16, E4M3 = ml_dtypes.bfloat16, ml_dtypes.float8_e4m3fn
except ImportError:  # those tests skip
    ml_dtypes = None
needs_numpy = pytest.mark.skipif(ml_dtypes is None, reason="NumPy or ml_dtypes is missing")

EXAMPLES = pathlib.Path(__file__).parents[2] / "python" / "examples"


def build_folder():
    """$MOSAIC_BUILD, else this tree's build/ (which may not exist)."""
    return pathlib.Path(os.environ.get("MOSAIC_BUILD", pathlib.Path(__file__).parents[2] / "build"))


def import_example(name):
    """python/examples/NAME.py as a module, with the build's mosaic_gpu
    (build_folder()/python) on the path; skips where either is missing."""
    if not (EXAMPLES / f"{name}.py").exists():
        pytest.skip(f"python/examples/{name}.py does not exist in this tree")
    added = [str(EXAMPLES), str(build_folder() / "python")]
    sys.path[:0] = added
    try:
        return pytest.importorskip(name, reason="mosaic_gpu is not importable here")
    finally:
        for path in added:
            sys.path.remove(path)

GEMM = {"entry": "gemm", "cubin": "gemm.cubin", "parameters": [
    {"index": 0, "kind": "buffer", "element_type": "bf16", "shape": [4096, 2048]},
    {"index": 1, "kind": "buffer", "element_type": "bf16", "shape": [2048, 1024]},
    {"index": 2, "kind": "buffer", "element_type": "bf16", "shape": [4096, 1024]},
    {"index": 3, "kind": "tensor_map", "tensor_map": 0}]}
ATTENTION = {"entry": "attention_causal_fwd", "cubin": "attention.cubin", "parameters": [
    {"index": i, "kind": "buffer", "element_type": "bf16", "shape": [64, 4096, 128]}
    for i in range(4)] + [
    {"index": 4, "kind": "buffer", "element_type": "f32", "shape": [64, 4096]}]}
SOFTMAX = {"entry": "softmax", "cubin": "softmax.cubin", "parameters": [
    {"index": 0, "kind": "buffer", "element_type": "f32", "shape": [4096, 128]},
    {"index": 1, "kind": "buffer", "element_type": "f32", "shape": [4096, 128]}]}


def test_shapes():
    assert bench.buffers(GEMM) == [("bf16", (4096, 2048)), ("bf16", (2048, 1024)),
                                   ("bf16", (4096, 1024))]
    assert bench.gemm_dims(GEMM) == (4096, 1024, 2048)
    assert bench.shape_label(bench.gemm_dims(GEMM)) == "4096x1024x2048"
    assert bench.describe_shape(SOFTMAX) == "4096x128"
    assert bench.attention_dims(ATTENTION) == (64, 4096, 128)
    # python/examples/attention.py's token-major kernel: 4 x 16 heads of 4096.
    token_major = {"parameters": [
        {"index": i, "kind": "buffer", "element_type": "bf16", "shape": [16384, 2048]}
        for i in range(4)] + [
        {"index": 4, "kind": "buffer", "element_type": "f32", "shape": [4, 16, 4096]}]}
    assert bench.attention_dims(token_major) == (64, 4096, 128)


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
    # The longest reference that begins the entry, as mosaic-run picks it.
    assert bench.reference_kind("attention_fwd") == "attention"
    assert bench.reference_kind("attention_causal_fwd") == "attention_causal"
    assert bench.reference_kind("attention_causal") == "attention_causal"


def test_kernel_family_strips_the_shape():
    assert bench.kernel_family("gemm_bf16_ws_4096x4096x512") == "gemm_bf16_ws"
    assert bench.kernel_family("gemm_bf16_ws") == "gemm_bf16_ws"
    assert bench.kernel_family("gemm_bf16") == "gemm_bf16"
    assert bench.kernel_family("softmax_64x128") == "softmax_64x128"
    assert bench.kernel_family("attention_causal_fwd_4x16x4096x128") == "attention_causal_fwd"


def test_group_kernels_prefers_the_example():
    chosen, notes = bench.group_kernels([
        (stem, bench.kernel_family(stem), dims) for stem, dims in (
            ("gemm_bf16_ws_8192x8192x8192", (8192, 8192, 8192)),
            ("gemm_bf16_ws_4096x4096x512", (4096, 4096, 512)),
            ("gemm_bf16_ws", (8192, 8192, 8192)),
            ("gemm_bf16", (4096, 4096, 4096)))])
    assert chosen == {("gemm_bf16_ws", (8192, 8192, 8192)): "gemm_bf16_ws",
                      ("gemm_bf16_ws", (4096, 4096, 512)): "gemm_bf16_ws_4096x4096x512",
                      ("gemm_bf16", (4096, 4096, 4096)): "gemm_bf16"}
    assert notes == ["gemm_bf16_ws_8192x8192x8192 not run: gemm_bf16_ws has the same "
                     "shape (8192x8192x8192)."]


def test_gemm_shapes():
    """Every shape fits the warp-specialized kernel's tiling (a cluster of
    two 128x256 tiles, K steps of 64) but the any-shape rows, which still
    meet TMA's 16-byte row alignment and K x N B's 64-column tiles; none
    repeats, each says why it is there, and the issue's shapes are among
    them."""
    dims = [(s.m, s.n, s.k) for s in bench.GEMM_SHAPES]
    assert len(set(dims)) == len(dims)
    assert {(8192, 8192, 8192), (4096, 4096, 512), (4096, 4096, 4096),
            (1024, 1024, 32768)} <= set(dims)
    any_shape = [s for s in bench.GEMM_SHAPES if not bench.gemm_is_tiled(s)]
    assert any_shape and all(s.why.startswith("any shape") for s in any_shape)
    for shape in bench.GEMM_SHAPES:
        # Rows of A (K bf16), B (N bf16) and C (N bf16) 16-byte aligned.
        assert shape.k % 8 == 0 and shape.n % 64 == 0, shape
        assert shape.why
    notes = bench.gemm_shape_notes()
    assert notes[0].startswith("8192x8192x8192: the headline")
    # The LLM vocabulary row, and why not 50257.
    assert (4000, 50304, 1000) in dims
    assert "50257" in bench.GEMM_SHAPES[dims.index((4000, 50304, 1000))].why


def test_split_k_shapes_have_few_tiles():
    """Split-K only where the 128x256 tiles fill less than half the SMs
    (gemm_ws.py's split_for), with splits that leave each unit at least 8
    of the K steps; the deep-K row among them."""
    split = [s for s in bench.GEMM_SHAPES if s.splits]
    assert (1024, 1024, 32768) in [(s.m, s.n, s.k) for s in split]
    for shape in split:
        tiles = -(-shape.m // 128) * -(-shape.n // 256)
        assert tiles * 2 < 132, shape
        for splits in shape.splits:
            assert 2 <= splits <= 8 and shape.k // 64 // splits >= 8, shape


def test_split_k_agrees_with_gemm_ws_split_for():
    """The first split of each split-K row is gemm_ws.py --split-k auto's
    choice (where python/examples/gemm_ws.py and mosaic_gpu import)."""
    gemm_ws = import_example("gemm_ws")
    for shape in bench.GEMM_SHAPES:
        if shape.splits:
            assert gemm_ws.split_for(shape.m, shape.n, shape.k) == shape.splits[0], shape


def test_new_gemm_shapes_are_the_split_and_any_shape_rows():
    assert bench.new_gemm_shapes() == [(1024, 1024, 32768), (256, 4096, 14336),
                                       (4000, 50304, 1000), (3000, 4096, 3000)]
    shapes = [(s.m, s.n, s.k) for s in bench.GEMM_SHAPES]
    assert bench.select_gemm_shapes(shapes, ["gemm", "gemm-new"]) == shapes
    assert bench.select_gemm_shapes(shapes, ["gemm-new", "fp8"]) == bench.new_gemm_shapes()
    assert bench.select_gemm_shapes(shapes, ["fp8"]) == []


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
    assert bench.gemm_columns({"gemm_bf16_ws"}, [4, 2, 4]) == [
        bench.CUBLAS, "gemm_bf16_ws", "gemm_bf16", "gemm_bf16_ws split-K 2",
        "gemm_bf16_ws split-K 4", bench.TRITON_TMA, bench.TRITON_BLOCKED]


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


def test_compared_cells():
    flops = 2 * 8192 ** 3
    # cuBLAS 1.4 ms, this 1.75 ms: 0.80 of cuBLAS's speed.
    assert bench.format_compared_cell(1.75, flops, 1.4) == "1.750 ms, 628 TFLOP/s, 0.80x"
    assert bench.format_compared_cell(1.4, flops, None) == "1.400 ms, 785 TFLOP/s"
    assert bench.format_compared_cell(bench.FAILED, flops, 1.4) == "FAILED"
    assert bench.format_compared_cell(bench.UNAVAILABLE, flops, 1.4) == "unavailable"
    assert bench.format_compared_cell(None, flops, 1.4) == "-"


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
                                 "bench/gpu/run.sh build/kernels", 10, 100, [
                                     bench.gemm_section("GEMM TABLE", ["a GEMM note"]),
                                     bench.attention_section("ATTENTION TABLE",
                                                             ["an attention note"]),
                                     bench.other_examples_section("TABLE", ["a note"])])
    lines = section.splitlines()
    assert lines[0] == "## Kernel time on NVIDIA H100 80GB HBM3 (driver 580.159.04) (2026-11-22)"
    assert "```sh" in lines and "bench/gpu/run.sh build/kernels" in lines
    assert "median of 100 runs after 10 warm-up runs" in section
    assert "poisoned with NaN" in section
    assert lines.index("### GEMM (bf16 in, f32 accumulation, bf16 out)") < \
        lines.index("GEMM TABLE") < lines.index("- a GEMM note") < \
        lines.index("### Attention forward (bf16 Q, K, V and O, f32 LSE)") < \
        lines.index("ATTENTION TABLE") < lines.index("- an attention note") < \
        lines.index("### The other examples") < lines.index("TABLE") < lines.index("- a note")


def test_docs_section_leaves_out_empty_tables():
    section = bench.docs_section("2026-11-22", "GPU", "cmd", 10, 100, [
        bench.gemm_section("GEMM TABLE", []), bench.attention_section("", []),
        bench.other_examples_section("", ["a note"])])
    assert "GEMM TABLE" in section
    assert "### Attention" not in section
    # Notes without a table keep their heading, not the table's legend.
    lines = section.splitlines()
    assert lines[lines.index("### The other examples") + 2] == "- a note"
    assert "The ratio is" not in section


def test_attention_shapes():
    """Sequence lengths 512 to 16k at head_dim 128, batch x seq = 16k tokens
    of 16 heads in each (so every shape has 2048 blocks of 128 queries),
    lengths that the kernel's 128-row blocks and 128-key tiles divide, each
    shape saying why it is there, the example's shape among them."""
    shapes = bench.ATTENTION_SHAPES
    assert [s.seq for s in shapes] == [512, 1024, 2048, 4096, 8192, 16384]
    for shape in shapes:
        assert shape.head_dim == 128 and shape.heads == 16, shape
        assert shape.batch * shape.seq == 16384, shape
        assert shape.seq % 128 == 0 and shape.why, shape
        assert shape.batch * shape.heads * shape.seq // 128 == 2048
    assert bench.attention_dims(ATTENTION) in {bench.case_dims(c)
                                               for c in bench.attention_table_cases([])}
    assert bench.attention_shape_notes()[0].startswith("32x16x512x128: short sequences")


def test_attention_table_cases_both_masks_then_ours():
    cases = bench.attention_table_cases([(True, (64, 4096, 128)), (False, (2, 256, 64)),
                                         (True, (2, 256, 64))])
    table = [bench.AttentionCase(s.batch, s.heads, s.seq, s.head_dim, causal)
             for s in bench.ATTENTION_SHAPES for causal in (False, True)]
    assert cases[:len(table)] == table
    assert cases[len(table):] == [bench.AttentionCase(1, 2, 256, 64, False),
                                  bench.AttentionCase(1, 2, 256, 64, True)]


def test_list_attention_shapes_needs_no_torch():
    out = subprocess.run([sys.executable, str(pathlib.Path(bench.__file__)),
                          "--list-attention-shapes"], capture_output=True, text=True,
                         check=True)
    lines = out.stdout.splitlines()
    assert lines[:2] == ["32 16 512 128 full", "32 16 512 128 causal"]
    assert len(lines) == 2 * len(bench.ATTENTION_SHAPES)


def test_attention_kernels_by_case():
    """The example (stem == entry) wins over a generated kernel of its shape;
    the mask comes from the entry's reference."""
    by_case, notes = bench.attention_kernels_by_case([
        ("attention_fwd_4x16x4096x128", "attention_fwd", (64, 4096, 128)),
        ("attention_fwd", "attention_fwd", (64, 4096, 128)),
        ("attention_causal_fwd_4x16x4096x128", "attention_causal_fwd", (64, 4096, 128)),
        ("attention_fwd_1x16x16384x128", "attention_fwd", (16, 16384, 128))])
    assert by_case == {(False, (64, 4096, 128)): "attention_fwd",
                       (True, (64, 4096, 128)): "attention_causal_fwd_4x16x4096x128",
                       (False, (16, 16384, 128)): "attention_fwd_1x16x16384x128"}
    assert notes == ["attention_fwd_4x16x4096x128 not run: attention_fwd has the same shape "
                     "(64x4096x128)."]


def test_attention_flops_and_table():
    full = bench.AttentionCase(1, 16, 16384, 128, False)
    causal = full._replace(causal=True)
    assert bench.attention_flops(full) == 4 * 16 * 16384 ** 2 * 128
    assert bench.attention_flops(causal) * 2 == bench.attention_flops(full)
    # 2.2 TFLOP: 4.4 ms is 500 TFLOP/s; SDPA at 5.5 ms is 0.80 of this speed.
    rows = [(full, {bench.SDPA_FLASH: 5.5, bench.SDPA_CUDNN: 4.0, bench.OURS_ATTENTION: 4.4,
                    bench.TRITON_ATTENTION: bench.UNAVAILABLE}),
            (causal, {bench.SDPA_FLASH: bench.FAILED, bench.OURS_ATTENTION: 2.2})]
    assert bench.attention_markdown(rows).splitlines() == [
        "| batch x heads x seq x head_dim | torch SDPA (flash) | torch SDPA (cuDNN) | ours | "
        "Triton fused attention |",
        "|---|---:|---:|---:|---:|",
        "| 1x16x16384x128 | 5.500 ms, 400 TFLOP/s, 1.00x | 4.000 ms, 550 TFLOP/s, 1.38x "
        "| 4.400 ms, 500 TFLOP/s, 1.25x | unavailable |",
        "| 1x16x16384x128, causal | FAILED | - | 2.200 ms, 500 TFLOP/s | - |"]


def test_sample_attention_rows():
    samples = bench.sample_attention_rows(random.Random(0), 512, 16384)
    assert len(samples) == bench.ATTENTION_CHECKED_HEADS
    assert len({head for head, _ in samples}) == len(samples)
    for head, rows in samples:
        assert 0 <= head < 512
        assert rows == sorted(set(rows)) and len(rows) == bench.ATTENTION_CHECKED_ROWS
        assert rows[0] == 0 and rows[-1] == 16383
    # Fewer heads and rows than asked for: all of them.
    assert bench.sample_attention_rows(random.Random(0), 2, 4) == [(0, [0, 1, 2, 3]),
                                                                  (1, [0, 1, 2, 3])]


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


@pytest.mark.parametrize("scaling, block_n", [("tensor", 256), ("row", 128), ("block", 128)])
def test_triton_fp8_gemm_compiles_for_hopper(scaling, block_n):
    """The Triton FP8 GEMM compiles for sm_90a with the installed Triton (no
    GPU needed), through TMA and e4m3 wgmma, with each scaling."""
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    import triton_peers
    if triton_peers.TensorDescriptor is None:
        pytest.skip(f"Triton {triton.__version__} has no host-side TMA descriptors")
    signature = {"a_desc": "tensordesc<fp8e4nv[128,128]>",
                 "b_desc": f"tensordesc<fp8e4nv[{block_n},128]>",
                 "c_desc": f"tensordesc<bf16[128,{block_n}]>", "a_scale_ptr": "*fp32",
                 "b_scale_ptr": "*fp32", "M": "i32", "N": "i32", "K": "i32"}
    constants = {"BM": 128, "BN": block_n, "BK": 128, "GROUP_M": 8,
                 "SCALING": triton_peers.FP8_SCALINGS[scaling], "NUM_SMS": 132}
    kernel = triton.compile(ASTSource(triton_peers.matmul_fp8, signature, constants),
                            target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": 8, "num_stages": 3})
    ptx = kernel.asm["ptx"]
    assert "cp.async.bulk.tensor" in ptx
    assert f"wgmma.mma_async.sync.aligned.m64n{block_n}k32.f32.e4m3.e4m3" in ptx


@pytest.mark.parametrize("causal, block_n", [(False, 128), (True, 64)])
def test_triton_attention_compiles_for_hopper(causal, block_n):
    """The Triton fused attention compiles for sm_90a with the installed
    Triton (no GPU needed), through TMA and wgmma; causal with two key
    blocks per diagonal block."""
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    import triton_peers
    if triton_peers.TensorDescriptor is None:
        pytest.skip(f"Triton {triton.__version__} has no host-side TMA descriptors")
    rows, keys = "tensordesc<bf16[128,128]>", f"tensordesc<bf16[{block_n},128]>"
    signature = {"q_desc": rows, "k_desc": keys, "v_desc": keys, "o_desc": rows,
                 "lse_ptr": "*fp32", "seq": "i32", "scale_log2": "fp32"}
    constants = {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": block_n, "CAUSAL": causal}
    kernel = triton.compile(ASTSource(triton_peers.attention_fwd, signature, constants),
                            target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": 8, "num_stages": 3})
    ptx = kernel.asm["ptx"]
    assert "cp.async.bulk.tensor" in ptx and "wgmma.mma_async" in ptx


def test_triton_launchers_load_without_a_gpu():
    """load() builds every launcher (the autotuners check their keys name
    kernel arguments) and the attention pre-hook sets each config's boxes."""
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    import types
    import triton_peers
    if triton_peers.TensorDescriptor is None:
        pytest.skip(f"Triton {triton.__version__} has no host-side TMA descriptors")
    launchers, notes = triton_peers.load(132)
    assert notes == []
    assert {"matmul_tma_persistent", "attention", "matmul_fp8", "attention_fp8"} <= set(launchers)
    assert launchers["matmul_fp8"].config() == "not tuned"
    # Block scaling keeps the 128-column tiles alone.
    configs = triton_peers.fp8_configs()
    block = triton_peers.prune_fp8_configs(configs, {}, SCALING=2)
    assert block and all(config.kwargs["BN"] == 128 for config in block)
    assert triton_peers.prune_fp8_configs(configs, {}, SCALING=0) == configs
    assert launchers["attention"].config() == "not tuned"
    descriptors = {name: types.SimpleNamespace(block_shape=None)
                   for name in ("q_desc", "k_desc", "v_desc", "o_desc")}
    for config in triton_peers.attention_configs():
        config.pre_hook(dict(descriptors, **config.kwargs, HEAD_DIM=128))
        assert descriptors["q_desc"].block_shape == descriptors["o_desc"].block_shape == \
            [128, 128]
        assert descriptors["k_desc"].block_shape == descriptors["v_desc"].block_shape == \
            [config.kwargs["BLOCK_N"], 128]


# Runs the Triton fused attention in Triton's interpreter (on the CPU; it
# must be on before triton_peers is imported) and prints the relative errors
# of O and LSE against bench.py's float64 reference, on all rows. f16: the
# interpreter's bf16 dot is wrong (Triton 3.9).
INTERPRETED_ATTENTION = textwrap.dedent("""
    import math, sys
    import torch
    import bench, triton_peers
    heads, seq, d = 2, 384, 128
    for causal in (False, True):
        for block_n in (64, 128):
            q, k, v = (torch.randn(heads, seq, d).to(torch.float16) for _ in range(3))
            o = torch.full_like(q, math.nan)
            lse = torch.full((heads, seq), math.nan)
            boxes = (128, block_n, block_n, 128)
            descriptors = [triton_peers.TensorDescriptor.from_tensor(t.view(heads * seq, d),
                                                                     [rows, d])
                           for t, rows in zip((q, k, v, o), boxes)]
            triton_peers.attention_fwd[(seq // 128, heads)](
                *descriptors, lse, seq, math.log2(math.e) / math.sqrt(d), HEAD_DIM=d,
                BLOCK_M=128, BLOCK_N=block_n, CAUSAL=causal)
            every_row = [(head, list(range(seq))) for head in range(heads)]
            o_ref, lse_ref = bench.attention_reference(torch, q, k, v, causal, every_row)
            print(causal, block_n,
                  bench.relative_error(torch, bench.sampled(torch, o, every_row), o_ref),
                  bench.relative_error(torch, bench.sampled(torch, lse, every_row), lse_ref))
""")


def test_triton_attention_matches_float64_in_the_interpreter():
    """The Triton fused attention computes attention: O within f16's
    rounding of P and O, the LSE within f32's, with and without the causal
    mask, with key blocks of 64 (two per diagonal block) and of 128."""
    pytest.importorskip("torch", reason="PyTorch is not installed")
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    import triton_peers
    if triton_peers.TensorDescriptor is None:
        pytest.skip(f"Triton {triton.__version__} has no host-side TMA descriptors")
    here = pathlib.Path(__file__).parent
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", INTERPRETED_ATTENTION], env=env,
                         capture_output=True, text=True, check=True)
    runs = [line.split() for line in out.stdout.splitlines()]
    assert [run[:2] for run in runs] == [["False", "64"], ["False", "128"], ["True", "64"],
                                         ["True", "128"]]
    for run in runs:
        assert float(run[2]) < 1e-3 and float(run[3]) < 1e-6, run


class WrongPeer:
    """Stands in for the Triton launchers: writes attention's O with one
    element changed, or one left unwritten."""

    def __init__(self, torch, unwritten):
        self.torch, self.unwritten = torch, unwritten

    def __call__(self, q, k, v, o, lse, causal):
        torch = self.torch
        scores = (q.float() @ k.float().transpose(1, 2)) / math.sqrt(q.shape[-1])
        if causal:
            scores = scores.masked_fill(torch.ones(scores.shape[1:], dtype=torch.bool).triu(1),
                                        -math.inf)
        lse_rows = torch.logsumexp(scores, -1)
        written = torch.softmax(scores, -1) @ v.float()
        if self.unwritten:
            written[-1, -1, -1] = math.nan
        else:
            written[:, 0] += 1
        o.copy_(written)
        lse.copy_(lse_rows)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_peers_check_their_outputs(causal):
    """On the CPU: SDPA (any backend) passes the check; a peer that gets the
    first row wrong fails it (the first row is always checked), and one that
    leaves an element unwritten gets an infinite error, the element being
    poisoned."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    case = bench.AttentionCase(2, 2, 256, 64, causal)
    samples = bench.sample_attention_rows(random.Random(0), 4, 256)
    generator = torch.Generator().manual_seed(0)
    for unwritten in (False, True):
        triton = {"attention": WrongPeer(torch, unwritten)}
        sdpa, _ = bench.load_sdpa(torch)
        peers = dict(bench.attention_peers(torch, triton, sdpa, case, samples, generator))
        assert list(peers) == [bench.SDPA_FLASH, bench.SDPA_CUDNN, bench.TRITON_ATTENTION]
        # Run without their backends' contexts: on the CPU neither backend is.
        for peer in peers.values():
            peer.run()
            peer.poison()
            peer.run()
        assert peers[bench.SDPA_FLASH].check() < 1e-2
        assert peers[bench.SDPA_CUDNN].check() < 1e-2
        error = peers[bench.TRITON_ATTENTION].check()
        assert error == math.inf if unwritten else 1e-2 < error < math.inf


def test_find_manifests_leaves_collective_kernels_to_collective_py(tmp_path):
    (tmp_path / "gemm.json").write_text(json.dumps(GEMM))
    collective = dict(GEMM, entry="allgather_matmul", parameters=GEMM["parameters"] + [
        {"index": 4, "kind": "collective"}])
    (tmp_path / "allgather_matmul_d2_128x256x128.json").write_text(json.dumps(collective))
    found = [data["entry"] for _, data in bench.find_manifests(tmp_path)]
    assert found == ["gemm"]


def test_list_generated_names_every_new_kernel():
    """bench.py --list-generated (for compile-kernels.sh, no torch needed):
    NAME SCRIPT ARGS per kernel, every name parsed back to its table's case."""
    out = subprocess.run([sys.executable, str(pathlib.Path(bench.__file__)),
                          "--list-generated"], capture_output=True, text=True, check=True)
    lines = [line.split() for line in out.stdout.splitlines()]
    assert lines[0] == ["gemm_bf16_ws_splitk2_1024x1024x32768", "gemm_ws.py", "--m", "1024",
                        "--n", "1024", "--k", "32768", "--split-k", "2"]
    names = [line[0] for line in lines]
    assert len(set(names)) == len(names)
    attention = [line for line in lines if line[1] == bench.ATTENTION_GENERATOR]
    assert attention == [[name, script, *map(str, args)]
                         for name, script, args in bench.attention_kernels()]
    lines = [line for line in lines if line not in attention]
    assert len(lines) == (sum(len(s.splits) for s in bench.GEMM_SHAPES)
                          + len(bench.EPILOGUE_CASES) + len(bench.FP8_CASES))
    kinds = {}
    for name, script, *args in lines:
        kernel = bench.parse_new_kernel(name)
        assert kernel is not None, name
        kinds[kernel.kind] = kinds.get(kernel.kind, 0) + 1
        flags = dict(zip(args[::2], args[1::2]))
        assert tuple(int(flags[f]) for f in ("--m", "--n", "--k")) == kernel.dims
        param = {"split": "--split-k", "epilogue": "--epilogue", "fp8": "--scaling"}[kernel.kind]
        assert flags[param] == str(kernel.param)
        assert script == ("gemm_fp8.py" if kernel.kind == "fp8" else "gemm_ws.py")
    assert kinds == {"split": 4, "epilogue": 4, "fp8": 9}


def test_parse_new_kernel():
    assert bench.parse_new_kernel("gemm_bf16_ws_splitk4_256x4096x14336") == \
        bench.NewKernel("split", (256, 4096, 14336), 4)
    assert bench.parse_new_kernel("gemm_bf16_ws_splitk4_256x4096x14336.fixup") == \
        bench.NewKernel("fixup", (256, 4096, 14336), 4)
    assert bench.parse_new_kernel("gemm_bf16_ws_bias_gelu_tanh_8192x8192x8192") == \
        bench.NewKernel("epilogue", (8192, 8192, 8192), "bias_gelu_tanh")
    assert bench.parse_new_kernel("gemm_fp8_block_4096x4096x4096") == \
        bench.NewKernel("fp8", (4096, 4096, 4096), "block")
    # The bf16 GEMM table's own kernels, and names that only look alike.
    for stem in ("gemm_bf16_ws_8192x8192x8192", "gemm_bf16_ws", "gemm_fp8_nope_1x2x3",
                 "gemm_bf16_ws_splitk2_1024x1024x32768.fixup.result",
                 "gemm_bf16_ws_gelu_erf_8x8x8"):
        assert bench.parse_new_kernel(stem) is None, stem


def test_pair_split_kernels():
    kernels = {stem: bench.parse_new_kernel(stem) for stem in (
        "gemm_bf16_ws_splitk2_1024x1024x32768", "gemm_bf16_ws_splitk2_1024x1024x32768.fixup",
        "gemm_bf16_ws_splitk4_1024x1024x32768", "gemm_bf16_ws_splitk2_256x4096x14336.fixup")}
    pairs, notes = bench.pair_split_kernels(kernels)
    assert pairs == {((1024, 1024, 32768), 2): ("gemm_bf16_ws_splitk2_1024x1024x32768",
                                                "gemm_bf16_ws_splitk2_1024x1024x32768.fixup")}
    assert notes == [
        "gemm_bf16_ws_splitk4_1024x1024x32768 not run: its fix-up kernel "
        "gemm_bf16_ws_splitk4_1024x1024x32768.fixup was not compiled.",
        "gemm_bf16_ws_splitk2_256x4096x14336.fixup not run: its split-K GEMM was not compiled."]


def test_parse_tables():
    assert bench.parse_tables("epilogue, fp8,gemm-new") == ["gemm-new", "fp8", "epilogue"]
    assert bench.parse_tables("attention-new") == ["attention-new"]
    assert bench.parse_tables(",".join(bench.DEFAULT_TABLES)) == list(bench.DEFAULT_TABLES)
    for bad in ("", "gemm,bogus"):
        with pytest.raises(ValueError):
            bench.parse_tables(bad)


def test_fp8_and_epilogue_tables():
    """The new tables from fake results: ratios against torch._scaled_mm and
    against the unfused torch sequence, a failure, an unavailable peer and a
    cell never run."""
    flops = 2 * 8192 ** 3
    tensor = bench.Fp8Case(8192, 8192, 8192, "tensor")
    block = tensor._replace(scaling="block")
    # 1.1 TFLOP in 1 ms: 1100 TFLOP/s; ours at 0.8 ms is 1.25x cuBLAS.
    assert flops == 1_099_511_627_776
    assert bench.fp8_markdown([
        (tensor, {bench.SCALED_MM: 1.0, bench.OURS_FP8: 0.8, bench.TRITON_FP8: 1.25}),
        (block, {bench.SCALED_MM: bench.UNAVAILABLE, bench.OURS_FP8: bench.FAILED})
    ]).splitlines() == [
        "| M x N x K, scaling | cuBLAS (torch._scaled_mm) | ours (gemm_fp8) | Triton FP8 |",
        "|---|---:|---:|---:|",
        "| 8192x8192x8192, tensor | 1.000 ms, 1100 TFLOP/s, 1.00x | 800.0 us, 1374 TFLOP/s, "
        "1.25x | 1.250 ms, 880 TFLOP/s, 0.80x |",
        "| 8192x8192x8192, block | unavailable | FAILED | - |"]
    case = bench.EpilogueCase(4096, 16384, 4096, "bias_gelu_tanh")
    assert bench.epilogue_markdown([
        (case, {bench.TORCH_EAGER: 1.0, bench.CUBLAS_FUSED: 0.8, bench.OURS_FUSED: 0.75})
    ]).splitlines() == [
        "| M x N x K, epilogue | torch eager (unfused) | cuBLAS epilogue | torch.compile "
        "| ours (fused) |",
        "|---|---:|---:|---:|---:|",
        "| 4096x16384x4096, bias_gelu_tanh | 1.000 ms, 550 TFLOP/s, 1.00x | 800.0 us, "
        "687 TFLOP/s, 1.25x | - | 750.0 us, 733 TFLOP/s, 1.33x |"]


def test_docs_section_with_the_new_tables_only():
    """A run of the new tables alone: their sections, none of the others."""
    section = bench.docs_section("2026-11-27", "GPU", "cmd", 10, 100, [
        bench.gemm_section("", []), bench.attention_section("", []),
        bench.other_examples_section("", []),
        bench.fp8_section("FP8 TABLE", ["an fp8 note"]),
        bench.epilogue_section("EPILOGUE TABLE", [])])
    lines = section.splitlines()
    assert "### GEMM (bf16 in, f32 accumulation, bf16 out)" not in lines
    assert "### Attention forward (bf16 Q, K, V and O, f32 LSE)" not in lines
    fp8 = lines.index("### FP8 GEMM (e4m3 A and Bt, f32 scales, f32 accumulation, bf16 C)")
    epilogue = lines.index("### Fused epilogues (bf16 GEMM, f32 accumulation, then the "
                           "epilogue, bf16 C)")
    assert fp8 < lines.index("FP8 TABLE") < lines.index("- an fp8 note") < epilogue < \
        lines.index("EPILOGUE TABLE")
    assert "sum of the two medians" in bench.gemm_section("T", []).legend


@needs_numpy
def test_new_tables_cases():
    assert bench.FP8_CASES[:3] == [bench.Fp8Case(8192, 8192, 8192, s)
                                   for s in ("tensor", "row", "block")]
    for case in bench.FP8_CASES:
        # Block scaling by whole 128 x 128 blocks of Bt; rows 16-byte aligned.
        assert case.n % 128 == 0 and case.k % 128 == 0, case
    assert {(c.m, c.n, c.k) for c in bench.EPILOGUE_CASES} == {(8192, 8192, 8192),
                                                               (4096, 16384, 4096)}
    assert {c.epilogue for c in bench.EPILOGUE_CASES} <= set(checks.EPILOGUE_REFERENCES)


# ---------------------------------------------------------------------------
# checks.py: the float64 checks of dumped bytes, each against an output
# computed as the kernel would (f32 arithmetic, then the output's rounding)
# and against broken ones, which must fail.



def normal(rng, shape, dtype):
    """Standard normal values rounded to `dtype`, as mosaic-run draws them."""
    return rng.standard_normal(shape).astype(np.float32).astype(dtype)


@needs_numpy
def test_decode_dumps_round_trip():
    rng = np.random.default_rng(0)
    a, b = normal(rng, (4, 8), BF16), normal(rng, (8,), E4M3)
    scale, c = normal(rng, (3,), np.float32), normal(rng, (4, 2), BF16)
    manifest = [("bf16", (4, 8)), ("f8E4M3FN", (8,)), ("f32", (3,)), ("bf16", (4, 2))]
    ins, outs = checks.decode_dumps(manifest, [3], a.tobytes() + b.tobytes() + scale.tobytes(),
                                    c.tobytes())
    for got, want in zip(ins + outs, [a, b, scale, c]):
        assert got.dtype == want.dtype and np.array_equal(got, want)
    with pytest.raises(ValueError, match="fewer than"):
        checks.decode_dumps(manifest, [3], a.tobytes(), c.tobytes())
    with pytest.raises(ValueError, match="the buffers"):
        checks.decode_dumps(manifest, [3], a.tobytes() + b.tobytes() + scale.tobytes() + b"x",
                            c.tobytes())
    # The poison (0xFF bytes) is NaN in every float type.
    for dtype in (np.float32, BF16, E4M3):
        assert np.isnan(np.frombuffer(b"\xff" * 4, dtype).astype(np.float64)).all()


@needs_numpy
def test_sample_rows_keep_the_ends():
    rows = checks.sample_rows(10000, 256, seed=1)
    assert len(rows) == 256 and rows[0] == 0 and rows[-1] == 9999
    assert list(rows) == sorted(set(rows))
    assert list(checks.sample_rows(5, 256)) == [0, 1, 2, 3, 4]


@needs_numpy
def test_split_ranges_follow_gemm_ws_split_steps():
    # 32768 / 64 = 512 steps: 256 or 128 per split.
    assert checks.split_ranges(32768, 2) == [(0, 16384), (16384, 32768)]
    # 1000 / 64: 16 steps (the last part zeros), 6 per split of 3.
    assert checks.split_ranges(1000, 3) == [(0, 384), (384, 768), (768, 1000)]


def split_k_case(rng, m=256, n=128, k=1024, splits=4):
    a, b = normal(rng, (m, k), BF16), normal(rng, (k, n), BF16)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    workspace = np.stack([a32[:, lo:hi] @ b32[lo:hi] for lo, hi in checks.split_ranges(k, splits)])
    return a, b, workspace.astype(np.float32)


@needs_numpy
def test_split_partials_check():
    rng = np.random.default_rng(1)
    a, b, workspace = split_k_case(rng)
    assert checks.check_split_partials(a, b, workspace).passed
    # One K step (64 of 256 per split) in the wrong split.
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    shifted = workspace.copy()
    shifted[0] -= a32[:, 192:256] @ b32[192:256]
    shifted[1] += a32[:, 192:256] @ b32[192:256]
    found = checks.check_split_partials(a, b, shifted)
    assert not found.passed and "partial 0" in found.summary and "partial 1" in found.summary
    unwritten = workspace.copy()
    unwritten[3, 100, 7] = np.nan
    found = checks.check_split_partials(a, b, unwritten)
    assert not found.passed and found.worst == math.inf and "1 of" in found.summary


@needs_numpy
def test_fixup_check():
    rng = np.random.default_rng(2)
    workspace = normal(rng, (4, 64, 96), np.float32)
    c = workspace.sum(axis=0, dtype=np.float32).astype(BF16)
    assert checks.check_fixup(workspace, c).passed
    assert not checks.check_fixup(workspace, workspace[:3].sum(axis=0).astype(BF16)).passed
    c[5, 5] = np.nan
    assert not checks.check_fixup(workspace, c).passed


@needs_numpy
@pytest.mark.parametrize("epilogue", ["bias_gelu_tanh", "residual"])
def test_epilogue_check(epilogue):
    """Right, and wrong where a kernel could go wrong: the epilogue's input
    left out, or applied twice."""
    rng = np.random.default_rng(3)
    m, n, k = 256, 128, 512
    a, b = normal(rng, (m, k), BF16), normal(rng, (k, n), BF16)
    acc = a.astype(np.float32) @ b.astype(np.float32)
    if epilogue == "bias_gelu_tanh":
        extra = normal(rng, (n,), np.float32)
        good, bad = checks.gelu_tanh(acc + extra), checks.gelu_tanh(acc)
    else:
        extra = normal(rng, (m, n), BF16)
        good, bad = acc + extra.astype(np.float32), acc + 2 * extra.astype(np.float32)
    assert checks.check_epilogue(epilogue, a, b, [extra], good.astype(BF16)).passed
    assert not checks.check_epilogue(epilogue, a, b, [extra], bad.astype(BF16)).passed
    with pytest.raises(ValueError, match="takes 1 inputs"):
        checks.check_epilogue(epilogue, a, b, [], good.astype(BF16))


@needs_numpy
def test_epilogue_references_match_gemm_ws():
    """bench's float64 epilogues are gemm_ws.py's (where mosaic_gpu imports)."""
    gemm_ws = import_example("gemm_ws")
    rng = np.random.default_rng(4)
    m, n, k = 64, 32, 128
    a, b = normal(rng, (m, k), BF16), normal(rng, (k, n), BF16)
    for name, reference in checks.EPILOGUE_REFERENCES.items():
        config = gemm_ws.Config(m, n, k, epilogue=name)
        extras = gemm_ws.epilogue_inputs(config, seed=5)
        theirs = gemm_ws.reference(config, a, b, extras)
        ours = checks.check_epilogue(name, a, b, extras, theirs)
        assert ours.passed and ours.worst < 1e-9, (name, ours)
        spec = gemm_ws.EPILOGUES[name]
        assert (len(spec.row_vectors), len(spec.column_vectors), bool(spec.residual),
                spec.out) == (reference.row_vectors, reference.column_vectors,
                              reference.residual, reference.out)


def fp8_case(rng, scaling, m=256, n=256, k=512):
    """Random e4m3 A and Bt and standard normal f32 scales (as mosaic-run
    draws them) in the kernel's layouts, and C computed from them in f32."""
    a, bt = normal(rng, (m, k), E4M3), normal(rng, (n, k), E4M3)
    a_shape, b_shape = checks.fp8_scale_shapes(scaling, m, n, k)
    a_scales = normal(rng, a_shape, np.float32)
    b_scales = normal(rng, b_shape, np.float32)
    rows = np.arange(m)
    a64, b64 = checks.dequantize_fp8(scaling, a, bt, a_scales, b_scales, rows)
    c = (a64.astype(np.float32) @ b64.astype(np.float32).T).astype(BF16)
    return a, bt, a_scales, b_scales, c


@needs_numpy
@pytest.mark.parametrize("scaling", ["tensor", "row", "block"])
def test_fp8_check(scaling):
    rng = np.random.default_rng(6)
    a, bt, a_scales, b_scales, c = fp8_case(rng, scaling)
    assert checks.check_fp8(scaling, a, bt, a_scales, b_scales, c).passed
    if scaling == "block":
        # A's scales read row-major (M, K/128) instead of K-block-major.
        wrong = np.ascontiguousarray(a_scales.reshape(4, 256).T).reshape(-1)
    else:
        wrong = a_scales * np.float32(1.05)
    assert not checks.check_fp8(scaling, a, bt, wrong, b_scales, c).passed
    with pytest.raises(ValueError, match="takes scales of shapes"):
        checks.check_fp8(scaling, a, bt, np.ones(3, np.float32), b_scales, c)


@needs_numpy
def test_fp8_dequantize_matches_gemm_fp8():
    """The kernel's scale layouts as python/examples/gemm_fp8.py makes them
    (where it exists and mosaic_gpu imports): its quantized inputs,
    dequantized by both, agree."""
    gemm_fp8 = import_example("gemm_fp8")
    for scaling in checks.FP8_SCALINGS:
        config = gemm_fp8.Config(200, 256, 384, scaling)
        a, bt, a_scales, b_scales = gemm_fp8.inputs(config, seed=7)
        kernel_a, kernel_b = gemm_fp8.kernel_scales(config, a_scales, b_scales)
        rows = np.arange(200)
        ours = checks.dequantize_fp8(scaling, a, bt, kernel_a, kernel_b, rows)
        theirs = (gemm_fp8.dequantize(a, a_scales, scaling, "a"),
                  gemm_fp8.dequantize(bt, b_scales, scaling, "bt"))
        for mine, other in zip(ours, theirs):
            assert np.array_equal(mine, other), scaling


def mosaic_build():
    """The build with mosaic-compile, mosaic-run and the mosaic_gpu module:
    $MOSAIC_BUILD, else this tree's build/; the test skips without one."""
    build = build_folder()
    needed = [build / "bin" / "mosaic-compile", build / "bin" / "mosaic-run",
              build / "python" / "mosaic_gpu"]
    missing = [str(path) for path in needed if not path.exists()]
    if missing:
        pytest.skip(f"no build here ({', '.join(missing)} missing; set MOSAIC_BUILD)")
    return build


# Small kernels of each new kind, as compile-kernels.sh makes them: NAME,
# the script in python/examples, its arguments (a grid for the emulator).
EMULATED_KERNELS = [
    ("gemm_bf16_ws_splitk2_256x128x1024", "gemm_ws.py",
     "--m 256 --n 128 --k 1024 --split-k 2 --grid 4"),
    ("gemm_bf16_ws_bias_gelu_tanh_256x128x512", "gemm_ws.py",
     "--m 256 --n 128 --k 512 --epilogue bias_gelu_tanh --grid 4"),
    ("gemm_bf16_ws_residual_200x128x520", "gemm_ws.py",
     "--m 200 --n 128 --k 520 --epilogue residual --grid 4"),
    ("gemm_fp8_row_256x256x512", "gemm_fp8.py", "--m 256 --n 256 --k 512 --scaling row --grid 2"),
    ("gemm_fp8_block_256x256x512", "gemm_fp8.py",
     "--m 256 --n 256 --k 512 --scaling block --grid 2"),
]


@needs_numpy
@pytest.mark.parametrize("name, script, arguments", EMULATED_KERNELS)
def test_new_kernels_pass_their_checks_on_the_emulator(tmp_path, monkeypatch, name, script,
                                                       arguments):
    """End to end on the PTX emulator: the kernel generated and compiled as
    compile-kernels.sh does, run by mosaic-run --check=none with its inputs
    and outputs dumped (run_ours_dumped, as on a GPU), and the dumps checked
    in float64 by bench.py's check of its kind; the split-K GEMM's fix-up
    too. The emulator is not timed, which run_ours_dumped reports."""
    build = mosaic_build()
    generator = EXAMPLES / script
    if not generator.exists():
        pytest.skip(f"python/examples/{script} does not exist in this tree")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(build / "python"), os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, str(generator), *arguments.split(), "--emit-mlir",
                    str(tmp_path / f"{name}.mlir")], env=env, check=True, capture_output=True)
    stems = sorted(path.name[:-len(".mlir")] for path in tmp_path.glob(f"{name}*.mlir"))
    assert stems == ([name, f"{name}.fixup"] if "splitk" in name else [name])
    monkeypatch.setenv("MOSAIC_GPU_BACKEND", "emulator")
    args = bench.argparse.Namespace(warmup=1, reps=1, seed=11, run_timeout=120)
    for stem in stems:
        subprocess.run([str(build / "bin" / "mosaic-compile"), str(tmp_path / f"{stem}.mlir"),
                        "-o", str(tmp_path / f"{stem}.cubin")], check=True, capture_output=True)
        manifest = json.loads((tmp_path / f"{stem}.json").read_text())
        kernel = bench.parse_new_kernel(stem)
        ms, found, result, why = bench.run_ours_dumped(
            build / "bin" / "mosaic-run", tmp_path / f"{stem}.json", manifest,
            bench.new_kernel_check(kernel), args, tmp_path)
        assert result["passed"] and result["emulated"], result
        assert found is not None and found.passed and found.worst < 0.8, (stem, found)
        assert ms is None and why == "mosaic-run reported no time (emulated: True)"


# Runs the Triton FP8 GEMM in Triton's interpreter (on the CPU) with each
# scaling, on inputs quantized by bench.fp8_quantize, and prints its
# relative error against the float64 reference of the dequantized product;
# for block scaling also with A's scales in the wrong layout.
INTERPRETED_FP8 = textwrap.dedent("""
    import math
    import torch
    import bench, triton_peers
    generator = torch.Generator().manual_seed(0)
    m, n, k = 256, 256, 384
    for scaling, block_n, wrong in (("tensor", 256, False), ("row", 128, False),
                                    ("block", 128, False), ("block", 128, True)):
        x, w = (torch.randn(rows, k, generator=generator) for rows in (m, n))
        a, a_scales, a_expanded = bench.fp8_quantize(torch, x, scaling, "a")
        bt, b_scales, b_expanded = bench.fp8_quantize(torch, w, scaling, "bt")
        if wrong:
            a_scales = a_scales.t().contiguous()
        c = torch.full((m, n), math.nan, dtype=torch.bfloat16)
        descriptors = (triton_peers.TensorDescriptor.from_tensor(a, [128, 128]),
                       triton_peers.TensorDescriptor.from_tensor(bt, [block_n, 128]),
                       triton_peers.TensorDescriptor.from_tensor(c, [128, block_n]))
        triton_peers.matmul_fp8[(2,)](*descriptors, a_scales, b_scales, m, n, k, BM=128,
                                      BN=block_n, BK=128, GROUP_M=8,
                                      SCALING=triton_peers.FP8_SCALINGS[scaling], NUM_SMS=2)
        reference = (a.float().double() * a_expanded) @ (bt.float().double() * b_expanded).T
        print(scaling, wrong, bench.relative_error(torch, c, reference))
""")


def test_triton_fp8_gemm_matches_float64_in_the_interpreter():
    """The Triton FP8 GEMM computes dequant(A) dequant(Bt)^T with each
    scaling and the scale layouts bench.py gives it; A's block scales in the
    wrong layout are far off."""
    pytest.importorskip("torch", reason="PyTorch is not installed")
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    import triton_peers
    if triton_peers.TensorDescriptor is None:
        pytest.skip(f"Triton {triton.__version__} has no host-side TMA descriptors")
    here = pathlib.Path(__file__).parent
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", INTERPRETED_FP8], env=env,
                         capture_output=True, text=True, check=True)
    runs = [line.split() for line in out.stdout.splitlines()]
    assert [run[:2] for run in runs] == [["tensor", "False"], ["row", "False"],
                                         ["block", "False"], ["block", "True"]]
    for scaling, wrong, error in runs:
        assert (float(error) > 0.05) if wrong == "True" else (float(error) < 1e-2), scaling


@pytest.mark.parametrize("scaling", ["tensor", "row", "block"])
def test_fp8_quantize_and_scaled_mm_layouts(scaling):
    """On the CPU: the recipe's scales (amax / 448 per group), e4m3 values
    within 448, and the layouts torch._scaled_mm takes (per block: A's
    scales outer-dim-major, the same memory as ours)."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(256, 384, generator=generator)
    w = torch.randn(128, 384, generator=generator)
    a, a_scales, a_expanded = bench.fp8_quantize(torch, x, scaling, "a")
    bt, b_scales, _ = bench.fp8_quantize(torch, w, scaling, "bt")
    assert a.dtype == torch.float8_e4m3fn and a.float().abs().max() <= 448
    assert ((a.float().double() * a_expanded - x.double()).norm() / x.double().norm()) < 0.05
    scale_a, scale_b = bench.scaled_mm_scales(scaling, a_scales, b_scales, 256, 128)
    shapes = {"tensor": ((1,), (1,)), "row": ((256, 1), (1, 128)),
              "block": ((256, 3), (3, 1))}[scaling]
    assert (tuple(scale_a.shape), tuple(scale_b.shape)) == shapes
    if scaling == "block":
        assert scale_a.stride() == (1, 256)  # outer-dim-major
        assert torch.equal(scale_a, x.abs().view(256, 3, 128).amax(-1) / 448)
    if scaling == "tensor":
        # torch._scaled_mm runs per-tensor scaling on the CPU too.
        c = torch._scaled_mm(a, bt.t(), scale_a, scale_b, out_dtype=torch.bfloat16)
        reference = (a.float().double() * a_expanded) @ (
            bt.float().double() * b_scales.double()).T
        assert bench.relative_error(torch, c, reference) < 1e-2


@pytest.mark.parametrize("epilogue", ["bias_gelu_tanh", "residual"])
def test_epilogue_peers_check_their_outputs(epilogue, monkeypatch):
    """On the CPU: the eager and cuBLAS-fused forms pass the check; a form
    that leaves the epilogue's input out fails it."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    case = bench.EpilogueCase(128, 256, 256, epilogue)
    generator = torch.Generator().manual_seed(0)
    peers = dict(bench.epilogue_peers(torch, case, generator, compile_torch=False))
    assert list(peers) == [bench.TORCH_EAGER, bench.CUBLAS_FUSED]
    for peer in peers.values():
        peer.run()
        peer.poison()
        peer.run()
        assert peer.check() < 1e-2
    eager, fused = bench.epilogue_functions(torch, epilogue)
    without_input = (lambda a, b, extra: eager(a, b, torch.zeros_like(extra)))
    monkeypatch.setattr(bench, "epilogue_functions", lambda torch, name: (without_input, fused))
    wrong = dict(bench.epilogue_peers(torch, case, generator, compile_torch=False))
    wrong[bench.TORCH_EAGER].run()
    assert wrong[bench.TORCH_EAGER].check() > 1e-2


# ---------------------------------------------------------------------------
# The attention-new tables.


def test_attention_new_rows():
    rows = bench.attention_new_rows()
    counts = {table: sum(row.table == table for row in rows)
              for table in bench.ATTENTION_NEW_TABLES}
    assert counts == {"backward": 6, "gqa": 8, "varlen": 4, "fp8": 4}
    assert [row.table for row in rows] == sorted(
        (row.table for row in rows), key=bench.ATTENTION_NEW_TABLES.index)
    # The packed batch: 16384 tokens, lengths no multiple of 8 among them.
    lengths = bench.VARLEN_LENGTHS
    assert sum(lengths) == 16384 and min(lengths) >= 1 and max(lengths) <= 4000
    assert any(n % 8 for n in lengths) and bench.varlen_lengths() == lengths
    labels = [bench.attention_row_label(row) for row in rows]
    for table in bench.ATTENTION_NEW_TABLES:
        mine = [label for label, row in zip(labels, rows) if row.table == table]
        assert len(set(mine)) == len(mine), table
    assert labels[:2] == ["16x16x1024x128", "16x16x1024x128, causal"]
    assert labels[6:10] == ["4x32/8x4096x128, forward", "4x32/8x4096x128, causal, forward",
                            "4x32/8x4096x128, backward", "4x32/8x4096x128, causal, backward"]
    assert labels[14] == (f"{len(lengths)} seqs, 16384 tokens (longest {max(lengths)}) x 16 "
                          "x 128, forward")


def test_attention_new_flops():
    full = bench.AttentionRow("backward", 1, 16, 16, 16384, 128, False, True)
    forward = 4 * 16 * 16384 ** 2 * 128
    assert bench.attention_row_flops(full._replace(backward=False)) == forward
    assert bench.attention_row_flops(full) == forward * 5 // 2
    assert bench.attention_row_flops(full._replace(causal=True)) == forward * 5 // 4
    varlen = bench.AttentionRow("varlen", 2, 2, 2, 300, 64, False, False, (100, 300))
    assert bench.attention_row_flops(varlen) == 4 * 2 * 64 * (100 ** 2 + 300 ** 2)


def test_attention_kernel_names_parse_back():
    for row in bench.attention_new_rows():
        name = bench.attention_kernel_name(row)
        if row.lengths:
            assert name is None
            continue
        kernel = bench.parse_new_kernel(name)
        assert kernel.kind == "attention"
        assert kernel.dims == (row.batch, row.heads, row.kv_heads, row.seq, row.head_dim)
        assert kernel.param == bench.AttentionKernel("bwd" if row.backward else "fwd",
                                                     "fp8" if row.table == "fp8" else "bf16",
                                                     row.causal)
        assert bench.new_kernel_outputs(kernel) == ((-3, -2) if row.backward else (-2, -1))
    name = "attn_bwd_bf16_1x2x2x128x64_full"
    for part, outputs in (("preprocess", (-1,)), ("postprocess", (-1,))):
        kernel = bench.parse_new_kernel(f"{name}.{part}")
        assert kernel.param == bench.AttentionKernel("bwd", "bf16", False, part)
        assert bench.new_kernel_outputs(kernel) == outputs
    for stem in ("attn_fwd_bf16_1x2x3x4_full", "attn_bwd_fp16_1x2x2x128x64_full",
                 "attn_fwd_bf16_1x2x2x128x64_full.preprocess", f"{name}.fixup"):
        assert bench.parse_new_kernel(stem) is None, stem


def test_attention_kernels_need_their_module(tmp_path):
    """Only kernels whose module is in the tree are listed for compiling; the
    others' cells are left to the note that they were not compiled."""
    (tmp_path / "forward.py").write_text("")
    listed = bench.attention_kernels(tmp_path)
    assert listed and all(name.startswith("attn_fwd_bf16_") for name, _, _ in listed)
    assert len(listed) == 4  # the grouped-query table's forward rows
    name, script, args = listed[1]
    assert name == "attn_fwd_bf16_4x32x8x4096x128_causal"
    assert script == "bench/gpu/attention_kernels.py"
    assert args == ["--kernel", "fwd", "--batch", 4, "--heads", 32, "--kv-heads", 8, "--seq",
                    4096, "--head-dim", 128, "--causal"]
    (tmp_path / "backward.py").write_text("")
    (tmp_path / "forward_fp8.py").write_text("")
    assert len(bench.attention_kernels(tmp_path)) == 18


def test_output_positions():
    manifest = {"parameters": [{"index": i, "kind": "buffer", "element_type": "bf16",
                                "shape": [8]} for i in range(5)]}
    assert bench.output_positions(manifest) == [4]
    assert bench.output_positions(manifest, (-3, -2)) == [2, 3]


def test_attention_new_tables_markdown():
    backward = bench.AttentionRow("backward", 1, 16, 16, 16384, 128, False, True)
    # 5.5 TFLOP: 11 ms is 500 TFLOP/s.
    table = bench.attention_new_markdown("backward", [
        (backward, {bench.SDPA_FLASH: 11.0, bench.SDPA_CUDNN: bench.UNAVAILABLE,
                    bench.OURS_ATTENTION: 8.8})])
    assert table.splitlines() == [
        "| batch x heads x seq x head_dim | torch SDPA (flash) | torch SDPA (cuDNN) | ours |",
        "|---|---:|---:|---:|",
        "| 1x16x16384x128 | 11.000 ms, 500 TFLOP/s, 1.00x | unavailable | 8.800 ms, 625 "
        "TFLOP/s, 1.25x |"]
    varlen = bench.attention_new_markdown("varlen", [
        (bench.attention_new_rows()[14], {bench.TORCH_VARLEN_FLASH: 1.0})])
    assert varlen.splitlines()[0] == (
        "| sequences x heads x head_dim | torch varlen_attn (flash) | torch varlen_attn "
        "(cuDNN) | flash-attn varlen | ours |")
    fp8 = bench.attention_new_markdown("fp8", [])
    assert fp8.splitlines()[0] == ("| batch x heads x seq x head_dim | torch SDPA (flash) | "
                                   "torch FP8 SDPA (FA3) | Triton FP8 attention | ours "
                                   "(forward_fp8) |")
    section = bench.docs_section("2026-11-27", "GPU", "cmd", 10, 100, [
        bench.attention_section("", []),
        *[bench.attention_new_section(name, f"{name.upper()} TABLE", [f"a {name} note"])
          for name in bench.ATTENTION_NEW_TABLES]])
    lines = section.splitlines()
    headings = [line for line in lines if line.startswith("### ")]
    assert headings == [
        "### Attention backward (bf16 Q, K, V, O and dO, f32 LSE, bf16 dQ, dK and dV)",
        "### Attention with grouped-query and multi-query heads (bf16)",
        "### Attention on a packed batch of variable lengths (bf16)",
        "### FP8 attention forward (e4m3 Q, K and V, per-tensor descales, bf16 O)"]
    assert lines.index("VARLEN TABLE") < lines.index("- a varlen note") < \
        lines.index("FP8 TABLE")
    assert bench.attention_new_shape_notes("gqa")[0].startswith("4x32/8x4096x128: grouped")
    assert bench.attention_new_shape_notes("varlen")[0].startswith("Lengths: ")


# The check of the attention kernels' dumps, on arrays made here: what the
# kernel computes (P rounded to bf16 for P V), then broken ways.


def attention_case(rng, dims, dtype=None):
    batch, heads, kv_heads, seq, d = dims
    tokens = batch * seq
    dtype = dtype or BF16
    return [normal(rng, (tokens, h * d), dtype) for h in (heads, kv_heads, kv_heads)]


def kernel_forward(dims, causal, q, k, v, group_of=None, rounding=BF16):
    """O (bf16) and the LSE (batch, heads, seq) as the kernel computes them
    (P rounded for P V), with key/value head group_of(h) for query head
    h."""
    batch, heads, kv_heads, seq, d = dims
    group_of = group_of or (lambda h: h // (heads // kv_heads))
    q3, k3, v3 = (x.astype(np.float64).reshape(x.shape[0], -1, d) for x in (q, k, v))
    o = np.zeros(q3.shape)
    lse = np.zeros((heads, q3.shape[0]))
    for b in range(batch):
        rows = slice(b * seq, (b + 1) * seq)
        for h in range(heads):
            scores = q3[rows, h] @ k3[rows, group_of(h)].T / math.sqrt(d)
            if causal:
                scores = np.where(np.tri(seq, dtype=bool), scores, -np.inf)
            top = scores.max(1, keepdims=True)
            p = np.exp(scores - top)
            total = p.sum(1, keepdims=True)
            rounded = p.astype(np.float32).astype(rounding).astype(np.float64)
            o[rows, h] = rounded @ v3[rows, group_of(h)] / total
            lse[h, rows] = (top + np.log(total))[:, 0]
    lse = lse.reshape(heads, batch, seq).transpose(1, 0, 2)
    return o.reshape(q.shape).astype(np.float32).astype(BF16), lse.astype(np.float32)


@needs_numpy
@pytest.mark.parametrize("causal", [False, True])
def test_attention_forward_check(causal):
    rng = np.random.default_rng(3)
    dims = (2, 4, 2, 128, 64)
    q, k, v = attention_case(rng, dims)
    o, lse = kernel_forward(dims, causal, q, k, v)
    found = checks.check_attention_forward(dims, causal, q, k, v, o, lse)
    assert found.passed and found.worst < 0.5, found
    # Query head h served by key/value head h % 2 instead of h // 2.
    wrong = kernel_forward(dims, causal, q, k, v, group_of=lambda h: h % 2)
    assert not checks.check_attention_forward(dims, causal, q, k, v, *wrong).passed
    # The other mask.
    other = kernel_forward(dims, not causal, q, k, v)
    found = checks.check_attention_forward(dims, causal, q, k, v, *other)
    assert not found.passed and "LSE" in found.summary
    # One element of O, one LSE unwritten.
    for index in (0, 1):
        outputs = [o.copy(), lse.copy()]
        outputs[index].reshape(-1)[-1] = np.nan
        found = checks.check_attention_forward(dims, causal, q, k, v, *outputs)
        assert not found.passed and found.worst == math.inf


@needs_numpy
def test_attention_forward_fp8_check():
    """V^T in the kernel's layout and the descales: the check reads them as
    forward_fp8 does; V taken untransposed, or a descale missing, fails."""
    rng = np.random.default_rng(4)
    dims = (2, 2, 1, 128, 64)
    q, k, v = attention_case(rng, dims, E4M3)
    descales = np.array([0.5, 0.25, 2.0], np.float32)
    dequantized = [(x.astype(np.float64) * s).astype(np.float32)
                   for x, s in zip((q, k, v), descales)]
    o, lse = kernel_forward(dims, True, *dequantized, rounding=E4M3)
    v_t = np.ascontiguousarray(v.T)
    found = checks.check_attention_forward_fp8(dims, True, q, k, v_t, descales, o, lse)
    assert found.passed and found.worst < 0.5, found
    as_is = np.ascontiguousarray(v.reshape(v_t.shape))
    assert not checks.check_attention_forward_fp8(dims, True, q, k, as_is, descales, o,
                                                  lse).passed
    undescaled = kernel_forward(dims, True, *dequantized[:2], v.astype(np.float32),
                                rounding=E4M3)
    assert not checks.check_attention_forward_fp8(dims, True, q, k, v_t, descales,
                                                  *undescaled).passed


def kernel_backward(dims, causal, q, k, v, do, lse, delta, group_sum=True):
    """dK and dV (bf16) as the main kernel computes them from the given LSE
    (batch, heads, seq) and D (heads, tokens); group_sum False keeps only
    each group's first query head."""
    batch, heads, kv_heads, seq, d = dims
    group, scale = heads // kv_heads, 1 / math.sqrt(d)
    q3, do3 = (x.astype(np.float64).reshape(x.shape[0], heads, d) for x in (q, do))
    k3, v3 = (x.astype(np.float64).reshape(x.shape[0], kv_heads, d) for x in (k, v))
    dk, dv = np.zeros(k3.shape), np.zeros(v3.shape)
    for b in range(batch):
        rows = slice(b * seq, (b + 1) * seq)
        for h in range(heads):
            g = h // group
            p = np.exp(q3[rows, h] @ k3[rows, g].T * scale - lse[b, h][:, None])
            if causal:
                p = np.where(np.tri(seq, dtype=bool), p, 0)
            ds = p * (do3[rows, h] @ v3[rows, g].T - delta[h, rows][:, None])
            if group_sum or h % group == 0:
                dk[rows, g] += ds.T @ q3[rows, h] * scale
                dv[rows, g] += p.T @ do3[rows, h]
    return [x.reshape(x.shape[0], -1).astype(np.float32).astype(BF16) for x in (dk, dv)]


@needs_numpy
@pytest.mark.parametrize("causal", [False, True])
def test_attention_backward_check(causal):
    """Random LSE and D as mosaic-run draws them: the check computes what the
    kernel computes from them; dK and dV not summed over the group, or P
    made a softmax again (ignoring the LSE given), fail."""
    rng = np.random.default_rng(5)
    dims = (2, 4, 2, 128, 64)
    q, k, v = attention_case(rng, dims)
    do = normal(rng, q.shape, BF16)
    lse = normal(rng, (2, 4, 128), np.float32)
    delta = normal(rng, (4, 256), np.float32)  # seq 128: no padding
    workspace = normal(rng, q.shape, np.float32)
    # The main kernel's LSE workspace: (heads, batch * padded seq).
    inputs = (q, k, v, do, lse.transpose(1, 0, 2).reshape(4, 256), delta, workspace)
    grads = kernel_backward(dims, causal, q, k, v, do, lse, delta)
    found = checks.check_attention_backward(dims, causal, *inputs, *grads)
    assert found.passed and found.worst < 0.5, found
    ungrouped = kernel_backward(dims, causal, q, k, v, do, lse, delta, group_sum=False)
    found = checks.check_attention_backward(dims, causal, *inputs, *ungrouped)
    assert not found.passed and "dK" in found.summary
    _, true_lse = kernel_forward(dims, causal, q, k, v)
    softmax = kernel_backward(dims, causal, q, k, v, do, true_lse, delta)
    assert not checks.check_attention_backward(dims, causal, *inputs, *softmax).passed
    grads[1].reshape(-1)[5] = np.nan
    assert checks.check_attention_backward(dims, causal, *inputs, *grads).worst == math.inf


@needs_numpy
def test_attention_delta_and_dq_checks():
    rng = np.random.default_rng(6)
    dims = (2, 2, 1, 100, 64)  # sequences of 100 tokens: D padded to 128 each
    o, do = (normal(rng, (200, 128), BF16) for _ in range(2))
    products = (o.astype(np.float64) * do.astype(np.float64)).reshape(2, 100, 2, 64).sum(-1)
    delta = np.full((2, 2, 128), 7.0, np.float32)  # the padding is not checked
    delta[:, :, :100] = products.transpose(2, 0, 1)
    assert checks.check_attention_delta(dims, o, do, delta.reshape(2, 256)).passed
    swapped = delta[::-1].copy()  # the heads' rows swapped
    assert not checks.check_attention_delta(dims, o, do, swapped.reshape(2, 256)).passed
    unpadded = delta[:, :, :100].reshape(2, 200)
    with pytest.raises(ValueError, match=r"D of 2x2x1x100x64 must be \(2, 256\)"):
        checks.check_attention_delta(dims, o, do, unpadded)
    o, do = o[:100], do[:100]
    dims = (1, 2, 1, 100, 64)
    workspace = normal(rng, (100, 128), np.float32)
    dq = (workspace / 8).astype(BF16)
    assert checks.check_attention_dq(dims, workspace, dq).passed
    assert not checks.check_attention_dq(dims, workspace, workspace.astype(BF16)).passed


# Our attention kernels, small, end to end on the PTX emulator as
# compile-kernels.sh and bench.py run them: NAME and the generator's
# arguments; skipped where the build has not the kernel's module.
EMULATED_ATTENTION = [
    ("attn_fwd_bf16_2x4x2x128x64_causal", "--kernel fwd --batch 2 --heads 4 --kv-heads 2 "
                                          "--seq 128 --head-dim 64 --causal"),
    ("attn_fwd_bf16_1x2x1x256x128_full", "--kernel fwd --batch 1 --heads 2 --kv-heads 1 "
                                         "--seq 256 --head-dim 128"),
    ("attn_bwd_bf16_1x2x1x128x64_causal", "--kernel bwd --batch 1 --heads 2 --kv-heads 1 "
                                          "--seq 128 --head-dim 64 --causal"),
    ("attn_bwd_bf16_2x2x2x128x64_full", "--kernel bwd --batch 2 --heads 2 --kv-heads 2 "
                                        "--seq 128 --head-dim 64"),
    ("attn_fwd_fp8_1x2x2x128x64_causal", "--kernel fp8 --batch 1 --heads 2 --kv-heads 2 "
                                         "--seq 128 --head-dim 64 --causal"),
]


@needs_numpy
@pytest.mark.parametrize("name, arguments", EMULATED_ATTENTION)
def test_attention_kernels_pass_their_checks_on_the_emulator(tmp_path, monkeypatch, name,
                                                             arguments):
    build = mosaic_build()
    kernel = bench.parse_new_kernel(name)
    module = bench.ATTENTION_MODULES["fp8" if kernel.param.dtype == "fp8"
                                     else kernel.param.direction]
    if not (bench.ATTENTION_PACKAGE / f"{module}.py").exists():
        pytest.skip(f"mosaic_gpu.attention.{module} is not in this tree")
    generator = pathlib.Path(__file__).parent / "attention_kernels.py"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(build / "python"), os.environ.get("PYTHONPATH", "")]))
    made = subprocess.run([sys.executable, str(generator), *arguments.split(), "--emit-mlir",
                           str(tmp_path / f"{name}.mlir")], env=env, capture_output=True,
                          text=True)
    if "is not in this build" in made.stderr:
        pytest.skip(made.stderr.strip())
    assert made.returncode == 0, made.stderr
    # The backward's three kernels, the forward's one.
    stems = sorted(path.name[:-len(".mlir")] for path in tmp_path.glob(f"{name}*.mlir"))
    parts = bench.ATTENTION_BACKWARD_PARTS.values() if kernel.param.direction == "bwd" else [""]
    assert stems == sorted(name + suffix for suffix in parts)
    monkeypatch.setenv("MOSAIC_GPU_BACKEND", "emulator")
    args = bench.argparse.Namespace(warmup=1, reps=1, seed=11, run_timeout=120)
    for stem in stems:
        subprocess.run([str(build / "bin" / "mosaic-compile"), str(tmp_path / f"{stem}.mlir"),
                        "-o", str(tmp_path / f"{stem}.cubin")], check=True, capture_output=True)
        manifest = json.loads((tmp_path / f"{stem}.json").read_text())
        part = bench.parse_new_kernel(stem)
        ms, found, result, why = bench.run_ours_dumped(
            build / "bin" / "mosaic-run", tmp_path / f"{stem}.json", manifest,
            bench.new_kernel_check(part), args, tmp_path, bench.new_kernel_outputs(part))
        assert result["passed"] and result["emulated"], result
        assert found is not None and found.passed and found.worst < 0.8, (stem, found)
        assert ms is None and why == "mosaic-run reported no time (emulated: True)"


def test_attention_kernels_generator_refuses_other_arrays(tmp_path):
    """attention_kernels.py checks the arrays of what it builds against the
    order bench.py's checks read."""
    build = mosaic_build()
    script = textwrap.dedent(f"""
        import sys
        sys.argv = ["attention_kernels.py", "--kernel", "fwd", "--batch", "1", "--heads", "2",
                    "--kv-heads", "1", "--seq", "128", "--head-dim", "64", "--emit-mlir",
                    {str(tmp_path / "x.mlir")!r}]
        import attention_kernels
        attention_kernels.KINDS["fwd"] = ("forward", "bf16",
                                          [("", None, ["k", "q", "v"], ["o", "lse"])])
        attention_kernels.main()
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(pathlib.Path(__file__).parent), str(build / "python"),
         os.environ.get("PYTHONPATH", "")]))
    made = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                          text=True)
    assert made.returncode == 1, made.stderr
    assert "forward.build's kernel has arrays" in made.stderr
    assert "bench.py's check reads k, q, v then o, lse" in made.stderr
    assert not (tmp_path / "x.mlir").exists()


@pytest.mark.parametrize("backward", [False, True])
def test_attention_new_peers_check_their_outputs(backward):
    """On the CPU (SDPA's math backend, the backends' contexts not entered):
    the grouped-query peers pass their float64 check, forward and backward;
    a peer on the wrong mask fails it."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    sdpa, _ = bench.load_sdpa(torch)
    row = bench.AttentionRow("gqa", 2, 4, 2, 128, 64, True, backward)
    generator = torch.Generator().manual_seed(0)
    for wrong in (False, True):
        if wrong:
            sdpa = sdpa._replace(function=lambda *x, is_causal, **keywords:
                                 torch.nn.functional.scaled_dot_product_attention(
                                     *x, is_causal=not is_causal, **keywords))
        peers = dict(bench.attention_new_peers(torch, None, sdpa, row, generator))
        assert list(peers) == [bench.SDPA_FLASH, bench.SDPA_CUDNN]
        for peer in peers.values():
            peer.run()
            peer.poison()
            peer.run()
            error = peer.check()
            assert error > 0.1 if wrong else error < 1e-2, (peer.name, error)


def test_attention_pair_views_and_reference():
    """The packed batch's views pick a sequence's tokens and a key/value
    head's group, and attention_pair_reference agrees with SDPA on them,
    forward and backward."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    row = bench.AttentionRow("varlen", 3, 4, 2, 90, 64, True, True, (40, 90, 30))
    generator = torch.Generator().manual_seed(1)
    inputs = bench.attention_new_inputs(torch, row, generator)
    assert inputs.q.shape == (160, 4, 64) and inputs.k.shape == (160, 2, 64)
    views = bench.attention_pair_views(row)
    assert len(views) == 2
    query_view, key_view = views[1]  # the longest sequence, the last key/value head
    q, k, v, do = (x.double() for x in inputs[:4])
    assert torch.equal(query_view(q), q[40:130, 2:4].transpose(0, 1))
    assert torch.equal(key_view(k), k[40:130, 1])
    o, lse, dq, dk, dv = bench.attention_pair_reference(
        torch, query_view(q), key_view(k), key_view(v), query_view(do), True, chunk=32)
    leaves = [x.clone().requires_grad_() for x in (query_view(q), key_view(k), key_view(v))]
    expanded = [leaves[0]] + [x.expand(2, -1, -1) for x in leaves[1:]]
    want = torch.nn.functional.scaled_dot_product_attention(*expanded, is_causal=True)
    grads = torch.autograd.grad(want, leaves, query_view(do))
    for got, reference in zip((o, dq, dk, dv), (want, *grads)):
        assert torch.allclose(got, reference, atol=1e-10), (got - reference).abs().max()


def test_triton_fp8_attention_compiles_for_hopper():
    """The Triton FP8 attention compiles for sm_90a with the installed Triton
    (no GPU needed), through TMA and e4m3 wgmma for both products."""
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    import triton_peers
    if triton_peers.TensorDescriptor is None:
        pytest.skip(f"Triton {triton.__version__} has no host-side TMA descriptors")
    for causal, block_n in ((False, 128), (True, 64)):
        signature = {"q_desc": "tensordesc<fp8e4nv[128,128]>",
                     "k_desc": f"tensordesc<fp8e4nv[{block_n},128]>",
                     "vt_desc": f"tensordesc<fp8e4nv[128,{block_n}]>",
                     "o_desc": "tensordesc<bf16[128,128]>", "lse_ptr": "*fp32", "seq": "i32",
                     "scale_log2": "fp32", "v_descale": "fp32"}
        constants = {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": block_n, "CAUSAL": causal}
        kernel = triton.compile(ASTSource(triton_peers.attention_fp8_fwd, signature, constants),
                                target=GPUTarget("cuda", 90, 32),
                                options={"num_warps": 8, "num_stages": 3})
        ptx = kernel.asm["ptx"]
        assert "cp.async.bulk.tensor" in ptx
        assert f"wgmma.mma_async.sync.aligned.m64n{block_n}k32.f32.e4m3.e4m3" in ptx  # Q K^T
        assert "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3" in ptx  # P V


# Runs the Triton FP8 attention in Triton's interpreter on per-tensor
# quantized inputs and prints the relative errors of O and the LSE against
# float64 on the dequantized inputs.
INTERPRETED_FP8_ATTENTION = textwrap.dedent("""
    import math
    import torch
    import bench, triton_peers
    heads, seq, d = 2, 256, 128
    torch.manual_seed(0)
    for causal in (False, True):
        x = [torch.randn(heads, seq, d) for _ in range(3)]
        scales = [float(t.abs().max()) / 448 for t in x]
        q8, k8, v8 = ((t / s).to(torch.float8_e4m3fn) for t, s in zip(x, scales))
        o = torch.full((heads, seq, d), math.nan, dtype=torch.bfloat16)
        lse = torch.full((heads, seq), math.nan)
        make = triton_peers.TensorDescriptor.from_tensor
        descriptors = [make(q8.view(heads * seq, d), [128, d]),
                       make(k8.view(heads * seq, d), [64, d]),
                       make(v8.transpose(1, 2).contiguous().view(heads * d, seq), [d, 64]),
                       make(o.view(heads * seq, d), [128, d])]
        triton_peers.attention_fp8_fwd[(seq // 128, heads)](
            *descriptors, lse, seq, scales[0] * scales[1] * math.log2(math.e) / math.sqrt(d),
            scales[2], HEAD_DIM=d, BLOCK_M=128, BLOCK_N=64, CAUSAL=causal)
        dequantized = [t.double() * s for t, s in zip((q8, k8, v8), scales)]
        every_row = [(head, list(range(seq))) for head in range(heads)]
        o_ref, lse_ref = bench.attention_reference(torch, *dequantized, causal, every_row)
        print(causal, bench.relative_error(torch, bench.sampled(torch, o, every_row), o_ref),
              bench.relative_error(torch, bench.sampled(torch, lse, every_row), lse_ref))
""")


def test_triton_fp8_attention_matches_float64_in_the_interpreter():
    """O within the FP8 peers' tolerance (P in e4m3), the LSE within f32's."""
    pytest.importorskip("torch", reason="PyTorch is not installed")
    triton = pytest.importorskip("triton", reason="Triton is not installed")
    import triton_peers
    if triton_peers.TensorDescriptor is None:
        pytest.skip(f"Triton {triton.__version__} has no host-side TMA descriptors")
    here = pathlib.Path(__file__).parent
    env = dict(os.environ, TRITON_INTERPRET="1",
               PYTHONPATH=os.pathsep.join([str(here), os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, "-c", INTERPRETED_FP8_ATTENTION], env=env,
                         capture_output=True, text=True, check=True)
    runs = [line.split() for line in out.stdout.splitlines()]
    assert [run[0] for run in runs] == ["False", "True"]
    for run in runs:
        assert float(run[1]) < bench.FP8_ATTENTION_TOLERANCE and float(run[2]) < 1e-6, run


def test_attention_new_tables_measure_on_the_cpu(monkeypatch):
    """measure_attention_new_tables end to end at small shapes on the CPU,
    every peer checked as on a GPU (the timing stubbed): SDPA's math backend
    standing in for both backends passes, the GPU-only peers (torch's
    varlen_attn, the FP8 SDPA) and the missing ones (flash-attn, Triton) say
    unavailable, ours is the sum of the backward's three kernels' times, a
    kernel not compiled gets a note, and the notes and tables come out."""
    torch = pytest.importorskip("torch", reason="PyTorch is not installed")
    import contextlib
    monkeypatch.setattr(bench, "ATTENTION_BACKWARD_SHAPES", [(1, 2, 2, 128, 64, "small")])
    monkeypatch.setattr(bench, "GQA_SHAPES", [(1, 4, 2, 128, 64, "grouped")])
    monkeypatch.setattr(bench, "VARLEN_LENGTHS", (50, 78))
    monkeypatch.setattr(bench, "FP8_ATTENTION_SHAPES", [(1, 2, 2, 128, 64, "fp8")])
    monkeypatch.setattr(bench, "time_ms", lambda torch, fn, warmup, reps: 1.0)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: None)
    sdpa = bench.Sdpa(torch.nn.functional.scaled_dot_product_attention,
                      {column: contextlib.nullcontext for column in bench.SDPA_BACKENDS})
    measured, failures = [], []
    timing = bench.argparse.Namespace(warmup=1, reps=1)

    def measure_cells(make_peers, label, what, unavailable):
        cells = {}
        for column, peer in make_peers():
            value, error, why = bench.measure_peer(torch, peer, timing)
            cells[column] = value
            if value == bench.FAILED:
                failures.append(why)
            elif why:
                unavailable.append((why, label))
        return cells

    def measure_new(stem, label):
        measured.append(stem)
        return 2.0

    backward = bench.attention_kernel_name(bench.attention_new_rows()[0])
    new_kernels = {backward + suffix: None for suffix in bench.ATTENTION_BACKWARD_PARTS.values()}
    tables = bench.measure_attention_new_tables(
        torch, None, ["Triton peers not loaded."], sdpa, None, new_kernels,
        torch.Generator().manual_seed(0), measure_cells, measure_new,
        bench.argparse.Namespace(kernels="build/kernels"))
    assert failures == []
    assert measured == [backward + ".preprocess", backward, backward + ".postprocess"]
    by_name = {table: (rows, notes) for table, rows, notes in tables}
    assert list(by_name) == list(bench.ATTENTION_NEW_TABLES)
    rows, notes = by_name["backward"]
    assert rows[0][1] == {bench.SDPA_FLASH: 1.0, bench.SDPA_CUDNN: 1.0,
                          bench.OURS_ATTENTION: 6.0}
    assert any(note.startswith("ours: no kernel in build/kernels at 1x2x128x64, causal")
               for note in notes)
    rows, notes = by_name["gqa"]
    assert [cells[bench.SDPA_FLASH] for _, cells in rows] == [1.0] * 4
    rows, notes = by_name["varlen"]
    assert {cells[bench.TORCH_VARLEN_FLASH] for _, cells in rows} == {bench.UNAVAILABLE}
    assert {cells[bench.FLASH_ATTN_VARLEN] for _, cells in rows} == {bench.UNAVAILABLE}
    assert any("not run. mosaic-run draws every i32 input" in note for note in notes)
    rows, notes = by_name["fp8"]
    assert [cells[bench.SDPA_FLASH] for _, cells in rows] == [1.0, 1.0]
    assert {cells[bench.SDPA_FP8] for _, cells in rows} == {bench.UNAVAILABLE}
    assert "Triton peers not loaded." in notes
    for table, rows, notes in tables:
        markdown = bench.attention_new_markdown(table, rows)
        assert len(markdown.splitlines()) == 2 + len(rows)
