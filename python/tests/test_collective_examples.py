"""python/examples/allgather_matmul.py and matmul_reduce_scatter.py on the
emulator's devices: every device's result against NumPy float64 on 2, 3, 4
and 8 devices, under the default and a random schedule, with the hazard
checker on; bad configurations exit 2; and each kernel broken on purpose
(a signal before its TMA stores completed, an acquire weakened to a relaxed
load, a wait for a count no signal reaches) is reported as a hazard or a
deadlock. Each run is a process of its own: the emulator reads its device
count and schedule when its driver starts."""
import os
import sys
import textwrap

import pytest

from conftest import REPO, needs_emulator, run_example

EXAMPLES = REPO / "python" / "examples"

# Small shapes: two output-tile columns (the all-gather's signal counts
# both), two K steps, two persistent blocks per device.
SHAPES = {
    "allgather_matmul": lambda devices: ["--m", "128", "--n", "256", "--k", "128"],
    "matmul_reduce_scatter": lambda devices: ["--m", str(128 * devices), "--n", "256",
                                              "--k", "128"],
}
COMMON = ["--grid", "2", "--stages", "2"]


def run(name, devices, cache, schedule=None, extra=()):
    env_schedule = {} if schedule is None else {"MOSAIC_EMULATOR_SCHEDULE": schedule,
                                                "MOSAIC_EMULATOR_SEED": "7"}
    saved = {key: os.environ.get(key) for key in env_schedule}
    os.environ.update(env_schedule)
    try:
        return run_example(EXAMPLES / f"{name}.py",
                           ["--devices", str(devices), "--emulate", *COMMON,
                            *SHAPES[name](devices), *extra], cache)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@needs_emulator
@pytest.mark.parametrize("schedule", [None, "random"], ids=["roundrobin", "random"])
@pytest.mark.parametrize("devices", [2, 3, 4, 8])
@pytest.mark.parametrize("name", list(SHAPES))
def test_example_matches_numpy(name, devices, schedule, tmp_path):
    result = run(name, devices, tmp_path, schedule)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "PASS" in result.stdout
    assert result.stdout.count("0 of") == devices  # every device checked, nothing off


@pytest.mark.parametrize("name, args, message", [
    ("allgather_matmul", ["--devices", "0"], "--devices must be 1 to 64"),
    ("allgather_matmul", ["--devices", "2", "--m", "100"], "--m 100 must be a positive multiple"),
    ("matmul_reduce_scatter", ["--devices", "3", "--m", "512"],
     "--m 512 must be a positive multiple of 384"),
    ("matmul_reduce_scatter", ["--devices", "2", "--k", "96"], "--k 96 must be a positive multiple"),
])
def test_bad_configuration_exits_2(name, args, message, tmp_path):
    result = run_example(EXAMPLES / f"{name}.py", [*args, "--emulate"], tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr


@needs_emulator
def test_more_devices_than_the_emulator_has_exits_2(tmp_path, monkeypatch):
    monkeypatch.setenv("MOSAIC_EMULATOR_DEVICES", "2")
    result = run_example(EXAMPLES / "allgather_matmul.py",
                         ["--devices", "4", "--emulate", *COMMON, *SHAPES["allgather_matmul"](4)],
                         tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "device" in result.stderr


# A mutant runs the example's kernel with its PTX edited: `edits` are
# (pattern, replacement) pairs, each of which must match (the test fails,
# rather than passing vacuously, when the lowering no longer emits it).
MUTANT = textwrap.dedent("""
    import json, os, pathlib, re, runpy, sys
    os.environ["MOSAIC_EMULATOR_DEVICES"] = "{devices}"
    import mosaic_gpu as mgpu
    example = runpy.run_path("{script}")
    config = example["Config"]({devices}, {m}, 256, 128, 2, 2, 128)
    kernel = example["build"](config, wait_count={wait_count})
    manifest_path = pathlib.Path(mgpu.compile_cached(kernel.module))
    manifest = json.loads(manifest_path.read_text())
    ptx = (manifest_path.parent / manifest["ptx"]).read_text()
    for pattern, replacement in {edits!r}:
        ptx, count = re.subn(pattern, replacement, ptx, flags=re.MULTILINE)
        assert count, "the PTX has no " + pattern
    out = pathlib.Path("{out}")
    (out / "mutant.ptx").write_text(ptx)
    manifest["ptx"] = "mutant.ptx"
    manifest["cubin"] = "mutant.ptx"
    (out / "mutant.json").write_text(json.dumps(manifest))
    try:
        example["run"](config, "emulator", kernel=str(out / "mutant.json"))
    except RuntimeError as error:
        print("REPORTED:", error)
        sys.exit(0)
    print("NOT REPORTED")
    sys.exit(1)
""")

# The signal's own `cp.async.bulk.wait_group 0` and the example's
# `async_store_wait(0, complete=True)` taken out: the TMA stores to the
# neighbour may still be in flight when it is signalled.
NO_STORE_WAIT = [(r"^\s*cp\.async\.bulk\.wait_group 0;\s*$", "")]
RELAXED_WAIT = [(r"ld\.acquire\.sys\.global\.u32", "ld.relaxed.sys.global.u32")]


@needs_emulator
@pytest.mark.parametrize("name, edits, wait_count, expected", [
    ("allgather_matmul", NO_STORE_WAIT, 1, "hazard"),
    ("allgather_matmul", RELAXED_WAIT, 1, "hazard"),
    ("allgather_matmul", [], 2, "deadlock"),
    ("matmul_reduce_scatter", RELAXED_WAIT, 1, "hazard"),
    ("matmul_reduce_scatter", [], 2, "deadlock"),
], ids=["allgather-signal-before-stores-complete", "allgather-relaxed-wait",
        "allgather-count-never-reached", "reduce-scatter-relaxed-wait",
        "reduce-scatter-count-never-reached"])
def test_broken_kernel_is_reported(name, edits, wait_count, expected, tmp_path):
    devices = 3
    m = 128 if name == "allgather_matmul" else 128 * devices
    source = MUTANT.format(devices=devices, script=EXAMPLES / f"{name}.py", m=m,
                           wait_count=wait_count, edits=edits, out=tmp_path)
    result = run_example(None, [], tmp_path, source=source)
    assert result.returncode == 0, result.stdout + result.stderr
    assert expected in result.stdout, result.stdout
    if expected == "deadlock":  # every device's blocked warps are named
        for device in range(devices):
            assert f"device {device}" in result.stdout, result.stdout
