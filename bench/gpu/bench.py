#!/usr/bin/env python3
"""Times the compiled example kernels against their peers on one GPU.

For every manifest in a folder of precompiled kernels, runs mosaic-run
(which checks the kernel against a float64 reference and times it), then
checks and times the peers of that kernel on the same shapes in this
process: PyTorch (cuBLAS for the GEMM) and small Triton kernels. Every time,
ours and the peers', is the median of many runs timed with CUDA events after
a warm-up, with the L2 cache flushed before each run, on fresh random inputs.
Prints a table (kernel, shape, ours, peer, ratio), appends it to
docs/BENCHMARKS.md with the date, the GPU and the command when every check
passed, and exits non-zero when one failed.

Usage (normally through bench/gpu/run.sh, which builds mosaic-run first):
  bench/gpu/bench.py --kernels DIR --mosaic-run PATH [--docs FILE]
      [--out DIR] [--warmup N] [--reps N] [--seed S] [--command TEXT]
"""
import argparse
import datetime
import json
import os
import pathlib
import statistics
import subprocess
import sys

# Relative-error tolerances, as in mosaic-run (docs/RationaleRuntime.md).
F32_TOLERANCE = 1e-5
BF16_TOLERANCE = 1e-2

# GEMM sizes timed for the peers even when no kernel of ours has them.
GEMM_SIZES = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048)]

FLUSH_BYTES = 256 << 20


# ---------------------------------------------------------------------------
# Pure helpers (tested by test_bench.py without a GPU).


def find_manifests(folder):
    """The kernel manifests in `folder`: JSON files naming an entry and a CUBIN."""
    manifests = []
    for path in sorted(pathlib.Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and "entry" in data and "cubin" in data:
            manifests.append((path, data))
    return manifests


def buffers(manifest):
    """(element type, shape) of each buffer parameter, in order."""
    return [(p["element_type"], tuple(p["shape"]))
            for p in manifest["parameters"] if p["kind"] == "buffer"]


def gemm_dims(manifest):
    """(M, N, K) of a GEMM manifest: A [M, K], B [K, N], C [M, N]."""
    (_, a), (_, b), _ = buffers(manifest)
    return a[0], b[1], a[1]


def describe_shape(kind, manifest):
    """The shape column: MxNxK for a GEMM, the first buffer's shape otherwise."""
    if kind == "gemm":
        return "x".join(str(d) for d in gemm_dims(manifest))
    return "x".join(str(d) for d in buffers(manifest)[0][1])


def format_time(ms):
    if ms is None:
        return "-"
    return f"{ms * 1e3:.1f} us" if ms < 1 else f"{ms:.3f} ms"


def format_rate(ms, flops, bytes_moved):
    """TFLOP/s when the work is arithmetic, GB/s otherwise."""
    if ms is None or ms <= 0:
        return ""
    seconds = ms * 1e-3
    if flops:
        return f"{flops / seconds / 1e12:.0f} TFLOP/s"
    return f"{bytes_moved / seconds / 1e9:.0f} GB/s"


def format_cell(ms, flops, bytes_moved, failed=False):
    if failed:
        return "FAILED"
    if ms is None:
        return "-"
    return f"{format_time(ms)} ({format_rate(ms, flops, bytes_moved)})"


def format_ratio(ours_ms, peer_ms):
    """Peer time over our time: above 1, ours is faster."""
    if not ours_ms or not peer_ms:
        return "-"
    return f"{peer_ms / ours_ms:.2f}x"


def markdown_table(rows):
    """rows: dicts with kernel, shape, ours, peer, peer_time, ratio (strings)."""
    lines = ["| kernel | shape | ours | peer | peer time | ratio (peer / ours) |",
             "|---|---|---:|---|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['kernel']} | {row['shape']} | {row['ours']} | "
                     f"{row['peer']} | {row['peer_time']} | {row['ratio']} |")
    return "\n".join(lines)


def docs_section(date, gpu, command, warmup, reps, table, notes):
    return "\n".join([
        f"## Kernel time on {gpu} ({date})",
        "",
        f"Measured {date} on {gpu} with:",
        "",
        "```sh",
        command,
        "```",
        "",
        f"Each time is the median of {reps} runs after {warmup} warm-up runs, "
        "each run timed with CUDA events after 256 MiB were written to flush "
        "the L2 cache, on fresh random inputs (standard normal); every kernel "
        "and peer was first checked against a float64 reference. The ratio is "
        "the peer's time over ours: above 1, ours is faster.",
        "",
        table,
        "",
    ] + [f"- {note}" for note in notes] + ([""] if notes else []))


def gemm_sizes_without_ours(our_sizes):
    return [size for size in GEMM_SIZES if size not in set(our_sizes)]


# ---------------------------------------------------------------------------
# GPU side.


def gpu_model():
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            check=True, capture_output=True, text=True).stdout.strip().splitlines()[0]
        name, driver = [part.strip() for part in out.split(",")]
        return f"{name} (driver {driver})"
    except (OSError, subprocess.CalledProcessError, IndexError, ValueError):
        import torch
        return torch.cuda.get_device_name()


