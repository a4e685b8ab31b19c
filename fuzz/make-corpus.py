#!/usr/bin/env python3
"""Writes mosaic-fuzz's seed corpus and its dictionary from the tests.

Every test/**/*.mlir and examples/*.mlir is split into cases on `// -----`
lines, as `mosaic-opt -split-input-file` splits it; each case, without its
comment lines (RUN/CHECK lines and prose, which no mutation makes useful), is
one seed file named by its SHA-1, as libFuzzer names inputs. The dictionary
(libFuzzer's -dict format) holds the tokens the tests are written with: op
names, dialect attribute and type prefixes, attribute names and keywords, so
that mutations insert whole tokens instead of single bytes.

Usage: make-corpus.py SOURCE_ROOT SEED_DIR DICT_FILE
"""
import hashlib
import pathlib
import re
import sys

SPLIT = re.compile(r"^\s*// -----.*$", re.MULTILINE)
COMMENT_LINE = re.compile(r"^\s*//.*\n?", re.MULTILINE)

TOKENS = [
    # Op names (`mosaic_gpu.vector_load`, `arith.constant`, `gpu.func`).
    re.compile(r"\b[a-z_]+\.[a-z_][a-z0-9_.]*\b"),
    # Dialect attributes and types with their opening bracket
    # (`#mosaic_gpu.TiledLayout<`, `!mosaic_gpu.barrier`).
    re.compile(r"[#!][a-z_]+\.[A-Za-z_][A-Za-z0-9_]*<?"),
    # Builtin types and attribute syntax (`memref<`, `vector<`, `array<i32:`).
    re.compile(r"\b(?:memref|vector|array|strided|dense|tensor)<(?:i32:|i64:)?"),
    # Attribute and keyword names followed by `=` (`arrival_count =`), not
    # SSA values or symbols (`%a =`).
    re.compile(r"(?<![%@^\w])[a-z_][a-z0-9_]* = "),
    # Bare keywords and element types (`kernel`, `attributes`, `bf16`).
    re.compile(r"(?<![%@^#!.\w])(?:[a-z][a-z0-9_]{2,}|[a-z]+[0-9]+(?:E[0-9]M[0-9]FN)?)\b(?![.(])"),
]
# Edge values the tokens miss.
EXTRA = ["0", "-1", "1", "128", "2147483647", "-2147483648",
         "9223372036854775807", "4294967296", "?", "x", "[", "]", "<", ">",
         "{", "}", "(", ")", ":", ",", "->", "%", "^bb1", "// -----"]


def cases(source_root):
    paths = sorted((source_root / "test").rglob("*.mlir"))
    paths += sorted((source_root / "examples").glob("*.mlir"))
    for path in paths:
        for case in SPLIT.split(path.read_text()):
            case = COMMENT_LINE.sub("", case).strip()
            if case:
                yield case + "\n"


def main():
    source_root, seed_dir, dict_file = map(pathlib.Path, sys.argv[1:4])
    seed_dir.mkdir(parents=True, exist_ok=True)
    tokens = set(EXTRA)
    seeds = set()
    for case in cases(source_root):
        data = case.encode()
        name = hashlib.sha1(data).hexdigest()
        (seed_dir / name).write_bytes(data)
        seeds.add(name)
        for pattern in TOKENS:
            tokens.update(pattern.findall(case))
    with open(dict_file, "w") as out:
        for token in sorted(tokens):
            escaped = token.replace("\\", "\\\\").replace('"', '\\"')
            out.write(f'"{escaped}"\n')
    print(f"{len(seeds)} seeds in {seed_dir}, {len(tokens)} tokens in {dict_file}")


if __name__ == "__main__":
    main()
