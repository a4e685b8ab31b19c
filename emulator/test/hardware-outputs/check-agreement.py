#!/usr/bin/env python3
"""Holds the emulator to the bytes an H200 wrote (README.md here).

For every kernel folder and every h200-seedS.bin in it, runs the recorded
PTX on the emulator with mosaic-run's inputs for seed S, and compares each
output buffer with the hardware's bytes: the share of bitwise-equal
elements and the largest difference in units in the last place (ulp, the
distance between the two values in the format's ordered bit patterns).
agreement.json holds, per kernel, seed and output, the agreement reached so
far: the share may not drop below it and the largest ulp difference may not
grow past it; a share of 1 means bit for bit.

Usage: check-agreement.py MOSAIC_RUN [--junit PATH] [--only KERNEL]
       [--measure]

--measure prints the measured table as agreement.json would hold it,
without checking. Writes one JUnit test case per (kernel, seed, output).
"""
import argparse
import json
import math
import pathlib
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent

# Element type -> (bytes, NumPy unsigned view, sign bit) for the ulp distance.
FLOAT_TYPES = {
    "f32": (4, np.uint32, 1 << 31),
    "bf16": (2, np.uint16, 1 << 15),
    "f16": (2, np.uint16, 1 << 15),
}


def ordered(bits, sign):
    """Bit patterns as integers in the order of the values they encode."""
    bits = bits.astype(np.int64)
    return np.where(bits & sign, -(bits & (sign - 1)), bits)


def is_nan(bits, element_type):
    if element_type == "f32":
        return (bits & 0x7F800000 == 0x7F800000) & (bits & 0x007FFFFF != 0)
    if element_type == "bf16":
        return (bits & 0x7F80 == 0x7F80) & (bits & 0x007F != 0)
    return (bits & 0x7C00 == 0x7C00) & (bits & 0x03FF != 0)


def values(raw, element_type):
    if element_type == "f32":
        return np.frombuffer(raw, dtype=np.float32).astype(np.float64)
    if element_type == "f16":
        return np.frombuffer(raw, dtype=np.float16).astype(np.float64)
    bits = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


def largest_absolute_difference(ours, theirs, element_type):
    with np.errstate(invalid="ignore"):
        difference = np.abs(values(ours, element_type) -
                            values(theirs, element_type))
    return float(np.nanmax(difference)) if difference.size else 0.0


def compare(ours, theirs, element_type):
    """(share of bitwise-equal elements, largest ulp difference, count)."""
    size, view, sign = FLOAT_TYPES[element_type]
    a = np.frombuffer(ours, dtype=view)
    b = np.frombuffer(theirs, dtype=view)
    equal = a == b
    distance = np.abs(ordered(a, sign) - ordered(b, sign))
    # A NaN on one side only is as far as it gets.
    lone_nan = is_nan(a, element_type) != is_nan(b, element_type)
    distance = np.where(lone_nan, np.iinfo(np.int64).max, distance)
    distance = np.where(equal, 0, distance)
    return float(equal.mean()), int(distance.max()), a.size


def run_kernel(mosaic_run, manifest, seed, work):
    dump = work / f"{manifest.stem}-seed{seed}.bin"
    result = work / f"{manifest.stem}-seed{seed}.json"
    command = [str(mosaic_run), str(manifest), "--emulate", f"--seed={seed}",
               "--samples=0", f"--dump-outputs={dump}", f"--json={result}"]
    completed = subprocess.run(command, capture_output=True, text=True)
    if not dump.exists():
        raise RuntimeError(
            f"{' '.join(command)} wrote no outputs (exit {completed.returncode}):\n"
            + completed.stdout + completed.stderr)
    described = json.loads(result.read_text())
    buffers = described["buffers"]
    outputs = described["outputs"]
    return dump.read_bytes(), [buffers[i] for i in outputs]


