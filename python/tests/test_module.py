"""Parsing, printing and verifying modules; diagnostics as MosaicError."""
import re

import pytest

import mosaic_gpu as mg
from conftest import EXAMPLES, REPO


def test_import():
    assert issubclass(mg.MosaicError, Exception)
    for name in mg.__all__:
        assert getattr(mg, name).__doc__, f"{name} has no docstring"


def test_examples_exist():
    assert {path.stem for path in EXAMPLES} >= {
        "elementwise", "softmax", "tma_roundtrip", "gemm_bf16"}


def test_round_trip(example):
    context = mg.Context()
    module = mg.Module.parse(example.read_text(), context, name=str(example))
    printed = str(module)
    assert "gpu.func @" in printed
    again = mg.Module.parse(printed, context)
    assert str(again) == printed
    module.verify()


def test_parse_file_matches_parse(example):
    assert str(mg.Module.parse_file(str(example))) == str(
        mg.Module.parse(example.read_text()))


def test_parse_error_has_line_and_column():
    text = "func.func @f() {\n  %0 = arith.constant 1 : i32\n  %1 = arith.addi %0, %nope : i32\n  return\n}\n"
    with pytest.raises(mg.MosaicError) as raised:
        mg.Module.parse(text, name="bad.mlir")
    message = str(raised.value)
    assert "bad.mlir:3:23: error: use of undeclared SSA value name" in message
    [diagnostic] = raised.value.diagnostics
    assert diagnostic.severity == "error"
    assert diagnostic.location == "bad.mlir:3:23"


def tma_roundtrip_with_slice(lengths):
    path = REPO / "examples" / "tma_roundtrip.mlir"
    text = path.read_text()
    load = "slice_lengths [128, 64]\n"
    assert load in text
    line = text[: text.index(load)].count("\n") + 1
    return text.replace(load, f"slice_lengths {lengths}\n", 1), line


def test_verifier_error_names_the_op():
    text, line = tma_roundtrip_with_slice("[128, 32]")
    with pytest.raises(mg.MosaicError) as raised:
        mg.Module.parse(text, name="tma.mlir")
    assert re.search(
        rf"tma\.mlir:{line}:\d+: error: 'mosaic_gpu\.async_load' op "
        r"`slice_lengths` \(128, 32\) does not match the `destination` "
        r"shape \(128, 64\)", str(raised.value)), str(raised.value)


def test_verify_after_unverified_parse():
    text, _ = tma_roundtrip_with_slice("[128, 32]")
    module = mg.Module.parse(text, verify=False)
    with pytest.raises(mg.MosaicError, match="'mosaic_gpu.async_load' op `slice_lengths`"):
        module.verify()


def test_missing_file():
    with pytest.raises(mg.MosaicError, match="could not open input file"):
        mg.Module.parse_file("/nonexistent/kernel.mlir")


def test_clone_is_independent():
    module = mg.Module.parse_file(str(REPO / "examples" / "elementwise.mlir"))
    copy = module.clone()
    mg.run_passes(copy, ["mosaic-gpu-infer-layouts"])
    assert "out_layouts" in str(copy)
    assert "out_layouts" not in str(module)
    assert copy.context is not None
