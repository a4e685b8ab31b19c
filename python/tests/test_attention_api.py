"""mosaic_gpu.attention's functions (functions.py): flash_attention on the
emulator against the float64 reference (fixed length, grouped and
multi-query heads, the causal mask, f16, a packed batch) and FP8 against
forward_fp8's check, the backward through flash_attention_backward and the
autograd ``attention`` (PyTorch only), the reshapes that copy nothing, the
kernel cache, and an error naming the problem for every bad argument.

Each emulator run is a process of its own (a crash fails that test only):
the check_* functions below run there, through run_check_in_process."""
import subprocess
import sys
import types

import pytest

from conftest import needs_emulator, run_check_in_process

np = pytest.importorskip("numpy")

import mosaic_gpu.attention as attention  # noqa: E402
from mosaic_gpu.attention import functions, reference  # noqa: E402

# |out - ref| <= ABS + REL |ref| for O and dQ, dK, dV (bf16 or f16 out of
# f32 accumulators); the LSE is f32.
ABS, REL = 2e-2, 2e-2
LSE_ABS = 1e-4


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("attention_api_cache")


def element(dtype):
    import ml_dtypes
    return {"bf16": ml_dtypes.bfloat16, "f16": np.float16}[dtype]


def random_inputs(shape_q, shape_kv, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape).astype(element(dtype))
            for shape in (shape_q, shape_kv, shape_kv)]


def config_of(q, k, causal, cu_seqlens=None):
    """The reference's Config: seq is the longest sequence."""
    heads, head_dim = q.shape[-2:]
    if cu_seqlens is None:
        return attention.Config(q.shape[0], heads, q.shape[1], head_dim, causal,
                                kv_heads=k.shape[-2])
    lengths = np.diff(cu_seqlens)
    return attention.Config(len(lengths), heads, int(lengths.max()), head_dim, causal,
                            kv_heads=k.shape[-2], tokens=q.shape[0])


def tokens_major(x):
    """[batch, seq, heads, d] -> [tokens, heads, d], as the reference takes it."""
    return x.reshape(-1, *x.shape[-2:])


def assert_close(out, ref, what, atol=ABS, rtol=REL):
    out = np.asarray(out, np.float64)
    outside = np.abs(out - ref) > atol + rtol * np.abs(ref)
    assert not outside.any(), (f"{what}: {outside.sum()} of {outside.size} outside, the first "
                               f"at {np.argwhere(outside)[0]}: {out[outside][0]} against "
                               f"{ref[outside][0]}")


# ---------------------------------------------------------------------------
# Run in processes of their own.


def check_forward(batch, seq, heads, kv_heads, head_dim, causal, dtype):
    q, k, v = random_inputs((batch, seq, heads, head_dim), (batch, seq, kv_heads, head_dim),
                            dtype)
    o, lse = attention.flash_attention(q, k, v, causal=causal)
    assert o.shape == q.shape and o.dtype == q.dtype
    assert lse.shape == (batch, heads, seq) and lse.dtype == np.float32
    config = config_of(q, k, causal)
    ref_o, ref_lse = reference.forward(config, *map(tokens_major, (q, k, v)))
    assert_close(tokens_major(o), ref_o, "O")
    assert_close(lse, ref_lse, "LSE", atol=LSE_ABS, rtol=0)


def check_varlen_forward(cu_seqlens, max_seqlen, heads, kv_heads, head_dim, causal):
    cu_seqlens = np.array(cu_seqlens, np.int32)
    tokens = int(cu_seqlens[-1])
    q, k, v = random_inputs((tokens, heads, head_dim), (tokens, kv_heads, head_dim), "bf16")
    o, lse = attention.flash_attention(q, k, v, causal=causal, cu_seqlens=cu_seqlens,
                                       max_seqlen=max_seqlen)
    assert o.shape == q.shape and lse.shape == (heads, tokens)
    config = config_of(q, k, causal, cu_seqlens)
    ref_o, ref_lse = reference.forward(config, q, k, v, cu_seqlens)
    assert_close(o, ref_o, "O")
    assert_close(lse, ref_lse, "LSE", atol=LSE_ABS, rtol=0)


