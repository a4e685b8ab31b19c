"""``mgpu.autotune``: a kernel factory tuned per input key. On the emulator
the choice is the heuristic's; pruning (``prune``, ``smem``, configs the
factory rejects, spills); the on-disk cache across tuner instances, the
environment control and the shipped defaults; the GPU path with a fake
timer, and ``CudaTimer`` end to end through
the fake CUDA driver (which runs nothing: the numbers mean nothing, the
path is what is checked); the errors for bad arguments."""
import copy
import json
import os
import pickle
import re
import runpy
import subprocess
import sys

import numpy as np
import pytest

import mosaic_gpu as mgpu
from conftest import REPO, compiles_meet_in_pairs, needs_emulator
from test_launch import FAKE_DRIVER

autotuner = sys.modules["mosaic_gpu.autotuner"]

SHAPE = (4096, 64)


def body_for(config, x):
    """Doubles `x`, `config.rows` rows per block."""
    @mgpu.kernel(grid=(x.tiles(0, config.rows), 1, 1), block=(128, 1, 1),
                 inputs=[(x.shape, x.dtype)], outputs=[(x.shape, x.dtype)], name="scale")
    def scale(x_ref, out):
        rows = mgpu.ds(mgpu.block_id("x") * config.rows, config.rows)
        mgpu.vector_store(mgpu.vector_load(x_ref[rows, :]) * 2.0, out[rows, :])
    return scale


def tuner(rows, calls=None, **kwargs):
    """A tuner of `body_for` over `rows`, recording the configs built."""
    def scale(config, x):
        if calls is not None:
            calls.append(config.rows)
        return body_for(config, x)
    kwargs.setdefault("name", "scale")
    return mgpu.autotune(configs=[mgpu.Config(rows=r) for r in rows], **kwargs)(scale)


class FakeTimer:
    """A GPU timer that runs nothing: each config's kernel 'takes' the
    seconds `times` gives for its grid; `fail` grids raise as a launch."""

    def __init__(self, times, fail=(), device="Fake GPU"):
        self.times, self.fail, self.device = times, fail, device
        self.calls = []

    def device_name(self):
        if self.device is None:
            raise RuntimeError("no CUDA driver: libcuda.so.1 not found")
        return self.device

    def __call__(self, kernel, inputs, options):
        self.calls.append((kernel.grid[0], [(a.shape, a.dtype.name) for a in inputs]))
        if kernel.grid[0] in self.fail:
            raise RuntimeError("the kernel failed: an illegal memory access")
        return [self.times[kernel.grid[0]], 2 * self.times[kernel.grid[0]],
                self.times[kernel.grid[0]]]


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    """A cache directory of each test's own, and the default mode."""
    monkeypatch.setenv("MOSAIC_GPU_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("MOSAIC_GPU_AUTOTUNE", raising=False)
    return tmp_path


def registers_hidden(report):
    """The report's lines, the register counts (ptxas's) as N."""
    return re.sub(r"\b\d+ registers", "N registers", report).splitlines()


def cache_entries(cache):
    return sorted((cache / "autotune").glob("*.json")) if (cache / "autotune").is_dir() else []


@needs_emulator
def test_the_emulator_chooses_by_heuristic_and_runs_the_choice(ptxas, cache):
    # 4096 rows: 32 blocks of 128 rows, 64 of 64, 128 of 32 (fills 97% of
    # 132 SMs, the others 24% and 48%).
    tuned = tuner([128, 64, 32])
    x = np.random.default_rng(0).standard_normal(SHAPE, dtype=np.float32)
    np.testing.assert_array_equal(tuned(x, backend="emulator"), 2 * x)
    decision = tuned.decision(x, backend="emulator")
    assert decision.config == mgpu.Config(rows=32) and decision.how == "heuristic"
    report = tuned.report(x, backend="emulator")
    assert registers_hidden(report) == [
        "autotune `scale` for `x: f32[4096, 64]` on emulator: Config(rows=32), chosen by "
        "heuristic, not timed (the emulator times nothing)",
        "    Config(rows=128): score (0.2424, 0); N registers",
        "    Config(rows=64): score (0.4848, 0); N registers",
        "  * Config(rows=32): score (0.9697, 0); N registers"]
    assert tuned.specialize(x, backend="emulator").grid == (128, 1, 1)
    # Equal scores: the config listed first.
    assert tuner([16, 32]).best(x, backend="emulator") == mgpu.Config(rows=16)


@needs_emulator
def test_tuning_the_warp_specialized_gemm(ptxas, tmp_path, monkeypatch):
    """examples/gemm_ws.py's `tuned`: the smem estimate prunes the 256-wide
    tiles of 4 to 6 stages before they are built; tile_fill picks the
    128-wide tile in clusters of 2x1 with 4 stages; the choice runs and is
    right."""
    pytest.importorskip("ml_dtypes")
    monkeypatch.setenv("MOSAIC_GPU_CACHE_DIR", str(tmp_path))
    gemm_ws = runpy.run_path(str(REPO / "python" / "examples" / "gemm_ws.py"))
    tuned = gemm_ws["tuned"]
    problem = gemm_ws["Config"](256, 512, 128)
    a, b = gemm_ws["inputs"](problem)
    decision = tuned.decision(a, b, backend="emulator")
    pruned = [str(c.config) for c in decision.candidates if c.status == "pruned"]
    assert pruned == [f"Config(tile_n=256, stages={s}, cluster={c}, pair='{p}')"
                      for s in (4, 5, 6) for c, p in ((2, "m"), (2, "n"), (1, "m"))]
    assert decision.config == mgpu.Config(tile_n=128, stages=4, cluster=2, pair="m")
    chosen = problem._replace(**decision.config.kwargs)
    passed, summary = gemm_ws["check"](chosen, a, b, tuned(a, b, backend="emulator"))
    assert passed, summary


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="one CPU: one compile at a time")
def test_candidates_compile_in_parallel(ptxas, monkeypatch):
    """Two compiles meet at a barrier: they would time out one at a time."""
    compiles_meet_in_pairs(monkeypatch, timeout=10)
    assert tuner([64, 32]).best(mgpu.Spec(SHAPE, "f32"), backend="emulator") == mgpu.Config(rows=32)


