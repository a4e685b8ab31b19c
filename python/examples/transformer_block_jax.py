"""A transformer block in JAX whose attention and MLP run as mosaic_gpu
kernels inside jax.jit, forward and backward, checked against the same
block in jax.numpy (float32): the output, and jax.grad of a scalar loss
with respect to every parameter and the input.

The block and its kernels: transformer_block_kernels.py. The kernels are
JAX functions made by mosaic_gpu.to_jax: the attention forward kernel, and
the MLP's GEMMs (bias + GELU fused into the first one's epilogue, the bias
into the second's). The attention and the MLP are jax.custom_vjp functions
whose backward runs our kernels too, through to_jax: the attention
backward's three kernels (the main one adds dQ into a zeroed f32 workspace,
given to it as an initialized output) and the MLP's five backward GEMMs.

Prints the largest error of each result; exits 1 if one is past the
tolerance (transformer_block_kernels.TOLERANCE).

    PYTHONPATH=build/python python python/examples/transformer_block_jax.py --emulate
    ... transformer_block_jax.py --emulate --batch 1 --seq 256 --heads 4 --hidden 1024
"""
from __future__ import annotations

import pathlib
import sys
import time
from typing import Any, Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

import mosaic_gpu as mgpu
from mosaic_gpu.attention import Config as AttentionConfig
from mosaic_gpu.attention import backward as attention_backward
from mosaic_gpu.attention import forward as attention_forward

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import transformer_block_kernels as blocks  # noqa: E402  (found through the line above)


def make_attention(shape: blocks.Shape) -> Callable:
    """Causal attention of q, k, v [batch, seq, heads, head_dim] bf16 on
    our kernels, differentiable (jax.custom_vjp)."""
    config = AttentionConfig(shape.batch, shape.heads, shape.seq, shape.head_dim, causal=True)
    forward_kernel = mgpu.to_jax(attention_forward.build(config))
    kernels = attention_backward.build(config)
    preprocess = mgpu.to_jax(kernels.preprocess)
    # The main kernel adds dQ into its third output, an f32 workspace that
    # must start at zero: given as its initial value.
    main = mgpu.to_jax(kernels.main, initialized_outputs=[2])
    postprocess = mgpu.to_jax(kernels.postprocess)
    columns = shape.heads * shape.head_dim
    padding = attention_backward.padded_seq(config) - shape.seq

    def flat(a):  # the kernels' (tokens, heads * head_dim) layout: a reshape
        return a.reshape(shape.tokens, columns)

    def forward(q, k, v):
        o, lse = forward_kernel(flat(q), flat(k), flat(v))
        return o.reshape(q.shape), lse

    def backward(q, k, v, o, lse, do):
        delta = preprocess(flat(o), flat(do))
        # The LSE as the main kernel reads it: (heads, batch * padded seq),
        # zeros past each sequence (attention_backward.padded_lse).
        padded_lse = jnp.pad(lse.transpose(1, 0, 2), ((0, 0), (0, 0), (0, padding)))
        padded_lse = padded_lse.reshape(attention_backward.stats_shape(config))
        zeros = jnp.zeros(attention_backward.workspace_shape(config), jnp.float32)
        dk, dv, dq_accumulated = main(flat(q), flat(k), flat(v), flat(do), padded_lse, delta,
                                      zeros)
        dq = postprocess(dq_accumulated)
        return dq.reshape(q.shape), dk.reshape(k.shape), dv.reshape(v.shape)

    @jax.custom_vjp
    def attention(q, k, v):
        return forward(q, k, v)[0]

    def attention_vjp_forward(q, k, v):
        o, lse = forward(q, k, v)
        return o, (q, k, v, o, lse)

    def attention_vjp_backward(saved, do):
        return backward(*saved, do)

    attention.defvjp(attention_vjp_forward, attention_vjp_backward)
    return attention


def make_mlp(shape: blocks.Shape) -> Callable:
    """mlp(h, w1, b1, w2, b2) = gelu_tanh(h w1^T + b1) w2^T + b2 for h
    [tokens, width] on our GEMMs, differentiable (jax.custom_vjp) through
    our GEMMs too."""
    kernels = blocks.MlpKernels(*[mgpu.to_jax(k) for k in blocks.mlp_kernels(shape)])

    @jax.custom_vjp
    def mlp(h, w1, b1, w2, b2):
        return kernels.down_bias(kernels.up_gelu(h, w1, b1), w2, b2)

    def mlp_vjp_forward(h, w1, b1, w2, b2):
        a = kernels.up_gelu(h, w1, b1)
        return kernels.down_bias(a, w2, b2), (h, w1, b1, w2, a)

    def mlp_vjp_backward(saved, dy):
        h, w1, b1, w2, a = saved
        u = kernels.up_bias(h, w1, b1)  # f32
        da = kernels.down_input(dy, w2)
        du = da.astype(jnp.float32) * blocks.gelu_tanh_derivative(u, jnp.tanh)
        du_bf16 = du.astype(h.dtype)
        return (kernels.up_input(du_bf16, w1),
                kernels.up_weight(du_bf16.T, h),
                du.sum(0),
                kernels.down_weight(dy.T, a),
                dy.astype(jnp.float32).sum(0))

    mlp.defvjp(mlp_vjp_forward, mlp_vjp_backward)
    return mlp


