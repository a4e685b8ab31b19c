"""Attention on PyTorch tensors or NumPy arrays shaped as FlashAttention
takes them: ``flash_attention`` (O and the LSE), ``flash_attention_backward``
(dQ, dK and dV) and, with PyTorch, ``attention``, differentiable by
autograd.

Shapes, as FlashAttention's ``flash_attn_func`` and
``flash_attn_varlen_func``:
 - fixed length: q [batch, seq, heads, head_dim], k and v [batch, seq,
   kv_heads, head_dim]; the LSE is [batch, heads, seq];
 - a packed batch of variable lengths (``cu_seqlens`` given): q [tokens,
   heads, head_dim], k and v [tokens, kv_heads, head_dim], sequence b being
   tokens [cu_seqlens[b], cu_seqlens[b + 1]); ``cu_seqlens`` is int32
   [batch + 1] and ``max_seqlen`` at least the longest sequence; the LSE is
   [heads, tokens].
The LSE is the kernels' own array in either case (config.py), no copy.
Keys and queries are the same tokens (self-attention: one ``cu_seqlens``
and one ``max_seqlen``, where FlashAttention takes one each for q and k).
kv_heads must divide heads (grouped-query attention; 1 is multi-query).
head_dim is 64, 128 or 256 (each kernel says which it takes), the dtype bf16
or f16, the same for q, k and v; the LSE is float32, natural log.

FP8 (float8_e4m3fn q, k and v, forward only) takes per-tensor descales as
FlashAttention-3 does, ``q_descale``, ``k_descale`` and ``v_descale`` (x ~
x_fp8 * descale; forward_fp8.quantize makes them) and gives a bf16 O. Its
kernel takes V transposed, so V is copied to V^T first (forward_fp8.py says
why).

The arrays are reshaped, without copies, to the kernels' (tokens, heads *
head_dim) layout (config.py), so they must be contiguous.

CUDA tensors run on their GPU; CPU tensors and NumPy arrays on the PTX
emulator, unless ``backend`` (or ``$MOSAIC_GPU_BACKEND``) says "cuda", which
copies them to the GPU and back. A kernel is built once per problem shape
(its Config) and kept.
"""
from __future__ import annotations

import functools
import operator
import os
import sys
from typing import Any, NamedTuple

from . import backward as _backward
from . import config as _config
from . import forward as _forward
from . import forward_fp8 as _forward_fp8
from . import reference as _reference
from .config import Config

__all__ = ["attention", "flash_attention", "flash_attention_backward"]

# Element types by the name NumPy (with ml_dtypes) and PyTorch give them.
_DTYPE_NAMES = {"bfloat16": "bf16", "float16": "f16", "float8_e4m3fn": "fp8"}
# Kernels built and kept, per Config; a training loop's packed batches,
# bucketed by _varlen_seq, come back to a few shapes.
_KERNEL_CACHE_SIZE = 64


class _Problem(NamedTuple):
    """What the arguments say: the Config and the backend they run on."""
    config: Config
    backend: str


def _library(array: Any) -> str:
    return type(array).__module__.split(".")[0]


def _dtype_name(array: Any) -> str:
    """'bfloat16', 'float16', ... for a NumPy array or a PyTorch tensor."""
    return str(array.dtype).removeprefix("torch.")


def _device(array: Any) -> str:
    return str(array.device) if _library(array) == "torch" else "cpu"


def _is_contiguous(array: Any) -> bool:
    if _library(array) == "torch":
        return array.is_contiguous()
    return array.flags.c_contiguous


def _host(array: Any) -> Any:
    """A NumPy copy (or view) of an array, for the checks that read it."""
    import numpy as np
    if _library(array) == "torch":
        return array.detach().cpu().numpy()
    return np.asarray(array)


def _check_arrays(named: dict[str, Any]) -> None:
    """Raises TypeError or ValueError unless the arrays are all NumPy arrays
    or all PyTorch tensors, on one device, contiguous."""
    kinds = {name: _library(array) for name, array in named.items()}
    for name, kind in kinds.items():
        if kind not in ("numpy", "torch") or not hasattr(named[name], "shape"):
            raise TypeError(f"{name} must be a PyTorch tensor or a NumPy array, got "
                            f"{type(named[name]).__name__}")
    if len(set(kinds.values())) > 1:
        listed = ", ".join(f"{name} a {'tensor' if kind == 'torch' else 'NumPy array'}"
                           for name, kind in kinds.items())
        raise TypeError(f"the arrays must be all PyTorch tensors or all NumPy arrays; got "
                        f"{listed}")
    devices = {name: _device(array) for name, array in named.items()}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{name} on {device}" for name, device in devices.items())
        raise ValueError(f"the arrays must be on one device; got {listed}")
    for name, array in named.items():
        if not _is_contiguous(array):
            raise ValueError(f"{name} is not contiguous (row-major); the kernels read its "
                             f"memory as it lies, without copying it: pass "
                             f"{name}.contiguous() (NumPy: np.ascontiguousarray({name}))")