def time_ms(torch, fn, warmup, reps):
    """Median time of `fn` in ms, timed as mosaic-run times our kernels."""
    flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush.fill_(i & 0xFF)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))


def relative_error(torch, out, ref):
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return (torch.linalg.vector_norm(out - ref) / torch.linalg.vector_norm(ref)).item()


def triton_kernels():
    """The Triton peers, or None where Triton is missing."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def elementwise(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask)
        y = tl.load(y_ptr + offsets, mask=mask)
        tl.store(out_ptr + offsets, x * y + x, mask=mask)

    @triton.jit
    def softmax(x_ptr, out_ptr, columns, BLOCK: tl.constexpr):
        row = tl.program_id(0)
        offsets = tl.arange(0, BLOCK)
        mask = offsets < columns
        x = tl.load(x_ptr + row * columns + offsets, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_ptr + row * columns + offsets, e / tl.sum(e, axis=0), mask=mask)

    @triton.jit
    def matmul(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, GROUP: tl.constexpr):
        # Blocks walk C in groups of GROUP block-rows so that neighbours
        # share A and B tiles in L2. M, N, K are multiples of the blocks.
        pid = tl.program_id(0)
        blocks_m = M // BM
        blocks_n = N // BN
        per_group = GROUP * blocks_n
        first_m = (pid // per_group) * GROUP
        rows = tl.minimum(blocks_m - first_m, GROUP)
        pid_m = first_m + (pid % per_group) % rows
        pid_n = (pid % per_group) // rows
        offs_m = pid_m * BM + tl.arange(0, BM)
        offs_n = pid_n * BN + tl.arange(0, BN)
        offs_k = tl.arange(0, BK)
        a = a_ptr + offs_m[:, None] * K + offs_k[None, :]
        b = b_ptr + offs_k[:, None] * N + offs_n[None, :]
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for _ in range(0, K, BK):
            acc = tl.dot(tl.load(a), tl.load(b), acc)
            a += BK
            b += BK * N
        tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(tl.bfloat16))

    def run_elementwise(x, y, out):
        n = x.numel()
        elementwise[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)

    def run_softmax(x, out):
        rows, columns = x.shape
        softmax[(rows,)](x, out, columns, BLOCK=triton.next_power_of_2(columns))

    def run_matmul(a, b, c):
        (m, k), n = a.shape, b.shape[1]
        bm, bn, bk = 128, 128, 64
        if m % bm or n % bn or k % bk:
            raise ValueError(f"the Triton matmul needs multiples of {bm}x{bn}x{bk}")
        matmul[(m // bm * (n // bn),)](a, b, c, m, n, k, BM=bm, BN=bn, BK=bk, GROUP=8,
                                       num_warps=8, num_stages=4)

    return {"elementwise": run_elementwise, "softmax": run_softmax, "matmul": run_matmul,
            "version": triton.__version__}


def peers(torch, triton, kind, shapes, generator):
    """(name, run, check, tolerance, flops, bytes) for each peer of a kernel
    of `kind` on `shapes` (the buffers' shapes); `check()` returns the
    relative error of the output of the last `run()`."""
    def randn(shape, dtype):
        return torch.randn(shape, generator=generator, device="cuda").to(dtype)

    result = []
    if kind == "elementwise":
        (shape, *_) = shapes
        x, y = randn(shape, torch.float32), randn(shape, torch.float32)
        out = torch.empty_like(x)
        ref = lambda: x.double() * y.double() + x.double()
        moved = 3 * x.numel() * 4
        flops = 2 * x.numel()
        result.append(("torch.addcmul", lambda: torch.addcmul(x, x, y, out=out),
                       lambda: relative_error(torch, out, ref()), F32_TOLERANCE, flops, moved))
        if triton:
            result.append(("Triton", lambda: triton["elementwise"](x, y, out),
                           lambda: relative_error(torch, out, ref()), F32_TOLERANCE, flops, moved))
    elif kind == "softmax":
        (shape, *_) = shapes
        x = randn(shape, torch.float32)
        out = torch.empty_like(x)
        ref = lambda: torch.softmax(x.double(), dim=-1)
        moved = 2 * x.numel() * 4
        last = {}

        def run_torch():
            last["out"] = torch.softmax(x, dim=-1)

        result.append(("torch.softmax", run_torch,
                       lambda: relative_error(torch, last["out"], ref()), F32_TOLERANCE, 0,
                       moved))
        if triton:
            result.append(("Triton", lambda: triton["softmax"](x, out),
                           lambda: relative_error(torch, out, ref()), F32_TOLERANCE, 0, moved))
    elif kind == "tma_roundtrip":
        (shape, *_) = shapes
        x = randn(shape, torch.bfloat16)
        out = torch.empty_like(x)
        moved = 2 * x.numel() * 2
        result.append(("torch copy_ (device to device)", lambda: out.copy_(x),
                       lambda: relative_error(torch, out, x.double()), BF16_TOLERANCE, 0, moved))
        result.append(("torch.add(x, x)", lambda: torch.add(x, x, out=out),
                       lambda: relative_error(torch, out, 2 * x.double()), BF16_TOLERANCE, 0,
                       moved))
    elif kind == "gemm":
        (m, k), (_, n) = shapes[0], shapes[1]
        a, b = randn((m, k), torch.bfloat16), randn((k, n), torch.bfloat16)
        c = torch.empty((m, n), dtype=torch.bfloat16, device="cuda")
        ref = lambda: a.double() @ b.double()
        flops = 2 * m * n * k
        moved = (m * k + k * n + m * n) * 2
        result.append(("torch.matmul (cuBLAS)", lambda: torch.matmul(a, b, out=c),
                       lambda: relative_error(torch, c, ref()), BF16_TOLERANCE, flops, moved))
        if triton and not (m % 128 or n % 128 or k % 64):
            result.append(("Triton matmul", lambda: triton["matmul"](a, b, c),
                           lambda: relative_error(torch, c, ref()), BF16_TOLERANCE, flops,
                           moved))
    return result


def run_ours(mosaic_run, manifest_path, kind, args, out_dir):
    result_path = out_dir / f"{manifest_path.stem}.result.json"
    command = [str(mosaic_run), str(manifest_path), f"--check={kind}",
               f"--warmup={args.warmup}", f"--reps={args.reps}", f"--json={result_path}"]
    if args.seed is not None:
        command.append(f"--seed={args.seed}")
    print("$ " + " ".join(command), flush=True)
    completed = subprocess.run(command, text=True, capture_output=True)
    sys.stdout.write(completed.stdout)
    sys.stderr.write(completed.stderr)
    try:
        result = json.loads(result_path.read_text())
    except (OSError, ValueError):
        result = {"passed": False, "failures": [completed.stderr.strip() or "no result"]}
    if completed.returncode != 0:
        result["passed"] = False
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", required=True, help="folder of CUBINs and manifests")
    parser.add_argument("--mosaic-run", required=True, help="the mosaic-run binary")
    parser.add_argument("--docs", help="append the table to this file (docs/BENCHMARKS.md)")
    parser.add_argument("--out", help="also write the section and results here")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--seed", type=int)
    parser.add_argument("--command", help="the command to record (default: this one)")
    args = parser.parse_args()
    command = args.command or " ".join(sys.argv)

    import torch
    if not torch.cuda.is_available():
        sys.exit("bench.py: error: PyTorch sees no CUDA device")
    out_dir = pathlib.Path(args.out) if args.out else pathlib.Path(args.kernels)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifests = find_manifests(args.kernels)
    if not manifests:
        sys.exit(f"bench.py: error: no kernel manifests in {args.kernels}")
    triton = triton_kernels()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    generator = torch.Generator(device="cuda").manual_seed(seed)
    print(f"GPU: {gpu_model()}; torch {torch.__version__}; "
          f"Triton {triton['version'] if triton else 'missing'}; peer seed {seed}", flush=True)

    rows, failures, results, notes = [], [], [], []

    def add_peer_rows(kernel, shape, kind, shapes, ours_ms, ours_cell):
        kernel_peers = peers(torch, triton, kind, shapes, generator)
        if not kernel_peers:
            rows.append({"kernel": kernel, "shape": shape, "ours": ours_cell, "peer": "-",
                         "peer_time": "-", "ratio": "-"})
        for name, run, check, tolerance, flops, moved in kernel_peers:
            run()
            torch.cuda.synchronize()
            error = check()
            peer_ms = None
            if error <= tolerance:
                peer_ms = time_ms(torch, run, args.warmup, args.reps)
            else:
                failures.append(f"{kernel} {shape}: {name} relative error {error:.3g} "
                                f"exceeds {tolerance:g}")
            rows.append({"kernel": kernel, "shape": shape, "ours": ours_cell, "peer": name,
                         "peer_time": format_cell(peer_ms, flops, moved,
                                                  failed=peer_ms is None),
                         "ratio": format_ratio(ours_ms, peer_ms)})
            results.append({"kernel": kernel, "shape": shape, "ours_ms": ours_ms,
                            "peer": name, "peer_ms": peer_ms, "peer_relative_error": error})

    our_gemms = []
    for path, manifest in manifests:
        kind, kernel = manifest["entry"], path.stem
        shape = describe_shape(kind, manifest)
        ours = run_ours(args.mosaic_run, path, kind, args, out_dir)
        passed = bool(ours.get("passed"))
        if not passed:
            failures += [f"{kernel} {shape}: {why}"
                         for why in ours.get("failures") or ["mosaic-run failed"]]
        ours_ms = ours.get("median_ms") if passed else None
        ours_cell = format_cell(ours_ms, ours.get("flops"), ours.get("bytes"),
                                failed=not passed)
        if kind == "gemm":
            our_gemms.append(gemm_dims(manifest))
        add_peer_rows(kernel, shape, kind, [s for _, s in buffers(manifest)], ours_ms,
                      ours_cell)
    for m, n, k in gemm_sizes_without_ours(our_gemms):
        add_peer_rows("gemm (peers only)", f"{m}x{n}x{k}", "gemm", [(m, k), (k, n), (m, n)],
                      None, "-")
    if not triton:
        notes.append("Triton was not importable; its rows are missing.")

    table = markdown_table(rows)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    section = docs_section(date, gpu_model(), command, args.warmup, args.reps, table, notes)
    print()
    print(table)
    if args.out:
        (out_dir / "benchmarks-section.md").write_text(section)
        (out_dir / "benchmarks-results.json").write_text(json.dumps(results, indent=2))
    if failures:
        print("\nFAILED (docs not updated):", file=sys.stderr)
        for failure in failures:
            print(f"  {failure}", file=sys.stderr)
        return 1
    if args.docs:
        with open(args.docs, "a") as docs:
            docs.write("\n" + section)
        print(f"\nappended to {args.docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