def measure(mosaic_run, kernels):
    """{kernel: {seed: [(element type, share, max ulp, elements)]}}."""
    measured = {}
    with tempfile.TemporaryDirectory() as scratch:
        work = pathlib.Path(scratch)
        for folder in kernels:
            manifest = folder / f"{folder.name}.json"
            for recorded in sorted(folder.glob("h200-seed*.bin")):
                seed = recorded.stem.removeprefix("h200-seed")
                ours, outputs = run_kernel(mosaic_run, manifest, seed, work)
                theirs = recorded.read_bytes()
                if len(ours) != len(theirs):
                    raise RuntimeError(
                        f"{folder.name} seed {seed}: the emulator wrote "
                        f"{len(ours)} bytes, the H200 {len(theirs)}")
                rows, offset = [], 0
                for buffer in outputs:
                    element_type = buffer["element_type"]
                    count = int(np.prod(buffer["shape"]))
                    size = FLOAT_TYPES[element_type][0] * count
                    mine = ours[offset:offset + size]
                    recorded_part = theirs[offset:offset + size]
                    share, ulp, _ = compare(mine, recorded_part, element_type)
                    absolute = largest_absolute_difference(
                        mine, recorded_part, element_type)
                    rows.append((element_type, share, ulp, count, absolute))
                    offset += size
                measured.setdefault(folder.name, {})[seed] = rows
    return measured


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mosaic_run", type=pathlib.Path)
    parser.add_argument("--junit", type=pathlib.Path)
    parser.add_argument("--only")
    parser.add_argument("--measure", action="store_true")
    args = parser.parse_args()

    kernels = sorted(path for path in HERE.iterdir()
                     if path.is_dir() and (args.only in (None, path.name)))
    measured = measure(args.mosaic_run, kernels)

    if args.measure:
        # Shares rounded down, so that the run that measured them passes.
        table = {kernel: {seed: [{"equal": math.floor(share * 1e6) / 1e6,
                                  "max_ulp": ulp}
                                 for _, share, ulp, _, _ in rows]
                          for seed, rows in seeds.items()}
                 for kernel, seeds in measured.items()}
        print(json.dumps(table, indent=2, sort_keys=True))
        return 0

    expected = json.loads((HERE / "agreement.json").read_text())
    cases, failures = [], 0
    print(f"{'kernel':34} {'seed':>4} {'output':>6} {'type':>5} "
          f"{'bitwise equal':>14} {'max ulp':>8} {'max abs':>9}  floor")
    for kernel, seeds in measured.items():
        for seed, rows in seeds.items():
            for index, (element_type, share, ulp, count, absolute) in \
                    enumerate(rows):
                floor = expected.get(kernel, {}).get(seed)
                name = f"{kernel} seed {seed} output {index}"
                problem = None
                if floor is None or index >= len(floor):
                    problem = "no entry in agreement.json"
                    bound = "-"
                else:
                    bound = floor[index]
                    if bound["equal"] >= 1.0 and share < 1.0:
                        problem = (f"{share:.4%} bitwise equal (largest "
                                   f"difference {ulp} ulp); expected every "
                                   f"element bit for bit")
                    elif share < bound["equal"]:
                        problem = (f"{share:.4%} bitwise equal; at least "
                                   f"{bound['equal']:.4%} expected")
                    elif ulp > bound["max_ulp"]:
                        problem = (f"largest difference {ulp} ulp; at most "
                                   f"{bound['max_ulp']} expected")
                    bound = f"{bound['equal']:.4%}, {bound['max_ulp']} ulp"
                print(f"{kernel:34} {seed:>4} {index:>6} {element_type:>5} "
                      f"{share:>14.4%} {ulp:>8} {absolute:>9.2g}  {bound}"
                      + (f"  FAIL: {problem}" if problem else ""))
                failures += problem is not None
                cases.append((name, problem))
    if args.junit:
        suite = ElementTree.Element("testsuite", name="hardware-agreement",
                                    tests=str(len(cases)))
        for name, problem in cases:
            case = ElementTree.SubElement(suite, "testcase",
                                          classname="hardware-agreement",
                                          name=name)
            if problem:
                ElementTree.SubElement(case, "failure", message=problem)
        root = ElementTree.Element("testsuites")
        root.append(suite)
        args.junit.parent.mkdir(parents=True, exist_ok=True)
        ElementTree.ElementTree(root).write(args.junit, encoding="utf-8",
                                            xml_declaration=True)
    print(f"{len(cases) - failures} of {len(cases)} outputs agree as recorded")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
