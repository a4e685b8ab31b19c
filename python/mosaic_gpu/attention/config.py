"""The shape of an attention problem and the checks every attention kernel
shares: batch, heads (query and key/value), sequence lengths (fixed, or a
packed variable-length batch), head dim, mask and dtype.

Arrays are laid out as FlashAttention takes them, with dims merged (which
copies nothing): Q and O are (tokens, heads * head_dim) and K and V (tokens,
kv_heads * head_dim), where tokens is batch x seq for a fixed length (the
[batch, seq, heads, dim] array) or the sum of the lengths of a packed batch
(the [tokens, heads, dim] array), whose sequence b is tokens
[cu_seqlens[b], cu_seqlens[b + 1]). Head h is the column block
[h * head_dim, +head_dim): a 2-D TMA box, where a 3-D view would squeeze a
dim the shared-memory tiling covers.
The LSE is f32, natural log, as FlashAttention returns it: (batch, heads,
seq) for a fixed length, (heads, tokens) for a packed batch.
"""
from __future__ import annotations

from typing import NamedTuple

from .. import dtypes as _dtypes

__all__ = ["Config", "DTYPES", "MAX_GRID_Y"]

# The names a Config's dtype takes: Q, K and V's element type. fp8 is e4m3
# with per-tensor scales (forward only); its O is bf16.
DTYPES = {"bf16": _dtypes.bf16, "f16": _dtypes.f16, "fp8": _dtypes.f8e4m3fn}
HEAD_DIMS = (64, 128, 256)
# A grid's y and z dims hold at most 65535 blocks.
MAX_GRID_Y = 65535


class Config(NamedTuple):
    """One attention problem. ``seq`` is each sequence's length, or with
    ``tokens`` set (a packed variable-length batch) the longest one's;
    ``tokens`` is then the total of the lengths, which the kernels read at
    run time from ``cu_seqlens``. ``kv_heads`` 0 means ``heads`` (multi-head
    attention); fewer is grouped-query attention, 1 multi-query."""
    batch: int
    heads: int
    seq: int
    head_dim: int = 128
    causal: bool = False
    dtype: str = "bf16"
    kv_heads: int = 0
    tokens: int = 0
    stages: int = 2

    @property
    def varlen(self) -> bool:
        return self.tokens > 0

    @property
    def key_heads(self) -> int:
        return self.kv_heads or self.heads

    @property
    def group(self) -> int:
        """Query heads per key/value head."""
        return self.heads // self.key_heads

    @property
    def total_tokens(self) -> int:
        return self.tokens if self.varlen else self.batch * self.seq

    @property
    def element(self) -> _dtypes.DType:
        return DTYPES[self.dtype]

    def shapes(self) -> dict[str, tuple[int, ...]]:
        """The arrays' shapes: q, k, v, o, lse and (varlen) cu_seqlens."""
        t, d = self.total_tokens, self.head_dim
        shapes = {"q": (t, self.heads * d), "k": (t, self.key_heads * d),
                  "v": (t, self.key_heads * d), "o": (t, self.heads * d),
                  "lse": (self.heads, t) if self.varlen else (self.batch, self.heads, self.seq)}
        if self.varlen:
            shapes["cu_seqlens"] = (self.batch + 1,)
        return shapes


def check(config: Config, head_dims=HEAD_DIMS, dtypes=tuple(DTYPES)) -> None:
    """Raises ValueError for a problem no attention kernel can take (each
    kernel checks its own limits, such as shared memory, on top)."""
    if config.dtype not in dtypes:
        raise ValueError(f"dtype must be one of {', '.join(dtypes)}, got {config.dtype!r}")
    if config.head_dim not in head_dims:
        raise ValueError(f"head_dim must be one of {', '.join(map(str, head_dims))}, "
                         f"got {config.head_dim}")
    for name in ("batch", "heads", "seq"):
        if getattr(config, name) <= 0:
            raise ValueError(f"{name} must be positive, got {getattr(config, name)}")
    if config.kv_heads < 0 or config.heads % config.key_heads:
        raise ValueError(f"kv_heads ({config.kv_heads}) must divide heads ({config.heads}): "
                         "each key/value head serves a whole group of query heads")
    if config.tokens < 0:
        raise ValueError(f"tokens must be positive for a packed batch, got {config.tokens}")
    if config.varlen and not config.seq <= config.tokens <= config.batch * config.seq:
        raise ValueError(f"a packed batch of {config.batch} sequences of at most {config.seq} "
                         f"tokens, the longest {config.seq}, holds {config.seq} to "
                         f"{config.batch * config.seq} tokens, got {config.tokens}")
    for name, value in (("heads", config.heads), ("batch", config.batch)):
        if value > MAX_GRID_Y:
            raise ValueError(f"{name} is {value}, more than the {MAX_GRID_Y} blocks a grid's "
                             "y or z dimension holds")
    if config.total_tokens >= 2 ** 31:
        raise ValueError(f"{config.total_tokens} tokens do not fit the kernels' 32-bit offsets")
    if config.stages < 2:
        raise ValueError(f"stages must be at least 2, got {config.stages}")


def seqlens_check(config: Config, cu_seqlens) -> None:
    """Raises ValueError unless ``cu_seqlens`` (a host array) is the offsets
    of a packed batch of ``config``: batch + 1 non-decreasing offsets from 0
    to tokens, no sequence longer than seq."""
    import numpy as np
    offsets = np.asarray(cu_seqlens)
    if offsets.shape != (config.batch + 1,):
        raise ValueError(f"cu_seqlens must hold batch + 1 = {config.batch + 1} offsets, got "
                         f"shape {offsets.shape}")
    lengths = np.diff(offsets.astype(np.int64))
    if offsets[0] != 0 or offsets[-1] != config.tokens:
        raise ValueError(f"cu_seqlens must run from 0 to the {config.tokens} tokens, got "
                         f"{int(offsets[0])} to {int(offsets[-1])}")
    if (lengths < 0).any():
        raise ValueError("cu_seqlens must not decrease")
    if lengths.max() > config.seq:
        raise ValueError(f"a sequence of {int(lengths.max())} tokens is longer than the "
                         f"longest the kernel was built for ({config.seq})")