def check_varlen_backward(cu_seqlens, max_seqlen, heads, kv_heads, head_dim, causal):
    cu_seqlens = np.array(cu_seqlens, np.int32)
    tokens = int(cu_seqlens[-1])
    q, k, v = random_inputs((tokens, heads, head_dim), (tokens, kv_heads, head_dim), "bf16")
    do = random_inputs(q.shape, q.shape, "bf16", seed=1)[0]
    keywords = dict(causal=causal, cu_seqlens=cu_seqlens, max_seqlen=max_seqlen)
    o, lse = attention.flash_attention(q, k, v, **keywords)
    dq, dk, dv = attention.flash_attention_backward(do, q, k, v, o, lse, **keywords)
    config = config_of(q, k, causal, cu_seqlens)
    grads = reference.backward(config, q, k, v, do, cu_seqlens)
    for name, out, ref, x in zip(("dQ", "dK", "dV"), (dq, dk, dv), grads, (q, k, v)):
        assert out.shape == x.shape and out.dtype == x.dtype, name
        assert_close(out, ref, name)


def check_fp8_forward(batch, seq, heads, kv_heads, head_dim, causal, cu_seqlens):
    """The FP8 forward through the API against forward_fp8's own check
    (float64 on the dequantized inputs, its derived tolerance)."""
    from mosaic_gpu.attention import forward_fp8
    if cu_seqlens is None:
        config = attention.Config(batch, heads, seq, head_dim, causal, "fp8", kv_heads)
    else:
        cu_seqlens = np.array(cu_seqlens, np.int32)
        config = attention.Config(batch, heads, seq, head_dim, causal, "fp8", kv_heads,
                                  int(cu_seqlens[-1]))
    q, k, v, q_descale, k_descale, v_descale = forward_fp8.inputs(config)
    keywords = dict(causal=causal, q_descale=q_descale, k_descale=k_descale,
                    v_descale=v_descale)
    if cu_seqlens is None:
        def shaped(x, h):
            return x.reshape(batch, seq, h, head_dim)
    else:
        keywords.update(cu_seqlens=cu_seqlens, max_seqlen=seq)

        def shaped(x, h):
            return x.reshape(-1, h, head_dim)
    o, lse = attention.flash_attention(shaped(q, heads), shaped(k, kv_heads),
                                       shaped(v, kv_heads), **keywords)
    assert o.shape == shaped(q, heads).shape and o.dtype.name == "bfloat16"
    assert lse.shape == config.shapes()["lse"]
    passed, summary = forward_fp8.check_results(config, q, k, v, q_descale, k_descale,
                                                v_descale, o.reshape(q.shape), lse, cu_seqlens)
    assert passed, summary


def reference_backward_run(config, q, k, v, o, lse, do, cu_seqlens=None, backend=None):
    """backward.run's contract computed by the float64 reference: the
    kernel's 2-D arrays in, dQ, dK and dV of the config's dtype out. It
    checks the arrays it is given: their shapes, and that o and lse are the
    forward's."""
    shapes = config.shapes()
    for name, array in zip(("q", "k", "v", "o", "lse"), (q, k, v, o, lse)):
        assert tuple(array.shape) == shapes[name], (name, array.shape, shapes[name])
    assert tuple(do.shape) == shapes["o"]
    host = [np.asarray(x.detach().float().numpy() if hasattr(x, "detach") else x, np.float64)
            for x in (q, k, v, o, lse, do)]
    d = config.head_dim
    q3, k3, v3, o3, _, do3 = (x.reshape(x.shape[0], -1, d) if i != 4 else x
                              for i, x in enumerate(host))
    cu = None if cu_seqlens is None else np.asarray(cu_seqlens)
    ref_o, ref_lse = reference.forward(config, q3, k3, v3, cu)
    assert np.abs(o3 - ref_o).max() < 0.1 and np.abs(host[4] - ref_lse).max() < 1e-3
    grads = reference.backward(config, q3, k3, v3, do3, cu)
    made = [g.reshape(x.shape).astype(element(config.dtype))
            for g, x in zip(grads, (q, k, v))]
    if hasattr(q, "numpy"):
        import torch
        return [torch.from_numpy(g.astype(np.float32)).to(q.dtype) for g in made]
    return made


def use_reference_backward():
    """Makes flash_attention_backward call reference_backward_run."""
    functions._backward = types.SimpleNamespace(run=reference_backward_run)


