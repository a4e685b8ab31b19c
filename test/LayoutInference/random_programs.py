#!/usr/bin/env python3
"""Property test of layout inference on randomly generated programs.

Each program mixes loads, splat constants, elementwise ops, reductions,
broadcasts, layout casts to random named layouts, loops and wgmma. For every
program, inference must either succeed with a solution that satisfies every
constraint (checked by the pass's verify-solution option) or fail with a
diagnostic; it must never crash; and two runs must print the same thing.
With --baseline, no program may cost more (relaid registers, relayouts,
registers; see AssignmentCost) than a recorded run of the same seed.

Usage: random_programs.py MOSAIC_OPT [--seed S] [--count N]
           [--record COSTS | --baseline COSTS]
"""
import argparse
import random
import re
import subprocess
import sys

SMEM = "#gpu.address_space<workgroup>"
LAYOUTS = {
    "wgmma": "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], lane_dims = [-3, -2], vector_dim = -1>",
    "transposed": "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2, 2], [2, 1]], warp_dims = [-10], lane_dims = [-6, -3, -5], vector_dim = -2>",
    "strided": "#mosaic_gpu.WGStridedFragLayout<[128, 64], 2>",
}


def program(rng):
    ty = "vector<128x64xf32>"
    lines = [
        "func.func @kernel(%in: memref<128x64xf32>, %out: memref<128x64xf32>, %acc: vector<128x64xf32>, "
        "%rows: memref<128xf32>, %columns: memref<64xf32>) {",
        "  %zero_row = arith.constant dense<0.0> : vector<128xf32>",
        "  %zero_col = arith.constant dense<0.0> : vector<64xf32>",
        f"  %c = arith.constant dense<2.0> : {ty}",
        f"  %v0 = mosaic_gpu.vector_load %in : memref<128x64xf32> -> {ty}",
    ]
    values = ["%v0", "%c"]
    for i in range(1, rng.randint(3, 25)):
        name = f"%v{i}"
        kind = rng.randrange(8)
        a, b = rng.choice(values), rng.choice(values)
        if kind <= 2:
            op = rng.choice(["arith.addf", "arith.mulf", "arith.subf", "arith.maximumf"])
            lines.append(f"  {name} = {op} {a}, {b} : {ty}")
        elif kind == 3:
            lines.append(f"  {name} = math.exp {a} : {ty}")
        elif kind == 4:
            layout = LAYOUTS[rng.choice(sorted(LAYOUTS))]
            lines.append(f"  {name} = mosaic_gpu.layout_cast {a} : {ty} to {layout}")
        elif kind == 5:
            axis = rng.randrange(2)
            red = f"%r{i}"
            if axis == 1:
                lines.append(f"  {red} = vector.multi_reduction <add>, {a}, %zero_row [1] : {ty} to vector<128xf32>")
                lines.append(f"  {name} = mosaic_gpu.broadcast_in_dim {red}, dims [0] : vector<128xf32> -> {ty}")
            else:
                lines.append(f"  {red} = vector.multi_reduction <maximumf>, {a}, %zero_col [0] : {ty} to vector<64xf32>")
                lines.append(f"  {name} = mosaic_gpu.broadcast_in_dim {red}, dims [1] : vector<64xf32> -> {ty}")
        elif kind == 6:
            # A loaded row or column vector broadcast to the tile.
            if rng.randrange(2):
                lines.append(f"  %l{i} = mosaic_gpu.vector_load %rows : memref<128xf32> -> vector<128xf32>")
                lines.append(f"  {name} = mosaic_gpu.broadcast_in_dim %l{i}, dims [0] : vector<128xf32> -> {ty}")
            else:
                lines.append(f"  %l{i} = mosaic_gpu.vector_load %columns : memref<64xf32> -> vector<64xf32>")
                lines.append(f"  {name} = mosaic_gpu.broadcast_in_dim %l{i}, dims [1] : vector<64xf32> -> {ty}")
        else:
            lines += [
                "  %lb{0} = arith.constant 0 : index".format(i),
                "  %ub{0} = arith.constant 4 : index".format(i),
                "  %st{0} = arith.constant 1 : index".format(i),
                f"  {name} = scf.for %k{i} = %lb{i} to %ub{i} step %st{i} iter_args(%x{i} = {a}) -> ({ty}) {{",
                f"    %y{i} = arith.addf %x{i}, {b} : {ty}",
                f"    scf.yield %y{i} : {ty}",
                "  }",
            ]
        values.append(name)
    if rng.random() < 0.5:
        a_ref = f"memref<128x64xbf16, {SMEM}>"
        b_ref = f"memref<64x64xbf16, {SMEM}>"
        lines += [
            f"  %sa = mosaic_gpu.slice_smem 0 : {a_ref}",
            f"  %sb = mosaic_gpu.slice_smem 16384 : {b_ref}",
            f"  %mm = mosaic_gpu.wgmma %acc, %sa, %sb : {ty}, {a_ref}, {b_ref} -> {ty}",
        ]
        values.append("%mm")
    lines.append(f"  mosaic_gpu.vector_store {values[-1]}, %out : {ty}, memref<128x64xf32>")
    lines += ["  return", "}"]
    return "\n".join(lines)


