"""mosaic_gpu.attention.forward, the FlashAttention-3 style kernel: O and
the LSE against the float64 reference on the PTX emulator (a hazard fails
the launch) at head dims 64, 128 and 256, with grouped heads, the causal
mask, packed batches, bf16 and f16, several ring depths and a tile width
other than the default; a random schedule; broken kernels the checks catch
(S_j read before its wait: a compile error; P V reading V before it lands:
a hazard; P carried across the loop's back edge in 16 bits, written while
the P V reads it: a register hazard, and ptxas serializes the wgmmas); bad
configurations; and, with ptxas and nvdisasm, the consumer loop's SASS: no
spills, and every exponential after the wait for S_j and before the wait
for the P V issued with it.

Each emulator run is a process of its own (a crash fails that test only)."""
import importlib.util
import re
import subprocess
import sys

import pytest

import mosaic_gpu as mgpu
from conftest import REPO, needs_emulator, run_check_in_process
from mosaic_gpu.attention import Config, forward


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("attention_forward_cache")


def inputs(config: Config, lengths=None, seed=0):
    """Random q, k, v (and cu_seqlens from ``lengths`` for a packed batch)."""
    import ml_dtypes
    import numpy as np
    rng = np.random.default_rng(seed)
    numpy_type = {"bf16": ml_dtypes.bfloat16, "f16": np.float16}[config.dtype]
    shapes = config.shapes()
    arrays = [rng.standard_normal(shapes[name]).astype(numpy_type) for name in ("q", "k", "v")]
    if config.varlen:
        arrays.append(np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32))
    return arrays


def compare(config: Config, arrays, o, lse) -> list[str]:
    """The elements of O and the LSE outside python/examples/attention.py's
    tolerance, as messages: O within reference.forward_tolerance (P and O
    rounded to the input type), the LSE within 2^-14 of its value plus
    2^-14."""
    import numpy as np
    from mosaic_gpu.attention import reference
    t, d = config.total_tokens, config.head_dim
    q, k, v = (a.reshape(t, -1, d) for a in arrays[:3])
    cu_seqlens = arrays[3] if config.varlen else None
    o_ref, lse_ref = reference.forward(config, q, k, v, cu_seqlens)
    unit = 2 ** -8 if config.dtype == "bf16" else 2 ** -11
    o_allowed = reference.forward_tolerance(config, q, k, v, cu_seqlens, unit)
    failures = []
    for name, out, ref, allowed in (
            ("O", o, o_ref.reshape(o.shape), o_allowed.reshape(o.shape)),
            ("LSE", lse, lse_ref, 2 ** -14 * np.abs(lse_ref) + 2 ** -14)):
        error = np.abs(out.astype(np.float64) - ref)
        bad = ~(error <= allowed)  # NaN fails
        if bad.any():
            where = tuple(int(i) for i in np.argwhere(bad)[0])
            failures.append(f"{name}: {int(bad.sum())} of {out.size} outside, first at {where}: "
                            f"{float(out[where]):.6g} vs {ref[where]:.6g}")
    return failures


def check(fields: dict, block_n=None, lengths=None):
    """Runs the kernel for Config(**fields) on the emulator and compares
    (called in a process of its own)."""
    config = Config(**fields)
    arrays = inputs(config, lengths)
    o, lse = forward.build(config, block_n=block_n).launch(*arrays, backend="emulator")
    failures = compare(config, arrays, o, lse)
    assert not failures, "; ".join(failures)