def check_backward(batch, seq, heads, kv_heads, head_dim, causal, stand_in):
    if stand_in:
        use_reference_backward()
    q, k, v = random_inputs((batch, seq, heads, head_dim), (batch, seq, kv_heads, head_dim),
                            "bf16")
    do = random_inputs(q.shape, q.shape, "bf16", seed=1)[0]
    o, lse = attention.flash_attention(q, k, v, causal=causal)
    dq, dk, dv = attention.flash_attention_backward(do, q, k, v, o, lse, causal=causal)
    config = config_of(q, k, causal)
    grads = reference.backward(config, *map(tokens_major, (q, k, v, do)))
    for name, out, ref, x in zip(("dQ", "dK", "dV"), (dq, dk, dv), grads, (q, k, v)):
        assert out.shape == x.shape and out.dtype == x.dtype, name
        assert_close(tokens_major(out), ref, name)


def check_autograd(batch, seq, heads, kv_heads, head_dim, causal, stand_in):
    import torch
    if stand_in:
        use_reference_backward()
    arrays = random_inputs((batch, seq, heads, head_dim), (batch, seq, kv_heads, head_dim),
                           "bf16")
    q, k, v = (torch.from_numpy(x.astype(np.float32)).to(torch.bfloat16).requires_grad_()
               for x in arrays)
    weights = torch.from_numpy(random_inputs(arrays[0].shape, arrays[0].shape, "bf16",
                                             seed=1)[0].astype(np.float32))
    o = attention.attention(q, k, v, causal=causal)
    assert isinstance(o, torch.Tensor) and o.shape == q.shape and o.requires_grad
    # The loss's gradient at O is `weights`.
    (o.float() * weights).sum().backward()
    config = config_of(arrays[0], arrays[1], causal)
    host = [tokens_major(x.detach().float().numpy()) for x in (q, k, v)]
    grads = reference.backward(config, *host, tokens_major(weights.to(torch.bfloat16)
                                                           .float().numpy()))
    for name, x, ref in zip(("dQ", "dK", "dV"), (q, k, v), grads):
        assert x.grad is not None and x.grad.shape == x.shape, name
        assert_close(tokens_major(x.grad.float().numpy()), ref, name)


# ---------------------------------------------------------------------------
# The tests.