@needs_emulator
def test_the_readme_example_prints_what_the_readme_says(cache):
    readme = (REPO / "python" / "README.md").read_text()
    section = readme[readme.index("## Autotuning"):]
    code, printed = re.findall(r"```(?:python)?\n(.*?)```", section, re.S)[:2]
    env = dict(os.environ, MOSAIC_GPU_CACHE_DIR=str(cache))
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    assert registers_hidden(result.stdout) == registers_hidden(printed)


def test_heuristic_score_fills_waves_then_takes_more_shared_memory():
    x = mgpu.Spec(SHAPE, "f32")
    assert mgpu.heuristic_score(None, body_for(mgpu.Config(rows=32), x)) == (0.9697, 0)
    assert mgpu.heuristic_score(None, body_for(mgpu.Config(rows=16), x)) == (0.9697, 0)

    @mgpu.kernel(grid=(132, 1, 1), block=(128, 1, 1), inputs=[], outputs=[],
                 smem=[mgpu.SmemBuffer((64, 64), "f32")])
    def staged(buffer):
        pass
    assert mgpu.heuristic_score(None, staged) == (1.0, 16384)


def test_a_custom_heuristic(ptxas):
    tuned = tuner([128, 64, 32], heuristic=lambda config, kernel: config.rows)
    assert tuned.best(mgpu.Spec(SHAPE, "f32"), backend="emulator") == mgpu.Config(rows=128)


def test_pruning_before_building_and_after_compiling(ptxas):
    calls = []
    tuned = tuner([3, 1024, 999, 64, 32], calls,
                  prune=lambda config, x: config.rows == 999 and "999 is unlucky",
                  smem=lambda config, x: 300 * 1024 if config.rows == 64 else 0)
    report = tuned.report(mgpu.Spec(SHAPE, "f32"), backend="emulator").splitlines()
    assert report[1] == ("    Config(rows=3): rejected: ValueError: `x` has shape (4096, 64): "
                         "dim 0 (4096) is not a multiple of the kernel's tile (3)")
    assert report[2].startswith("    Config(rows=1024): pruned: spills registers (")
    assert report[3] == "    Config(rows=999): pruned: 999 is unlucky"
    assert report[4] == (f"    Config(rows=64): pruned: needs 307200 bytes of shared memory, more "
                         f"than the {mgpu.MAX_SMEM_BYTES} of a block")
    assert report[5].startswith("  * Config(rows=32): score")
    # `prune` and `smem` drop configs before the factory sees them.
    assert calls == [3, 1024, 32]


