"""What transformer_block_jax.py and transformer_block_torch.py share: the
block's sizes, the GEMM kernels of its MLP (forward and backward), its
parameters, the command line and the comparison with the framework's own
implementation.

The block, in either framework (x is [batch, seq, width], width = heads x
head_dim; weights are nn.Linear's [out, in]; no norms):

    q, k, v = x wq^T, x wk^T, x wv^T            split into heads
    h = x + attention(q, k, v, causal) wo^T     mosaic_gpu.attention's kernels
    y = h + gelu_tanh(h w1^T + b1) w2^T + b2    gemm_ws.py's kernels

The projections are the framework's matmuls; the attention and the MLP's
GEMMs are our kernels, forward and backward. The MLP's first GEMM fuses the
bias and GELU (tanh form) into its epilogue, the second its bias. Its
backward is five GEMMs on the kernels:

    u   = h w1^T + b1       (the pre-activation, recomputed; f32 out)
    da  = dy w2             dw2 = dy^T a
    du  = da * gelu'(u)     (the framework's elementwise code)
    dh  = du w1             dw1 = du^T h
and the bias gradients are column sums (the framework's). Weights, x and
the activations are bf16, the biases f32 (the epilogue's bias input).
"""
from __future__ import annotations

import argparse
import functools
import pathlib
import sys
from typing import Callable, NamedTuple, Sequence

import numpy as np

import mosaic_gpu as mgpu

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import gemm_ws  # noqa: E402  (this directory's example, found through the line above)

# A bias per output column (nn.Linear's), stored bf16 (the next layer's
# input) or f32 (the pre-activation the GELU derivative is taken at).
BIAS = gemm_ws.Epilogue(lambda acc, ops: acc + ops["bias"],
                        lambda acc, ops: acc + ops["bias"], column_vectors=("bias",))
BIAS_F32 = BIAS._replace(out="f32")

# The largest error allowed, as a fraction of the reference's largest
# magnitude, for each result compared with the framework's float32
# implementation. The kernels' model is bf16 (8 significant bits, a unit
# roundoff of 2^-8 = 0.0039), and each value passes through several bf16
# roundings before it is compared (the projections, the attention's P and
# O, the MLP's activation, the residual sums; in the backward each
# gradient's operands as well), so errors of a few roundoffs of the
# largest value are expected. A wrong bias, a missing term or a transposed
# operand is off by tens of percent.
TOLERANCE = 2 ** -5


class Shape(NamedTuple):
    """The block's sizes: ``batch`` sequences of ``seq`` tokens, ``heads``
    attention heads of ``head_dim``, an MLP of ``hidden`` units."""
    batch: int
    seq: int
    heads: int
    head_dim: int
    hidden: int

    @property
    def width(self) -> int:
        """The model width, heads x head_dim."""
        return self.heads * self.head_dim

    @property
    def tokens(self) -> int:
        return self.batch * self.seq

    def check(self) -> None:
        """Raises ValueError for sizes the kernels cannot take, in the
        command line's terms."""
        for name in self._fields:
            if getattr(self, name) <= 0:
                raise ValueError(f"--{name.replace('_', '-')} must be positive, got "
                                 f"{getattr(self, name)}")
        if self.head_dim not in (64, 128, 256):
            raise ValueError(f"--head-dim must be 64, 128 or 256 (the attention kernels'), "
                             f"got {self.head_dim}")
        if self.hidden % 64:
            raise ValueError(f"--hidden {self.hidden} must be a multiple of 64: the backward's "
                             "GEMMs take w2 and the activation as K x N operands of N = "
                             "hidden columns, which wgmma tiles by 64")
        if self.tokens % 8:
            raise ValueError(f"--batch x --seq = {self.tokens} tokens must be a multiple of 8: "
                             "the weight gradients' GEMMs sum over the tokens, and TMA needs "
                             "their bf16 rows to be whole multiples of 16 bytes")


class MlpKernels(NamedTuple):
    """The MLP's GEMM kernels, named by what they compute (see the module
    docstring). Each takes A, then B (Bt for the "nk" ones, nn.Linear's
    weight as it is), then its epilogue's bias."""
    up_gelu: mgpu.Kernel        # a = gelu_tanh(h w1^T + b1)   bf16
    up_bias: mgpu.Kernel        # u = h w1^T + b1              f32
    down_bias: mgpu.Kernel      # y = a w2^T + b2              bf16
    down_input: mgpu.Kernel     # da = dy w2
    down_weight: mgpu.Kernel    # dw2 = dy^T a
    up_input: mgpu.Kernel       # dh = du w1
    up_weight: mgpu.Kernel      # dw1 = du^T h


def gemm(m: int, n: int, k: int, b_layout: str,
         epilogue: gemm_ws.Epilogue | str | None = None) -> mgpu.Kernel:
    """gemm_ws's kernel for an (m, k) x (k, n) product, B given as
    ``b_layout`` says, one block per output tile (no clusters: these GEMMs
    are small)."""
    config = gemm_ws.Config(m, n, k, cluster=1, b_layout=b_layout, epilogue=epilogue, grid=1)
    tiles_m, tiles_n = gemm_ws.tile_grid(config, gemm_ws.tile_width(config))
    return gemm_ws.build(config._replace(grid=tiles_m * tiles_n))


