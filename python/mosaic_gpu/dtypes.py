"""Element types as objects: ``mosaic_gpu.f32``, ``mosaic_gpu.bf16``, ...

Every function that takes a dtype takes one of these or its name ('f32');
``as_dtype`` turns either into the object at the API's boundary, with a
clear error for anything else.
"""

from __future__ import annotations

from typing import Any, Union

from . import _mosaic

__all__ = ["DType", "bf16", "f16", "f32", "f64", "f8e4m3fn", "f8e5m2", "i1", "i8", "i16", "i32",
           "i64", "index"]


class DType:
    """An element type: its ``name`` ('f32', as MLIR spells it), ``bitwidth``,
    kind (``is_float``, ``is_int``; ``index`` is neither) and ``numpy``
    dtype. Compares equal to its name, so ``x.dtype == "f32"`` holds."""

    __slots__ = ("_name", "_bitwidth", "_kind", "_element", "_numpy")

    def __init__(self, name: str, bitwidth: int, kind: str, element: _mosaic.ElementType,
                 numpy: str | None) -> None:
        self._name, self._bitwidth, self._kind = name, bitwidth, kind
        self._element, self._numpy = element, numpy

    @property
    def name(self) -> str:
        return self._name

    @property
    def bitwidth(self) -> int:
        return self._bitwidth

    @property
    def itemsize(self) -> int:
        """Bytes per element in memory (an i1 takes a byte)."""
        return -(-self._bitwidth // 8)

    @property
    def is_float(self) -> bool:
        return self._kind == "float"

    @property
    def is_int(self) -> bool:
        """A signless integer (i1 ... i64); not ``index``."""
        return self._kind == "int"

    @property
    def element(self) -> _mosaic.ElementType:
        """The element type the C++ builder makes of it."""
        return self._element

    @property
    def numpy(self) -> Any:
        """The NumPy dtype of the same values, or None where there is none
        (``index``; ``bf16`` and the fp8 types without the ml_dtypes
        package)."""
        if self._numpy is None:
            return None
        import numpy
        if self._numpy in _ML_DTYPES:
            try:
                import ml_dtypes  # NumPy has no bfloat16 or fp8 of its own
            except ImportError:
                return None
            return numpy.dtype(getattr(ml_dtypes, self._numpy))
        return numpy.dtype(self._numpy)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return self._name == other
        return isinstance(other, DType) and self._name == other._name

    def __hash__(self) -> int:
        return hash(self._name)

    def __str__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"mosaic_gpu.{self._name}"


# The dtypes NumPy has only through the ml_dtypes package.
_ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e5m2")

_E = _mosaic.ElementType
f16 = DType("f16", 16, "float", _E.f16, "float16")
bf16 = DType("bf16", 16, "float", _E.bf16, "bfloat16")
f32 = DType("f32", 32, "float", _E.f32, "float32")
f64 = DType("f64", 64, "float", _E.f64, "float64")
# fp8 (OCP): e4m3 without infinities (maximum 448), and e5m2.
f8e4m3fn = DType("f8E4M3FN", 8, "float", _E.f8E4M3FN, "float8_e4m3fn")
f8e5m2 = DType("f8E5M2", 8, "float", _E.f8E5M2, "float8_e5m2")
i1 = DType("i1", 1, "int", _E.i1, "bool")
i8 = DType("i8", 8, "int", _E.i8, "int8")
i16 = DType("i16", 16, "int", _E.i16, "int16")
i32 = DType("i32", 32, "int", _E.i32, "int32")
i64 = DType("i64", 64, "int", _E.i64, "int64")
index = DType("index", 64, "index", _E.index, None)
# The element of barrier arrays (Barriers); not a dtype a user names.
barrier = DType("barrier", 64, "barrier", _E.barrier, None)

# What arrays and vectors may hold; `index` is for scalars only.
ELEMENT_DTYPES = {d.name: d for d in (f16, bf16, f32, f64, f8e4m3fn, f8e5m2, i1, i8, i16,
                                       i32, i64)}

DTypeLike = Union[DType, str]


def as_dtype(value: DTypeLike, what: str = "dtype", allow_index: bool = False) -> DType:
    """``value`` (a DType or its name) as a DType; ``what`` names the
    argument in the TypeError or ValueError raised for anything else."""
    known = dict(ELEMENT_DTYPES, **({"index": index} if allow_index else {}))
    if isinstance(value, DType):
        if value.name in known:
            return value
        raise ValueError(f"`{what}`: {value} is not allowed here (one of {', '.join(known)})")
    if not isinstance(value, str):
        raise TypeError(f"`{what}` must be a DType (mosaic_gpu.f32, ...) or a dtype name "
                        f"such as 'f32', got {value!r}")
    if value in known:
        return known[value]
    raise ValueError(f"`{what}`: unknown dtype {value!r} (one of {', '.join(known)})")
