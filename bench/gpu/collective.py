#!/usr/bin/env python3
"""Times the collective matmuls on D GPUs against their peers.

Two kernels of ours, compiled beforehand for each D by compile-kernels.sh:
- allgather_matmul: device d holds A_d (m x k) and B_d (k x n) and gets
  concat(A_0..A_{D-1}) @ B_d;
- matmul_reduce_scatter: device d holds A_d (M x k) and B_d (k x N) and
  gets rows [d M / D, (d + 1) M / D) of sum_d A_d @ B_d.

Ours run through `mosaic-run --devices D` (one process, one stream per
device, every device launched before any is waited on; it checks each
device's result against a float64 reference, then times the launches with
CUDA events). The peers run in D processes of torch.distributed (NCCL), one
per GPU:
- "NCCL + cuBLAS": all_gather_into_tensor then torch.matmul, or
  torch.matmul then reduce_scatter_tensor;
- "torch async-TP": torch.ops.symm_mem.fused_all_gather_matmul and
  fused_matmul_reduce_scatter (PyTorch's symmetric-memory fused ops), where
  this PyTorch has them.
Each time is the median over --reps runs after --warmup runs, of the
slowest device's time (CUDA events on each rank, a barrier before each
run). With one GPU, D = 1: degenerate (nothing travels) but every path runs.

Prints the table, appends it to --docs with the date, the GPU and the
command when every check passed, writes it to --out, and exits non-zero when
a check failed. A peer that cannot run (no NCCL, an older PyTorch) leaves
its cells `unavailable` with the reason; that is not a failure.

    bench/gpu/collective.py --kernels DIR --mosaic-run PATH [--devices D ...]
    bench/gpu/collective.py --list-shapes    (for compile-kernels.sh; no GPU)
"""
import argparse
import datetime
import json
import os
import pathlib
import re
import statistics
import subprocess
import sys
import tempfile
import typing


class Case(typing.NamedTuple):
    kernel: str  # allgather_matmul or matmul_reduce_scatter
    devices: int
    m: int  # allgather: rows of a shard; reduce-scatter: rows of A_d
    n: int
    k: int

    @property
    def stem(self) -> str:
        return f"{self.kernel}_d{self.devices}_{self.m}x{self.n}x{self.k}"

    def flops(self) -> float:
        """Every device's multiply-adds, times 2, summed over devices."""
        rows = self.m * self.devices if self.kernel == "allgather_matmul" else self.m
        return 2.0 * rows * self.n * self.k * self.devices

    def label(self) -> str:
        if self.kernel == "allgather_matmul":
            return f"AG {self.devices}x[{self.m}x{self.k}] @ [{self.k}x{self.n}]"
        return f"RS [{self.m}x{self.k}] @ [{self.k}x{self.n}] / {self.devices}"


# Tensor-parallel shapes of a 8192-wide layer: per-device shards of 1024
# tokens for the all-gather, 8192 tokens split 8 ways for the reduce-scatter.
SHAPES = {"allgather_matmul": (1024, 4096, 8192), "matmul_reduce_scatter": (8192, 8192, 1024)}
DEVICE_COUNTS = (1, 2, 4, 8)


def cases(devices: typing.Sequence[int]) -> list[Case]:
    return [Case(kernel, d, *SHAPES[kernel]) for kernel in SHAPES for d in devices]


def list_shapes() -> str:
    """KERNEL DEVICES M N K per line, for compile-kernels.sh."""
    return "".join(f"{c.kernel} {c.devices} {c.m} {c.n} {c.k}\n" for c in cases(DEVICE_COUNTS))


def format_cell(ms: typing.Optional[float], flops: float, baseline: typing.Optional[float],
                note: str = "") -> str:
    if ms is None:
        return note or "-"
    text = f"{ms:.3f} ms, {flops / ms / 1e9:.0f} TFLOP/s"
    if baseline is not None and ms > 0:
        text += f", {baseline / ms:.2f}x"
    return text


