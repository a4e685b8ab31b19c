"""Attention in float64 NumPy, the reference every attention kernel is
checked against: O and the LSE forward, dQ, dK and dV backward, for the
layouts of config.py (grouped heads, packed batches, the causal mask)."""
from __future__ import annotations

import math

from .config import Config

__all__ = ["backward", "forward", "sequences"]


def sequences(config: Config, cu_seqlens=None) -> list[tuple[int, int]]:
    """(first token, length) of each sequence."""
    if not config.varlen:
        return [(b * config.seq, config.seq) for b in range(config.batch)]
    return [(int(cu_seqlens[b]), int(cu_seqlens[b + 1]) - int(cu_seqlens[b]))
            for b in range(config.batch)]


def _probabilities(config, q, k, start, length):
    """For one sequence: the scaled scores' softmax P (heads, length,
    length) and the LSE (heads, length), with K's heads repeated over each
    group."""
    import numpy as np
    rows = slice(start, start + length)
    q64 = q[rows].astype(np.float64).transpose(1, 0, 2)
    k64 = np.repeat(k[rows].astype(np.float64).transpose(1, 0, 2), config.group, axis=0)
    scores = q64 @ k64.transpose(0, 2, 1) / math.sqrt(config.head_dim)
    if config.causal:
        keys = np.arange(length)
        scores = np.where(keys[None, :] <= keys[:, None], scores, -np.inf)
    row_max = scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores - row_max)
    total = weights.sum(axis=-1, keepdims=True)
    return weights / total, (row_max + np.log(total))[..., 0]


def forward(config: Config, q, k, v, cu_seqlens=None):
    """O (tokens, heads, head_dim) and the LSE (heads, tokens), float64."""
    import numpy as np
    o = np.zeros(q.shape, np.float64)
    lse = np.zeros((config.heads, q.shape[0]), np.float64)
    for start, length in sequences(config, cu_seqlens):
        if not length:
            continue
        p, row_lse = _probabilities(config, q, k, start, length)
        rows = slice(start, start + length)
        v64 = np.repeat(v[rows].astype(np.float64).transpose(1, 0, 2), config.group, axis=0)
        o[rows] = (p @ v64).transpose(1, 0, 2)
        lse[:, rows] = row_lse
    return o, lse


def backward(config: Config, q, k, v, do, cu_seqlens=None):
    """dQ, dK and dV of the loss whose gradient at O is ``do``, float64;
    dK and dV sum over the query heads of each group."""
    import numpy as np
    dq = np.zeros(q.shape, np.float64)
    dk = np.zeros(k.shape, np.float64)
    dv = np.zeros(v.shape, np.float64)
    scale = 1 / math.sqrt(config.head_dim)
    for start, length in sequences(config, cu_seqlens):
        if not length:
            continue
        rows = slice(start, start + length)
        p, _ = _probabilities(config, q, k, start, length)
        q64, do64 = (x[rows].astype(np.float64).transpose(1, 0, 2) for x in (q, do))
        k64, v64 = (np.repeat(x[rows].astype(np.float64).transpose(1, 0, 2), config.group,
                              axis=0) for x in (k, v))
        dp = do64 @ v64.transpose(0, 2, 1)
        ds = p * (dp - (p * dp).sum(axis=-1, keepdims=True)) * scale
        dq[rows] = (ds @ k64).transpose(1, 0, 2)
        grouped = (config.key_heads, config.group, length, config.head_dim)
        dk[rows] = (ds.transpose(0, 2, 1) @ q64).reshape(grouped).sum(1).transpose(1, 0, 2)
        dv[rows] = (p.transpose(0, 2, 1) @ do64).reshape(grouped).sum(1).transpose(1, 0, 2)
    return dq, dk, dv