@needs_emulator
@pytest.mark.parametrize("batch, seq, heads, kv_heads, head_dim, causal, dtype", [
    pytest.param(1, 128, 2, 2, 64, False, "bf16", id="mha"),
    pytest.param(2, 128, 4, 2, 64, True, "bf16", id="gqa-causal"),
    pytest.param(1, 256, 2, 1, 128, True, "f16", id="mqa-causal-d128-f16"),
    pytest.param(2, 200, 2, 1, 64, False, "bf16", id="seq200-gqa"),
    pytest.param(2, 100, 2, 2, 64, True, "bf16", id="seq100-causal"),
])
def test_forward_on_the_emulator(batch, seq, heads, kv_heads, head_dim, causal, dtype, cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process("test_attention_api", "check_forward", cache, batch, seq, heads,
                         kv_heads, head_dim, causal, dtype)


@needs_emulator
def test_forward_on_a_random_schedule(cache, monkeypatch):
    """Warps interleaved and async operations completed in a random order."""
    pytest.importorskip("ml_dtypes")
    for name, value in (("SCHEDULE", "random"), ("POLICY", "random"), ("SEED", "5")):
        monkeypatch.setenv(f"MOSAIC_EMULATOR_{name}", value)
    run_check_in_process("test_attention_api", "check_forward", cache, 2, 128, 4, 1, 64, True,
                         "bf16")


@needs_emulator
def test_varlen_forward_on_the_emulator(cache):
    pytest.importorskip("ml_dtypes")
    # Three sequences of 100, 0 and 200 tokens: the second starts at 100,
    # not a multiple of 8 or of a block; max_seqlen an upper bound.
    run_check_in_process("test_attention_api", "check_varlen_forward", cache, [0, 100, 100, 300],
                         250, 4, 2, 64, True)


@needs_emulator
def test_varlen_backward_on_the_emulator(cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process("test_attention_api", "check_varlen_backward", cache,
                         [0, 100, 100, 300], 250, 4, 2, 64, True)


@needs_emulator
@pytest.mark.parametrize("batch, seq, heads, kv_heads, head_dim, causal, cu_seqlens", [
    pytest.param(2, 128, 4, 2, 64, True, None, id="gqa-causal"),
    pytest.param(3, 200, 2, 1, 64, True, [0, 100, 100, 300], id="varlen-causal"),
])
def test_fp8_forward_on_the_emulator(batch, seq, heads, kv_heads, head_dim, causal, cu_seqlens,
                                     cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process("test_attention_api", "check_fp8_forward", cache, batch, seq, heads,
                         kv_heads, head_dim, causal, cu_seqlens)


@needs_emulator
def test_backward_through_the_api(cache):
    """With the float64 reference standing in for backward.run: the API's
    reshapes, the LSE handed back as (heads, tokens), the results shaped as
    q, k and v."""
    pytest.importorskip("ml_dtypes")
    run_check_in_process("test_attention_api", "check_backward", cache, 2, 128, 4, 2, 64, True,
                         True)


@needs_emulator
@pytest.mark.parametrize("batch, seq, heads, kv_heads, head_dim, causal", [
    pytest.param(1, 128, 2, 2, 64, False, id="mha"),
    pytest.param(2, 128, 4, 2, 64, True, id="gqa-causal"),
])
def test_backward_on_the_emulator(batch, seq, heads, kv_heads, head_dim, causal, cache):
    pytest.importorskip("ml_dtypes")
    run_check_in_process("test_attention_api", "check_backward", cache, batch, seq, heads,
                         kv_heads, head_dim, causal, False)


@needs_emulator
@pytest.mark.parametrize("stand_in", [
    pytest.param(True, id="reference-backward"),
    pytest.param(False, id="kernel"),
])
def test_autograd(stand_in, cache):
    pytest.importorskip("torch")
    pytest.importorskip("ml_dtypes")
    run_check_in_process("test_attention_api", "check_autograd", cache, 2, 128, 4, 2, 64, True,
                         stand_in)


def test_importing_the_package_does_not_import_torch():
    result = subprocess.run([sys.executable, "-c", "import sys, mosaic_gpu.attention; "
                             "assert 'torch' not in sys.modules"], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr


def test_attention_without_torch_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    q = np.zeros((1, 128, 1, 64), np.float16)
    with pytest.raises(ImportError, match="attention needs PyTorch .*flash_attention and "
                                          "flash_attention_backward take NumPy arrays"):
        attention.attention(q, q, q)


def test_reshapes_copy_nothing():
    q = np.zeros((2, 128, 4, 64), np.float16)
    flat = functions._flat(q, 4 * 64)
    assert flat.shape == (256, 256) and np.shares_memory(flat, q)


def test_packed_batches_share_kernels():
    """seq is max_seqlen rounded up to whole blocks of queries, at most the
    tokens: packed batches whose longest sequences differ a little build
    one kernel."""
    assert functions._varlen_seq(100, 1000) == 128
    assert functions._varlen_seq(128, 1000) == 128
    assert functions._varlen_seq(129, 1000) == 256
    assert functions._varlen_seq(250, 300) == 256
    assert functions._varlen_seq(290, 300) == 300


def test_a_kernel_is_built_once_per_config(monkeypatch):
    built = []
    monkeypatch.setattr(functions._forward, "build", lambda config: built.append(config))
    functions._forward_kernel.cache_clear()
    try:
        config = attention.Config(1, 2, 128, 64)
        functions._forward_kernel(config)
        functions._forward_kernel(config)
        functions._forward_kernel(config._replace(causal=True))
        assert built == [config, config._replace(causal=True)]
    finally:
        functions._forward_kernel.cache_clear()


def f16(*shape):
    return np.zeros(shape, np.float16)


Q, KV = f16(2, 128, 4, 64), f16(2, 128, 2, 64)
PACKED_Q, PACKED_KV = f16(300, 4, 64), f16(300, 2, 64)
CU = np.array([0, 100, 300], np.int32)


@pytest.mark.parametrize("args, keywords, error, message", [
    ((f16(128, 4, 64), f16(128, 2, 64), f16(128, 2, 64)), {}, ValueError,
     r"q must be \[batch, seq, heads, head_dim\]; got shape \(128, 4, 64\)"),
    ((Q, KV, KV), {"cu_seqlens": CU, "max_seqlen": 200}, ValueError,
     r"q must be \[tokens, heads, head_dim\] \(a packed batch: cu_seqlens is given\); got "
     r"shape \(2, 128, 4, 64\)"),
    ((Q, KV.astype(np.float32), KV), {}, TypeError,
     "q, k and v must have one dtype; got q float16, k float32, v float16"),
    ((Q.astype(np.float32),) * 3, {}, TypeError,
     "q, k and v must be bfloat16, float16 or float8_e4m3fn, got float32"),
    ((f16(1, 128, 2, 96), f16(1, 128, 2, 96), f16(1, 128, 2, 96)), {}, ValueError,
     "head_dim must be one of 64, 128, 256, got 96"),
    ((f16(1, 128, 3, 64), f16(1, 128, 2, 64), f16(1, 128, 2, 64)), {}, ValueError,
     r"the heads of q \(3\) must be a multiple of those of k and v \(2\)"),
    ((Q, f16(2, 256, 2, 64), f16(2, 256, 2, 64)), {}, ValueError,
     r"k must have q's batch and seq \(self-attention\); got q \(2, 128, 4, 64\) and k "
     r"\(2, 256, 2, 64\)"),
    ((Q, KV, f16(2, 128, 1, 64)), {}, ValueError,
     r"k and v must have one shape; got \(2, 128, 2, 64\) and \(2, 128, 1, 64\)"),
    ((Q, f16(2, 128, 2, 128), f16(2, 128, 2, 128)), {}, ValueError,
     "k and v must have q's head_dim 64; got 128"),
    ((np.swapaxes(f16(2, 4, 128, 64), 1, 2), KV, KV), {}, ValueError,
     r"q is not contiguous \(row-major\).*pass q.contiguous\(\)"),
    ((Q, KV, KV.tolist()), {}, TypeError, "v must be a PyTorch tensor or a NumPy array, got list"),
    ((Q, KV, KV), {"causal": 1}, TypeError, "causal must be a bool, got 1"),
    ((Q, KV, KV), {"backend": "gpu"}, ValueError,
     "backend must be 'cuda' or 'emulator', got 'gpu'"),
    ((Q, KV, KV), {"max_seqlen": 128}, ValueError,
     "max_seqlen is for a packed batch \\(with cu_seqlens\\)"),
    ((PACKED_Q, PACKED_KV, PACKED_KV), {"cu_seqlens": CU}, ValueError,
     "max_seqlen is required with cu_seqlens"),
    ((PACKED_Q, PACKED_KV, PACKED_KV), {"cu_seqlens": CU, "max_seqlen": 150}, ValueError,
     "max_seqlen is 150, but a sequence of cu_seqlens has 200 tokens"),
    ((PACKED_Q, PACKED_KV, PACKED_KV), {"cu_seqlens": CU, "max_seqlen": 200.0}, TypeError,
     "max_seqlen must be an int, got float"),
    ((PACKED_Q, PACKED_KV, PACKED_KV), {"cu_seqlens": CU.astype(np.int64), "max_seqlen": 200},
     TypeError, "cu_seqlens must be int32, got int64"),
    ((PACKED_Q, PACKED_KV, PACKED_KV), {"cu_seqlens": [0, 100, 300], "max_seqlen": 200},
     TypeError, "cu_seqlens must be an int32 tensor or NumPy array, got list"),
    ((PACKED_Q, PACKED_KV, PACKED_KV), {"cu_seqlens": CU[:1], "max_seqlen": 200}, ValueError,
     r"cu_seqlens must be \[batch \+ 1\] offsets, at least 2; got shape \(1,\)"),
    ((PACKED_Q, PACKED_KV, PACKED_KV), {"cu_seqlens": CU.reshape(1, 3), "max_seqlen": 200},
     ValueError, r"cu_seqlens must be \[batch \+ 1\] offsets, at least 2; got shape \(1, 3\)"),
    ((PACKED_Q, PACKED_KV, PACKED_KV), {"cu_seqlens": CU[:2], "max_seqlen": 200}, ValueError,
     "cu_seqlens must run from 0 to q's 300 tokens; got 0 to 100"),
    ((PACKED_Q, PACKED_KV, PACKED_KV),
     {"cu_seqlens": np.array([0, 200, 100, 300], np.int32), "max_seqlen": 200}, ValueError,
     r"cu_seqlens must not decrease; cu_seqlens\[2\] = 100 < cu_seqlens\[1\] = 200"),
    ((PACKED_Q, PACKED_KV, PACKED_KV), {"cu_seqlens": CU[::2], "max_seqlen": 300},
     ValueError, "cu_seqlens is not contiguous"),
])
def test_bad_arguments(args, keywords, error, message):
    with pytest.raises(error, match=message):
        attention.flash_attention(*args, **keywords)


def test_fp8_arguments():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    q = Q.astype(ml_dtypes.float8_e4m3fn)
    with pytest.raises(TypeError, match=r"float8_e4m3fn q, k and v need per-tensor descales "
                                        r"\(x ~ x_fp8 \* descale, forward_fp8.quantize\): "
                                        "k_descale, v_descale missing"):
        attention.flash_attention(q, q, q, q_descale=1.0)
    with pytest.raises(TypeError, match="descale and v_descale must be numbers, got float, "
                                        "str, float"):
        attention.flash_attention(q, q, q, q_descale=1.0, k_descale="1", v_descale=1.0)
    with pytest.raises(ValueError, match="q_descale, v_descale are for float8_e4m3fn inputs; "
                                         "q, k and v are f16"):
        attention.flash_attention(Q, KV, KV, q_descale=1.0, v_descale=2.0)
    with pytest.raises(TypeError, match="the FP8 attention is forward only"):
        attention.flash_attention_backward(q, q, q, q, q, np.zeros((2, 4, 128), np.float32))


@pytest.mark.parametrize("change, error, message", [
    (dict(o=f16(2, 128, 4, 32)), ValueError,
     r"o must be shaped like q \(2, 128, 4, 64\); got \(2, 128, 4, 32\)"),
    (dict(do=Q.astype(np.float32)), TypeError, "do must have q's dtype float16; got float32"),
    (dict(lse=np.zeros((4, 256), np.float32)), ValueError,
     r"lse must be \[2, 4, 128\], as flash_attention returns it; got \(4, 256\)"),
    (dict(lse=np.zeros((2, 4, 128), np.float16)), TypeError, "lse must be float32, got float16"),
    (dict(do=np.asfortranarray(Q)), ValueError, "do is not contiguous"),
])
def test_bad_backward_arguments(change, error, message):
    arrays = dict(do=Q, q=Q, k=KV, v=KV, o=Q, lse=np.zeros((2, 4, 128), np.float32))
    arrays.update(change)
    with pytest.raises(error, match=message):
        attention.flash_attention_backward(*arrays.values(), causal=True)


def test_tensors_and_arrays_do_not_mix():
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError, match="the arrays must be all PyTorch tensors or all NumPy "
                                        "arrays; got q a NumPy array, k a tensor, v a tensor"):
        attention.flash_attention(Q, torch.from_numpy(KV), torch.from_numpy(KV))


def test_mixed_devices_are_named():
    torch = pytest.importorskip("torch")
    q = torch.zeros(2, 128, 4, 64, dtype=torch.bfloat16)
    k = torch.zeros(2, 128, 2, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="the arrays must be on one device; got q on cpu, k on "
                                         "meta, v on cpu"):
        attention.flash_attention(q, k.to("meta"), k)
    with pytest.raises(ValueError, match=r"cu_seqlens must be beside q \(cpu, a tensor\); got "
                                         "a NumPy array"):
        attention.flash_attention(q.reshape(256, 4, 64), k.reshape(256, 2, 64),
                                  k.reshape(256, 2, 64), cu_seqlens=np.array([0, 256], np.int32),
                                  max_seqlen=256)


def test_fp8_tensors_are_refused_with_a_reason():
    torch = pytest.importorskip("torch")
    q = torch.zeros(2, 128, 4, 64).to(torch.float8_e4m3fn)
    with pytest.raises(TypeError, match="float8_e4m3fn PyTorch tensors do not reach the kernels "
                                        "yet"):
        attention.flash_attention(q, q, q, q_descale=1.0, k_descale=1.0, v_descale=1.0)


def test_a_tensor_that_needs_no_copy_is_not_copied():
    torch = pytest.importorskip("torch")
    q = torch.zeros(2, 128, 4, 64, dtype=torch.bfloat16)
    flat = functions._flat(q, 256)
    assert flat.data_ptr() == q.data_ptr() and flat.shape == (256, 256)
    with pytest.raises(ValueError, match="q is not contiguous"):
        attention.flash_attention(q.transpose(1, 2), q.transpose(1, 2), q.transpose(1, 2))
