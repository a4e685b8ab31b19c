"""Pass pipelines and layout inference."""
import pytest

import mosaic_gpu as mg
from conftest import REPO

SOFTMAX = REPO / "examples" / "softmax.mlir"

CONFLICT = """
func.func @unsatisfiable_cast_chain(%ref: memref<128x64xf32>) {
  %v = mosaic_gpu.vector_load %ref : memref<128x64xf32> -> vector<128x64xf32>
  %a = mosaic_gpu.layout_cast %v : vector<128x64xf32> to #mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>
  %b = mosaic_gpu.layout_cast %a : vector<128x64xf32> to #mosaic_gpu.WGStridedFragLayout<[128, 64], 2>
  return
}
"""


def test_infer_layouts_softmax():
    module = mg.Module.parse_file(str(SOFTMAX))
    before = str(module)
    layouts = mg.infer_layouts(module)
    assert str(module) == before, "infer_layouts must leave the module alone"
    by_op = {}
    for entry in layouts:
        by_op.setdefault(entry.op, []).append(entry)
    [load] = by_op["mosaic_gpu.vector_load"]
    assert load.out_layouts == ["#wgmma"]
    assert load.location == f"{SOFTMAX}:13:10"
    reductions = by_op["vector.multi_reduction"]
    assert len(reductions) == 2
    for reduction in reductions:
        assert reduction.in_layouts == ["#wgmma", "#wgmma_row"]
        assert reduction.out_layouts == ["#wgmma_row"]
    [store] = by_op["mosaic_gpu.vector_store"]
    assert store.in_layouts == ["#wgmma"] and store.out_layouts == []
    splats = [entry.out_layouts for entry in by_op["arith.constant"]]
    assert splats == [["#mosaic_gpu.WGSplatFragLayout<[64]>"]] * 2


def test_infer_layouts_transforms():
    module = mg.Module.parse_file(str(REPO / "examples" / "gemm_bf16.mlir"))
    transforms = {t for entry in mg.infer_layouts(module)
                  for t in entry.in_transforms + entry.out_transforms}
    assert ("[#mosaic_gpu.tile<[8, 64]>, "
            "#mosaic_gpu.swizzle<k128ByteSwizzle>]") in transforms


def test_infer_layouts_matches_pass():
    module = mg.Module.parse_file(str(SOFTMAX))
    layouts = mg.infer_layouts(module)
    mg.run_passes(module, ["mosaic-gpu-infer-layouts"])
    annotated = str(module)
    assert annotated.count("out_layouts") == sum(
        1 for entry in layouts if entry.out_layouts)


def test_inference_conflict_carries_notes():
    module = mg.Module.parse(CONFLICT, name="conflict.mlir")
    with pytest.raises(mg.MosaicError) as raised:
        mg.infer_layouts(module)
    message = str(raised.value)
    assert ("conflict.mlir:5:8: error: no layout for operand #0 of "
            "'mosaic_gpu.layout_cast' satisfies every constraint on it") in message
    assert ("conflict.mlir:4:8: note: 'mosaic_gpu.layout_cast' fixes its "
            "result's layout: WGMMA") in message
    assert "note: WGMMA is ruled out by:" in message
    [error] = raised.value.diagnostics
    assert len(error.notes) >= 3
    assert all(note.severity == "note" for note in error.notes)


def test_infer_layouts_fuel():
    module = mg.Module.parse_file(str(SOFTMAX))
    with pytest.raises(mg.MosaicError, match="positive fuel"):
        mg.infer_layouts(module, fuel=0)


def test_run_passes_whole_pipeline(example):
    module = mg.Module.parse_file(str(example))
    mg.run_passes(module, [
        "mosaic-gpu-infer-layouts", "mosaic-gpu-apply-transforms",
        "mosaic-gpu-lower", "canonicalize", "cse"])
    lowered = str(module)
    assert "mosaic_gpu.vector_load" not in lowered
    assert "mosaic_gpu.async_load" not in lowered
    mg.run_pipeline(module, "builtin.module(convert-scf-to-cf)")
    module.verify()


def test_named_pipeline_reaches_llvm(example):
    module = mg.Module.parse_file(str(example))
    mg.run_pipeline(module, "builtin.module(mosaic-gpu-pipeline)")
    assert "llvm.func @" in str(module)


def test_unknown_pass_is_value_error():
    module = mg.Module.parse_file(str(SOFTMAX))
    with pytest.raises(ValueError, match="no-such-pass"):
        mg.run_passes(module, ["no-such-pass"])
    with pytest.raises(ValueError, match="anchor"):
        mg.run_pipeline(module, "canonicalize")


def test_failing_pass_is_mosaic_error():
    module = mg.Module.parse(CONFLICT)
    with pytest.raises(mg.MosaicError, match="no layout for operand #0"):
        mg.run_pipeline(module, "builtin.module(mosaic-gpu-infer-layouts)")


def test_wrong_anchor_is_mosaic_error():
    module = mg.Module.parse_file(str(SOFTMAX))
    with pytest.raises(mg.MosaicError, match="func.func"):
        mg.run_pipeline(module, "func.func(canonicalize)")
