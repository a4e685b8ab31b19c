#!/usr/bin/python3
"""Compiles every kernel the project has to PTX and writes one file per kernel,
so that two builds (a refactoring's start and its end) can be diffed.

    scripts/ptx-corpus.py --build build --out /tmp/ptx-after
    scripts/ptx-corpus.py --compare /tmp/ptx-before /tmp/ptx-after

The corpus:
  - examples/*.mlir, and each one's manifest (compiled to a CUBIN) where
    ptxas is installed;
  - every case (split at `// -----`) of every .mlir file under test/, with
    its Inputs/; a case that does not compile records its diagnostics, so
    error texts are compared too;
  - the MLIR that python/examples/*.py emit with --emit-mlir;
  - every module the Python tests compile (python/tests, run by pytest with
    a hook that also compiles each module to PTX with the same options).

Every compile fixes the PTX ISA (+ptx85), so the PTX does not depend on the
ptxas installed. `--compare` prints the kernels that differ or exist on one
side only and exits 1 if there is any.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pathlib
import re
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PTX_FEATURES = "+ptx85"
SPLIT = re.compile(r"^// -----\s*$", re.MULTILINE)

# Installed into the pytest run through PYTHONPATH: wraps
# mosaic_gpu._mosaic.compile so that each call also writes the module's PTX
# (or its error) under $MOSAIC_PTX_CORPUS, keyed by the module text and the
# options. Subprocesses that tests start inherit it.
SITECUSTOMIZE = r'''
import hashlib, importlib.abc, os, pathlib, sys

_OUT = pathlib.Path(os.environ["MOSAIC_PTX_CORPUS"])


def _wrap(module):
    original = module.compile

    def compile(mod, *args, **kwargs):
        options = dict(kwargs, emit="ptx", dump_to=None, ptx_features="+ptx85")
        key = hashlib.sha256((str(mod) + repr(args) + repr(sorted(
            (k, v) for k, v in options.items()))).encode()).hexdigest()[:24]
        try:
            text = original(mod, *args, **options).ptx
        except Exception as error:  # the error text is part of the corpus
            text = "error: " + type(error).__name__ + ": " + str(error)
        _OUT.mkdir(parents=True, exist_ok=True)
        (_OUT / (key + ".ptx")).write_text(text)
        return original(mod, *args, **kwargs)

    compile.__doc__ = original.__doc__
    module.compile = compile


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "mosaic_gpu._mosaic":
            return None
        for finder in sys.meta_path:
            if finder is self:
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                loader = spec.loader
                execute = loader.exec_module

                def exec_module(module):
                    execute(module)
                    _wrap(module)

                loader.exec_module = exec_module
                return spec
        return None


sys.meta_path.insert(0, _Finder())
'''


def normalize(text: str) -> str:
    """Temporary paths differ between runs."""
    return re.sub(r"/tmp/[^\s:'\"]+", "<tmp>", text)


def compile_mlir(compiler: pathlib.Path, text: str, workdir: pathlib.Path) -> str:
    source = workdir / "case.mlir"
    source.write_text(text)
    result = subprocess.run(
        [str(compiler), str(source), f"--ptx-features={PTX_FEATURES}", "--emit=ptx", "-o", "-"],
        capture_output=True, text=True, timeout=600)
    if result.returncode == 0:
        return result.stdout
    return "error:\n" + normalize(result.stderr.replace(str(source), "case.mlir"))


def write_corpus(build: pathlib.Path, out: pathlib.Path, with_python_tests: bool) -> None:
    compiler = build / "bin" / "mosaic-compile"
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        workdir = pathlib.Path(scratch)
        for path in sorted(ROOT.glob("examples/*.mlir")):
            cubin = workdir / "kernel.cubin"
            result = subprocess.run(
                [str(compiler), str(path), f"--ptx-features={PTX_FEATURES}", "-o", str(cubin)],
                capture_output=True, text=True, timeout=600)
            if result.returncode == 0:
                # ptxas reports its own compile time, which varies.
                manifest = re.sub(r"Compile time = [0-9.]+ ms", "Compile time = <ms>",
                                  (workdir / "kernel.json").read_text())
                (out / f"examples__{path.name}.manifest.json").write_text(manifest)
        sources = sorted(ROOT.glob("examples/*.mlir")) + sorted(ROOT.glob("test/**/*.mlir"))
        for path in sources:
            cases = SPLIT.split(path.read_text())
            for number, case in enumerate(cases):
                name = str(path.relative_to(ROOT)).replace("/", "__")
                (out / f"{name}.{number}.ptx").write_text(compile_mlir(compiler, case, workdir))
        environment = dict(os.environ, PYTHONPATH=str(build / "python"),
                           PYTHONDONTWRITEBYTECODE="1")
        emitted = {
            "attention.py": [[], ["--causal"], ["--head-dim", "64", "--stages", "4"],
                             ["--dtype", "f16", "--causal"]],
            "gemm_ws.py": [[]],
        }
        for script, variants in emitted.items():
            for number, flags in enumerate(variants):
                mlir = workdir / "emitted.mlir"
                subprocess.run([sys.executable, str(ROOT / "python" / "examples" / script),
                                *flags, "--emit-mlir", str(mlir)],
                               check=True, env=environment, capture_output=True)
                (out / f"python-example__{script}.{number}.ptx").write_text(
                    compile_mlir(compiler, mlir.read_text(), workdir))
        if with_python_tests:
            hook = workdir / "hook"
            hook.mkdir()
            (hook / "sitecustomize.py").write_text(SITECUSTOMIZE)
            environment["PYTHONPATH"] += os.pathsep + str(hook)
            environment["MOSAIC_PTX_CORPUS"] = str(out / "python-tests")
            environment["MOSAIC_GPU_CACHE_DIR"] = str(workdir / "cache")
            # Failures do not stop it: a test the base build fails (a new
            # one) still compiles its kernels.
            subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "--ignore", str(ROOT / "python" / "tests" / "packaging"),
                            str(ROOT / "python" / "tests")],
                           env=environment, cwd=workdir)


def compare(before: pathlib.Path, after: pathlib.Path) -> int:
    def files(root: pathlib.Path) -> dict[str, pathlib.Path]:
        return {str(p.relative_to(root)): p for p in root.rglob("*") if p.is_file()}

    old, new = files(before), files(after)
    differing = sorted(name for name in old.keys() & new.keys()
                       if old[name].read_bytes() != new[name].read_bytes())
    for name in differing:
        print(f"differs: {name}")
    for name in sorted(old.keys() - new.keys()):
        print(f"only before: {name}")
    for name in sorted(new.keys() - old.keys()):
        print(f"only after: {name}")
    manifests = sum(1 for name in new if name.endswith(".json"))
    compiled = sum(1 for name, p in new.items()
                   if name.endswith(".ptx") and not p.read_text().startswith("error"))
    print(f"{len(new) - manifests} kernels ({compiled} compiled to PTX, "
          f"{len(new) - manifests - compiled} diagnostics) and {manifests} manifests; "
          f"{len(differing)} differ, {len(old.keys() ^ new.keys())} on one side")
    return 1 if differing or old.keys() != new.keys() else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", type=pathlib.Path, default=ROOT / "build")
    parser.add_argument("--out", type=pathlib.Path)
    parser.add_argument("--no-python-tests", action="store_true",
                        help="skip the modules the Python tests compile (minutes)")
    parser.add_argument("--compare", nargs=2, type=pathlib.Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        parser.error("--out is required unless --compare is given")
    write_corpus(args.build.resolve(), args.out.resolve(), not args.no_python_tests)
    return 0


if __name__ == "__main__":
    sys.exit(main())