# Small problems: 1 to 4 query blocks, up to 8 key tiles, rings that wrap.
EMULATED = [
    pytest.param(dict(batch=1, heads=2, seq=256, head_dim=64, stages=3), None, None,
                 id="d64-stages3"),
    pytest.param(dict(batch=1, heads=4, seq=384, head_dim=128, kv_heads=2, causal=True), None,
                 None, id="d128-grouped-causal"),
    # The second sequence starts at token 100, not a multiple of 8.
    pytest.param(dict(batch=2, heads=1, seq=100, head_dim=128, dtype="f16"), None, None,
                 id="d128-f16-seq100-batch2"),
    # 64 keys a tile under 128 queries a block: the causal diagonal crosses
    # two tiles, and consumer 0 sees nothing of the second.
    pytest.param(dict(batch=1, heads=1, seq=320, head_dim=128, causal=True), 64, None,
                 id="d128-block_n64-causal"),
    pytest.param(dict(batch=1, heads=1, seq=256, head_dim=256), None, None, id="d256"),
    pytest.param(dict(batch=1, heads=2, seq=200, head_dim=256, kv_heads=1, causal=True,
                      dtype="f16"), None, None, id="d256-multiquery-causal-f16"),
    pytest.param(dict(batch=3, heads=2, seq=300, head_dim=128, causal=True, tokens=517), None,
                 [17, 300, 200], id="packed-causal"),
    pytest.param(dict(batch=3, heads=4, seq=300, head_dim=64, kv_heads=2, tokens=420), None,
                 [120, 0, 300], id="packed-grouped-empty-sequence"),
]


