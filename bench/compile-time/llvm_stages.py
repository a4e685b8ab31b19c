#!/usr/bin/env python3
"""Where the compile of a kernel spends its time after our passes: the
MLIR conversions to the LLVM dialect, and LLVM (translation, libdevice,
the optimization pipeline, the NVPTX back end), with ptxas after it.

For each kernel it takes the module through our stages in-process (the
built mosaic_gpu extension), writes the input of the nvvm-llvm stage and
the kernel's LLVM IR before any LLVM optimization (the gpu.module's body
after the pipeline, through mlir-translate), and then times, with LLVM 22's
tools, each on one core and as the median of ``--repeats`` runs:

 - the nvvm-llvm stage pass by pass (``mosaic-opt -mlir-timing``);
 - the six dialect conversions against one ``convert-to-llvm`` (mlir-opt,
   which registers every dialect's ConvertToLLVM interface), on the stage's
   IR after ``mosaic-gpu-finalize-kernels``;
 - linking libdevice as gpu-module-to-binary does (``llvm-link
   --only-needed --internalize``) against not linking it;
 - LLVM's optimization pipeline at several levels (``opt -time-passes``;
   the vectorizers on, as MLIR's ``makeOptimizingTransformer`` sets them at
   every level, or off) and the back end after it (``llc -time-passes``),
   then ptxas on the PTX: registers, spills, and the SASS instruction count
   when nvdisasm is found.

Times are the user + system time the tools report for their passes
(``-time-passes``; parsing excluded), in ms; the machine's load changes wall
time more than it changes these.

Usage: PYTHONPATH=build/python bench/compile-time/llvm_stages.py
           [--repeats 5] [--keep DIR] [--mosaic-opt build/bin/mosaic-opt]
           [--nvdisasm PATH] [examples/gemm_bf16_ws.mlir | attention ...]
"""
import argparse
import os
import pathlib
import re
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
LLVM = pathlib.Path(os.environ.get("LLVM_TOOLS", "/usr/lib/llvm-22/bin"))
CUDA = pathlib.Path(os.environ.get("CUDA_HOME", "/usr/local/cuda"))
LIBDEVICE = CUDA / "nvvm" / "libdevice" / "libdevice.10.bc"

# The stages before nvvm-llvm, and nvvm-llvm itself, as lib/Pipeline/Pipeline.cpp
# builds them.
LOWER = ("builtin.module(mosaic-gpu-infer-layouts,mosaic-gpu-apply-transforms,"
         "mosaic-gpu-lower,canonicalize,cse,convert-scf-to-cf)")
TO_NVVM = ("nvvm-attach-target{{chip=sm_90a features={features} O=3}},expand-strided-metadata,"
           "lower-affine,gpu.module(convert-gpu-to-nvvm{{use-bare-ptr-memref-call-conv=1}}),"
           "mosaic-gpu-map-memory-spaces,mosaic-gpu-finalize-kernels")
CONVERSIONS = ("convert-nvvm-to-llvm,convert-vector-to-llvm,convert-arith-to-llvm,"
               "finalize-memref-to-llvm,convert-func-to-llvm,convert-cf-to-llvm,"
               "reconcile-unrealized-casts,canonicalize")
ONE_CONVERSION = "convert-to-llvm,reconcile-unrealized-casts,canonicalize"

# (name, opt flags, llc level): MLIR's makeOptimizingTransformer turns the
# loop and SLP vectorizers on at every level; opt does so at -O2 and -O3.
VECTORIZERS = ["-vectorize-loops", "-vectorize-slp"]
NO_VECTORIZERS = ["-vectorize-loops=false", "-vectorize-slp=false"]
LLVM_VARIANTS = [
    ("O3 (now)", ["-O3"] + VECTORIZERS, "-O3"),
    ("O3, no vectorizers", ["-O3"] + NO_VECTORIZERS, "-O3"),
    ("O2", ["-O2"] + VECTORIZERS, "-O2"),
    ("O1", ["-O1"] + VECTORIZERS, "-O1"),
    ("O1, no vectorizers", ["-O1"] + NO_VECTORIZERS, "-O1"),
    ("O0", ["-O0"], "-O0"),
]


