"""Autotuning: ``@autotune`` picks, per input signature, one of a kernel
factory's configurations, in the spirit of ``triton.autotune``.

The decorated function is a *factory*, ``make(config, *specs) -> Kernel``:
a ``Config`` (the candidate's keyword arguments) and one ``Spec`` per input.
The first call with a new key (by default the inputs' shapes and dtypes)
takes the winner from the on-disk cache or the shipped ``defaults``, and
otherwise tunes: it builds every candidate (pruning those ``prune`` drops,
those whose shared memory ``smem`` says is too much and those the factory
rejects with ValueError or TypeError), compiles the rest on a thread pool
(``compile_cached`` releases the GIL), prunes those that spill or need more
registers than a block has, and then, on a GPU, times the survivors
(``CudaTimer``) and takes the fastest; on the emulator, or without a GPU,
it times nothing and ranks them by ``heuristic_score``. The winner is
written to the cache directory (``launch.cache_dir()/autotune``), keyed by
the tuner's name, the key, the device and ``launch.toolchain_version()``.
See docs/RationaleAutotune.md; the GPU timing has not yet run on hardware.
"""

from __future__ import annotations

import concurrent.futures
import functools
import hashlib
import inspect
import json
import math
import os
import pathlib
import re
import statistics
import tempfile
from typing import Any, Callable, Mapping, Sequence, Union

from . import _mosaic
from . import launch as _launch
from .generic import GenericKernel, Spec, input_specs
from .kernels import MAX_SMEM_BYTES, Kernel

__all__ = ["Autotuner", "Config", "CudaTimer", "Decision", "autotune", "heuristic_score"]

# "1" (or unset): cache, then defaults, then tune; "0": never time and
# never write the cache (cache, then defaults, then the heuristic);
# "force": tune again and overwrite the cache entry.
ENVIRONMENT = "MOSAIC_GPU_AUTOTUNE"
_MODES = ("1", "0", "force")
# The SMs of an H100 SXM5 (and of an H200): one wave of one-block-per-SM
# kernels, for the heuristic.
SM_COUNT = 132
# The 32-bit registers a block may hold (64K on sm_90), allocated per warp
# in units of 256, that is 8 per thread (CUDA occupancy calculator).
REGISTERS_PER_BLOCK = 65536
REGISTER_GRANULE = 8
# What the L2 flush writes before each timed run: 256 MiB, five times the
# 50 MiB L2 of an H100 or H200 (mosaic-run flushes the same way).
FLUSH_BYTES = 256 << 20
# The format of the cache files.
_CACHE_VERSION = 1

_SCALARS = (bool, int, float, str, type(None))