@needs_emulator
@pytest.mark.parametrize("fields, block_n, lengths", EMULATED)
def test_matches_the_reference_on_the_emulator(fields, block_n, lengths, cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process("test_attention_forward", "check", cache, fields, block_n, lengths)


@needs_emulator
def test_random_schedule_matches_the_reference(cache, monkeypatch):
    """Warps interleaved and async operations completed in a random order."""
    pytest.importorskip("ml_dtypes")
    for name, value in (("SCHEDULE", "random"), ("POLICY", "random"), ("SEED", "5")):
        monkeypatch.setenv(f"MOSAIC_EMULATOR_{name}", value)
    run_check_in_process("test_attention_forward", "check", cache,
                         dict(batch=1, heads=2, seq=384, head_dim=128, kv_heads=1,
                              causal=True), None, None)


def no_wait_for_v():
    """Launches a kernel whose consumers issue P V without waiting for V to
    land (called in a process of its own): the emulator must report a
    hazard, the wgmma reading what the TMA load writes or, when the
    consumers release a stage before its load completed, the producer
    arming its landed barrier again too early."""
    import inspect
    wait = mgpu.refs.wait

    def wait_except_for_v(*args, **kwargs):
        if inspect.stack()[1].function != "previous_pv":
            wait(*args, **kwargs)

    mgpu.refs.wait = wait_except_for_v
    config = Config(batch=1, heads=1, seq=512, head_dim=64)
    with pytest.raises(RuntimeError, match=r"hazard: (the wgmma.mma_async .* reads shared "
                                           r"address \d+, which the TMA load|mbarrier misuse: "
                                           r"1 arrivals on the mbarrier)"):
        forward.build(config).launch(*inputs(config), backend="emulator")


@needs_emulator
def test_reading_v_before_it_lands_is_a_hazard(cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process("test_attention_forward", "no_wait_for_v", cache)


def test_reading_s_before_its_wait_is_a_compile_error(monkeypatch):
    """Without wgmma_wait(1) the softmax reads S_j while it is in flight."""
    wgmma_wait = mgpu.refs.wgmma_wait
    monkeypatch.setattr(mgpu.refs, "wgmma_wait",
                        lambda pending: None if pending == 1 else wgmma_wait(pending))
    kernel = forward.build(Config(batch=1, heads=1, seq=512, head_dim=64))
    with pytest.raises(mgpu.MosaicError, match="reads the result of an async wgmma while it "
                                               "may still be in flight"):
        kernel.compile()


def forward_carrying_16_bit_p():
    """forward.py with P carried across the loop's back edge in the input
    type instead of f32: the back edge then writes P_j into the registers
    P_{j-1} V_{j-1}, still in flight, reads."""
    source = (REPO / "python" / "mosaic_gpu" / "attention" / "forward.py").read_text()
    for old, new in (
            (", p.astype(dtype)\n", ", p\n"),
            ("carry=(m, l0, zero_o, p, one)", "carry=(m, l0, zero_o, p.astype(dtype), one)"),
            ("return m_new, l_new, acc, p_new, alpha", "return m_new, l_new, acc, "
                                                       "p_new.astype(dtype), alpha")):
        assert source.count(old) == 1, old
        source = source.replace(old, new)
    spec = importlib.util.spec_from_loader("mosaic_gpu.attention.forward_16_bit_p", loader=None)
    module = importlib.util.module_from_spec(spec)
    module.__package__ = "mosaic_gpu.attention"
    exec(compile(source, "forward_16_bit_p.py", "exec"), module.__dict__)
    return module


def p_carried_in_16_bits():
    """Called in a process of its own: the emulator must report the
    register hazard (the in-flight check, which follows values, not
    registers, does not see it)."""
    config = Config(batch=1, heads=1, seq=512, head_dim=64)
    kernel = forward_carrying_16_bit_p().build(config)
    with pytest.raises(RuntimeError, match=r"hazard: register %r\d+ is used by the "
                                           r"wgmma.mma_async at line \d+, which no "
                                           r"wgmma.wait_group has covered yet"):
        kernel.launch(*inputs(config), backend="emulator")


@needs_emulator
def test_p_carried_in_16_bits_is_a_register_hazard(cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process("test_attention_forward", "p_carried_in_16_bits", cache)


def test_p_carried_in_16_bits_serializes_the_wgmmas(ptxas):
    """ptxas sees the same write and serializes the wgmmas."""
    kernel = forward_carrying_16_bit_p().build(Config(batch=1, heads=1, seq=512, head_dim=128))
    report = kernel.compile(line_info=False).manifest["ptxas"]["report"]
    assert "wgmma.mma_async instructions are serialized due to non wgmma instructions " \
           "defining input registers" in report


def test_inputs_and_outputs():
    """q, k, v (cu_seqlens) in; o, lse out, as config.shapes() says."""
    config = Config(batch=3, heads=4, seq=300, head_dim=256, kv_heads=2, tokens=517)
    kernel = forward.build(config)
    shapes = config.shapes()
    assert [shape for shape, _ in kernel.inputs] == [shapes[n] for n in ("q", "k", "v",
                                                                         "cu_seqlens")]
    assert [shape for shape, _ in kernel.outputs] == [shapes["o"], shapes["lse"]]


@pytest.mark.parametrize("head_dim, block_n", [(64, 128), (128, 128), (256, 64)])
def test_default_tiles(head_dim, block_n):
    assert forward.default_block_n(Config(1, 1, 128, head_dim)) == block_n


def test_stages_that_fit():
    """O shares Q's buffer: three stages fit at head dim 128, two at 256."""
    forward.check(Config(1, 1, 128, 128, stages=3))
    forward.check(Config(1, 1, 128, 256, stages=2))
    with pytest.raises(ValueError, match=r"4 stages of 128 keys at head_dim 128 need 289\.1 KiB"):
        forward.check(Config(1, 1, 128, 128, stages=4))


@pytest.mark.parametrize("config, block_n, exception, message", [
    (Config(1, 1, 128, 96), None, ValueError, "head_dim must be one of 64, 128, 256, got 96"),
    (Config(1, 1, 128, 128, dtype="fp8"), None, ValueError, "dtype must be one of bf16, f16"),
    (Config(1, 1, 128, 128), 100, ValueError,
     r"`block_n` must be a multiple of 16 in 16\.\.256, got 100"),
    (Config(1, 1, 128, 128), 272, ValueError, "got 272"),
    (Config(1, 1, 128, 128), True, TypeError, "`block_n` must be an int, got True"),
    (Config(1, 1, 128, 256, stages=3), None, ValueError,
     r"3 stages of 64 keys at head_dim 256 need 257\.0 KiB of shared memory"),
])
def test_bad_configurations(config, block_n, exception, message):
    with pytest.raises(exception, match=message):
        forward.build(config, block_n=block_n)


# The SASS of the consumer loop.


def find_nvdisasm():
    """test/Examples/SASS's nvdisasm finder (the PyPI package, then CUDA's)."""
    path = REPO / "test" / "Examples" / "SASS" / "conftest.py"
    spec = importlib.util.spec_from_file_location("sass_conftest", path)
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up by name.
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(sys.modules[spec.name])
    return sys.modules[spec.name].find_nvdisasm()


def consumer_loop(sass: str) -> list[str]:
    """The instructions of the loop whose body issues both S (A from shared
    memory) and P V (A from registers): the shortest such backward branch's
    range."""
    lines = []
    for line in sass.splitlines():
        instruction = re.match(r"\s*/\*[0-9a-f]+\*/\s+(.*?)\s*;", line)
        if instruction:
            lines.append(instruction.group(1))
        elif line.strip().startswith(".L_x"):
            lines.append(line.strip().rstrip(":"))
    labels = {line: i for i, line in enumerate(lines) if line.startswith(".L_x")}
    loops = []
    for i, line in enumerate(lines):
        target = re.search(r"BRA `\((\.L_x_\d+)\)", line)
        if target and labels.get(target.group(1), i) < i:
            body = lines[labels[target.group(1)]:i + 1]
            if any(map(is_scores, body)) and any(map(is_pv, body)):
                loops.append(body)
    assert loops, "no loop issues both wgmmas"
    return [line for line in min(loops, key=len) if not line.startswith(".L_x")]


def is_scores(instruction: str) -> bool:
    return "HGMMA" in instruction and "gdesc" in instruction.split(",")[1]


def is_pv(instruction: str) -> bool:
    return "HGMMA" in instruction and "gdesc" not in instruction.split(",")[1]


@pytest.mark.parametrize("head_dim", [64, 128, 256])
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_consumer_loop_sass(head_dim, causal, ptxas, tmp_path):
    """At the default tiles: 168 registers at entry, setmaxnreg 24 and 240,
    no spills; in the loop, the S wgmma then the P V wgmma, the turn passed
    after them, the wait for S_j (at most 1 group pending), and only then
    the softmax's exponentials, each fed by one FFMA; the wait for the P V
    (0 pending) is at the loop's top, before the next S."""
    nvdisasm = find_nvdisasm()
    if nvdisasm is None:
        pytest.skip("nvdisasm not found")
    compiled = forward.build(Config(4, 16, 4096, head_dim, causal=causal)).compile(
        line_info=False)
    report = compiled.manifest["ptxas"]
    assert (report["registers"], report["spill_stores"], report["spill_loads"]) == (168, 0, 0)
    assert "Potential Performance Loss" not in report["report"]
    cubin = tmp_path / "attention.cubin"
    cubin.write_bytes(compiled.cubin)
    sass = subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True, text=True,
                          check=True).stdout
    assert "USETMAXREG.DEALLOC.CTAPOOL 0x18" in sass
    assert "USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xf0" in sass

    loop = consumer_loop(sass)

    def where(predicate):
        return [i for i, line in enumerate(loop) if predicate(line)]

    scores, pv = where(is_scores), where(is_pv)
    turn_passed = where(lambda line: "BAR.ARV" in line)
    s_done = where(lambda line: "WARPGROUP.DEPBAR.LE gsb0, 0x1" in line)
    pv_done = where(lambda line: "WARPGROUP.DEPBAR.LE gsb0, 0x0" in line)
    exponentials = where(lambda line: "MUFU.EX2" in line)
    assert len(s_done) == 1 and len(pv_done) == 1, (s_done, pv_done)
    assert pv_done[0] < scores[0] and scores[-1] < pv[0]
    assert pv[-1] < min(turn_passed) and max(turn_passed) < s_done[0]
    assert exponentials and s_done[0] < exponentials[0]
    ffma = where(lambda line: re.match(r"(@!?P\d+ )?FFMA", line) is not None)
    assert len(ffma) == len(exponentials)