def run(command, **kwargs):
    result = subprocess.run(["taskset", "-c", str(os.environ.get("BENCH_CPU", "1"))] +
                            [str(c) for c in command], capture_output=True, text=True, **kwargs)
    if result.returncode:
        sys.exit(f"{' '.join(map(str, command))} failed:\n{result.stderr[-3000:]}")
    return result


def mlir_pass_times(output):
    """pass name -> wall ms from an -mlir-timing-display=list report."""
    times = {}
    for line in output.splitlines():
        match = re.match(r"\s*([\d.]+) \(\s*[\d.]+%\)\s+(.+?)\s*$", line)
        if match and match.group(2) not in ("root", "Total", "Rest"):
            times[match.group(2)] = float(match.group(1)) * 1e3
    return times


def llvm_pass_times(output):
    """pass name -> user + system ms from the 'Pass execution timing report'
    of -time-passes."""
    report = output.split("Pass execution timing report", 1)[-1]
    times = {}
    for line in report.splitlines():
        # user, system, user+system, wall: each "seconds (percent)".
        columns = re.findall(r"([\d.]+) \(\s*[\d.]+%\)", line)
        if len(columns) == 4:
            name = line.rsplit("%)", 1)[1].strip()
            if name == "Total":  # the end of this report
                break
            # Reading and writing the files is not part of an in-process compile.
            if name not in ("Parse IR", "BitcodeWriterPass", "Print Module IR"):
                times[name] = times.get(name, 0.0) + float(columns[2]) * 1e3
    return times


def medians(runs):
    names = set().union(*runs)
    return {name: statistics.median(run.get(name, 0.0) for run in runs) for name in names}


def top(times, count=3):
    ranked = sorted(times.items(), key=lambda item: -item[1])[:count]
    return ", ".join(f"{name} {ms:.1f}" for name, ms in ranked)


