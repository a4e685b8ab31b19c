"""A transformer block as a torch.nn.Module whose attention and MLP run as
mosaic_gpu kernels, forward and backward, checked against the same module
written with PyTorch's own operators (F.linear, F.gelu(approximate="tanh"),
F.scaled_dot_product_attention) in float32: the output and the gradients of
a scalar loss with respect to every parameter and the input; then the same
under torch.compile(fullgraph=True), which fails on any graph break.

The block and its kernels: transformer_block_kernels.py. The attention is
mosaic_gpu.attention.attention (the operators mosaic_gpu::attention_forward
and attention_backward); the MLP's GEMMs are PyTorch operators made by
mosaic_gpu.to_torch, differentiated by a torch.autograd.Function whose
backward runs the backward GEMMs on the kernels too.

Prints the largest error of each result; exits 1 if one is past the
tolerance (transformer_block_kernels.TOLERANCE).

    PYTHONPATH=build/python python python/examples/transformer_block_torch.py --emulate
    ... transformer_block_torch.py --emulate --batch 1 --seq 256 --heads 4 --hidden 1024
"""
from __future__ import annotations

import pathlib
import sys
import time
from typing import Sequence

import torch
import torch.nn.functional as F
from torch import nn

import mosaic_gpu as mgpu
from mosaic_gpu.attention import attention  # after torch: registers its operators

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import transformer_block_kernels as blocks  # noqa: E402  (found through the line above)

# The MLP's operators by (tokens, width, hidden): mlp_operators registers
# them, MosaicMlp looks them up by its tensors' shapes.
MLP_OPERATORS: dict[tuple[int, int, int], blocks.MlpKernels] = {}


def mlp_operators(shape: blocks.Shape) -> blocks.MlpKernels:
    """The MLP's kernels for ``shape`` as PyTorch operators
    (torch.ops.mosaic_gpu.transformer_<kernel>_<tokens>x<width>x<hidden>),
    registered once per process."""
    key = (shape.tokens, shape.width, shape.hidden)
    if key not in MLP_OPERATORS:
        kernels = blocks.mlp_kernels(shape)
        MLP_OPERATORS[key] = blocks.MlpKernels(*[
            mgpu.to_torch(kernel, f"transformer_{field}_{key[0]}x{key[1]}x{key[2]}")
            for field, kernel in zip(kernels._fields, kernels)])
    return MLP_OPERATORS[key]


class MosaicMlp(torch.autograd.Function):
    """gelu_tanh(h w1^T + b1) w2^T + b2 for h [tokens, width] on our GEMMs,
    its backward on our GEMMs too (transformer_block_kernels.py)."""

    @staticmethod
    def forward(ctx, h, w1, b1, w2, b2):
        ops = MLP_OPERATORS[(h.shape[0], h.shape[1], w1.shape[0])]
        a = ops.up_gelu(h, w1, b1)
        ctx.save_for_backward(h, w1, b1, w2, a)
        return ops.down_bias(a, w2, b2)

    @staticmethod
    def backward(ctx, dy):
        h, w1, b1, w2, a = ctx.saved_tensors
        ops = MLP_OPERATORS[(h.shape[0], h.shape[1], w1.shape[0])]
        u = ops.up_bias(h, w1, b1)  # f32
        da = ops.down_input(dy, w2)
        du = da.float() * blocks.gelu_tanh_derivative(u, torch.tanh)
        du_bf16 = du.to(h.dtype)
        return (ops.up_input(du_bf16, w1), ops.up_weight(du_bf16.t(), h), du.sum(0),
                ops.down_weight(dy.t(), a), dy.float().sum(0))


class TransformerBlock(nn.Module):
    """The block (transformer_block_kernels.py) on PyTorch's operators, its
    parameters ``values``' (NumPy float32) as ``dtype`` (the biases
    float32)."""

    def __init__(self, shape: blocks.Shape, values: dict, dtype: torch.dtype) -> None:
        super().__init__()
        self.heads, self.head_dim = shape.heads, shape.head_dim
        for name in blocks.PARAMETERS:
            value = torch.tensor(values[name])  # a copy: the modules share nothing
            setattr(self, name, nn.Parameter(value if name.startswith("b") else value.to(dtype)))

    def attend(self, q, k, v):
        """Causal attention of [batch, seq, heads, head_dim] tensors."""
        o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                           v.transpose(1, 2), is_causal=True)
        return o.transpose(1, 2)

    def mlp(self, h):
        return F.linear(F.gelu(F.linear(h, self.w1, self.b1), approximate="tanh"), self.w2,
                        self.b2)

    def forward(self, x):
        batch, seq, width = x.shape
        q, k, v = (F.linear(x, w).view(batch, seq, self.heads, self.head_dim)
                   for w in (self.wq, self.wk, self.wv))
        h = x + F.linear(self.attend(q, k, v).reshape(batch, seq, width), self.wo)
        return h + self.mlp(h.reshape(batch * seq, width)).view(batch, seq, width)


