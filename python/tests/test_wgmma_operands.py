"""wgmma operand forms on the PTX emulator: B stored N x K and
passed as a transposed view (K-major B) for bf16, tf32, fp8 (e4m3, e5m2) and
i8 inputs, reached through memref.transpose of a stage or of a ring of
stages. Inputs are small integers, exact in every input format, so every
product and every sum is exact and the result must equal NumPy's bit for
bit; a hazard fails the launch."""

import numpy as np
import pytest

import mosaic_gpu as mgpu
from conftest import emulator_available

ml_dtypes = pytest.importorskip("ml_dtypes")

# (MLIR element type, NumPy dtype, accumulator, manifest dtype, K)
FORMATS = {
    "bf16": ("bf16", ml_dtypes.bfloat16, "f32", 64),
    "tf32": ("f32", np.float32, "f32", 64),
    "e4m3": ("f8E4M3FN", ml_dtypes.float8_e4m3fn, "f32", 128),
    "e5m2": ("f8E5M2", ml_dtypes.float8_e5m2, "f32", 128),
    "i8": ("i8", np.int8, "i32", 128),
}
M = N = 128


def kernel_text(element, accumulator, k, bytes_per_element, ring):
    """C = A * B^T with A [M, K] and Bt [N, K] loaded by TMA; B reaches the
    wgmma as a transposed (K-major) view of Bt's shared-memory copy, either
    of one stage or of stage 1 of a two-stage ring."""
    a_bytes = M * k * bytes_per_element
    b_bytes = N * k * bytes_per_element
    smem = "#gpu.address_space<workgroup>"
    zero = "0" if accumulator == "i32" else "0.0"
    if ring:
        b_decl = f"""
    %ring = mosaic_gpu.slice_smem {a_bytes} : memref<2x{N}x{k}x{element}, {smem}>
    %ring_t = memref.transpose %ring (d0, d1, d2) -> (d0, d2, d1)
        : memref<2x{N}x{k}x{element}, {smem}> to memref<2x{k}x{N}x{element}, strided<[{N * k}, 1, {k}]>, {smem}>
    %bt_s = memref.subview %ring[1, 0, 0] [1, {N}, {k}] [1, 1, 1]
        : memref<2x{N}x{k}x{element}, {smem}> to memref<{N}x{k}x{element}, strided<[{k}, 1], offset: {N * k}>, {smem}>
    %b_s = memref.subview %ring_t[1, 0, 0] [1, {k}, {N}] [1, 1, 1]
        : memref<2x{k}x{N}x{element}, strided<[{N * k}, 1, {k}]>, {smem}> to memref<{k}x{N}x{element}, strided<[1, {k}], offset: {N * k}>, {smem}>"""
        bt_type = f"memref<{N}x{k}x{element}, strided<[{k}, 1], offset: {N * k}>, {smem}>"
        b_type = f"memref<{k}x{N}x{element}, strided<[1, {k}], offset: {N * k}>, {smem}>"
        barrier_offset = a_bytes + 2 * b_bytes
    else:
        bt_type = f"memref<{N}x{k}x{element}, {smem}>"
        b_type = f"memref<{k}x{N}x{element}, strided<[1, {k}]>, {smem}>"
        b_decl = f"""
    %bt_s = mosaic_gpu.slice_smem {a_bytes} : {bt_type}
    %b_s = memref.transpose %bt_s (d0, d1) -> (d1, d0) : {bt_type} to {b_type}"""
        barrier_offset = a_bytes + b_bytes
    a_type = f"memref<{M}x{k}x{element}, {smem}>"
    barrier = f"memref<!mosaic_gpu.barrier, {smem}>"
    return f"""
gpu.module @kernels {{
  gpu.func @gemm_nt(%a: memref<{M}x{k}x{element}>, %bt: memref<{N}x{k}x{element}>,
                    %c: memref<{M}x{N}x{accumulator}>) kernel
      attributes {{known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>}} {{
    %c0 = arith.constant 0 : i32
    %false = arith.constant false
    %a_s = mosaic_gpu.slice_smem 0 : {a_type}{b_decl}
    %bar = mosaic_gpu.slice_smem {barrier_offset} : {barrier}
    mosaic_gpu.initialize_barrier %bar, arrival_count = 1, num_barriers = 1 : {barrier}
    mosaic_gpu.arrive_expect_tx %bar, {a_bytes + b_bytes} : {barrier}
    mosaic_gpu.async_load %a[%c0, %c0] to %a_s, %bar slice_lengths [{M}, {k}]
        : memref<{M}x{k}x{element}>, {a_type}, {barrier}
    mosaic_gpu.async_load %bt[%c0, %c0] to %bt_s, %bar slice_lengths [{N}, {k}]
        : memref<{N}x{k}x{element}>, {bt_type}, {barrier}
    mosaic_gpu.wait %bar, %false : {barrier}
    %zero = arith.constant dense<{zero}> : vector<{M}x{N}x{accumulator}>
    %acc = mosaic_gpu.wgmma %zero, %a_s, %b_s
        : vector<{M}x{N}x{accumulator}>, {a_type}, {b_type} -> vector<{M}x{N}x{accumulator}>
    mosaic_gpu.vector_store %acc, %c : vector<{M}x{N}x{accumulator}>, memref<{M}x{N}x{accumulator}>
    gpu.return
  }}
}}
"""


def manifest_dtype(kernel_json, index):
    import json
    with open(kernel_json) as f:
        return json.load(f)["parameters"][index]["element_type"]


@pytest.mark.skipif(not emulator_available(), reason="built without the emulator")
@pytest.mark.parametrize("ring", [False, True], ids=["stage", "ring"])
@pytest.mark.parametrize("name", list(FORMATS))
def test_k_major_b(name, ring, tmp_path):
    element, dtype, accumulator, k = FORMATS[name]
    size = np.dtype(dtype).itemsize
    text = kernel_text(element, accumulator, k, size, ring)
    compiled = mgpu.compile(mgpu.Module.parse(text), emit="cubin")
    compiled.write(str(tmp_path / f"{compiled.entry}.cubin"))
    manifest = str(tmp_path / f"{compiled.entry}.json")
    ptx = (tmp_path / f"{compiled.entry}.ptx").read_text()
    # K-major B: imm-trans-b is 0 where the instruction has it (16-bit
    # inputs); tf32 and 8-bit instructions have no transpose operands.
    assert "wgmma.mma_async" in ptx

    rng = np.random.default_rng(11)
    a = rng.integers(-4, 5, size=(M, k)).astype(dtype)
    bt = rng.integers(-4, 5, size=(N, k)).astype(dtype)
    expected = a.astype(np.float64) @ bt.astype(np.float64).T
    out_dtype = np.int32 if accumulator == "i32" else np.float32
    c = np.full((M, N), 7, out_dtype)  # poisoned

    loaded = mgpu._mosaic.LoadedKernel(manifest, "emulator")
    buffers = []
    for array in (a, bt, c):
        memory = mgpu._mosaic.DeviceMemory(array.nbytes, "emulator")
        memory.upload(array.reshape(-1).view("uint8"))
        buffers.append(memory)
    loaded.launch([(memory.pointer, manifest_dtype(manifest, i), list(array.shape))
                   for i, (memory, array) in enumerate(zip(buffers, (a, bt, c)))])
    buffers[2].download(c.reshape(-1).view("uint8"))
    np.testing.assert_array_equal(c.astype(np.float64), expected)