def cpu_ms(command, repeats):
    """Median user + system ms of a child process."""
    import resource
    samples = []
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        run(command)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append((after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
                       * 1e3)
    return statistics.median(samples)


def modules(names):
    """(name, mosaic_gpu Module) for each kernel asked for."""
    from mosaic_gpu import _mosaic
    for name in names:
        if name == "attention":
            from mosaic_gpu.attention import forward
            from mosaic_gpu.attention.config import Config
            yield "attention.forward Config(1, 2, 512, 128)", \
                forward.build(Config(1, 2, 512, 128)).module
        else:
            yield pathlib.Path(name).stem, _mosaic.Module.parse_file(str(ROOT / name))


def llvm_dialect_module(text, triple_layout):
    """The gpu.module's body of the pipeline's output as a top-level module
    mlir-translate takes."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().startswith("gpu.module"))
    end = max(i for i, line in enumerate(lines) if line.strip() == "}")
    body = lines[start + 1:end - 1]
    return f"module attributes {{{triple_layout}}} {{\n" + "\n".join(body) + "\n}\n"


def find_nvdisasm(given):
    found = given or shutil.which("nvdisasm") or (CUDA / "bin" / "nvdisasm")
    return pathlib.Path(found) if found and pathlib.Path(found).exists() else None


def measure(name, module, scratch, repeats, mosaic_opt, disassembler):
    from mosaic_gpu import _mosaic
    features = _mosaic.compile(module, emit="ptx").ptx_features
    print(f"\n### {name}\n")

    # The nvvm-llvm stage, pass by pass.
    lowered = module.clone()
    _mosaic.run_pipeline(lowered, LOWER)
    stage_input = scratch / "lowered.mlir"
    stage_input.write_text(str(lowered))
    to_nvvm = TO_NVVM.format(features=features)
    runs = [mlir_pass_times(run([mosaic_opt, stage_input, "-mlir-timing",
                                 "-mlir-timing-display=list", "-o", "/dev/null",
                                 f"--pass-pipeline=builtin.module({to_nvvm},{CONVERSIONS})"]
                                ).stderr) for _ in range(repeats)]
    stage = medians(runs)
    passes = {k: v for k, v in stage.items()
              if k not in ("Parser", "Output") and not k.startswith(("Pipeline Collection",
                                                                     "'gpu.module' Pipeline",
                                                                     "(A)"))}
    print(f"- nvvm-llvm stage, {len(passes)} passes: {sum(passes.values()):.1f} ms; "
          f"the largest: {top(passes)}")

    # Six conversions against convert-to-llvm, on the IR after our
    # finalization (mlir-opt registers every ConvertToLLVM interface).
    finalized = scratch / "finalized.mlir"
    run([mosaic_opt, stage_input, f"--pass-pipeline=builtin.module({to_nvvm})",
         "-mlir-print-op-generic", "-o", finalized])
    for label, pipeline in (("six conversions + reconcile + canonicalize", CONVERSIONS),
                            ("convert-to-llvm + reconcile + canonicalize", ONE_CONVERSION)):
        output = scratch / "converted.mlir"
        runs = [mlir_pass_times(run([LLVM / "mlir-opt", finalized, "-allow-unregistered-dialect",
                                     "-mlir-timing",
                                     "-mlir-timing-display=list", "-o", output,
                                     f"--pass-pipeline=builtin.module({pipeline})"]).stderr)
                for _ in range(repeats)]
        times = {k: v for k, v in medians(runs).items() if k not in ("Parser", "Output")}
        left = len(re.findall(r'"(?:vector|arith|memref|cf|func|builtin\.unrealized)[a-z_.]*"',
                               run([LLVM / "mlir-opt", output, "-allow-unregistered-dialect",
                                    "-mlir-print-op-generic"]).stdout))
        print(f"- {label}: {sum(times.values()):.1f} ms ({left} ops left unconverted)")

    # The LLVM IR before optimization.
    pipeline_output = _mosaic.compile(module, emit="mlir").mlir
    inner = scratch / "kernel.mlir"
    inner.write_text(llvm_dialect_module(pipeline_output, (
        'llvm.data_layout = "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64", '
        'llvm.target_triple = "nvptx64-nvidia-cuda"')))
    raw = scratch / "kernel.bc"
    run([LLVM / "mlir-translate", "--mlir-to-llvmir", inner, "-o", scratch / "kernel.ll"])
    run([LLVM / "llvm-as", scratch / "kernel.ll", "-o", raw])
    print(f"- LLVM IR before optimization: "
          f"{sum(1 for _ in (scratch / 'kernel.ll').open())} lines")

    # gpu-module-to-binary links libdevice (only what is called) into every
    # module; the pipeline below needs it where the kernel calls __nv_*.
    calls = sorted(set(re.findall(r"declare [^@]*@(__nv_\w+)", (scratch / "kernel.ll").read_text())))
    print(f"- libdevice functions called: {', '.join(calls) or 'none'}")
    if LIBDEVICE.exists():
        linked_bc = scratch / "linked.bc"
        alone = cpu_ms([LLVM / "llvm-link", raw, "-o", linked_bc], repeats)
        linked = cpu_ms([LLVM / "llvm-link", "--only-needed", "--internalize", raw, LIBDEVICE,
                         "-o", linked_bc], repeats)
        print(f"- libdevice linked (llvm-link --only-needed --internalize, process time): "
              f"{linked:.1f} ms against {alone:.1f} ms without: {linked - alone:+.1f} ms")
        if calls:
            raw = linked_bc
    elif calls:
        sys.exit(f"the kernel calls {', '.join(calls)}, and {LIBDEVICE} is missing")
    ptxas = shutil.which("ptxas") or str(CUDA / "bin" / "ptxas")
    print("\n| LLVM pipeline | opt ms | opt's largest passes | llc ms | llc's largest passes "
          "| PTX lines | PTX as O3's | ptxas ms | registers | spill bytes | SASS instructions "
          "| SASS as O3's |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    reference_ptx = reference_sass = None
    for label, opt_flags, llc_level in LLVM_VARIANTS:
        stem = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
        optimized = scratch / f"{stem}.bc"
        ptx = scratch / f"{stem}.ptx"
        common = ["-mtriple=nvptx64-nvidia-cuda", "-mcpu=sm_90a", f"-mattr={features}"]
        opt_runs = [llvm_pass_times(run([LLVM / "opt", *opt_flags, *common, "-time-passes",
                                         raw, "-o", optimized]).stderr)
                    for _ in range(repeats)]
        llc_runs = [llvm_pass_times(run([LLVM / "llc", llc_level, *common, "-time-passes",
                                         optimized, "-o", ptx]).stderr)
                    for _ in range(repeats)]
        opt_times, llc_times = medians(opt_runs), medians(llc_runs)
        opt_total = statistics.median(sum(r.values()) for r in opt_runs)
        llc_total = statistics.median(sum(r.values()) for r in llc_runs)
        cubin = scratch / f"{stem}.cubin"
        ptxas_command = [ptxas, "-arch", "sm_90a", "-v", "-O3", ptx, "-o", cubin]
        ptxas_ms = cpu_ms(ptxas_command, repeats)
        report = run(ptxas_command).stderr
        registers = re.search(r"Used (\d+) registers", report)
        spills = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", report)
        sass = instructions = "-"
        if disassembler:
            # The instructions without their addresses.
            sass = [re.sub(r"/\*[0-9a-f]+\*/", "", line).strip()
                    for line in run([disassembler, "-c", cubin]).stdout.splitlines()
                    if re.match(r"\s+/\*[0-9a-f]{4,}\*/", line)]
            instructions = str(len(sass))
        code = [line for line in ptx.read_text().splitlines()
                if line.strip() and not line.lstrip().startswith("//")]
        lines = len(code)
        if reference_ptx is None:
            reference_ptx, reference_sass = code, sass
        same_ptx = "yes" if code == reference_ptx else "no"
        same_sass = "-" if sass == "-" else ("yes" if sass == reference_sass else "no")
        print(f"| {label} | {opt_total:.1f} | {top(opt_times)} | {llc_total:.1f} | "
              f"{top(llc_times, 2)} | {lines} | {same_ptx} | {ptxas_ms:.0f} | "
              f"{registers.group(1) if registers else '?'} | "
              f"{'/'.join(spills.groups()) if spills else '?'} | {instructions} | {same_sass} |")
        sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--keep", help="a directory to keep each kernel's IR files in")
    parser.add_argument("--mosaic-opt", default=str(ROOT / "build" / "bin" / "mosaic-opt"))
    parser.add_argument("--nvdisasm", help="for SASS instruction counts (default: on PATH "
                                           "or in CUDA_HOME)")
    parser.add_argument("kernels", nargs="*",
                        default=["examples/gemm_bf16_ws.mlir", "examples/attention_fwd.mlir",
                                 "attention"])
    args = parser.parse_args()
    for name, module in modules(args.kernels):
        with tempfile.TemporaryDirectory() as temporary:
            scratch = pathlib.Path(temporary)
            measure(name, module, scratch, args.repeats, args.mosaic_opt,
                    find_nvdisasm(args.nvdisasm))
            if args.keep:
                kept = pathlib.Path(args.keep) / re.sub(r"[^A-Za-z0-9_.-]+", "_", name)
                shutil.copytree(scratch, kept, dirs_exist_ok=True)


if __name__ == "__main__":
    main()
