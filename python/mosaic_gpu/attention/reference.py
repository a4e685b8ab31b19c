"""Attention in float64 NumPy, the reference every attention kernel is
checked against: O and the LSE forward, dQ, dK and dV backward, for the
layouts of config.py (grouped heads, packed batches, the causal mask)."""
from __future__ import annotations

import math

from .config import Config

__all__ = ["backward", "backward_tolerance", "forward", "forward_tolerance", "sequences"]


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
    """O (tokens, heads, head_dim) and the LSE, float64: (batch, heads,
    seq) for a fixed length, (heads, tokens) for a packed batch."""
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
    if not config.varlen:
        lse = lse.reshape(config.heads, config.batch, config.seq).transpose(1, 0, 2)
    return o, lse


def forward_tolerance(config: Config, q, k, v, cu_seqlens=None, unit=2 ** -8):
    """The error a forward kernel that rounds P to the input type (unit
    roundoff ``unit``) before P V and O to the input type at the end may
    make in O, per element, float64, shaped like O (tokens, heads,
    head_dim): 2 unit |O| for O's rounding; for P's, each term of P V off
    by up to unit of itself, independently, so 4 standard deviations,
    4 unit sqrt((P^2) (V^2)); and 2^-13 of P |V| for the f32 softmax (the
    approximate exp2, the running max's rescales, the row sum's order). A
    key tile missing or read twice, or a wrong rescale, is off by O
    itself."""
    import numpy as np
    tolerance = np.zeros(q.shape, np.float64)
    for start, length in sequences(config, cu_seqlens):
        if not length:
            continue
        rows = slice(start, start + length)
        p, _ = _probabilities(config, q, k, start, length)
        v64 = np.repeat(v[rows].astype(np.float64).transpose(1, 0, 2), config.group, axis=0)
        o = p @ v64
        allowed = (2 * unit * np.abs(o) + 4 * unit * np.sqrt((p ** 2) @ (v64 ** 2))
                   + 2 ** -13 * (p @ np.abs(v64)))
        tolerance[rows] = allowed.transpose(1, 0, 2)
    return tolerance


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


def backward_tolerance(config: Config, q, k, v, o, do, cu_seqlens=None, unit=2 ** -8):
    """The error a backward kernel that rounds P and dS to the input type
    (unit roundoff ``unit``: 2^-8 for bf16, 2^-11 for f16) before its MMAs
    may make in dQ, dK and dV, per element, float64 arrays shaped like the
    gradients (tokens, heads, head_dim):
     - the results' rounding to the input type: 2 unit |gradient|;
     - P^T rounded before dV += P^T dO and dS^T before dK += dS^T Q and
       dQ += dS K: each term off by up to unit of itself, independently, so
       4 standard deviations: 4 unit sqrt(sum of the squared terms), which
       is a matrix product of the squares;
     - D = rowsum(dO * O) from the O the forward stored (``o``), not the
       exact one, and dP - D in f32: their error dD moves dS by P dD, which
       dK and dQ sum with |Q| and |K| (a bound, twice over);
     - the LSE and exp2 in f32 (relative 2^-14 of P, a bound, twice over).
    A missing key or query tile, a wrong mask, a dQ stored rather than
    added or a stage read before it landed is off by the gradient itself."""
    import numpy as np
    scale = 1 / math.sqrt(config.head_dim)
    group = config.group
    tolerances = [np.zeros(x.shape, np.float64) for x in (q, k, v)]
    for start, length in sequences(config, cu_seqlens):
        if not length:
            continue
        rows = slice(start, start + length)
        p, _ = _probabilities(config, q, k, start, length)
        q64, o64, do64 = (x[rows].astype(np.float64).transpose(1, 0, 2) for x in (q, o, do))
        k64, v64 = (np.repeat(x[rows].astype(np.float64).transpose(1, 0, 2), group, axis=0)
                    for x in (k, v))
        dp = do64 @ v64.transpose(0, 2, 1)
        delta = (p * dp).sum(axis=-1, keepdims=True)
        ds = p * (dp - delta)
        # D's error, and dP - D's in f32 (a cancellation the first key of a
        # causal row makes exact in float64).
        delta_error = np.abs((do64 * o64).sum(axis=-1, keepdims=True) - delta) + 2 ** -21 * (
            np.abs(do64 * o64).sum(axis=-1, keepdims=True) + np.abs(dp))
        p_error = 2 ** -14 * p
        grads = ((ds @ k64) * scale, (ds.transpose(0, 2, 1) @ q64) * scale,
                 p.transpose(0, 2, 1) @ do64)
        rounding = (np.sqrt((ds ** 2) @ (k64 ** 2)) * scale,
                    np.sqrt((ds.transpose(0, 2, 1) ** 2) @ (q64 ** 2)) * scale,
                    np.sqrt((p.transpose(0, 2, 1) ** 2) @ (do64 ** 2)))
        bounds = ((p * delta_error + p_error * np.abs(dp - delta)) @ np.abs(k64) * scale,
                  (p * delta_error + p_error * np.abs(dp - delta)).transpose(0, 2, 1)
                  @ np.abs(q64) * scale,
                  p_error.transpose(0, 2, 1) @ np.abs(do64))
        for i, (grad, spread, bound) in enumerate(zip(grads, rounding, bounds)):
            allowed = 2 * unit * np.abs(grad) + 4 * unit * spread + 2 * bound
            if i:  # dK and dV: the group's query heads share a key head
                allowed = allowed.reshape(config.key_heads, group, length, -1).sum(1)
            tolerances[i][rows] = allowed.transpose(1, 0, 2)
    return tuple(tolerances)