class Config:
    """One candidate: the keyword arguments the factory reads
    (``config.tile_n``, or ``config.kwargs``). Values are JSON scalars
    (int, float, str, bool, None), so that the winner can be cached."""

    def __init__(self, **kwargs: Any) -> None:
        for name, value in kwargs.items():
            if name == "kwargs":
                raise ValueError("a Config cannot have a `kwargs` argument: `config.kwargs` "
                                 "is the dict of all of them")
            if not isinstance(value, _SCALARS):
                raise TypeError(f"Config `{name}` must be an int, float, str, bool or None "
                                f"(what the autotune cache stores), got {value!r}")
        self._kwargs = dict(kwargs)

    @property
    def kwargs(self) -> dict[str, Any]:
        """The arguments, as a new dict."""
        return dict(self._kwargs)

    def __getattr__(self, name: str) -> Any:
        # Only for names the instance lacks; copy and pickle probe for
        # dunders on a Config that has no `_kwargs` yet.
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self._kwargs:
            return self._kwargs[name]
        raise AttributeError(f"{self!r} has no `{name}`")

    def _items(self) -> tuple:
        return tuple(sorted((name, type(value).__name__, value)
                            for name, value in self._kwargs.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Config) and self._items() == other._items()

    def __hash__(self) -> int:
        return hash(self._items())

    def __repr__(self) -> str:
        return f"Config({', '.join(f'{k}={v!r}' for k, v in self._kwargs.items())})"


class Candidate:
    """What became of one config: ``status`` is "ok", "pruned", "rejected"
    (the factory raised ValueError or TypeError), "compile error" or
    "launch error", ``reason`` says why; an ok one has its ``kernel``, its
    ``ptxas`` report (the manifest's), and either ``times`` (the seconds of
    each timed run) or ``score`` (the heuristic's)."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.status, self.reason = "ok", ""
        self.kernel: Kernel | None = None
        self.ptxas: dict[str, Any] = {}
        self.times: list[float] = []
        self.score: Any = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def fail(self, status: str, reason: str) -> None:
        self.status, self.reason, self.kernel = status, reason, None

    @property
    def time(self) -> float | None:
        """The median of the timed runs, in seconds."""
        return statistics.median(self.times) if self.times else None

    def describe(self) -> str:
        if not self.ok:
            return f"{self.status}: {self.reason}"
        registers = f"{self.ptxas.get('registers', '?')} registers"
        if self.times:
            return (f"{self.time * 1e6:.2f} us (median of {len(self.times)} runs, min "
                    f"{min(self.times) * 1e6:.2f} us); {registers}")
        return f"score {self.score}; {registers}"


class Decision:
    """The config chosen for one key: ``how`` is "timed", "heuristic",
    "cache" (an earlier process's choice) or "default" (``defaults``);
    ``note`` says more; ``candidates`` are the ``Candidate``s of a tuning
    (none when nothing was tuned)."""

    def __init__(self, name: str, key: str, device: str | None, config: Config, how: str,
                 note: str, candidates: Sequence[Candidate] = ()) -> None:
        self.name, self.key, self.device = name, key, device
        self.config, self.how, self.note = config, how, note
        self.candidates = list(candidates)

    def report(self) -> str:
        """What was chosen and why, one line per candidate."""
        lines = [f"autotune `{self.name}` for `{self.key}` on {self.device or 'no device'}: "
                 f"{self.config!r}, {self.note}"]
        for candidate in self.candidates:
            mark = "*" if candidate.ok and candidate.config == self.config else " "
            lines.append(f"  {mark} {candidate.config!r}: {candidate.describe()}")
        if not self.candidates:
            lines.append(f"  (no candidate compiled; {ENVIRONMENT}=force tunes again)")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<Decision {self.name} `{self.key}`: {self.config!r} ({self.how})>"


def heuristic_score(config: Config, kernel: Kernel) -> tuple[float, int]:
    """The default ranking where nothing is timed, higher first: how well
    the grid fills its waves of ``SM_COUNT`` SMs (blocks / (waves x 132),
    one resident block per SM, as for the big-shared-memory kernels tuned
    here), then the shared memory used (more stages or wider tiles keep
    more loads in flight). Ties go to the config listed first."""
    blocks = math.prod(kernel.grid)
    waves = -(-blocks // SM_COUNT)
    return round(blocks / (waves * SM_COUNT), 4), kernel.smem_bytes


@functools.lru_cache(maxsize=None)
def _device_name(backend: str) -> str:
    """Device 0's name on ``backend``; RuntimeError without a driver."""
    if not hasattr(_mosaic, "DeviceGroup"):
        raise RuntimeError("mosaic_gpu was built without runtime/ (cuda.h was not found)")
    _mosaic.cuda_driver_version(backend)  # "no CUDA driver: ..."
    text = _mosaic.DeviceGroup(1, backend).describe(0)  # "device 0 (NAME)"
    return text[text.find("(") + 1:-1] if text.endswith(")") else text


def _device_buffers(kernel: Kernel, inputs: Sequence[Any]) -> tuple[list, list]:
    """New device copies of the CPU inputs (device arrays are read in
    place: kernels do not write their inputs) and new outputs: the memory
    to keep alive and the launch's (pointer, element type, shape)s."""
    held, buffers = [], []
    for i, array in enumerate(inputs):
        argument = _launch._Argument(array, f"input {i}")
        pointer = argument.pointer
        if argument.host is not None:
            memory = _mosaic.DeviceMemory(argument.host.nbytes, "cuda")
            memory.upload(_launch._bytes_view(argument.host))
            pointer = memory.pointer
            held.append(memory)
        held.append(argument)
        buffers.append((pointer, argument.dtype.name, list(argument.shape)))
    for shape, dtype in kernel.outputs:
        memory = _mosaic.DeviceMemory(math.prod(shape) * dtype.itemsize, "cuda")
        held.append(memory)
        buffers.append((memory.pointer, dtype.name, list(shape)))
    return held, buffers


class CudaTimer:
    """Times a kernel on device 0 of the "cuda" backend with CUDA events
    (``LoadedKernel.time_launches``): on a stream of its own, ``warmup``
    untimed launches, then ``repeats`` timed ones, each after a memset of
    256 MiB (``FLUSH_BYTES``) that evicts the L2, timed between events
    recorded around the launch alone; returns the seconds of each. Each
    call uses new device copies of the CPU inputs and new outputs. Not yet
    run on a GPU.

    A timer is any object with ``device_name()`` (the name the cache
    records; RuntimeError where there is no GPU) that is called as
    ``timer(kernel, inputs, options)``; tests pass fakes."""

    def __init__(self, warmup: int = 5, repeats: int = 50, flush_l2: bool = True) -> None:
        for name, value, least in (("warmup", warmup, 0), ("repeats", repeats, 1)):
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ValueError(f"`{name}` must be an int >= {least}, got {value!r}")
        if not isinstance(flush_l2, bool):
            raise TypeError(f"`flush_l2` must be a bool, got {flush_l2!r}")
        self.warmup, self.repeats, self.flush_l2 = warmup, repeats, flush_l2
        self._flush_memory: Any = None

    def device_name(self) -> str:
        return _device_name("cuda")

    def _flush(self) -> tuple[int, int]:
        """The L2 flush's (device pointer, bytes); (0, 0) for none."""
        if not self.flush_l2:
            return (0, 0)
        if self._flush_memory is None:
            self._flush_memory = _mosaic.DeviceMemory(FLUSH_BYTES, "cuda")
        return (self._flush_memory.pointer, FLUSH_BYTES)

    def __call__(self, kernel: Kernel, inputs: Sequence[Any],
                 options: Mapping[str, Any]) -> list[float]:
        loaded = kernel._loaded("cuda", dict(options))
        held, buffers = _device_buffers(kernel, inputs)
        times = loaded.time_launches(buffers, self.warmup, self.repeats, self._flush())
        del held  # the device memory, kept until the runs are done
        return list(times)


def _random_array(spec: Spec, rng: Any) -> Any:
    """Inputs to time on where the caller gave only a Spec."""
    dtype = spec.dtype.numpy
    if dtype is None:
        raise TypeError(f"timing needs a {spec.dtype} array for `{spec.name}`, which NumPy "
                        "makes only with ml_dtypes; pass arrays instead of Specs")
    if spec.dtype.is_float:
        return rng.standard_normal(spec.shape, dtype="float32").astype(dtype)
    return rng.integers(-8, 8, spec.shape).astype(dtype)


def _mode() -> str:
    mode = os.environ.get(ENVIRONMENT) or "1"
    if mode not in _MODES:
        raise ValueError(f"{ENVIRONMENT} is {mode!r}; expected 1 (tune once, cached), 0 (never "
                         "time: cache, defaults, else the heuristic) or force (tune again)")
    return mode


def _options_text(options: Mapping[str, Any]) -> str:
    return repr(sorted(options.items()))


def _load_defaults(defaults: Any, configs: Sequence[Config]) -> dict[str, Config]:
    """``defaults`` (a mapping, or the path of a JSON object) as key -> a
    Config among ``configs``."""
    if defaults is None:
        return {}
    where = "`defaults`"
    table = defaults
    if isinstance(defaults, (str, os.PathLike)):
        where = f"`defaults` file {defaults}"
        try:
            table = json.loads(pathlib.Path(defaults).read_text())
        except (OSError, ValueError) as error:
            raise ValueError(f"{where} cannot be read: {error}") from None
    if not isinstance(table, Mapping):
        raise TypeError(f"{where} must map keys (as report() prints them) to Configs or "
                        f"dicts of their arguments, got {type(table).__name__}")
    result = {}
    for key, value in table.items():
        if not isinstance(key, str):
            raise TypeError(f"{where} keys must be strings (as report() prints them), "
                            f"got {key!r}")
        if isinstance(value, Mapping):
            value = Config(**value)
        if not isinstance(value, Config):
            raise TypeError(f"{where}[{key!r}] must be a Config or a dict, got {value!r}")
        if value not in configs:
            raise ValueError(f"{where}[{key!r}] is {value!r}, which is not one of `configs`")
        result[key] = value
    return result


class Autotuner:
    """A kernel factory tuned per key (``@autotune``).

    ``tuned(*arrays, backend=None, stream=None, **options)`` launches as
    ``Kernel.__call__`` does, with the config chosen for the inputs' key;
    ``tuned.best(*inputs)`` is that Config, ``tuned.report(*inputs)`` says
    what was chosen and why, ``tuned.decision(*inputs)`` is the
    ``Decision`` and ``tuned.specialize(*inputs)`` the ``Kernel`` (inputs:
    arrays, Specs or (shape, dtype) pairs; ``backend`` and compile options
    as for a call)."""

    def __init__(self, factory: Callable[..., Any], configs: Sequence[Config],
                 key: Sequence[str] | Callable[..., Any] | None = None,
                 prune: Callable[..., Any] | None = None,
                 smem: Callable[..., int] | None = None, defaults: Any = None,
                 heuristic: Callable[[Config, Kernel], Any] = heuristic_score,
                 timer: Any = None, name: str | None = None) -> None:
        if not callable(factory):
            raise TypeError(f"@autotune decorates a kernel factory, got {factory!r}")
        parameters = list(inspect.signature(factory).parameters.values())
        if len(parameters) < 2 or any(
                p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in parameters):
            raise TypeError("the factory must take the Config, then one positional parameter "
                            "per input (no *args, **kwargs or keyword-only parameters): "
                            "make(config, a, b) -> Kernel")
        self.factory = factory
        self.input_names = [p.name for p in parameters[1:]]
        self.name = name or factory.__name__
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9_.-]+", self.name):
            raise ValueError(f"the tuner's name (the cache files') must be letters, digits, "
                             f"'_', '.' or '-', got {self.name!r}; pass name=...")
        if not isinstance(configs, (list, tuple)):
            raise TypeError(f"`configs` must be a list of mgpu.Config, got {configs!r}")
        if not configs:
            raise ValueError("`configs` is empty: give at least one mgpu.Config")
        for i, config in enumerate(configs):
            if not isinstance(config, Config):
                raise TypeError(f"`configs[{i}]` must be a mgpu.Config, got {config!r}")
            if config in configs[:i]:
                raise ValueError(f"`configs[{i}]` repeats {config!r}")
        self.configs = list(configs)
        if isinstance(key, (list, tuple)):
            for i, entry in enumerate(key):
                if entry not in self.input_names:
                    raise ValueError(f"`key[{i}]` names {entry!r}, which is not an input of "
                                     f"{self.name} ({', '.join(self.input_names)})")
            if len(set(key)) != len(key):
                raise ValueError(f"`key` names an input twice: {list(key)}")
            key = list(key)
        elif key is not None and not callable(key):
            raise TypeError("`key` must be None (every input's shape and dtype), a list of "
                            f"input names or a function of the inputs' Specs, got {key!r}")
        for what, value in (("prune", prune), ("smem", smem), ("heuristic", heuristic)):
            if value is not None and not callable(value):
                raise TypeError(f"`{what}` must be a function, got {value!r}")
        if timer is not None and not (callable(timer) and hasattr(timer, "device_name")):
            raise TypeError("`timer` must be called as timer(kernel, inputs, options) and have "
                            f"device_name(), as CudaTimer, got {timer!r}")
        self.key, self.prune, self.smem = key, prune, smem
        self.heuristic = heuristic or heuristic_score
        self.defaults = _load_defaults(defaults, self.configs)
        self.timer = timer if timer is not None else CudaTimer()
        self._decisions: dict[tuple[str, str, str], Decision] = {}
        self._kernels: dict[tuple[Config, tuple[Spec, ...]], Kernel] = {}
        functools.update_wrapper(self, factory)

    # -- the public entry points -------------------------------------------

    def __call__(self, *arrays: Any, backend: str | None = None, stream: Any = None,
                 **options: Any) -> Any:
        """Chooses the config for the inputs' key (tuning the first time)
        and launches its kernel on ``arrays``: inputs, or inputs and
        outputs."""
        count = len(self.input_names)
        if len(arrays) < count:
            raise TypeError(f"{self.name} takes its {count} inputs "
                            f"({', '.join(self.input_names)}), then optionally its outputs; "
                            f"got {len(arrays)} arrays")
        chosen = _launch.backend(backend)
        kernel = self.specialize(*arrays[:count], backend=chosen, **options)
        return kernel(*arrays, backend=chosen, stream=stream, **options)

    def decision(self, *inputs: Any, backend: str | None = None, **options: Any) -> Decision:
        """The ``Decision`` for inputs like ``inputs``, made on first use."""
        chosen = _launch.backend(backend)
        specs = self._specs(inputs)
        key = self._key(specs)
        memo = (key, chosen, _options_text(options))
        if memo not in self._decisions:
            self._decisions[memo] = self._decide(inputs, specs, key, chosen, options)
        return self._decisions[memo]

    def best(self, *inputs: Any, backend: str | None = None, **options: Any) -> Config:
        """The config chosen for inputs like ``inputs``."""
        return self.decision(*inputs, backend=backend, **options).config

    def report(self, *inputs: Any, backend: str | None = None, **options: Any) -> str:
        """What was chosen for inputs like ``inputs`` and why."""
        return self.decision(*inputs, backend=backend, **options).report()

    def specialize(self, *inputs: Any, backend: str | None = None, **options: Any) -> Kernel:
        """The ``Kernel`` of the chosen config for inputs like ``inputs``."""
        config = self.best(*inputs, backend=backend, **options)
        specs = self._specs(inputs)
        if (config, specs) not in self._kernels:
            self._kernels[(config, specs)] = self._build(config, specs)
        return self._kernels[(config, specs)]

    def __repr__(self) -> str:
        return f"<Autotuner {self.name}: {len(self.configs)} configs, {len(self._decisions)} keys>"

    # -- choosing ------------------------------------------------------------

    def _specs(self, inputs: Sequence[Any]) -> tuple[Spec, ...]:
        if len(inputs) != len(self.input_names):
            raise TypeError(f"{self.name} has {len(self.input_names)} inputs "
                            f"({', '.join(self.input_names)}); got {len(inputs)}")
        return input_specs(inputs, self.input_names)

    def _key(self, specs: tuple[Spec, ...]) -> str:
        if self.key is None:
            return ", ".join(map(repr, specs))
        if isinstance(self.key, list):
            return ", ".join(repr(specs[self.input_names.index(name)]) for name in self.key)
        value = self.key(*specs)
        return value if isinstance(value, str) else repr(value)

    def _make(self, config: Config, specs: tuple[Spec, ...]) -> Any:
        """What the factory makes for ``config``: ValueError or TypeError
        where it rejects the config."""
        built = self.factory(config, *specs)
        return built.specialize(*specs) if isinstance(built, GenericKernel) else built

    def _checked(self, built: Any, config: Config) -> Kernel:
        if not isinstance(built, Kernel):
            raise TypeError(f"the factory {self.name} must return a Kernel (or a GenericKernel), "
                            f"got {built!r} for {config!r}")
        return built

    def _build(self, config: Config, specs: tuple[Spec, ...]) -> Kernel:
        return self._checked(self._make(config, specs), config)

    def _device(self, backend: str, mode: str) -> tuple[str | None, bool, str]:
        """(the device the cache records, or None: nothing is cached;
        whether to time; why not)."""
        if backend == "emulator":
            return "emulator", False, "the emulator times nothing"
        try:
            device = self.timer.device_name()
        except RuntimeError as error:
            return None, False, f"no GPU ({error})"
        if mode == "0":
            return device, False, f"{ENVIRONMENT}=0"
        return device, True, ""

    def _decide(self, inputs: Sequence[Any], specs: tuple[Spec, ...], key: str, backend: str,
                options: Mapping[str, Any]) -> Decision:
        mode = _mode()
        device, timed, why_not = self._device(backend, mode)
        if mode != "force":
            for decision in (self._cached(key, device, options), self._default(key, device)):
                if decision is not None and self._builds(decision, specs):
                    return decision
        decision = self._tune(inputs, specs, key, device, timed, why_not, options)
        if device is not None and mode != "0":
            self._store(decision, options)
        return decision

    def _builds(self, decision: Decision, specs: tuple[Spec, ...]) -> bool:
        """Whether a cached or default choice still builds for ``specs``
        (a factory changed since may reject it: then it is tuned again)."""
        try:
            self._kernels[(decision.config, specs)] = self._build(decision.config, specs)
        except (ValueError, TypeError):
            return False
        return True

    def _default(self, key: str, device: str | None) -> Decision | None:
        if key not in self.defaults:
            return None
        return Decision(self.name, key, device, self.defaults[key], "default",
                        "from `defaults` (shipped, not timed here)")

    def _tune(self, inputs: Sequence[Any], specs: tuple[Spec, ...], key: str,
              device: str | None, timed: bool, why_not: str,
              options: Mapping[str, Any]) -> Decision:
        candidates = [Candidate(config) for config in self.configs]
        for candidate in candidates:  # Python holding the GIL: on this thread
            self._prepare(candidate, specs)
        self._compile([c for c in candidates if c.ok], options)
        for candidate in candidates:
            if candidate.ok:
                _check_ptxas(candidate)
        self._fail_if_none(candidates, key)
        survivors = [c for c in candidates if c.ok]
        if timed:
            import numpy
            rng = numpy.random.default_rng(0)
            arrays = [_random_array(spec, rng) if not _is_array(value) else value
                      for value, spec in zip(inputs, specs)]
            for candidate in survivors:
                try:
                    candidate.times = list(self.timer(candidate.kernel, arrays, dict(options)))
                except RuntimeError as error:
                    candidate.fail("launch error", str(error))
                    continue
                if not candidate.times:
                    raise ValueError(f"the timer returned no times for {candidate.config!r}")
            self._fail_if_none(candidates, key)
            best = min((c for c in survivors if c.ok), key=lambda c: c.time)
            note = (f"the fastest of {sum(c.ok for c in candidates)} timed (median of "
                    "runs between CUDA events, L2 flushed before each)")
            how = "timed"
        else:
            for candidate in survivors:
                candidate.score = self.heuristic(candidate.config, candidate.kernel)
            best = max(survivors, key=lambda c: c.score)  # the first of equals
            note = f"chosen by heuristic, not timed ({why_not})"
            how = "heuristic"
        self._kernels[(best.config, specs)] = best.kernel
        for candidate in candidates:
            candidate.kernel = None  # the winner's is kept above; the rest are freed
        return Decision(self.name, key, device, best.config, how, note, candidates)

    def _prepare(self, candidate: Candidate, specs: tuple[Spec, ...]) -> None:
        """Prunes by ``prune`` and ``smem``, then builds the kernel."""
        config = candidate.config
        if self.prune is not None:
            reason = self.prune(config, *specs)
            if reason:
                candidate.fail("pruned", reason if isinstance(reason, str) else "by `prune`")
                return
        if self.smem is not None:
            needed = self.smem(config, *specs)
            if needed > MAX_SMEM_BYTES:
                candidate.fail("pruned", f"needs {needed} bytes of shared memory, more than "
                                         f"the {MAX_SMEM_BYTES} of a block")
                return
        try:
            built = self._make(config, specs)
        except (ValueError, TypeError) as error:
            candidate.fail("rejected", f"{type(error).__name__}: {error}")
            return
        candidate.kernel = self._checked(built, config)

    def _compile(self, candidates: Sequence[Candidate], options: Mapping[str, Any]) -> None:
        """Compiles on a thread pool (``compile_cached`` releases the GIL
        while it compiles); reads each manifest's ptxas report."""
        if not candidates:
            return
        _launch.toolchain_version()  # once, before the threads
        workers = min(len(candidates), os.cpu_count() or 1)
        with concurrent.futures.ThreadPoolExecutor(workers) as pool:
            futures = [(candidate, pool.submit(_launch.compile_cached, candidate.kernel.module,
                                               **options)) for candidate in candidates]
        for candidate, future in futures:
            try:
                manifest = json.loads(pathlib.Path(future.result()).read_text())
            except (_mosaic.MosaicError, ValueError) as error:
                candidate.fail("compile error", f"{type(error).__name__}: {error}")
                continue
            candidate.ptxas = manifest.get("ptxas", {})

    def _fail_if_none(self, candidates: Sequence[Candidate], key: str) -> None:
        if not any(c.ok for c in candidates):
            reasons = "\n".join(f"  {c.config!r}: {c.describe()}" for c in candidates)
            raise ValueError(f"no config of {self.name} works for `{key}`:\n{reasons}")

    # -- the cache -------------------------------------------------------------

    def _identity(self, key: str, device: str, options: Mapping[str, Any]) -> dict[str, Any]:
        return {"name": self.name, "key": key, "device": device,
                "toolchain": _launch.toolchain_version(), "options": _options_text(options),
                "configs": [repr(config) for config in self.configs]}

    def _cache_path(self, identity: Mapping[str, Any]) -> pathlib.Path:
        digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()
        return _launch.cache_dir() / "autotune" / f"{self.name}-{digest[:32]}.json"

    def _cached(self, key: str, device: str | None,
                options: Mapping[str, Any]) -> Decision | None:
        if device is None:
            return None
        identity = self._identity(key, device, options)
        path = self._cache_path(identity)
        try:
            entry = json.loads(path.read_text())
            if entry["version"] != _CACHE_VERSION or entry["identity"] != identity:
                return None
            config = Config(**entry["config"])
            how = entry["how"]
        except (OSError, ValueError, TypeError, KeyError):
            return None  # none, or unreadable: tuned again and rewritten
        if config not in self.configs:
            return None
        return Decision(self.name, key, device, config, "cache",
                        f"from the autotune cache ({how} by an earlier process; {path})")

    def _store(self, decision: Decision, options: Mapping[str, Any]) -> None:
        identity = self._identity(decision.key, decision.device, options)
        path = self._cache_path(identity)
        entry = {"version": _CACHE_VERSION, "identity": identity,
                 "config": decision.config.kwargs, "how": decision.how,
                 "report": decision.report().splitlines()}
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written beside the entry and renamed into place: a process reading
        # it never sees half of it.
        handle, staging = tempfile.mkstemp(prefix=path.name + ".", dir=path.parent)
        with os.fdopen(handle, "w") as out:
            json.dump(entry, out, indent=1)
        os.replace(staging, path)


def _is_array(value: Any) -> bool:
    return not isinstance(value, Spec) and not (
        isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], (tuple, list)))


