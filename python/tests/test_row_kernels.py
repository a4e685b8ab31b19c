"""Row kernels at every row tile: the RMS norm (python/examples/rms_norm.py)
and the row softmax (`row_softmax` of python/examples/softmax.py) match a
float64 NumPy reference on the emulator over a grid of (row tile, width),
two blocks of rows each, narrow tiles held whole and wide ones read in
chunks; compiled at every shipped row tile and width, they neither spill
nor use a stack; and the shapes they cannot take are errors naming the
numbers."""
import runpy

import pytest

from conftest import REPO, needs_emulator, run_check_in_process, run_example

EXAMPLES = REPO / "python" / "examples"
# example script -> its kernel factory
KERNELS = {"rms_norm": "rms_norm", "softmax": "row_softmax"}
ROW_TILES = (8, 16, 32, 64)
# 128: the whole tile in registers at every row tile; 576 (9 x 64): whole
# at 8 rows, chunks of 192 at 16, of 64 at 32 and 64; 8192: chunks at
# every row tile.
WIDTHS = (128, 576, 8192)


def example(name):
    return runpy.run_path(str(EXAMPLES / f"{name}.py"))


# What the two share: the tolerances and the shipped widths among them.
SHARED = runpy.run_path(str(EXAMPLES / "row_kernels.py"))


def check(name, rows, widths, dtype):
    """Runs example `name`'s kernel with a tile of `rows` rows on two
    blocks of rows at each of `widths` on the emulator (in the process
    run_check_in_process starts) and fails with every width past its
    tolerance."""
    script = example(name)
    errors = {width: script["check"](rows, (2 * rows, width), dtype, "emulator")
              for width in widths}
    failed = {w: e for w, e in errors.items() if not e < SHARED["TOLERANCE"][dtype]}
    assert not failed, f"{name} rows={rows} {dtype}: relative errors {failed}"


@needs_emulator
@pytest.mark.parametrize("rows", ROW_TILES)
@pytest.mark.parametrize("name", list(KERNELS))
def test_matches_numpy_on_the_emulator(name, rows, tmp_path):
    run_check_in_process("test_row_kernels", "check", tmp_path, name, rows, list(WIDTHS),
                         "f32")


@needs_emulator
@pytest.mark.parametrize("name", list(KERNELS))
def test_bf16_in_and_out_computed_in_f32(name, tmp_path):
    run_check_in_process("test_row_kernels", "check", tmp_path, name, 16, [128, 8192], "bf16")


@needs_emulator
@pytest.mark.parametrize("name", list(KERNELS))
def test_command_line(name, tmp_path):
    result = run_example(EXAMPLES / f"{name}.py", ["--emulate", "--rows", "8", "--shape", "16x128",
                                                   "--shape", "16x8192"], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 3 and lines[0].startswith(f"{KERNELS[name]} rows=8 (16, 128) f32: "
                                                   "relative error ")
    assert lines[-1] == "PASS", result.stdout


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
@pytest.mark.parametrize("rows", ROW_TILES)
@pytest.mark.parametrize("name", list(KERNELS))
def test_shipped_configurations_neither_spill_nor_use_a_stack(name, rows, dtype, ptxas):
    """Every shipped width (SHIPPED_WIDTHS) at this row tile; the compile
    time is measured by `--compile-report`, not asserted."""
    script = example(name)
    reports = {width: script["compile_report"](rows, width, dtype)
               for width in SHARED["SHIPPED_WIDTHS"]}
    spilled = {width: report for width, report in reports.items()
               if (report["spill_stores"], report["spill_loads"],
                   report["stack_frame_bytes"]) != (0, 0, 0)}
    assert not spilled, spilled


@pytest.mark.parametrize("name", list(KERNELS))
def test_chunks(name):
    chunk_columns = example(name)["chunk_columns"]
    assert chunk_columns(8, 1024) == 1024      # 64 values a thread: held whole
    assert chunk_columns(8, 8192) == 512       # 32 values a thread a chunk
    assert chunk_columns(64, 8192) == 64
    assert chunk_columns(16, 576) == 192       # the widest multiple of 64 dividing 576
    with pytest.raises(ValueError, match="rows of 200 columns: the kernel takes a multiple of 64"):
        chunk_columns(8, 200)


@pytest.mark.parametrize("name", list(KERNELS))
def test_shapes_it_cannot_take(name):
    factory = example(name)[KERNELS[name]]

    def inputs(shape, dtype="f32"):
        """x of `shape`, and for the RMS norm gamma."""
        return [(shape, dtype), ((shape[1],), dtype)][:2 if name == "rms_norm" else 1]

    with pytest.raises(ValueError, match=r"`rows` must be one of \(8, 16, 32, 64\), got 12"):
        factory(12)
    with pytest.raises(ValueError, match=r"`x` has shape \(48, 128\): dim 0 \(48\) is not a "
                                         r"multiple of the kernel's tile \(32\)"):
        factory(32).specialize(*inputs((48, 128)))
    with pytest.raises(ValueError, match=r"\(x: f32\[32, 96\].*\): rows of 96 columns: the "
                                         "kernel takes a multiple of 64"):
        factory(16).specialize(*inputs((32, 96)))
    with pytest.raises(TypeError, match="`x` is f16; the kernel takes f32 or bf16"):
        factory(32).specialize(*inputs((64, 128), "f16"))
