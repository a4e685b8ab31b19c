#!/usr/bin/env python3
"""Writes mosaic-emulator-fuzz's seed corpus and its dictionary.

The seeds are PTX from four places, each module split into one seed per
kernel (the module-scope text, every `.func`, and one `.entry`), so that a
seed stays small and fast to run:

- what nvcc made of the emulator's CUDA corpus (emulator/test/cuda/*.cu,
  compiled by the main build to BUILD_DIR/emulator/test/cuda/*.ptx);
- what the compiler emits: `BUILD_DIR/bin/mosaic-compile --emit=ptx` on the
  examples and on every test input with a `gpu.module` that it compiles;
- the hand-written kernels of the emulator's unit tests (the raw string
  literals of emulator/test/*.cpp, with the PTX header prepended where a
  test prepends it);
- emulator/fuzz/seeds/*.ptx: inputs the fuzzer found, kept as seeds.

A source that is missing (no nvcc, no main build) is skipped with a note.
Each seed is named by its SHA-1, as libFuzzer names inputs. The dictionary
(libFuzzer's -dict format) holds the seeds' opcodes with and without their
modifiers, directives, state spaces, types, special and numbered registers,
so that mutations insert whole tokens.

Usage: make-corpus.py SOURCE_ROOT BUILD_DIR SEED_DIR DICT_FILE
"""
import hashlib
import pathlib
import re
import subprocess
import sys
import tempfile

HEADER = ".version 8.0\n.target sm_90a\n.address_size 64\n"
RAW_STRING = re.compile(r'R"(\w*)\((.*?)\)\1"', re.DOTALL)
FUNCTION = re.compile(r"^[ \t]*(?:\.visible[ \t]+|\.weak[ \t]+)?\.(entry|func)\b",
                      re.MULTILINE)

TOKENS = [
    # Whole dotted opcodes and their stems (`mbarrier.try_wait.parity.shared::cta.b64`).
    re.compile(r"^\s*(?:@!?%\w+\s+)?([a-z][a-z0-9_]*(?:\.[a-z0-9_:]+)*)", re.MULTILINE),
    # Directives, modifiers, state spaces and types (`.shared::cluster`, `.b32`).
    re.compile(r"\.[a-z_][a-z0-9_]*(?:::[a-z_]+)?"),
    # Special registers (`%tid.x`, `%cluster_ctarank`) and register prefixes.
    re.compile(r"%[a-z_]+(?:\.[xyz])?"),
]
EXTRA = ["0", "1", "-1", "32", "128", "0x7fffffff", "0xffffffff",
         "0f3F800000", "0d3FF0000000000000", "[", "]", "{", "}", "(", ")",
         ",", ";", "<", ">", "+", "@", "@!", "!", "_", "|", ":", "\n"]


def split_module(text):
    """One module per `.entry`: the module-scope text, every `.func`, that
    entry. Text the split cannot read (unbalanced braces) stays whole."""
    starts = [m.start() for m in FUNCTION.finditer(text)]
    if not starts:
        return [text]
    functions, outside, cursor = [], [], 0
    for start in starts:
        if start < cursor:
            continue
        outside.append(text[cursor:start])
        brace = text.find("{", start)
        semicolon = text.find(";", start)
        if semicolon != -1 and (brace == -1 or semicolon < brace) and \
                ")" in text[start:semicolon] and "{" not in text[start:semicolon]:
            # A prototype.
            outside.append(text[start:semicolon + 1])
            cursor = semicolon + 1
            continue
        if brace == -1:
            return [text]
        depth, end = 0, brace
        while end < len(text):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            end += 1
            if depth == 0:
                break
        if depth != 0:
            return [text]
        functions.append(text[start:end])
        cursor = end
    outside.append(text[cursor:])
    prefix = "".join(outside).rstrip() + "\n\n"
    helpers = [f for f in functions if FUNCTION.match(f).group(1) == "func"]
    entries = [f for f in functions if FUNCTION.match(f).group(1) == "entry"]
    if len(entries) <= 1:
        return [text]
    return [prefix + "".join(h + "\n\n" for h in helpers) + e + "\n"
            for e in entries]


def nvcc_ptx(build_dir):
    paths = sorted((build_dir / "emulator/test/cuda").glob("*.ptx"))
    if not paths:
        print(f"note: no nvcc PTX under {build_dir}/emulator/test/cuda")
    for path in paths:
        yield path.read_text()


def compiler_ptx(source_root, build_dir):
    compiler = build_dir / "bin/mosaic-compile"
    if not compiler.exists():
        print(f"note: no {compiler}; no compiler PTX")
        return
    inputs = sorted((source_root / "examples").glob("*.mlir"))
    inputs += sorted(p for p in (source_root / "test").rglob("*.mlir")
                     if "gpu.module" in p.read_text())
    with tempfile.TemporaryDirectory() as scratch:
        out = pathlib.Path(scratch) / "kernel.ptx"
        for path in inputs:
            # A fixed ISA, so that ptxas is not asked for its version.
            done = subprocess.run(
                [str(compiler), "--emit=ptx", "--ptx-features=+ptx80",
                 str(path), "-o", str(out)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if done.returncode == 0 and out.exists():
                yield out.read_text()


def test_ptx(source_root):
    for path in sorted((source_root / "emulator/test").glob("*.cpp")):
        for _, body in RAW_STRING.findall(path.read_text()):
            if ".entry" not in body and ".func" not in body:
                continue
            yield body if ".version" in body else HEADER + body


def kept_seeds(source_root):
    for path in sorted((source_root / "emulator/fuzz/seeds").glob("*.ptx")):
        yield path.read_text()


def main():
    source_root, build_dir, seed_dir, dict_file = map(pathlib.Path,
                                                      sys.argv[1:5])
    seed_dir.mkdir(parents=True, exist_ok=True)
    tokens = set(EXTRA)
    seeds = set()
    modules = [*nvcc_ptx(build_dir), *compiler_ptx(source_root, build_dir),
               *test_ptx(source_root), *kept_seeds(source_root)]
    for module in modules:
        for seed in split_module(module):
            data = seed.encode()
            name = hashlib.sha1(data).hexdigest()
            (seed_dir / name).write_bytes(data)
            seeds.add(name)
            for pattern in TOKENS:
                for token in pattern.findall(seed):
                    tokens.add(token)
                    if pattern is TOKENS[0]:
                        # The stem and each modifier alone too.
                        tokens.update(token.split(".")[:1])
    with open(dict_file, "w") as out:
        for token in sorted(tokens):
            escaped = (token.replace("\\", "\\\\").replace('"', '\\"')
                       .replace("\n", "\\x0A"))
            out.write(f'"{escaped}"\n')
    print(f"{len(seeds)} seeds in {seed_dir}, {len(tokens)} tokens in {dict_file}")


if __name__ == "__main__":
    main()