class MosaicTransformerBlock(TransformerBlock):
    """The same block, its attention and MLP on our kernels."""

    def attend(self, q, k, v):
        return attention(q, k, v, causal=True)

    def mlp(self, h):
        return MosaicMlp.apply(h, self.w1, self.b1, self.w2, self.b2)


def forward_and_backward(module: nn.Module, x, dy):
    """y = module(x) and the gradients of sum(y * dy) with respect to the
    parameters and x (by name, "x" for x), as float32."""
    module.zero_grad(set_to_none=True)
    x = x.detach().clone().requires_grad_()
    y = module(x)
    (y.float() * dy).sum().backward()
    grads = {name: getattr(module, name).grad.float() for name in blocks.PARAMETERS}
    return y.detach().float(), {**grads, "x": x.grad.float()}


def report(title: str, y, grads, y_ref, grads_ref) -> bool:
    """Prints the comparison of a run with the reference's; whether it
    passed."""
    results = [blocks.compare("y", y.cpu().numpy(), y_ref.cpu().numpy())]
    results += [blocks.compare(f"d{name}", grads[name].cpu().numpy(),
                               grads_ref[name].cpu().numpy())
                for name in (*blocks.PARAMETERS, "x")]
    print(title)
    for _, line in results:
        print("  " + line)
    return all(ok for ok, _ in results)


def run(shape: blocks.Shape, seed: int, device: str) -> bool:
    """The block on the kernels, eager and compiled, against the PyTorch
    reference; prints the comparisons, returns whether all passed."""
    values = blocks.parameters(shape, seed)
    mlp_operators(shape)
    model = MosaicTransformerBlock(shape, values, torch.bfloat16).to(device)
    # The reference: the same (bf16-valued) parameters, in float32.
    reference = TransformerBlock(shape, values, torch.bfloat16).float().to(device)
    x = torch.from_numpy(values["x"]).to(device, torch.bfloat16)
    dy = torch.from_numpy(values["dy"]).to(device)
    y_ref, grads_ref = forward_and_backward(reference, x.float(), dy)
    where = "the emulator" if device == "cpu" else device
    described = f"{blocks.describe(shape)}, on {where}"

    started = time.perf_counter()
    y, grads = forward_and_backward(model, x, dy)
    took = time.perf_counter() - started
    passed = report(f"transformer block in PyTorch, {described}: forward and backward in "
                    f"{took:.1f} s", y, grads, y_ref, grads_ref)

    # fullgraph=True raises on a graph break. aot_eager traces forward and
    # backward as torch.compile does, without Inductor's code generation.
    compiled = torch.compile(model, backend="aot_eager", fullgraph=True)
    started = time.perf_counter()
    y, grads = forward_and_backward(compiled, x, dy)
    took = time.perf_counter() - started
    passed &= report(f"the same under torch.compile(fullgraph=True): forward and backward "
                     f"in {took:.1f} s (the compilation included)", y, grads, y_ref, grads_ref)
    print(f"transformer_block_torch: {'PASS' if passed else 'FAIL'}")
    return passed


def main(argv: Sequence[str] | None = None) -> int:
    args, shape = blocks.parse("transformer_block_torch.py", __doc__.split("\n\n")[0], argv)
    if not args.emulate and not torch.cuda.is_available():
        print("transformer_block_torch: PyTorch sees no CUDA device; pass --emulate to run on "
              "CPU tensors, the kernels on the PTX emulator", file=sys.stderr)
        return 2
    return blocks.exit_status("transformer_block_torch",
                              lambda: run(shape, args.seed, "cpu" if args.emulate else "cuda"))


if __name__ == "__main__":
    sys.exit(main())