def block(params: dict[str, Any], x, heads: int, attention: Callable, mlp: Callable):
    """The transformer block (transformer_block_kernels.py) of x [batch,
    seq, width] with ``heads`` attention heads, its attention and MLP the
    functions given."""
    batch, seq, width = x.shape
    q, k, v = [(x @ params[w].T).reshape(batch, seq, heads, width // heads)
               for w in ("wq", "wk", "wv")]
    h = x + attention(q, k, v).reshape(batch, seq, width) @ params["wo"].T
    tokens = h.reshape(batch * seq, width)
    return h + mlp(tokens, *(params[p] for p in ("w1", "b1", "w2", "b2"))).reshape(x.shape)


def reference_attention(q, k, v):
    """Causal softmax attention in jax.numpy."""
    seq, head_dim = q.shape[1], q.shape[3]
    scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / jnp.sqrt(jnp.float32(head_dim))
    visible = jnp.tril(jnp.ones((seq, seq), bool))
    weights = jax.nn.softmax(jnp.where(visible, scores, -jnp.inf), axis=-1)
    return jnp.einsum("bhqk,bkhd->bqhd", weights, v)


def reference_mlp(h, w1, b1, w2, b2):
    return jax.nn.gelu(h @ w1.T + b1, approximate=True) @ w2.T + b2


def loss_and_grads(params: dict[str, Any], x, dy, heads: int, attention: Callable,
                   mlp: Callable):
    """The block's output y, the gradients of sum(y * dy) with respect to
    the parameters and x ("x"), under jax.jit, and the jitted step's
    StableHLO."""
    def loss(params, x):
        y = block(params, x, heads, attention, mlp)
        return jnp.sum(y.astype(jnp.float32) * dy), y

    step = jax.jit(jax.value_and_grad(loss, argnums=(0, 1), has_aux=True))
    (_, y), (grads, dx) = step(params, x)
    return y, {**grads, "x": dx}, step.lower(params, x).as_text()


def run(shape: blocks.Shape, seed: int, backend: str) -> bool:
    """Runs the block on the kernels and in jax.numpy, prints the
    comparison, returns whether it passed."""
    values = blocks.parameters(shape, seed)
    # The kernels' model: bf16 weights and activations, f32 biases.
    model = {name: jnp.asarray(values[name], jnp.float32 if name.startswith("b")
                               else jnp.bfloat16) for name in blocks.PARAMETERS}
    x = jnp.asarray(values["x"], jnp.bfloat16)
    dy = jnp.asarray(values["dy"])
    started = time.perf_counter()
    y, grads, program = loss_and_grads(model, x, dy, shape.heads, make_attention(shape),
                                       make_mlp(shape))
    y = np.asarray(y.astype(jnp.float32))
    took = time.perf_counter() - started
    # The reference: the same (bf16-valued) parameters and x, in float32.
    exact = {name: model[name].astype(jnp.float32) for name in blocks.PARAMETERS}
    y_ref, grads_ref, _ = loss_and_grads(exact, x.astype(jnp.float32), dy, shape.heads,
                                      reference_attention, reference_mlp)
    print(f"transformer block in JAX, {blocks.describe(shape)}, on the {backend}: "
          f"forward and backward in {took:.1f} s (jit's compilation included)")
    # Forward: attention and two GEMMs; backward: attention's three kernels
    # and five GEMMs. Each an XLA custom call, none through the host.
    print(f"  the jitted step: {program.count('custom_call @mosaic_gpu_kernel')} mosaic_gpu "
          f"kernel calls, {program.count('callback')} host callbacks")
    results = [blocks.compare("y", y, y_ref)]
    results += [blocks.compare(f"d{name}", np.asarray(grads[name].astype(jnp.float32)),
                               grads_ref[name]) for name in (*blocks.PARAMETERS, "x")]
    for _, line in results:
        print("  " + line)
    passed = all(ok for ok, _ in results)
    print(f"transformer_block_jax: {'PASS' if passed else 'FAIL'}")
    return passed


def main(argv: Sequence[str] | None = None) -> int:
    args, shape = blocks.parse("transformer_block_jax.py", __doc__.split("\n\n")[0], argv)
    if args.emulate:
        # JAX on the CPU platform, where to_jax runs kernels on the emulator.
        jax.config.update("jax_platforms", "cpu")
    elif jax.default_backend() == "cpu":
        print("transformer_block_jax: JAX has no GPU here; pass --emulate to run on the CPU, "
              "the kernels on the PTX emulator", file=sys.stderr)
        return 2
    return blocks.exit_status("transformer_block_jax",
                              lambda: run(shape, args.seed, "emulator" if args.emulate else "cuda"))


if __name__ == "__main__":
    sys.exit(main())