@functools.lru_cache(maxsize=None)
def mlp_kernels(shape: Shape) -> MlpKernels:
    """The MLP's kernels for ``shape``, built once."""
    t, d, f = shape.tokens, shape.width, shape.hidden
    return MlpKernels(up_gelu=gemm(t, f, d, "nk", "bias_gelu_tanh"),
                      up_bias=gemm(t, f, d, "nk", BIAS_F32),
                      down_bias=gemm(t, d, f, "nk", BIAS),
                      down_input=gemm(t, f, d, "kn"),
                      down_weight=gemm(d, f, t, "kn"),
                      up_input=gemm(t, d, f, "kn"),
                      up_weight=gemm(f, d, t, "kn"))


def gelu_tanh_derivative(u, tanh):
    """d/du of 0.5 u (1 + tanh(c (u + 0.044715 u^3))), c = sqrt(2 / pi),
    for arrays of any library whose ``tanh`` is given."""
    c = 0.7978845608028654
    t = tanh(c * (u + 0.044715 * u * u * u))
    return 0.5 * (1 + t) + 0.5 * u * (1 - t * t) * c * (1 + 3 * 0.044715 * u * u)


# The parameters, in the order both examples pass them.
PARAMETERS = ("wq", "wk", "wv", "wo", "w1", "b1", "w2", "b2")


def parameters(shape: Shape, seed: int) -> dict[str, np.ndarray]:
    """Random float32 parameters (nn.Linear's layout and scale: weights
    [out, in] uniform in +-1/sqrt(in)), and x and the loss's weights of
    the output, the cotangent dy ("x", "dy": [batch, seq, width])."""
    rng = np.random.default_rng(seed)
    d, f = shape.width, shape.hidden

    def uniform(shape_, fan_in):
        bound = 1 / np.sqrt(fan_in)
        return rng.uniform(-bound, bound, shape_).astype(np.float32)

    made = {name: uniform((d, d), d) for name in ("wq", "wk", "wv", "wo")}
    made.update(w1=uniform((f, d), d), b1=uniform((f,), d), w2=uniform((d, f), f),
                b2=uniform((d,), f))
    activations = (shape.batch, shape.seq, d)
    made["x"] = rng.standard_normal(activations, dtype=np.float32)
    made["dy"] = rng.standard_normal(activations, dtype=np.float32)
    return made


def compare(name: str, got, want, tolerance: float = TOLERANCE) -> tuple[bool, str]:
    """Whether ``got`` (any dtype) matches ``want`` within ``tolerance`` of
    the reference's largest magnitude, and a line saying by how much."""
    got = np.asarray(got, np.float64)
    want = np.asarray(want, np.float64)
    if got.shape != want.shape:
        return False, f"{name}: shape {got.shape}, the reference's is {want.shape}  FAIL"
    scale = float(np.abs(want).max()) or 1.0
    error = float(np.abs(got - want).max())  # NaN makes it NaN: not <= below
    relative = error / scale
    passed = relative <= tolerance
    return passed, (f"{name:>6}: max |error| {error:.3e} = {relative:.4f} of max |ref| "
                    f"{scale:.3e} (tolerance {tolerance:.4f})  {'ok' if passed else 'FAIL'}")


def parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The command line both examples take."""
    made = argparse.ArgumentParser(prog=prog, description=description,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    made.add_argument("--batch", type=int, default=2, help="sequences (default 2)")
    made.add_argument("--seq", type=int, default=128, help="tokens per sequence (default 128)")
    made.add_argument("--heads", type=int, default=2, help="attention heads (default 2)")
    made.add_argument("--head-dim", type=int, default=64, help="64, 128 or 256 (default 64)")
    made.add_argument("--hidden", type=int, default=512,
                      help="the MLP's hidden units, a multiple of 64 (default 512)")
    made.add_argument("--seed", type=int, default=0)
    made.add_argument("--emulate", action="store_true",
                      help="run on the CPU, the kernels on the PTX emulator")
    return made


def parse(prog: str, description: str, argv: Sequence[str] | None
          ) -> tuple[argparse.Namespace, Shape]:
    """The arguments and the Shape they give; exits with the parser's
    message for sizes the kernels cannot take."""
    made = parser(prog, description)
    args = made.parse_args(argv)
    shape = Shape(args.batch, args.seq, args.heads, args.head_dim, args.hidden)
    try:
        shape.check()
    except ValueError as error:
        made.error(str(error))
    return args, shape


def exit_status(prog: str, run: Callable[[], bool]) -> int:
    """The example's exit status: 0 when ``run`` passes, 1 when it fails or
    a launch does (a driver error; on the emulator, a fault or a hazard)."""
    try:
        passed = run()
    except RuntimeError as error:
        print(f"{prog}: FAIL; a launch failed: {error}")
        return 1
    return 0 if passed else 1


def describe(shape: Shape) -> str:
    return (f"batch {shape.batch} x seq {shape.seq}, {shape.heads} heads of {shape.head_dim}, "
            f"width {shape.width}, hidden {shape.hidden}")
