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
    def numpy_name(self) -> str | None:
        """NumPy's (or ml_dtypes') name for the same values ('bfloat16'),
        or None (``index``)."""
        return self._numpy

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

# One row per element type, from the table the compiler and the runtime
# share (mosaic/Contracts/ElementType.h): (element, name, bits, kind,
# buffer, numpy name).
_TABLE = {row[1]: row for row in _mosaic.element_types()}


def _from_table(name: str) -> DType:
    element, name, bits, kind, _, numpy = _TABLE[name]
    return DType(name, bits, kind, element, numpy)


f16 = _from_table("f16")
bf16 = _from_table("bf16")
f32 = _from_table("f32")
f64 = _from_table("f64")
# fp8 (OCP): e4m3 without infinities (maximum 448), and e5m2.
f8e4m3fn = _from_table("f8E4M3FN")
f8e5m2 = _from_table("f8E5M2")
i1 = _from_table("i1")
i8 = _from_table("i8")
i16 = _from_table("i16")
i32 = _from_table("i32")
i64 = _from_table("i64")
index = _from_table("index")
# The element of barrier arrays (Barriers); not a dtype a user names.
barrier = _from_table("barrier")

# What arrays and vectors may hold; `index` is for scalars only.
ELEMENT_DTYPES = {d.name: d for d in (f16, bf16, f32, f64, f8e4m3fn, f8e5m2, i1, i8, i16,
                                       i32, i64)}
# What a kernel's array arguments may hold: the element types a manifest
# names, which the runtime reads.
BUFFER_DTYPES = {name: ELEMENT_DTYPES[name] for name, row in _TABLE.items() if row[4]}

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