def markdown(rows: list[dict]) -> str:
    header = ("| case | ours | NCCL + cuBLAS | torch async-TP |\n"
              "|------|------|---------------|----------------|\n")
    lines = []
    for row in rows:
        case = row["case"]
        baseline = row.get("nccl")
        lines.append("| " + " | ".join([
            case.label(),
            format_cell(row.get("ours"), case.flops(), baseline, row.get("ours_note", "")),
            format_cell(baseline, case.flops(), None, row.get("nccl_note", "")),
            format_cell(row.get("async_tp"), case.flops(), baseline, row.get("async_tp_note", "")),
        ]) + " |")
    return header + "\n".join(lines) + "\n"


def run_ours(mosaic_run: str, kernels: pathlib.Path, case: Case, warmup: int,
             reps: int) -> tuple[typing.Optional[float], str, bool]:
    """(median ms, note, passed) of our kernel through mosaic-run."""
    manifest = kernels / f"{case.stem}.json"
    if not manifest.exists():
        return None, f"not compiled ({manifest.name} missing)", True
    # mosaic-run checks against the reference named after the kernel's entry
    # (allgather_matmul, matmul_reduce_scatter) before it times.
    with tempfile.TemporaryDirectory() as scratch:
        report_path = pathlib.Path(scratch) / "result.json"
        command = [mosaic_run, str(manifest), "--devices", str(case.devices),
                   "--warmup", str(warmup), "--reps", str(reps), f"--json={report_path}"]
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            return None, f"FAILED: {result.stdout.strip()} {result.stderr.strip()}"[:300], False
        report = json.loads(report_path.read_text())
    return float(report["median_ms"]), "", True


