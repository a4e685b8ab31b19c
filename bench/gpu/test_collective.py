"""Tests of collective.py's cases, tables and its handling of missing
kernels; they need no GPU (ctest runs them with test_bench.py as
`bench-gpu`)."""
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parent))
import collective  # noqa: E402


def test_cases_cover_both_kernels_and_every_device_count():
    listed = collective.list_shapes().splitlines()
    assert len(listed) == 2 * len(collective.DEVICE_COUNTS)
    assert "allgather_matmul 8 1024 4096 8192" in listed
    assert "matmul_reduce_scatter 1 8192 8192 1024" in listed


def test_flops_count_every_device():
    gather = collective.Case("allgather_matmul", 4, 1024, 4096, 8192)
    # Each device multiplies the gathered (4 x 1024) x 8192 by 8192 x 4096.
    assert gather.flops() == 2.0 * 4 * 1024 * 4096 * 8192 * 4
    scatter = collective.Case("matmul_reduce_scatter", 8, 8192, 8192, 1024)
    assert scatter.flops() == 2.0 * 8192 * 8192 * 1024 * 8
    assert gather.stem == "allgather_matmul_d4_1024x4096x8192"


def test_table_gives_ratios_against_nccl():
    case = collective.Case("allgather_matmul", 2, 1024, 4096, 8192)
    table = collective.markdown([{"case": case, "ours": 1.0, "nccl": 2.0,
                                  "async_tp": None, "async_tp_note": "unavailable (old torch)"}])
    row = table.splitlines()[-1]
    assert "2.00x" in row  # ours against NCCL + cuBLAS
    assert "unavailable (old torch)" in row
    assert row.startswith("| AG 2x[1024x8192] @ [8192x4096] |")


def test_missing_kernel_is_noted_not_failed(tmp_path):
    case = collective.Case("matmul_reduce_scatter", 2, 8192, 8192, 1024)
    ms, note, passed = collective.run_ours("/nonexistent/mosaic-run", tmp_path, case, 1, 1)
    assert ms is None and passed
    assert "not compiled" in note and case.stem in note


def test_main_needs_kernels_or_list(capsys):
    assert collective.main(["--list-shapes"]) == 0
    assert "allgather_matmul" in capsys.readouterr().out


def test_run_ours_reads_mosaic_runs_json(tmp_path):
    """run_ours calls `mosaic-run MANIFEST --devices D --warmup W --reps R
    --json=PATH` and reads median_ms from PATH (a stand-in mosaic-run here)."""
    case = collective.Case("allgather_matmul", 2, 128, 256, 128)
    (tmp_path / f"{case.stem}.json").write_text("{}")
    fake = tmp_path / "mosaic-run"
    fake.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        "args = sys.argv[1:]\n"
        "assert args[1:7] == ['--devices', '2', '--warmup', '3', '--reps', '5'], args\n"
        "assert args[7].startswith('--json='), args\n"
        "open(args[7][len('--json='):], 'w').write(json.dumps({'median_ms': 1.5}))\n"
        "print('allgather_matmul on 2 devices (...): PASS')\n")
    fake.chmod(0o755)
    ms, note, passed = collective.run_ours(str(fake), tmp_path, case, 3, 5)
    assert (ms, note, passed) == (1.5, "", True)