def _check_ptxas(candidate: Candidate) -> None:
    """Prunes a compiled candidate that spills, or whose registers times
    its threads exceed a block's."""
    ptxas = candidate.ptxas
    stores, loads = ptxas.get("spill_stores", 0), ptxas.get("spill_loads", 0)
    if stores or loads:
        candidate.fail("pruned", f"spills registers ({stores} bytes of spill stores, {loads} "
                                 "of spill loads, says ptxas)")
        return
    registers = ptxas.get("registers", 0)
    threads = math.prod(candidate.kernel.block)
    allocated = -(-registers // REGISTER_GRANULE) * REGISTER_GRANULE * -(-threads // 32) * 32
    if allocated > REGISTERS_PER_BLOCK:
        candidate.fail("pruned", f"{registers} registers x {threads} threads take {allocated} "
                                 f"registers, more than the {REGISTERS_PER_BLOCK} of a block")


# A key: None (every input's shape and dtype), input names, or a function
# of the inputs' Specs returning a string (or anything, keyed by its repr).
KeyLike = Union[None, Sequence[str], Callable[..., Any]]


def autotune(configs: Sequence[Config], key: KeyLike = None,
             prune: Callable[..., Any] | None = None,
             smem: Callable[..., int] | None = None, defaults: Any = None,
             heuristic: Callable[[Config, Kernel], Any] = heuristic_score,
             timer: Any = None, name: str | None = None
             ) -> Callable[[Callable[..., Any]], Autotuner]:
    """Decorates a kernel factory ``make(config, *specs) -> Kernel`` (or a
    ``GenericKernel``, specialized to the specs) into an ``Autotuner``.

    ``configs`` are the candidates (``mgpu.Config``s). ``key`` says which
    inputs share a choice: None (all inputs' shapes and dtypes), a list of
    input names (the factory's parameter names) or a function of the
    inputs' Specs. ``prune(config, *specs)`` returns a reason (a str, or
    True) to drop a config before it is built; ``smem(config, *specs)``
    returns the shared memory a config needs, and those over
    ``MAX_SMEM_BYTES`` are dropped before they are built. ``defaults`` maps
    keys (as ``report()`` prints them) to Configs (or their kwargs), or is
    the path of such a JSON object: consulted after the cache, before
    tuning. ``heuristic(config, kernel)`` ranks candidates where nothing is
    timed, higher first (``heuristic_score``); ``timer`` times them on a GPU
    (``CudaTimer()``); ``name`` (the factory's) names the cache files.

        @mgpu.autotune(configs=[mgpu.Config(rows=32), mgpu.Config(rows=64)])
        def scale(config, x):
            @mgpu.kernel(grid=(x.tiles(0, config.rows), 1, 1), block=(128, 1, 1),
                         inputs=[(x.shape, x.dtype)], outputs=[(x.shape, x.dtype)])
            def body(x_ref, out):
                rows = mgpu.ds(mgpu.block_id("x") * config.rows, config.rows)
                mgpu.vector_store(mgpu.vector_load(x_ref[rows, :]) * 2.0, out[rows, :])
            return body
    """
    def decorate(factory: Callable[..., Any]) -> Autotuner:
        return Autotuner(factory, configs, key, prune, smem, defaults, heuristic, timer, name)
    return decorate