def peer_worker(rank: int, world: int, case: Case, warmup: int, reps: int,
                results) -> None:  # pragma: no cover - needs GPUs
    """One rank of the torch.distributed peers: times both peers, rank 0
    reports the slowest rank's median."""
    import torch
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world)
    generator = torch.Generator(device="cuda").manual_seed(rank)

    def randn(*shape):
        return torch.randn(shape, generator=generator, device="cuda").to(torch.bfloat16)

    def timed(fn) -> float:
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            dist.barrier()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            torch.cuda.synchronize()
            slowest = torch.tensor([start.elapsed_time(end)], device="cuda")
            dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
            times.append(slowest.item())
        return statistics.median(times)

    out: dict = {}
    if case.kernel == "allgather_matmul":
        shard, b = randn(case.m, case.k), randn(case.k, case.n)
        gathered = torch.empty(case.m * world, case.k, device="cuda", dtype=torch.bfloat16)

        def nccl():
            dist.all_gather_into_tensor(gathered, shard)
            return gathered @ b

        reference = torch.cat([x.double() for x in _all_shards(dist, shard, world)]) @ b.double()
    else:
        a, b = randn(case.m, case.k), randn(case.k, case.n)
        rows = torch.empty(case.m // world, case.n, device="cuda", dtype=torch.float32)

        def nccl():
            dist.reduce_scatter_tensor(rows, (a @ b).float())
            return rows

        total = (a.double() @ b.double())
        dist.all_reduce(total)
        reference = total[rank * case.m // world:(rank + 1) * case.m // world]
    error = _relative_error(torch, nccl(), reference)
    out["nccl"] = timed(nccl) if error < 1e-2 else None
    out["nccl_note"] = "" if error < 1e-2 else f"FAILED: relative error {error:.3g}"
    try:
        from torch.distributed import _symmetric_memory as symm_mem
        group = dist.group.WORLD
        symm_mem.enable_symm_mem_for_group(group.group_name)
        if case.kernel == "allgather_matmul":
            def fused():
                return torch.ops.symm_mem.fused_all_gather_matmul(
                    shard, [b], gather_dim=0, group_name=group.group_name)[1][0]
        else:
            def fused():
                return torch.ops.symm_mem.fused_matmul_reduce_scatter(
                    a, b, "sum", scatter_dim=0, group_name=group.group_name)
        error = _relative_error(torch, fused(), reference)
        out["async_tp"] = timed(fused) if error < 1e-2 else None
        out["async_tp_note"] = "" if error < 1e-2 else f"FAILED: relative error {error:.3g}"
    except Exception as error:  # noqa: BLE001: an older PyTorch, no symmetric memory
        out["async_tp"] = None
        out["async_tp_note"] = f"unavailable ({type(error).__name__}: {str(error)[:80]})"
    if rank == 0:
        results.put(out)
    dist.destroy_process_group()


def _all_shards(dist, shard, world):  # pragma: no cover - needs GPUs
    import torch
    shards = [torch.empty_like(shard) for _ in range(world)]
    dist.all_gather(shards, shard)
    return shards


def _relative_error(torch, out, reference) -> float:  # pragma: no cover - needs GPUs
    out = out.double()
    if not torch.isfinite(out).all():
        return float("inf")
    return (torch.linalg.vector_norm(out - reference) / torch.linalg.vector_norm(reference)).item()


def run_peers(case: Case, warmup: int, reps: int) -> dict:  # pragma: no cover - needs GPUs
    try:
        import torch
        import torch.multiprocessing as mp
    except ImportError as error:
        return {"nccl_note": f"unavailable ({error})", "async_tp_note": f"unavailable ({error})"}
    os.environ["MASTER_PORT"] = str(29500 + os.getpid() % 1000)
    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    mp.start_processes(peer_worker, args=(case.devices, case, warmup, reps, results),
                       nprocs=case.devices, join=True, start_method="spawn")
    return results.get()


def gpu_count() -> int:  # pragma: no cover - needs GPUs
    try:
        import torch
        return torch.cuda.device_count()
    except ImportError:
        output = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
        return len(re.findall(r"^GPU \d+", output, re.MULTILINE))


def main(argv: typing.Optional[typing.Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kernels", help="folder of CUBINs and manifests")
    parser.add_argument("--mosaic-run", help="the mosaic-run binary")
    parser.add_argument("--devices", type=int, nargs="*",
                        help="device counts to run (default: 1 and every count of "
                             f"{DEVICE_COUNTS} up to the GPUs present)")
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--docs", help="append the table to this file (docs/BENCHMARKS.md)")
    parser.add_argument("--out", help="also write the table and results here")
    parser.add_argument("--command", help="the command to record (default: this one)")
    parser.add_argument("--list-shapes", action="store_true",
                        help="print KERNEL DEVICES M N K per compiled case and exit")
    args = parser.parse_args(argv)
    if args.list_shapes:
        sys.stdout.write(list_shapes())
        return 0
    if not args.kernels or not args.mosaic_run:
        parser.error("--kernels and --mosaic-run are needed (or --list-shapes)")
    available = gpu_count()
    counts = args.devices or [d for d in DEVICE_COUNTS if d <= max(available, 1)]
    for count in counts:
        if count > available:
            parser.error(f"--devices {count}: this machine has {available} GPUs")
    rows, passed = [], True
    for case in cases(counts):
        row: dict = {"case": case}
        ours, note, ok = run_ours(args.mosaic_run, pathlib.Path(args.kernels), case,
                                  args.warmup, args.reps)
        row["ours"], row["ours_note"] = ours, note
        passed &= ok
        row.update(run_peers(case, args.warmup, args.reps))
        passed &= not row.get("nccl_note", "").startswith("FAILED")
        passed &= not row.get("async_tp_note", "").startswith("FAILED")
        rows.append(row)
        print(markdown([row]).splitlines()[-1], flush=True)
    table = markdown(rows)
    command = args.command or "bench/gpu/collective.py " + " ".join(argv or sys.argv[1:])
    section = (f"\n## Collective matmuls, {datetime.date.today()} ({available} GPUs)\n\n"
               f"Command: `{command}`\n\n{table}")
    print(section)
    if args.out:
        pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
        (pathlib.Path(args.out) / "collective.md").write_text(section)
    if args.docs and passed:
        with open(args.docs, "a") as docs:
            docs.write(section)
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
