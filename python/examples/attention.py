"""Fused attention, forward and backward, FlashAttention style, checked
against NumPy float64: O = softmax(Q K^T / sqrt(d)) V and the LSE of each
query row, and with --backward dQ, dK and dV of a random upstream gradient
dO. Q, K and V are laid out as FlashAttention takes them ([batch, seq, heads,
head_dim], or [tokens, heads, head_dim] for a packed batch); K and V may have
fewer heads than Q (grouped-query attention, --kv-heads), sequences any
length (--seq) or several lengths packed together (--varlen), head_dim 64,
128 or 256, bf16, f16 or fp8 (e4m3 with per-tensor scales, forward only). The kernels are mosaic_gpu.attention's; see
docs/AttentionWalkthrough.md.

    attention.py --batch 1 --heads 2 --seq 300 --head-dim 64 --causal --backward --emulate
    attention.py --varlen 17,300,129 --heads 4 --kv-heads 1 --backward --emulate
    attention.py --emit-mlir attention.mlir      (4 x 16 heads x 4096, for bench/gpu)
"""
from __future__ import annotations

import argparse
import pathlib
import sys
from typing import Sequence

from mosaic_gpu.attention import Config, backward, forward, reference

# Unit roundoff of the input types: half their spacing at 1.
UNIT = {"bf16": 2 ** -8, "f16": 2 ** -11}


def build_config(args: argparse.Namespace) -> Config:
    """The Config the arguments describe; ValueError for a bad one."""
    if args.varlen is not None:
        if args.batch is not None or args.seq is not None:
            raise ValueError("--varlen gives the batch and its lengths: drop --batch and --seq")
        lengths = seqlens(args.varlen)
        return Config(len(lengths), args.heads, max(max(lengths), 1), args.head_dim,
                      args.causal, args.dtype, args.kv_heads, max(sum(lengths), 1),
                      args.stages)
    return Config(4 if args.batch is None else args.batch, args.heads,
                  4096 if args.seq is None else args.seq, args.head_dim, args.causal,
                  args.dtype, args.kv_heads, 0, args.stages)


def seqlens(text: str) -> list[int]:
    """The lengths of --varlen L1,L2,...; ValueError for a bad list."""
    try:
        lengths = [int(item) for item in text.split(",")]
    except ValueError:
        raise ValueError(f"--varlen takes comma-separated lengths, got {text!r}") from None
    if any(length < 0 for length in lengths) or not any(lengths):
        raise ValueError(f"--varlen lengths must be non-negative and not all 0, got {text!r}")
    return lengths


def check_config(config: Config, with_backward: bool) -> None:
    """Raises ValueError for a configuration the kernels cannot run."""
    if config.dtype == "fp8":
        if with_backward:
            raise ValueError("--backward is bf16 and f16 only; fp8 attention is forward only")
        forward_fp8().check(config)
        return
    forward.check(config)
    if with_backward:
        backward.check(config)


def forward_fp8():
    from mosaic_gpu.attention import forward_fp8
    return forward_fp8


def cu_seqlens_of(config: Config, text: str | None):
    import numpy as np
    if not config.varlen:
        return None
    return np.concatenate([[0], np.cumsum(seqlens(text))]).astype(np.int32)


def inputs(config: Config, seed: int = 0):
    """Random Q, K, V and dO in the input type, as FlashAttention lays
    them out with batch and seq merged: (tokens, heads, head_dim)."""
    import numpy as np
    # fp8 inputs are made in f32 and quantized with their scales.
    numpy_dtype = np.float32 if config.dtype == "fp8" else config.element.numpy
    if numpy_dtype is None:
        raise RuntimeError("bf16 and fp8 arrays need the ml_dtypes package")
    rng = np.random.default_rng(seed)
    t, d = config.total_tokens, config.head_dim
    shapes = [(t, config.heads, d), (t, config.key_heads, d), (t, config.key_heads, d),
              (t, config.heads, d)]
    return tuple(rng.standard_normal(shape, dtype=np.float32).astype(numpy_dtype)
                 for shape in shapes)


def compare(name: str, out, ref, allowed) -> tuple[bool, str]:
    """Whether every element of ``out`` is within ``allowed`` of ``ref``,
    and a summary naming the worst one and the first outside."""
    import numpy as np
    out = out.astype(np.float64)
    error = np.abs(out - ref)
    bad = ~(error <= allowed)  # NaN fails
    worst = float(np.nanmax(error / allowed)) if error.size else 0.0
    text = (f"{name}: max error {np.nanmax(error) if error.size else 0:.3g}, {worst:.2f} of the "
            f"tolerance, {int(bad.sum())} of {out.size} outside")
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        text += f" (first at {where}: {out[where]:.6g} vs {ref[where]:.6g})"
    return not bad.any(), text


def check_forward(config: Config, q, k, v, o, lse, cu_seqlens=None) -> tuple[bool, str]:
    """Compares O and LSE with the float64 reference. O within the error
    model of reference.forward_tolerance (P and O rounded to the input
    type); the LSE, computed in f32 from exact scores, within 2^-14 of its
    value plus 2^-14 (the approximate exp2 and log2, and the order of the
    row sums). A key tile missing or read twice, or a wrong rescale, is off
    by far more."""
    import numpy as np
    o_ref, lse_ref = reference.forward(config, q, k, v, cu_seqlens)
    unit = UNIT[config.dtype]
    checks = [compare("O", o, o_ref,
                      reference.forward_tolerance(config, q, k, v, cu_seqlens, unit)),
              compare("LSE", lse, lse_ref, 2 ** -14 * np.abs(lse_ref) + 2 ** -14)]
    return all(ok for ok, _ in checks), "; ".join(text for _, text in checks)