def _element_type(named: dict[str, Any]) -> str:
    """The Config dtype of q, k and v, which must have one."""
    names = {name: _dtype_name(array) for name, array in named.items()}
    if len(set(names.values())) > 1:
        listed = ", ".join(f"{name} {dtype}" for name, dtype in names.items())
        raise TypeError(f"q, k and v must have one dtype; got {listed}")
    name = next(iter(names.values()))
    dtype = _DTYPE_NAMES.get(name)
    if dtype is None:
        raise TypeError(f"q, k and v must be bfloat16, float16 or float8_e4m3fn, got {name}")
    return dtype


def _backend(backend: str | None, device: str) -> str:
    if device.startswith("cuda"):
        if backend == "emulator":
            raise ValueError(f"backend='emulator' runs kernels in host memory, but the "
                             f"arrays are on {device}: pass CPU arrays, or backend=None")
        return "cuda"
    if backend is None:
        backend = os.environ.get("MOSAIC_GPU_BACKEND") or "emulator"
    if backend not in ("cuda", "emulator"):
        raise ValueError(f"backend must be 'cuda' or 'emulator', got {backend!r}")
    return backend


def _varlen_seq(max_seqlen: int, tokens: int) -> int:
    """The Config seq of a packed batch: max_seqlen rounded up to whole
    blocks of queries, so that batches whose longest sequences differ a
    little share one kernel (seq only sizes the grid, whose blocks past a
    sequence's end return at once), and at most the tokens there are."""
    block = _forward.BLOCK_M
    return min(-(-max_seqlen // block) * block, tokens)


def _problem(q, k, v, causal, cu_seqlens, max_seqlen, backend) -> _Problem:
    """The Config of q, k and v (checked as the module docstring says)."""
    named = {"q": q, "k": k, "v": v}
    _check_arrays(named)
    dtype = _element_type(named)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool, got {causal!r}")
    varlen = cu_seqlens is not None
    rank = 3 if varlen else 4
    layout = ("[tokens, heads, head_dim] (a packed batch: cu_seqlens is given)" if varlen
              else "[batch, seq, heads, head_dim]")
    for name, array in named.items():
        if array.ndim != rank:
            raise ValueError(f"{name} must be {layout}; got shape {tuple(array.shape)}")
    q_shape, k_shape = tuple(q.shape), tuple(k.shape)
    if tuple(v.shape) != k_shape:
        raise ValueError(f"k and v must have one shape; got {k_shape} and {tuple(v.shape)}")
    if k_shape[:-2] != q_shape[:-2]:
        what = "tokens" if varlen else "batch and seq"
        raise ValueError(f"k must have q's {what} (self-attention); got q {q_shape} and "
                         f"k {k_shape}")
    heads, head_dim = q_shape[-2:]
    kv_heads = k_shape[-2]
    if k_shape[-1] != head_dim:
        raise ValueError(f"k and v must have q's head_dim {head_dim}; got {k_shape[-1]}")
    if head_dim not in _config.HEAD_DIMS:
        raise ValueError(f"head_dim must be one of {', '.join(map(str, _config.HEAD_DIMS))}, "
                         f"got {head_dim}")
    if kv_heads == 0 or heads % kv_heads:
        raise ValueError(f"the heads of q ({heads}) must be a multiple of those of k and v "
                         f"({kv_heads}): each key/value head serves a whole group")
    if varlen:
        tokens = q_shape[0]
        batch, seq = _check_seqlens(cu_seqlens, max_seqlen, tokens, q)
        config = Config(batch, heads, seq, head_dim, causal, dtype, kv_heads, tokens)
    else:
        if max_seqlen is not None:
            raise ValueError("max_seqlen is for a packed batch (with cu_seqlens); a "
                             "fixed-length batch's is its seq")
        batch, seq = q_shape[:2]
        config = Config(batch, heads, seq, head_dim, causal, dtype, kv_heads)
    return _Problem(config, _backend(backend, _device(q)))


def _check_seqlens(cu_seqlens, max_seqlen, tokens, q) -> tuple[int, int]:
    """(batch, Config seq) of a packed batch; raises unless cu_seqlens is
    int32 [batch + 1] offsets from 0 to the tokens, not decreasing, beside
    q, and max_seqlen is at least the longest sequence. A CUDA cu_seqlens is
    copied to the host for the checks."""
    if _library(cu_seqlens) not in ("numpy", "torch") or not hasattr(cu_seqlens, "shape"):
        raise TypeError(f"cu_seqlens must be an int32 tensor or NumPy array, got "
                        f"{type(cu_seqlens).__name__}")
    if _library(cu_seqlens) != _library(q) or _device(cu_seqlens) != _device(q):
        where = ("a NumPy array" if _library(cu_seqlens) == "numpy"
                 else f"a tensor on {_device(cu_seqlens)}")
        raise ValueError(f"cu_seqlens must be beside q ({_device(q)}, "
                         f"{'a tensor' if _library(q) == 'torch' else 'a NumPy array'}); "
                         f"got {where}")
    if _dtype_name(cu_seqlens) != "int32":
        raise TypeError(f"cu_seqlens must be int32, got {_dtype_name(cu_seqlens)}")
    if cu_seqlens.ndim != 1 or cu_seqlens.shape[0] < 2:
        raise ValueError(f"cu_seqlens must be [batch + 1] offsets, at least 2; got shape "
                         f"{tuple(cu_seqlens.shape)}")
    if not _is_contiguous(cu_seqlens):
        raise ValueError("cu_seqlens is not contiguous")
    offsets = _host(cu_seqlens).astype("int64")
    if offsets[0] != 0 or offsets[-1] != tokens:
        raise ValueError(f"cu_seqlens must run from 0 to q's {tokens} tokens; got "
                         f"{offsets[0]} to {offsets[-1]}")
    lengths = offsets[1:] - offsets[:-1]
    if (lengths < 0).any():
        first = int((lengths < 0).argmax())
        raise ValueError(f"cu_seqlens must not decrease; cu_seqlens[{first + 1}] = "
                         f"{offsets[first + 1]} < cu_seqlens[{first}] = {offsets[first]}")
    if max_seqlen is None:
        raise ValueError("max_seqlen is required with cu_seqlens: at least the longest "
                         "sequence's length")
    try:
        max_seqlen = operator.index(max_seqlen)
    except TypeError:
        raise TypeError(f"max_seqlen must be an int, got {type(max_seqlen).__name__}") \
            from None
    longest = int(lengths.max())
    if max_seqlen < longest:
        raise ValueError(f"max_seqlen is {max_seqlen}, but a sequence of cu_seqlens has "
                         f"{longest} tokens")
    if tokens == 0:
        raise ValueError("the packed batch holds no tokens")
    return len(lengths), _varlen_seq(max_seqlen, tokens)


@functools.lru_cache(maxsize=_KERNEL_CACHE_SIZE)
def _forward_kernel(config: Config):
    return (_forward_fp8 if config.dtype == "fp8" else _forward).build(config)


def _descales(dtype: str, q_descale, k_descale, v_descale) -> list[float] | None:
    """The FP8 descales as floats; raises unless they are given exactly for
    FP8 inputs."""
    given = {"q_descale": q_descale, "k_descale": k_descale, "v_descale": v_descale}
    if dtype != "fp8":
        named = [name for name, value in given.items() if value is not None]
        if named:
            raise ValueError(f"{', '.join(named)} are for float8_e4m3fn inputs; q, k and v "
                             f"are {dtype}")
        return None
    missing = [name for name, value in given.items() if value is None]
    if missing:
        raise TypeError(f"float8_e4m3fn q, k and v need per-tensor descales (x ~ x_fp8 * "
                        f"descale, forward_fp8.quantize): {', '.join(missing)} missing")
    if not all(hasattr(value, "__float__") for value in given.values()):
        raise TypeError("q_descale, k_descale and v_descale must be numbers, got "
                        f"{', '.join(type(value).__name__ for value in given.values())}")
    return [float(value) for value in given.values()]


def _transposed_v(config: Config, v, cu_seqlens):
    """V (tokens, kv_heads * d) as the FP8 kernel takes it, V^T (kv_heads *
    d, batch * padded seq), each sequence at a multiple of 128 columns,
    the padding zeros (forward_fp8.transpose_v, for tensors too)."""
    rows, width = v.shape[1], _forward_fp8.padded_seq(config)
    torch = _library(v) == "torch"
    if torch:
        import torch as _torch
        v_t = _torch.zeros((rows, config.batch * width), dtype=v.dtype, device=v.device)
    else:
        import numpy as np
        v_t = np.zeros((rows, config.batch * width), v.dtype)
    if not config.varlen:
        sequences = v.reshape(config.batch, config.seq, rows)
        sequences = sequences.permute(2, 0, 1) if torch else sequences.transpose(2, 0, 1)
        v_t.reshape(rows, config.batch, width)[:, :, :config.seq] = sequences
        return v_t
    offsets = _host(cu_seqlens)
    for b, (start, length) in enumerate(_reference.sequences(config, offsets)):
        v_t[:, b * width:b * width + length] = v[start:start + length].T
    return v_t


def _descales_array(descales: list[float], like):
    """The FP8 kernel's (3,) f32 descales input, beside ``like``."""
    if _library(like) == "torch":
        import torch
        return torch.tensor(descales, dtype=torch.float32, device=like.device)
    import numpy as np
    return np.array(descales, np.float32)


def _flat(array, columns):
    """``array`` as the kernels' (tokens, columns): a view, as the array is
    contiguous."""
    return array.reshape(-1, columns)


def _detached(arrays):
    """Tensors that need no gradient (DLPack exports no other)."""
    return [array.detach() if _library(array) == "torch" else array for array in arrays]


def flash_attention(q, k, v, *, causal: bool = False, cu_seqlens=None,
                    max_seqlen: int | None = None, backend: str | None = None,
                    q_descale: float | None = None, k_descale: float | None = None,
                    v_descale: float | None = None):
    """O = softmax(Q K^T / sqrt(head_dim)) V and the LSE of each query row,
    for arrays shaped as the module docstring says: returns (o, lse), o
    shaped like q (bf16 for FP8 inputs), lse [batch, heads, seq] (a packed
    batch: [heads, tokens]) float32. The descales are FP8's. Raises
    TypeError or ValueError naming what is wrong with the arguments."""
    problem = _problem(q, k, v, causal, cu_seqlens, max_seqlen, backend)
    config = problem.config
    descales = _descales(config.dtype, q_descale, k_descale, v_descale)
    kernel = _forward_kernel(config)
    d = config.head_dim
    inputs = [_flat(q, config.heads * d), _flat(k, config.key_heads * d),
              _flat(v, config.key_heads * d)]
    if descales is not None:
        if _library(q) == "torch":
            raise TypeError("float8_e4m3fn PyTorch tensors do not reach the kernels yet "
                            "(mosaic_gpu's launch reads no DLPack float8 type); pass NumPy "
                            "arrays of ml_dtypes.float8_e4m3fn")
        inputs[2:] = [_transposed_v(config, inputs[2], cu_seqlens),
                      _descales_array(descales, q)]
    if config.varlen:
        inputs.append(cu_seqlens)
    o, lse = kernel.launch(*_detached(inputs), backend=problem.backend)
    return o.reshape(q.shape), lse


def flash_attention_backward(do, q, k, v, o, lse, *, causal: bool = False, cu_seqlens=None,
                             max_seqlen: int | None = None, backend: str | None = None):
    """dQ, dK and dV of the loss whose gradient at ``o`` is ``do``, where
    (o, lse) = flash_attention(q, k, v, ...) with the same keywords: do and
    o shaped like q and of its dtype, lse as flash_attention returned it.
    dK and dV sum over the query heads of each key/value head."""
    problem = _problem(q, k, v, causal, cu_seqlens, max_seqlen, backend)
    config = problem.config
    if config.dtype == "fp8":
        raise TypeError("q, k and v are float8_e4m3fn: the FP8 attention is forward only "
                        "(train in bf16 or f16)")
    _check_arrays({"q": q, "o": o, "do": do, "lse": lse})
    for name, array in (("o", o), ("do", do)):
        if tuple(array.shape) != tuple(q.shape):
            raise ValueError(f"{name} must be shaped like q {tuple(q.shape)}; got "
                             f"{tuple(array.shape)}")
        if _dtype_name(array) != _dtype_name(q):
            raise TypeError(f"{name} must have q's dtype {_dtype_name(q)}; got "
                            f"{_dtype_name(array)}")
    lse_shape = config.shapes()["lse"]
    if tuple(lse.shape) != lse_shape:
        raise ValueError(f"lse must be {list(lse_shape)}, as flash_attention returns it; "
                         f"got {tuple(lse.shape)}")
    if _dtype_name(lse) != "float32":
        raise TypeError(f"lse must be float32, got {_dtype_name(lse)}")
    d = config.head_dim
    q_columns, kv_columns = config.heads * d, config.key_heads * d
    arrays = _detached([_flat(q, q_columns), _flat(k, kv_columns), _flat(v, kv_columns),
                        _flat(o, q_columns), lse, _flat(do, q_columns)])
    dq, dk, dv = _backward.run(config, *arrays, cu_seqlens=cu_seqlens,
                               backend=problem.backend)
    return dq.reshape(q.shape), dk.reshape(k.shape), dv.reshape(v.shape)


def _lse_shape(q, varlen: bool) -> tuple[int, ...]:
    """The LSE's shape for q, as the module docstring says."""
    if varlen:
        tokens, heads = q.shape[:2]
        return (heads, tokens)
    batch, seq, heads = q.shape[:3]
    return (batch, heads, seq)


def _torch_ops():
    """The PyTorch operators ``mosaic_gpu::attention_forward`` (O and the
    LSE) and ``mosaic_gpu::attention_backward`` (dQ, dK, dV), the first
    differentiable through the second. As custom operators with fake
    implementations, ``torch.compile`` traces through them without a graph
    break. Registered when this module is imported after PyTorch, else on
    first use (which must then not be inside ``torch.compile``: PyTorch
    cannot trace a registration)."""
    import torch
    if not hasattr(torch.ops.mosaic_gpu, "attention_forward"):
        _register_torch_ops(torch)
    return torch.ops.mosaic_gpu.attention_forward, torch.ops.mosaic_gpu.attention_backward


def _register_torch_ops(torch) -> None:
    @torch.library.custom_op(
        "mosaic_gpu::attention_forward", mutates_args=(),
        schema="(Tensor q, Tensor k, Tensor v, bool causal, Tensor? cu_seqlens, "
               "int? max_seqlen, str? backend) -> (Tensor, Tensor)")
    def forward(q, k, v, causal, cu_seqlens, max_seqlen, backend):
        o, lse = flash_attention(q, k, v, causal=causal, cu_seqlens=cu_seqlens,
                                 max_seqlen=max_seqlen, backend=backend)
        return o, lse

    @forward.register_fake
    def _(q, k, v, causal, cu_seqlens, max_seqlen, backend):
        if cu_seqlens is None:
            # The shape checks need no values: the same errors while tracing.
            _problem(q, k, v, causal, None, max_seqlen, backend)
        return (q.new_empty(q.shape),
                q.new_empty(_lse_shape(q, cu_seqlens is not None), dtype=torch.float32))

    @torch.library.custom_op(
        "mosaic_gpu::attention_backward", mutates_args=(),
        schema="(Tensor do, Tensor q, Tensor k, Tensor v, Tensor o, Tensor lse, bool causal, "
               "Tensor? cu_seqlens, int? max_seqlen, str? backend) -> (Tensor, Tensor, Tensor)")
    def backward(do, q, k, v, o, lse, causal, cu_seqlens, max_seqlen, backend):
        return flash_attention_backward(do, q, k, v, o, lse, causal=causal,
                                        cu_seqlens=cu_seqlens, max_seqlen=max_seqlen,
                                        backend=backend)

    @backward.register_fake
    def _(do, q, k, v, o, lse, causal, cu_seqlens, max_seqlen, backend):
        return q.new_empty(q.shape), k.new_empty(k.shape), v.new_empty(v.shape)

    def setup_context(ctx, inputs, output):
        q, k, v, causal, cu_seqlens, max_seqlen, backend = inputs
        o, lse = output
        ctx.save_for_backward(q, k, v, o, lse)
        ctx.options = (causal, cu_seqlens, max_seqlen, backend)

    def differentiate(ctx, do, dlse):
        # The LSE is a by-product for the backward, not differentiated.
        q, k, v, o, lse = ctx.saved_tensors
        dq, dk, dv = backward(do.contiguous(), q, k, v, o, lse, *ctx.options)
        return dq, dk, dv, None, None, None, None

    forward.register_autograd(differentiate, setup_context=setup_context)


# With PyTorch already imported, registering costs nothing and lets the
# first call be inside torch.compile.
if "torch" in sys.modules and sys.modules["torch"] is not None:
    _torch_ops()


def attention(q, k, v, causal: bool = False, cu_seqlens=None, max_seqlen: int | None = None,
              *, backend: str | None = None):
    """``flash_attention``'s O for PyTorch tensors, differentiable: after
    ``loss.backward()`` q.grad, k.grad and v.grad hold the gradients
    (``flash_attention_backward``). Raises ImportError without PyTorch."""
    try:
        forward, _ = _torch_ops()
    except ImportError as error:
        raise ImportError(f"attention needs PyTorch ({error}); flash_attention and "
                          "flash_attention_backward take NumPy arrays") from None
    return forward(q, k, v, causal, cu_seqlens, max_seqlen, backend)[0]
