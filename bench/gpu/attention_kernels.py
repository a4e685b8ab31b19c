#!/usr/bin/env python3
"""Writes the MLIR of one of mosaic_gpu.attention's kernels for the
attention-new tables of bench.py, on the build machine (compile-kernels.sh
runs it with the build's mosaic_gpu on PYTHONPATH, then mosaic-compile):

  attention_kernels.py --kernel fwd|bwd|fp8 --batch B --heads H
      --kv-heads KV --seq S --head-dim D [--causal] --emit-mlir PATH

fwd: forward.build (bf16; inputs q, k, v; outputs o, lse); bwd:
backward.build (bf16; inputs q, k, v, o, lse, do; outputs dq, dk, dv);
fp8: forward_fp8.build (e4m3; inputs q, k, v_t, descales; outputs o, lse).
Fixed-length batches only: mosaic-run, which runs them on the GPU, draws
every input at random, and a packed batch's cu_seqlens must be offsets.
bench.py's checks (checks.py) read the dumped buffers in exactly these
orders, so this script refuses a kernel whose arrays differ from them.
"""
import argparse
import importlib
import sys

# Each kind's module, its dtype, and the arrays bench.py's check takes,
# inputs then outputs.
KINDS = {
    "fwd": ("forward", "bf16", ["q", "k", "v"], ["o", "lse"]),
    "bwd": ("backward", "bf16", ["q", "k", "v", "o", "lse", "do"], ["dq", "dk", "dv"]),
    "fp8": ("forward_fp8", "fp8", ["q", "k", "v_t", "descales"], ["o", "lse"]),
}
# The gradients' shapes are their arrays'.
SHAPE_OF = {"do": "o", "dq": "q", "dk": "k", "dv": "v"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", choices=sorted(KINDS), required=True)
    for name in ("batch", "heads", "kv-heads", "seq", "head-dim"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--emit-mlir", required=True, metavar="PATH")
    args = parser.parse_args(argv)
    module_name, dtype, inputs, outputs = KINDS[args.kernel]
    try:
        module = importlib.import_module(f"mosaic_gpu.attention.{module_name}")
    except ImportError as error:
        sys.exit(f"attention_kernels.py: mosaic_gpu.attention.{module_name} is not in this "
                 f"build ({error})")
    from mosaic_gpu.attention import Config
    config = Config(args.batch, args.heads, args.seq, args.head_dim, args.causal, dtype,
                    args.kv_heads)
    try:
        kernel = module.build(config)
    except ValueError as error:
        sys.exit(f"attention_kernels.py: {error}")
    shapes = module.shapes(config) if hasattr(module, "shapes") else config.shapes()
    want = [tuple(shapes[SHAPE_OF.get(name, name)]) for name in inputs + outputs]
    have = [tuple(shape) for shape, _ in list(kernel.inputs) + list(kernel.outputs)]
    if have != want:
        sys.exit(f"attention_kernels.py: {module_name}.build's arrays are {have}; bench.py's "
                 f"check reads {', '.join(inputs)} then {', '.join(outputs)}: {want}")
    with open(args.emit_mlir, "w") as out:
        out.write(str(kernel.module))
    return 0


if __name__ == "__main__":
    sys.exit(main())
