#!/usr/bin/env python3
"""Writes the MLIR of one of mosaic_gpu.attention's kernels for the
attention-new tables of bench.py, on the build machine (compile-kernels.sh
runs it with the build's mosaic_gpu on PYTHONPATH, then mosaic-compile):

  attention_kernels.py --kernel fwd|bwd|fp8 --batch B --heads H
      --kv-heads KV --seq S --head-dim D [--causal] --emit-mlir PATH

fwd: forward.build (bf16; inputs q, k, v; outputs o, lse); bwd:
backward.build's three kernels (bf16): NAME.preprocess (inputs o, do;
output D), NAME the main one (inputs q, k, v, do, the LSE and D as
backward.stats_shape lays them out;
outputs dk, dv and the f32 dQ workspace) and NAME.postprocess (input the
workspace; output dq); fp8: forward_fp8.build (e4m3; inputs q, k, v_t,
descales; outputs o, lse). Fixed-length batches only: mosaic-run, which
runs them on the GPU, draws every input at random, and a packed batch's
cu_seqlens must be offsets. bench.py's checks (checks.py) read the dumped
buffers in exactly these orders, so this script refuses a kernel whose
arrays differ from them.
"""
import argparse
import importlib
import sys

# Each kind's module, its dtype, and its kernels: (file name suffix, the
# attribute of what build returns, None for the kernel itself, the arrays
# bench.py's check reads, inputs then outputs).
KINDS = {
    "fwd": ("forward", "bf16", [("", None, ["q", "k", "v"], ["o", "lse"])]),
    "bwd": ("backward", "bf16", [
        (".preprocess", "preprocess", ["o", "do"], ["delta"]),
        ("", "main", ["q", "k", "v", "do", "lse_padded", "delta"],
         ["dk", "dv", "dq_workspace"]),
        (".postprocess", "postprocess", ["dq_workspace"], ["dq"])]),
    "fp8": ("forward_fp8", "fp8", [("", None, ["q", "k", "v_t", "descales"], ["o", "lse"])]),
}


def array_shapes(module, config) -> dict:
    """Every array's shape by the names KINDS uses."""
    shapes = dict(module.shapes(config) if hasattr(module, "shapes") else config.shapes())
    shapes.update(do=shapes["o"], dq=shapes["q"], dk=shapes["k"])
    if "v" in shapes:  # forward_fp8 takes V^T instead
        shapes["dv"] = shapes["v"]
    if hasattr(module, "stats_shape"):
        shapes.update(lse_padded=module.stats_shape(config), delta=module.stats_shape(config),
                      dq_workspace=module.workspace_shape(config))
    return {name: tuple(shape) for name, shape in shapes.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernel", choices=sorted(KINDS), required=True)
    for name in ("batch", "heads", "kv-heads", "seq", "head-dim"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--causal", action="store_true")
    parser.add_argument("--emit-mlir", required=True, metavar="PATH")
    args = parser.parse_args(argv)
    module_name, dtype, parts = KINDS[args.kernel]
    try:
        module = importlib.import_module(f"mosaic_gpu.attention.{module_name}")
    except ImportError as error:
        sys.exit(f"attention_kernels.py: mosaic_gpu.attention.{module_name} is not in this "
                 f"build ({error})")
    from mosaic_gpu.attention import Config
    config = Config(args.batch, args.heads, args.seq, args.head_dim, args.causal, dtype,
                    args.kv_heads)
    try:
        built = module.build(config)
    except ValueError as error:
        sys.exit(f"attention_kernels.py: {error}")
    shapes = array_shapes(module, config)
    texts = {}
    for suffix, attribute, inputs, outputs in parts:
        kernel = getattr(built, attribute) if attribute else built
        want = [shapes[name] for name in inputs + outputs]
        have = [tuple(shape) for shape, _ in list(kernel.inputs) + list(kernel.outputs)]
        if have != want:
            sys.exit(f"attention_kernels.py: {module_name}.build's {attribute or 'kernel'} "
                     f"has arrays {have}; bench.py's check reads {', '.join(inputs)} then "
                     f"{', '.join(outputs)}: {want}")
        texts[suffix] = str(kernel.module)
    stem = args.emit_mlir[:-len(".mlir")] if args.emit_mlir.endswith(".mlir") else args.emit_mlir
    for suffix, text in texts.items():
        with open(f"{stem}{suffix}.mlir" if suffix else args.emit_mlir, "w") as out:
            out.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