def check_backward(config: Config, q, k, v, o, do, dq, dk, dv,
                   cu_seqlens=None) -> tuple[bool, str]:
    """Compares dQ, dK and dV with the float64 reference, within the error
    model of reference.backward_tolerance (P and dS rounded to the input
    type, D from the stored O)."""
    grads = reference.backward(config, q, k, v, do, cu_seqlens)
    allowed = reference.backward_tolerance(config, q, k, v, o, do, cu_seqlens,
                                           UNIT[config.dtype])
    checks = [compare(name, out, ref, tolerance) for name, out, ref, tolerance
              in zip(("dQ", "dK", "dV"), (dq, dk, dv), grads, allowed)]
    return all(ok for ok, _ in checks), "; ".join(text for _, text in checks)


def emit(config: Config, with_backward: bool, path: str) -> list[str]:
    """Writes the kernels a run launches as MLIR: the forward to ``path``,
    and with the backward its three kernels next to it (STEM_bwd_preprocess,
    STEM_bwd, STEM_bwd_postprocess). Returns the paths written."""
    if config.dtype == "fp8":
        kernels = [(path, forward_fp8().build(config))]
    else:
        kernels = [(path, forward.build(config))]
    if with_backward:
        target = pathlib.Path(path)
        kernels += [(str(target.with_name(f"{target.stem}_bwd{suffix}{target.suffix}")), kernel)
                    for suffix, kernel in zip(("_preprocess", "", "_postprocess"),
                                              backward.build(config))]
    for name, kernel in kernels:
        with open(name, "w") as out:
            out.write(str(kernel.module))
    return [name for name, _ in kernels]


def describe(config: Config, args: argparse.Namespace, backend: str) -> str:
    shape = (f"batch {config.batch}, seq {config.seq}" if not config.varlen
             else f"lengths {args.varlen}")
    heads = f"heads {config.heads}" + (f" (kv {config.key_heads})" if config.kv_heads else "")
    return (f"attention {config.dtype} {shape}, {heads}, head_dim {config.head_dim}"
            f"{', causal' if config.causal else ''}, {config.stages} stages"
            f"{', backward' if args.backward else ''}, on the {backend}")


def parse(argv: Sequence[str] | None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    parser = argparse.ArgumentParser(prog="attention.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, help="sequences (default 4)")
    parser.add_argument("--heads", type=int, default=16, help="query heads (default 16)")
    parser.add_argument("--kv-heads", type=int, default=0,
                        help="key/value heads, dividing --heads (default: --heads)")
    parser.add_argument("--seq", type=int, help="tokens per sequence, any length (default 4096)")
    parser.add_argument("--varlen", metavar="L1,L2,...",
                        help="a packed batch of sequences of these lengths (cu_seqlens)")
    parser.add_argument("--head-dim", type=int, default=128, help="64, 128 or 256 (default 128)")
    parser.add_argument("--causal", action="store_true", help="mask keys after each query")
    parser.add_argument("--dtype", default="bf16", choices=("bf16", "f16", "fp8"))
    parser.add_argument("--stages", type=int, default=2,
                        help="K/V ring stages (default 2; more fit at head_dim 64)")
    parser.add_argument("--backward", action="store_true",
                        help="also compute dQ, dK and dV and check them")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--emulate", action="store_true",
                        help="run on the PTX emulator instead of a GPU")
    parser.add_argument("--emit-mlir", metavar="PATH",
                        help="write the kernels' MLIR (the forward to PATH) and exit")
    return parser, parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    parser, args = parse(argv)
    try:
        config = build_config(args)
        check_config(config, args.backward)
    except ValueError as error:
        parser.error(str(error))
    if args.emit_mlir:
        for name in emit(config, args.backward, args.emit_mlir):
            print(f"wrote {name}")
        return 0
    backend = "emulator" if args.emulate else "cuda"
    run = describe(config, args, backend)
    cu_seqlens = cu_seqlens_of(config, args.varlen)
    q, k, v, do = inputs(config, args.seed)
    flat = [x.reshape(config.total_tokens, -1) for x in (q, k, v, do)]
    extra = [cu_seqlens] if config.varlen else []
    try:
        if config.dtype == "fp8":
            fp8 = forward_fp8()
            scaled = [fp8.quantize(x) for x in flat[:3]]
            o, lse = fp8.run(config, *(x for x, _ in scaled), *(s for _, s in scaled),
                             cu_seqlens=cu_seqlens, backend=backend)
            passed, summary = fp8.check_results(config, *(x for x, _ in scaled),
                                                *(s for _, s in scaled), o, lse, cu_seqlens)
            print(f"{run}: {'PASS' if passed else 'FAIL'}; {summary}")
            return 0 if passed else 1
        o, lse = forward.build(config).launch(*flat[:3], *extra, backend=backend)
        if args.backward:
            dq, dk, dv = backward.run(config, *flat[:3], o, lse, flat[3], cu_seqlens,
                                      backend=backend)
    except RuntimeError as error:  # a driver error; on the emulator, a fault or a hazard
        print(f"{run}: FAIL; the launch failed: {error}")
        return 1
    o = o.reshape(q.shape)
    passed, summary = check_forward(config, q, k, v, o, lse, cu_seqlens)
    if args.backward:
        grads_passed, grads_summary = check_backward(
            config, q, k, v, o, do, dq.reshape(q.shape), dk.reshape(k.shape),
            dv.reshape(v.shape), cu_seqlens)
        passed, summary = passed and grads_passed, f"{summary}; {grads_summary}"
    print(f"{run}: {'PASS' if passed else 'FAIL'}; {summary}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