def run(mosaic_opt, text):
    return subprocess.run(
        [mosaic_opt, "-", "-mosaic-gpu-infer-layouts=verify-solution=true report-cost=true"],
        input=text, capture_output=True, text=True, timeout=60)


COST = re.compile(r"layout assignment cost: relayouts through shared memory (\d+) "
                  r"\(moving (\d+) registers per thread\), registers per thread over "
                  r"every value site (\d+)")


def cost_of(stderr):
    """(registers relaid, relayouts, registers) from the pass's report, the
    order in which the cost model compares assignments."""
    relayouts, relaid, registers = map(int, COST.search(stderr).groups())
    return relaid, relayouts, registers


def read_baseline(path):
    """{(seed, index): cost} from lines `seed index relaid relayouts registers`."""
    baseline = {}
    with open(path) as lines:
        for line in lines:
            if line.strip() and not line.startswith("#"):
                seed, index, *cost = map(int, line.split())
                baseline[seed, index] = tuple(cost)
    return baseline


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mosaic_opt")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=100)
    parser.add_argument("--record", help="append each solved program's cost to this file")
    parser.add_argument("--baseline", help="fail if a program costs more than recorded here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    baseline = read_baseline(args.baseline) if args.baseline else {}
    solved = failed = cheaper = 0
    for index in range(args.count):
        text = program(rng)
        first, second = run(args.mosaic_opt, text), run(args.mosaic_opt, text)
        problem = None
        if first.returncode not in (0, 1):
            problem = f"crashed with exit code {first.returncode}"
        elif "internal error" in first.stderr:
            problem = "the solution breaks a constraint"
        elif first.returncode == 1 and "error:" not in first.stderr:
            problem = "failed without a diagnostic"
        elif (first.returncode, first.stdout, first.stderr) != (
                second.returncode, second.stdout, second.stderr):
            problem = "two runs differ"
        cost = cost_of(first.stderr) if first.returncode == 0 else None
        recorded = baseline.get((args.seed, index))
        if not problem and recorded and cost is None:
            problem = "fails, but the baseline solved it"
        if not problem and cost and recorded and cost > recorded:
            problem = f"costs {cost}, more than the recorded {recorded}"
        if problem:
            print(f"program {index}: {problem}\n{text}\n{first.stderr}")
            return 1
        if cost and recorded and cost < recorded:
            cheaper += 1
        if cost and args.record:
            with open(args.record, "a") as out:
                print(args.seed, index, *cost, file=out)
        if first.returncode == 0:
            solved += 1
        else:
            failed += 1
    print(f"{args.count} programs: {solved} solved, {failed} rejected with a diagnostic")
    if args.baseline:
        print(f"{cheaper} cheaper than the baseline, none more expensive")
    return 0


if __name__ == "__main__":
    sys.exit(main())