def test_registers_times_threads_over_a_block_are_pruned():
    candidate = autotuner.Candidate(mgpu.Config(rows=1))
    candidate.kernel = body_for(mgpu.Config(rows=32), mgpu.Spec(SHAPE, "f32"))
    candidate.kernel.block = (1024, 1, 1)
    candidate.ptxas = {"registers": 65, "spill_stores": 0, "spill_loads": 0}
    autotuner._check_ptxas(candidate)
    assert candidate.status == "pruned" and candidate.reason == (
        "65 registers x 1024 threads take 73728 registers, more than the 65536 of a block")
    candidate = autotuner.Candidate(mgpu.Config(rows=1))
    candidate.kernel = body_for(mgpu.Config(rows=32), mgpu.Spec(SHAPE, "f32"))
    candidate.ptxas = {"registers": 255, "spill_stores": 0, "spill_loads": 0}
    autotuner._check_ptxas(candidate)  # 255 x 128 threads fit
    assert candidate.ok


def test_when_every_config_fails_the_error_lists_each(ptxas):
    tuned = tuner([3, 5], smem=lambda config, x: 10 ** 6 if config.rows == 5 else 0)
    with pytest.raises(ValueError) as error:
        tuned.best(mgpu.Spec(SHAPE, "f32"), backend="emulator")
    assert str(error.value).splitlines() == [
        "no config of scale works for `x: f32[4096, 64]`:",
        "  Config(rows=3): rejected: ValueError: `x` has shape (4096, 64): dim 0 (4096) is not a "
        "multiple of the kernel's tile (3)",
        f"  Config(rows=5): pruned: needs 1000000 bytes of shared memory, more than the "
        f"{mgpu.MAX_SMEM_BYTES} of a block"]


def test_a_second_tuner_reuses_the_cached_choice(ptxas, cache, monkeypatch):
    x = mgpu.Spec(SHAPE, "f32")
    first = []
    assert tuner([128, 32], first).best(x, backend="emulator") == mgpu.Config(rows=32)
    assert first == [128, 32]
    [entry] = cache_entries(cache)
    stored = json.loads(entry.read_text())
    assert stored["config"] == {"rows": 32} and stored["how"] == "heuristic"
    assert stored["identity"]["device"] == "emulator"
    assert stored["identity"]["key"] == "x: f32[4096, 64]"
    assert stored["identity"]["toolchain"] == mgpu.launch.toolchain_version()
    # A new tuner (as in a new process) builds only the cached choice.
    second = []
    tuned = tuner([128, 32], second)
    decision = tuned.decision(x, backend="emulator")
    assert decision.how == "cache" and decision.config == mgpu.Config(rows=32)
    assert second == [32]
    assert "(no candidate compiled; MOSAIC_GPU_AUTOTUNE=force tunes again)" in decision.report()
    # Another key, or other configs, are tuned anew.
    third = []
    tuner([128, 32], third).best(mgpu.Spec((2048, 64), "f32"), backend="emulator")
    tuner([128, 32, 64], third).best(x, backend="emulator")
    assert third == [128, 32, 128, 32, 64]
    # force tunes again; an unreadable entry is tuned again and rewritten.
    monkeypatch.setenv("MOSAIC_GPU_AUTOTUNE", "force")
    fourth = []
    assert tuner([128, 32], fourth).decision(x, backend="emulator").how == "heuristic"
    assert fourth == [128, 32]
    monkeypatch.delenv("MOSAIC_GPU_AUTOTUNE")
    entry.write_text("{not json")
    fifth = []
    assert tuner([128, 32], fifth).decision(x, backend="emulator").how == "heuristic"
    assert fifth == [128, 32] and json.loads(entry.read_text())["config"] == {"rows": 32}


# Tunes `double` for one key on the emulator and prints how the choice was
# made and which configs the factory built.
SECOND_PROCESS = """
import mosaic_gpu as mgpu
built = []

@mgpu.autotune(configs=[mgpu.Config(rows=128), mgpu.Config(rows=32)])
def double(config, x):
    built.append(config.rows)
    @mgpu.kernel(grid=(x.tiles(0, config.rows), 1, 1), block=(128, 1, 1),
                 inputs=[(x.shape, x.dtype)], outputs=[(x.shape, x.dtype)])
    def body(x_ref, out):
        rows = mgpu.ds(mgpu.block_id("x") * config.rows, config.rows)
        mgpu.vector_store(mgpu.vector_load(x_ref[rows, :]) * 2.0, out[rows, :])
    return body

decision = double.decision(mgpu.Spec((4096, 64), "f32"), backend="emulator")
print(decision.how, decision.config, built)
"""


