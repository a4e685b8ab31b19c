"""The dtypes against the element-type table the compiler and the runtime
share: a dtype added on one side only fails here."""
import json

import pytest

import mosaic_gpu as mg
from mosaic_gpu import _mosaic, dtypes


def manifest_with(element_type: str) -> str:
    """A manifest of one kernel taking one 16-element buffer of `element_type`."""
    return json.dumps({
        "entry": "k", "arch": "sm_90a", "cubin": "k.cubin", "grid": [1, 1, 1],
        "block": [128, 1, 1], "cluster": [1, 1, 1], "dynamic_smem_bytes": 0,
        "tensor_maps": [], "parameters": [{
            "index": 0, "kind": "buffer", "element_type": element_type,
            "shape": [16], "alignment": 16}]})


def test_every_table_row_is_a_dtype():
    table = {row[1]: row for row in _mosaic.element_types()}
    named = dict(dtypes.ELEMENT_DTYPES, index=mg.index, barrier=dtypes.barrier)
    assert set(table) == set(named)
    for name, (element, _, bits, kind, _, numpy_name) in table.items():
        dtype = named[name]
        assert (dtype.element, dtype.bitwidth, dtype.numpy_name) == (element, bits, numpy_name)
        assert dtype.is_float == (kind == "float") and dtype.is_int == (kind == "int")


def test_buffer_dtypes_are_what_the_runtime_reads(tmp_path):
    """Each dtype's manifest goes through the runtime's reader: it loads
    exactly for the buffer dtypes."""
    for name in [*dtypes.ELEMENT_DTYPES, "index", "barrier"]:
        path = tmp_path / f"{name}.json"
        path.write_text(manifest_with(name))
        if name in dtypes.BUFFER_DTYPES:
            assert _mosaic.Manifest.load(str(path)).entry == "k"
        else:
            with pytest.raises(ValueError, match=rf"`parameters\[0\]\.element_type` is \"{name}\""):
                _mosaic.Manifest.load(str(path))
    assert set(dtypes.BUFFER_DTYPES) == {
        "f32", "f16", "bf16", "f64", "i8", "i16", "i32", "i64", "f8E4M3FN", "f8E5M2"}


def test_arrays_of_every_buffer_dtype_are_taken():
    from mosaic_gpu import launch
    assert {dtype.name for dtype in launch._NUMPY_DTYPES.values()} == set(dtypes.BUFFER_DTYPES)


def test_manifest_errors_name_the_file_and_field(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(manifest_with("f32").replace('"sm_90a"', '"sm90"'))
    with pytest.raises(ValueError, match=r"bad\.json: `arch` is \"sm90\""):
        _mosaic.Manifest.load(str(path))
    with pytest.raises(ValueError, match="cannot read"):
        _mosaic.Manifest.load(str(tmp_path / "missing.json"))


def test_shared_memory_limit_is_the_compilers():
    assert mg.MAX_SMEM_BYTES == _mosaic.MAX_SHARED_MEMORY_PER_BLOCK == 227 * 1024