def test_a_later_process_reuses_the_choice(ptxas, cache):
    env = dict(os.environ, MOSAIC_GPU_CACHE_DIR=str(cache))
    runs = [subprocess.run([sys.executable, "-c", SECOND_PROCESS], env=env, capture_output=True,
                           text=True) for _ in range(2)]
    assert [r.stdout for r in runs] == ["heuristic Config(rows=32) [128, 32]\n",
                                        "cache Config(rows=32) [32]\n"], runs[-1].stderr


def test_the_key_may_name_inputs_or_be_a_function(ptxas):
    calls = []

    def scale_like(config, x, y):
        calls.append(config.rows)
        return body_for(config, x)
    by_name = mgpu.autotune(configs=[mgpu.Config(rows=32)], key=["x"], name="scale2")(scale_like)
    x = mgpu.Spec(SHAPE, "f32")
    by_name.best(x, mgpu.Spec((8,), "f32"), backend="emulator")
    decision = by_name.decision(x, mgpu.Spec((16,), "i32"), backend="emulator")
    assert decision.key == "x: f32[4096, 64]" and calls == [32]  # one key: tuned once
    by_function = mgpu.autotune(configs=[mgpu.Config(rows=32)], name="scale3",
                                key=lambda x, y: x.shape[0] // 1024)(scale_like)
    assert by_function.decision(x, x, backend="emulator").key == "4"


def test_the_gpu_path_takes_the_fastest_with_a_fake_timer(ptxas, cache):
    # The heuristic would take 32 rows (128 blocks); the timer says 64.
    # (The fake timer's times are by grid: 4096 / rows blocks.)
    timer = FakeTimer({32: 3e-6, 64: 2e-6, 128: 5e-6}, fail=(256,))
    tuned = tuner([128, 64, 32, 16], timer=timer)
    x = mgpu.Spec(SHAPE, "f32")
    decision = tuned.decision(x, backend="cuda")
    assert decision.how == "timed" and decision.config == mgpu.Config(rows=64)
    assert decision.device == "Fake GPU"
    # Each candidate timed once, on random inputs of the key's shapes.
    assert timer.calls == [(g, [(SHAPE, "float32")]) for g in (32, 64, 128, 256)]
    assert registers_hidden(decision.report()) == [
        "autotune `scale` for `x: f32[4096, 64]` on Fake GPU: Config(rows=64), the fastest of 3 "
        "timed (median of runs between CUDA events, L2 flushed before each)",
        "    Config(rows=128): 3.00 us (median of 3 runs, min 3.00 us); N registers",
        "  * Config(rows=64): 2.00 us (median of 3 runs, min 2.00 us); N registers",
        "    Config(rows=32): 5.00 us (median of 3 runs, min 5.00 us); N registers",
        "    Config(rows=16): launch error: the kernel failed: an illegal memory access"]
    # The choice is cached for this device only.
    [entry] = cache_entries(cache)
    assert json.loads(entry.read_text())["identity"]["device"] == "Fake GPU"
    other = FakeTimer({64: 2e-6, 128: 1e-6}, device="Other GPU")
    assert tuner([64, 32], timer=other).decision(x, backend="cuda").how == "timed"
    again = FakeTimer({})
    assert tuner([128, 64, 32, 16], timer=again).best(x, backend="cuda") == mgpu.Config(rows=64)
    assert again.calls == []


def test_arrays_given_are_the_ones_timed(ptxas):
    timer = FakeTimer({128: 1e-6})
    x = np.zeros(SHAPE, np.float32)
    tuner([32], timer=timer).best(x, backend="cuda")
    assert timer.calls == [(128, [(SHAPE, "float32")])]


def test_without_a_gpu_or_with_autotune_0_nothing_is_timed(ptxas, cache, monkeypatch):
    x = mgpu.Spec(SHAPE, "f32")
    decision = tuner([128, 32], timer=FakeTimer({}, device=None)).decision(x, backend="cuda")
    assert decision.how == "heuristic" and decision.device is None
    assert ("chosen by heuristic, not timed (no GPU (no CUDA driver: libcuda.so.1 not found))"
            in decision.report())
    monkeypatch.setenv("MOSAIC_GPU_AUTOTUNE", "0")
    timer = FakeTimer({32: 1e-6, 128: 1e-7})
    decision = tuner([128, 32], timer=timer).decision(x, backend="cuda")
    assert decision.how == "heuristic" and decision.config == mgpu.Config(rows=32)
    assert "(MOSAIC_GPU_AUTOTUNE=0)" in decision.report() and timer.calls == []
    assert cache_entries(cache) == []  # neither wrote the cache
    monkeypatch.setenv("MOSAIC_GPU_AUTOTUNE", "yes")
    with pytest.raises(ValueError, match="MOSAIC_GPU_AUTOTUNE is 'yes'; expected 1"):
        tuner([32]).best(x, backend="emulator")


def test_shipped_defaults_come_before_tuning(ptxas, cache, tmp_path):
    calls = []
    defaults = {"x: f32[4096, 64]": {"rows": 128}}
    tuned = tuner([128, 32], calls, defaults=defaults)
    decision = tuned.decision(mgpu.Spec(SHAPE, "f32"), backend="emulator")
    assert decision.how == "default" and decision.config == mgpu.Config(rows=128)
    assert calls == [128] and cache_entries(cache) == []
    assert "from `defaults` (shipped, not timed here)" in decision.report()
    # Other keys are tuned; a file holds the same table.
    assert tuned.best(mgpu.Spec((8192, 64), "f32"), backend="emulator") == mgpu.Config(rows=32)
    path = tmp_path / "defaults.json"
    path.write_text(json.dumps(defaults))
    assert tuner([128, 32], defaults=str(path)).best(
        mgpu.Spec(SHAPE, "f32"), backend="emulator") == mgpu.Config(rows=128)
    # A default the factory rejects for the key is tuned over.
    tuned = tuner([3, 32], defaults={"x: f32[4096, 64]": mgpu.Config(rows=3)})
    assert tuned.decision(mgpu.Spec(SHAPE, "f32"), backend="emulator").how == "heuristic"


def test_bad_arguments():
    configs = [mgpu.Config(rows=32)]

    def make(config, x):
        return body_for(config, x)
    cases = [
        (ValueError, "`configs` is empty: give at least one mgpu.Config", dict(configs=[])),
        (TypeError, r"`configs\[1\]` must be a mgpu.Config, got \{'rows': 64\}",
         dict(configs=[mgpu.Config(rows=32), {"rows": 64}])),
        (TypeError, "`configs` must be a list of mgpu.Config", dict(configs=mgpu.Config(rows=1))),
        (ValueError, r"`configs\[1\]` repeats Config\(rows=32\)", dict(configs=configs * 2)),
        (ValueError, r"`key\[0\]` names 'y', which is not an input of make \(x\)",
         dict(configs=configs, key=["y"])),
        (TypeError, "`key` must be None", dict(configs=configs, key=3)),
        (TypeError, "`prune` must be a function", dict(configs=configs, prune=True)),
        (TypeError, "`timer` must be called as timer", dict(configs=configs, timer=object())),
        (ValueError, r"`defaults`\['k'\] is Config\(rows=64\), which is not one of `configs`",
         dict(configs=configs, defaults={"k": {"rows": 64}})),
        (ValueError, "`defaults` file /nonexistent.json cannot be read",
         dict(configs=configs, defaults="/nonexistent.json")),
    ]
    for error, message, kwargs in cases:
        with pytest.raises(error, match=message):
            mgpu.autotune(**kwargs)(make)
    with pytest.raises(TypeError, match="the factory must take the Config, then one positional"):
        mgpu.autotune(configs=configs)(lambda config: None)
    with pytest.raises(ValueError, match="got '<lambda>'; pass name="):
        mgpu.autotune(configs=configs)(lambda config, x: None)
    with pytest.raises(TypeError, match=r"Config `tiles` must be an int, .* got \[1, 2\]"):
        mgpu.Config(tiles=[1, 2])
    with pytest.raises(ValueError, match="a Config cannot have a `kwargs` argument"):
        mgpu.Config(kwargs=1)
    with pytest.raises(AttributeError, match=r"Config\(rows=32\) has no `stages`"):
        mgpu.Config(rows=32).stages
    tuned = mgpu.autotune(configs=configs)(make)
    with pytest.raises(TypeError, match=r"make has 1 inputs \(x\); got 2"):
        tuned.best(mgpu.Spec(SHAPE, "f32"), mgpu.Spec(SHAPE, "f32"), backend="emulator")
    with pytest.raises(TypeError, match=r"make takes its 1 inputs \(x\)"):
        tuned(backend="emulator")
    with pytest.raises(ValueError, match="backend must be 'cuda' or 'emulator'"):
        tuned.best(mgpu.Spec(SHAPE, "f32"), backend="gpu")
    with pytest.raises(TypeError, match="must return a Kernel .*, got 'not a kernel'"):
        mgpu.autotune(configs=configs, name="wrong")(lambda config, x: "not a kernel").best(
            mgpu.Spec(SHAPE, "f32"), backend="emulator")


def test_config_equality_hash_and_repr():
    assert mgpu.Config(a=1, b="x") == mgpu.Config(b="x", a=1)
    assert hash(mgpu.Config(a=1, b="x")) == hash(mgpu.Config(b="x", a=1))
    assert mgpu.Config(a=1) != mgpu.Config(a=True) and mgpu.Config(a=1) != mgpu.Config(a=1.0)
    assert repr(mgpu.Config(tile_n=256, stages=3)) == "Config(tile_n=256, stages=3)"
    assert mgpu.Config(tile_n=None).kwargs == {"tile_n": None}
    config = mgpu.Config(tile_n=256, stages=3)
    assert copy.deepcopy(config) == pickle.loads(pickle.dumps(config)) == config


# Runs in a process of its own with the fake driver as the CUDA driver
# (which launches nothing, and says every event pair is 1 ms apart): the
# timer's whole path, through LoadedKernel.time_launches.
FAKE_TIMING = """
import ctypes, json, sys
import numpy as np
import mosaic_gpu as mgpu
fake = ctypes.CDLL(sys.argv[1])
launches = lambda: ctypes.c_int.in_dll(fake, "fake_launches").value

@mgpu.autotune(configs=[mgpu.Config(rows=64), mgpu.Config(rows=32)],
               timer=mgpu.CudaTimer(warmup=1, repeats=3))
def scale(config, x):
    @mgpu.kernel(grid=(x.tiles(0, config.rows), 1, 1), block=(128, 1, 1),
                 inputs=[(x.shape, x.dtype)], outputs=[(x.shape, x.dtype)])
    def body(x_ref, out):
        rows = mgpu.ds(mgpu.block_id("x") * config.rows, config.rows)
        mgpu.vector_store(mgpu.vector_load(x_ref[rows, :]) * 2.0, out[rows, :])
    return body

x = np.ones((4096, 64), np.float32)
try:  # at least one timed launch
    scale.specialize(x, backend="cuda")._loaded("cuda", {}).time_launches([], 1, 0)
    refused = ""
except ValueError as error:
    refused = str(error)
decision = scale.decision(x, backend="cuda")
timed = launches()
scale(x, np.zeros_like(x), backend="cuda")
print(json.dumps({"how": decision.how, "device": decision.device, "timed_launches": timed,
                  "launches": launches(), "times": [c.times for c in decision.candidates],
                  "refused": refused,
                  "rows": decision.config.rows,
                  "grid": list((ctypes.c_uint * 3).in_dll(fake, "fake_launch_grid"))}))
"""


@pytest.mark.skipif(not FAKE_DRIVER.exists(), reason="built without runtime/ (no cuda.h)")
def test_cuda_timer_runs_end_to_end_through_the_fake_driver(ptxas, cache):
    env = dict(os.environ, MOSAIC_CUDA_DRIVER=str(FAKE_DRIVER), MOSAIC_GPU_CACHE_DIR=str(cache))
    result = subprocess.run([sys.executable, "-c", FAKE_TIMING, str(FAKE_DRIVER)],
                            env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads(result.stdout)
    # 2 candidates x (1 warm-up + 3 timed) runs (the flush is a memset, not
    # a launch), each time the events' 1 ms.
    assert record["how"] == "timed" and record["device"] == "Fake H100"
    assert record["timed_launches"] == 2 * 4 and record["times"] == [[1e-3] * 3] * 2
    assert record["launches"] == 9  # and the call itself, with the chosen config
    assert record["refused"] == "`repeats` must be at least 1"
    assert record["grid"] == [4096 // record["rows"], 1, 1]
    assert [p.name.startswith("scale-") for p in cache_entries(cache)] == [True]
