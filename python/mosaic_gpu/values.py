"""Scalars and vectors of the kernel being built, and the ops that compute
on them: constants, Python operators (``arith``), ``exp``, reductions,
broadcasts, ``iota``, ``layout_cast`` and the grid and warpgroup indices.

Each op is one call of a typed entry point of the C++ builder
(``KernelBuilder.addf``, ``cmpf``, ``multi_reduction``, ...).
"""

from __future__ import annotations

import math
from typing import Callable, Sequence, Union

from . import _mosaic
from .builder import check_shape, check_type, current, location
from .dtypes import DType, DTypeLike, as_dtype, i1, i32, index
from .layouts import Layout

__all__ = [
    "Scalar", "Value", "Vector", "block_id", "broadcast_in_dim", "cluster_block_id",
    "constant", "device_count", "device_id", "exp", "exp2", "iota", "log2", "select", "layout_cast", "maximum", "minimum", "reduce",
    "thread_id", "warpgroup_id",
]

Number = Union[int, float]


class Value:
    """A value of the kernel being built; ``type`` is its MLIR type."""

    def __init__(self, handle: _mosaic.Value) -> None:
        self.handle = handle

    @property
    def type(self) -> str:
        return self.handle.type

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.type}>"


def _integer(value: Number, dtype: DType) -> int:
    """``value`` as the int64 the builder takes for an integer constant of
    ``dtype`` (the same bits)."""
    if dtype == i1:
        return int(bool(value))
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"cannot make an {dtype} constant of {value!r}")
    value = int(value)
    if not -(2 ** (dtype.bitwidth - 1)) <= value < 2 ** dtype.bitwidth:
        raise ValueError(f"{value} is out of range for an {dtype} constant")
    return value - 2 ** 64 if value >= 2 ** 63 else value


def constant(value: Number, dtype: DTypeLike = "index",
             shape: Sequence[int] | None = None) -> Scalar | Vector:
    """A scalar constant, or with ``shape`` a vector with every element
    ``value`` (``arith.constant``)."""
    dtype = as_dtype(dtype, "dtype", allow_index=shape is None)
    if dtype.is_float:
        literal, make = float(value), _mosaic.KernelBuilder.constant_float
    else:
        literal, make = _integer(value, dtype), _mosaic.KernelBuilder.constant_int
    if shape is None:
        return Scalar(make(current(), location(), literal, dtype.element), dtype)
    shape = check_shape(shape, "shape")
    return Vector(make(current(), location(), literal, dtype.element, list(shape)), shape, dtype)


_K = _mosaic.KernelBuilder
_FLOAT_OPS = {"+": _K.addf, "-": _K.subf, "*": _K.mulf, "/": _K.divf,
              "max": _K.maximumf, "min": _K.minimumf}
_INT_OPS = {"+": _K.addi, "-": _K.subi, "*": _K.muli, "//": _K.divsi, "%": _K.remsi,
            "max": _K.maxsi, "min": _K.minsi}
# Index values are sizes and offsets: unsigned division, as the examples use.
_INDEX_OPS = dict(_INT_OPS, **{"//": _K.divui, "%": _K.remui, "max": _K.maxui, "min": _K.minui})
_F = _mosaic.CmpFPredicate
# Python's float comparisons: false when either side is NaN (ordered), but
# for `!=`, which is then true (unordered or not equal).
_CMPF = {"==": _F.oeq, ">": _F.ogt, ">=": _F.oge, "<": _F.olt, "<=": _F.ole, "!=": _F.une}
_I = _mosaic.CmpIPredicate
_CMPI = {"==": _I.eq, "!=": _I.ne, "<": _I.slt, "<=": _I.sle, ">": _I.sgt, ">=": _I.sge}
_CMPI_INDEX = dict(_CMPI, **{"<": _I.ult, "<=": _I.ule, ">": _I.ugt, ">=": _I.uge})


class _Arith(Value):
    """Operators shared by scalars and vectors."""

    dtype: DType

    def _like(self, handle: _mosaic.Value) -> _Arith:
        raise NotImplementedError

    def _coerce(self, other: object, symbol: str) -> _Arith:
        raise NotImplementedError

    def _binary(self, symbol: str, other: object, reverse: bool = False) -> _Arith:
        other = self._coerce(other, symbol)
        lhs, rhs = (other, self) if reverse else (self, other)
        table = _FLOAT_OPS if self.dtype.is_float else (
            _INDEX_OPS if self.dtype == index else _INT_OPS)
        if symbol not in table:
            raise TypeError(f"`{symbol}` is not defined on {self.dtype} values")
        return self._like(table[symbol](current(), location(), lhs.handle, rhs.handle))

    def _with_dtype(self, handle: _mosaic.Value, dtype: DType) -> _Arith:
        return Vector(handle, self.shape, dtype) if isinstance(self, Vector) else Scalar(handle, dtype)

    def _compare(self, symbol: str, other: object) -> _Arith:
        other = self._coerce(other, symbol)
        if self.dtype.is_float:
            handle = _K.cmpf(current(), location(), _CMPF[symbol], self.handle, other.handle)
        else:
            table = _CMPI_INDEX if self.dtype == index else _CMPI
            handle = _K.cmpi(current(), location(), table[symbol], self.handle, other.handle)
        return self._with_dtype(handle, i1)

    __add__ = lambda self, o: self._binary("+", o)
    __radd__ = lambda self, o: self._binary("+", o, True)
    __sub__ = lambda self, o: self._binary("-", o)
    __rsub__ = lambda self, o: self._binary("-", o, True)
    __mul__ = lambda self, o: self._binary("*", o)
    __rmul__ = lambda self, o: self._binary("*", o, True)
    __truediv__ = lambda self, o: self._binary("/", o)
    __rtruediv__ = lambda self, o: self._binary("/", o, True)
    __floordiv__ = lambda self, o: self._binary("//", o)
    __rfloordiv__ = lambda self, o: self._binary("//", o, True)
    __mod__ = lambda self, o: self._binary("%", o)
    __rmod__ = lambda self, o: self._binary("%", o, True)
    __lt__ = lambda self, o: self._compare("<", o)
    __le__ = lambda self, o: self._compare("<=", o)
    __gt__ = lambda self, o: self._compare(">", o)
    __ge__ = lambda self, o: self._compare(">=", o)
    __eq__ = lambda self, o: self._compare("==", o)
    __ne__ = lambda self, o: self._compare("!=", o)
    __hash__ = Value.__hash__

    def __neg__(self) -> _Arith:
        if self.dtype.is_float:
            return self._like(_K.negf(current(), location(), self.handle))
        return 0 - self

    def __bool__(self) -> bool:
        raise TypeError("a kernel value has no truth value while the kernel is built; "
                        "use mosaic_gpu.if_ or while_loop for control flow")

    def astype(self, dtype: DTypeLike, unsigned: bool = False) -> _Arith:
        """Converts to ``dtype`` (index_cast, trunc/ext, fp<->int casts).
        With ``unsigned`` the integer side is read or made as unsigned:
        zero-extension (``i1`` true becomes 1, not -1), ``uitofp``,
        ``fptoui``."""
        check_type(unsigned, bool, "unsigned")
        dtype = as_dtype(dtype, "dtype", allow_index=isinstance(self, Scalar))
        if dtype == self.dtype:
            return self
        src, dst = self.dtype, dtype
        if index in (src, dst):
            if src.is_float or dst.is_float:
                raise TypeError(f"cannot convert {src} to {dst}: go through an integer")
            convert = _K.index_cast
        elif src.is_float and dst.is_float:
            convert = _K.truncf if dst.bitwidth < src.bitwidth else _K.extf
        elif src.is_int and dst.is_int:
            convert = _K.trunci if dst.bitwidth < src.bitwidth else (
                _K.extui if unsigned else _K.extsi)
        elif src.is_int:
            convert = _K.uitofp if unsigned else _K.sitofp
        else:
            convert = _K.fptoui if unsigned else _K.fptosi
        return self._with_dtype(convert(current(), location(), self.handle, dst.element), dst)


class Scalar(_Arith):
    """An index, integer or float scalar (``block_id``, loop indices,
    constants)."""

    def __init__(self, handle: _mosaic.Value, dtype: DType) -> None:
        super().__init__(handle)
        self.dtype = dtype

    def _like(self, handle: _mosaic.Value) -> Scalar:
        return Scalar(handle, self.dtype)

    def _coerce(self, other: object, symbol: str) -> Scalar:
        if isinstance(other, (int, float)):
            return constant(other, self.dtype)
        if not isinstance(other, Scalar):
            raise TypeError(f"`{symbol}`: cannot combine a {self.dtype} scalar with {other!r}")
        if other.dtype != self.dtype:
            raise TypeError(f"`{symbol}`: operands are {self.dtype} and {other.dtype}; "
                            "convert one with astype()")
        return other


class Vector(_Arith):
    """A vector value in registers, laid out by layout inference."""

    def __init__(self, handle: _mosaic.Value, shape: Sequence[int], dtype: DType) -> None:
        super().__init__(handle)
        self.shape = tuple(shape)
        self.dtype = dtype

    def _like(self, handle: _mosaic.Value) -> Vector:
        return Vector(handle, self.shape, self.dtype)

    def _coerce(self, other: object, symbol: str) -> Vector:
        if isinstance(other, (int, float)):
            return constant(other, self.dtype, self.shape)
        if isinstance(other, Scalar) and other.dtype == self.dtype:
            # A run-time scalar, the same in every element (Splat).
            return Vector(_K.splat(current(), location(), other.handle, list(self.shape)),
                          self.shape, self.dtype)
        if isinstance(other, Scalar):
            raise ValueError(f"`{symbol}`: operands are {self.dtype}{list(self.shape)} and a "
                             f"{other.dtype} scalar; use astype")
        if not isinstance(other, Vector):
            raise TypeError(f"`{symbol}`: cannot combine a vector with {other!r}")
        if other.shape != self.shape or other.dtype != self.dtype:
            raise ValueError(f"`{symbol}`: operands are {self.dtype}{list(self.shape)} and "
                             f"{other.dtype}{list(other.shape)}; use broadcast_in_dim or astype")
        return other

    def reduce(self, kind: str, axis: int | Sequence[int]) -> Vector:
        """``reduce(self, kind, axis)``."""
        return reduce(self, kind, axis)


_DIMENSIONS = {"x": _mosaic.Dimension.x, "y": _mosaic.Dimension.y, "z": _mosaic.Dimension.z}


def dimension(dim: str, what: str) -> _mosaic.Dimension:
    """``dim`` ('x', 'y' or 'z') as the builder's Dimension."""
    if dim not in _DIMENSIONS:
        raise ValueError(f"`{what}` must be 'x', 'y' or 'z', got {dim!r}")
    return _DIMENSIONS[dim]


def _index_op(make: Callable[..., _mosaic.Value], dim: str) -> Scalar:
    return Scalar(make(current(), location(), dimension(dim, "dim")), index)


def block_id(dim: str = "x") -> Scalar:
    """The block's index along ``dim`` (``gpu.block_id``), an index."""
    return _index_op(_K.block_id, dim)


def cluster_block_id(dim: str = "x") -> Scalar:
    """The block's index in its cluster along ``dim``
    (``gpu.cluster_block_id``), an index."""
    return _index_op(_K.cluster_block_id, dim)


def thread_id(dim: str = "x") -> Scalar:
    """The thread's index in its block along ``dim`` (``gpu.thread_id``)."""
    return _index_op(_K.thread_id, dim)


def warpgroup_id() -> Scalar:
    """The executing warpgroup's index in its block, an index: the linear
    thread index divided by 128 (``mosaic_gpu.warpgroup_id``). Uniform
    across each warp, so branching on it gives warpgroups roles."""
    return Scalar(_K.warpgroup_id(current(), location()), index)


def device_id() -> Scalar:
    """The logical id of the device running this instance of a kernel that
    spans devices, an i32 in 0 .. device_count() - 1
    (``mosaic_gpu.device_id``)."""
    return Scalar(_K.device_id(current(), location()), i32)


def device_count() -> Scalar:
    """The number of devices the kernel runs on, an i32
    (``mosaic_gpu.device_count``)."""
    return Scalar(_K.device_count(current(), location()), i32)


def exp(x: Vector) -> Vector:
    """Elementwise exp (``math.exp``)."""
    check_type(x, Vector, "x")
    return x._like(_K.exp(current(), location(), x.handle))


def exp2(x: Vector) -> Vector:
    """Elementwise 2**x (``math.exp2``)."""
    check_type(x, Vector, "x")
    return x._like(_K.exp2(current(), location(), x.handle))


def log2(x: Vector) -> Vector:
    """Elementwise base-2 logarithm (``math.log2``)."""
    check_type(x, Vector, "x")
    return x._like(_K.log2(current(), location(), x.handle))


def select(condition: Vector | Scalar, if_true: Vector | Scalar | Number,
           if_false: Vector | Scalar | Number) -> Vector | Scalar:
    """``if_true`` where ``condition`` (i1, as comparisons give) holds, else
    ``if_false``, elementwise (``arith.select``). One of the two values may be
    a Python number, made a constant of the other's type."""
    check_type(condition, (Vector, Scalar), "condition")
    if condition.dtype != i1:
        raise TypeError(f"`condition` must be i1 (a comparison's result), got {condition.dtype}")
    if not isinstance(if_true, _Arith) and not isinstance(if_false, _Arith):
        raise TypeError("select: `if_true` or `if_false` must be a Vector or Scalar")
    like = next((x for x in (if_true, if_false) if isinstance(x, Vector)),
                if_true if isinstance(if_true, _Arith) else if_false)
    if isinstance(condition, Vector) and isinstance(like, Scalar):
        # Scalar values under a vector condition are the same in every element.
        like = constant(0, like.dtype, condition.shape)._coerce(like, "select")
    if_true, if_false = like._coerce(if_true, "select"), like._coerce(if_false, "select")
    if isinstance(condition, Vector) != isinstance(like, Vector) or (
            isinstance(like, Vector) and condition.shape != like.shape):
        what = f"shape {list(like.shape)}" if isinstance(like, Vector) else "a scalar"
        raise ValueError(f"select: `condition` must match the values ({what}), got "
                         + (f"shape {list(condition.shape)}" if isinstance(condition, Vector)
                            else "a scalar"))
    return like._like(_K.select(current(), location(), condition.handle, if_true.handle,
                                if_false.handle))


def maximum(a: Vector | Scalar, b: Vector | Scalar | Number) -> Vector | Scalar:
    """Elementwise maximum."""
    return a._binary("max", b)


def minimum(a: Vector | Scalar, b: Vector | Scalar | Number) -> Vector | Scalar:
    """Elementwise minimum."""
    return a._binary("min", b)


_C = _mosaic.CombiningKind
# kind: (float combining kind, integer combining kind, identity)
_REDUCTIONS = {"add": (_C.add, _C.add, 0), "mul": (_C.mul, _C.mul, 1),
               "max": (_C.maximumf, _C.maxsi, -math.inf),
               "min": (_C.minimumf, _C.minsi, math.inf)}


def reduce(x: Vector, kind: str, axis: int | Sequence[int]) -> Vector:
    """Reduces ``x`` along ``axis`` (an int or a tuple) with ``kind`` ('add',
    'mul', 'max', 'min'): ``vector.multi_reduction``."""
    check_type(x, Vector, "x")
    if kind not in _REDUCTIONS:
        raise ValueError(f"`kind` must be one of {', '.join(_REDUCTIONS)}, got {kind!r}")
    axes = sorted({axis} if isinstance(axis, int) else set(axis))
    if not axes or any(not 0 <= a < len(x.shape) for a in axes):
        raise ValueError(f"`axis` {axis!r} out of range for shape {x.shape}")
    shape = tuple(d for i, d in enumerate(x.shape) if i not in axes)
    if not shape:
        raise ValueError("reducing every axis is not supported: keep one")
    float_kind, int_kind, identity = _REDUCTIONS[kind]
    if not x.dtype.is_float:
        if math.isinf(identity):
            bits = x.dtype.bitwidth
            identity = -(2 ** (bits - 1)) if identity < 0 else 2 ** (bits - 1) - 1
        float_kind = int_kind
    acc = constant(identity, x.dtype, shape)
    handle = _K.multi_reduction(current(), location(), float_kind, x.handle, acc.handle, axes)
    return Vector(handle, shape, x.dtype)


def broadcast_in_dim(x: Vector, shape: Sequence[int], dims: Sequence[int]) -> Vector:
    """Broadcasts ``x`` to ``shape``; ``dims[i]`` is where x's dim i goes
    (``mosaic_gpu.broadcast_in_dim``)."""
    check_type(x, Vector, "x")
    shape = check_shape(shape, "shape")
    dims = tuple(dims)
    if len(dims) != len(x.shape) or any(
            not isinstance(d, int) or not 0 <= d < len(shape) or shape[d] != x.shape[i]
            for i, d in enumerate(dims)):
        raise ValueError(f"`dims` {dims} do not map shape {x.shape} into {shape}")
    handle = _K.broadcast_in_dim(current(), location(), x.handle, list(shape), list(dims))
    return Vector(handle, shape, x.dtype)


def iota(shape: Sequence[int], dtype: DTypeLike, dimension: int) -> Vector:
    """A vector whose elements are their index along ``dimension``
    (``mosaic_gpu.broadcasted_iota``)."""
    shape = check_shape(shape, "shape")
    dtype = as_dtype(dtype, "dtype")
    if not isinstance(dimension, int) or not 0 <= dimension < len(shape):
        raise ValueError(f"`dimension` {dimension!r} out of range for shape {shape}")
    handle = _K.broadcasted_iota(current(), location(), list(shape), dtype.element, dimension)
    return Vector(handle, shape, dtype)


def layout_cast(x: Vector, layout: Layout) -> Vector:
    """Pins ``x`` to ``layout`` (a Layout object: WGMMA, Strided(8), ...)."""
    check_type(x, Vector, "x")
    check_type(layout, Layout, "layout")
    builder = current()
    attribute = layout._attribute(builder.context, x.shape)
    return x._like(_K.layout_cast(builder, location(), x.handle, attribute))


# ---------------------------------------------------------------------------
# Elementwise math and integer bit operations (exp, exp2, log2 and select
# are above). Each is one op on a Vector or Scalar, of any float
# dtype for the math functions.
# ---------------------------------------------------------------------------

__all__ += [
    "absolute", "acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil",
    "copysign", "cos", "cosh", "erf", "erfc", "expm1", "floor", "fma", "log", "log10", "log1p",
    "power", "rint", "rsqrt", "sin", "sinh", "sqrt", "tan", "tanh",
]


def _float_unary(make: Callable[..., _mosaic.Value], name: str,
                 op: str) -> Callable[[_Arith], _Arith]:
    def function(x: _Arith) -> _Arith:
        check_type(x, (Vector, Scalar), "x")
        if not x.dtype.is_float:
            raise TypeError(f"`{name}` takes a float vector or scalar, got {x.dtype}")
        return x._like(make(current(), location(), x.handle))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = f"Elementwise {name} (``{op}``) of a float vector or scalar."
    return function


rsqrt = _float_unary(_K.rsqrt, "rsqrt", "math.rsqrt")
sqrt = _float_unary(_K.sqrt, "sqrt", "math.sqrt")
log = _float_unary(_K.log, "log", "math.log")
log1p = _float_unary(_K.log1p, "log1p", "math.log1p")
expm1 = _float_unary(_K.expm1, "expm1", "math.expm1")
tanh = _float_unary(_K.tanh, "tanh", "math.tanh")
erf = _float_unary(_K.erf, "erf", "math.erf")
sin = _float_unary(_K.sin, "sin", "math.sin")
cos = _float_unary(_K.cos, "cos", "math.cos")
floor = _float_unary(_K.floor, "floor", "math.floor")
ceil = _float_unary(_K.ceil, "ceil", "math.ceil")
# Rounds to the nearest integer, halves to even (NumPy's rint).
rint = _float_unary(_K.roundeven, "rint", "math.roundeven")
tan = _float_unary(_K.tan, "tan", "math.tan")
asin = _float_unary(_K.asin, "asin", "math.asin")
acos = _float_unary(_K.acos, "acos", "math.acos")
atan = _float_unary(_K.atan, "atan", "math.atan")
sinh = _float_unary(_K.sinh, "sinh", "math.sinh")
cosh = _float_unary(_K.cosh, "cosh", "math.cosh")
asinh = _float_unary(_K.asinh, "asinh", "math.asinh")
acosh = _float_unary(_K.acosh, "acosh", "math.acosh")
atanh = _float_unary(_K.atanh, "atanh", "math.atanh")
cbrt = _float_unary(_K.cbrt, "cbrt", "math.cbrt")
log10 = _float_unary(_K.log10, "log10", "math.log10")
erfc = _float_unary(_K.erfc, "erfc", "math.erfc")


def absolute(x: _Arith) -> _Arith:
    """Elementwise absolute value (``math.absf``, ``math.absi``); also
    Python's ``abs(x)``."""
    check_type(x, (Vector, Scalar), "x")
    if x.dtype == index:
        raise TypeError("`absolute` takes float or integer values, not index")
    make = _K.absf if x.dtype.is_float else _K.absi
    return x._like(make(current(), location(), x.handle))


def _float_binary(make: Callable[..., _mosaic.Value], name: str,
                  op: str) -> Callable[..., _Arith]:
    def function(a: _Arith, b: _Arith | Number) -> _Arith:
        check_type(a, (Vector, Scalar), "a")
        if not a.dtype.is_float:
            raise TypeError(f"`{name}` takes float values, got {a.dtype}")
        b = a._coerce(b, name)
        return a._like(make(current(), location(), a.handle, b.handle))
    function.__name__ = function.__qualname__ = name
    function.__doc__ = (f"Elementwise {name} of ``a`` and ``b`` (``{op}``); ``b`` may be a "
                        "Python number.")
    return function


def fma(a: _Arith, b: _Arith | Number, c: _Arith | Number) -> _Arith:
    """``a * b + c`` with one rounding (``math.fma``: PTX's fma.rn, one
    FFMA), elementwise on float vectors or scalars; ``b`` and ``c`` may be
    Python numbers. Unlike ``a * b + c`` it does not round the product,
    and it is one instruction instead of two."""
    check_type(a, (Vector, Scalar), "a")
    if not a.dtype.is_float:
        raise TypeError(f"`fma` takes float values, got {a.dtype}")
    b, c = a._coerce(b, "fma"), a._coerce(c, "fma")
    return a._like(_K.fma(current(), location(), a.handle, b.handle, c.handle))


power = _float_binary(_K.powf, "power", "math.powf")
copysign = _float_binary(_K.copysign, "copysign", "math.copysign")
atan2 = _float_binary(_K.atan2, "atan2", "math.atan2")


# Integer bit operations as Python operators: & | ^ << >> (arithmetic shift
# right, as Python's on negative ints) and ~; on i1 they are the logical
# operations (a & b of two comparisons).
_BITWISE_OPS = {"&": _K.andi, "|": _K.ori, "^": _K.xori, "<<": _K.shli, ">>": _K.shrsi}


def _bitwise(self: _Arith, symbol: str, other: object, reverse: bool = False) -> _Arith:
    if self.dtype.is_float:
        raise TypeError(f"`{symbol}` is not defined on {self.dtype} values")
    other = self._coerce(other, symbol)
    lhs, rhs = (other, self) if reverse else (self, other)
    make = _K.shrui if symbol == ">>" and self.dtype == index else _BITWISE_OPS[symbol]
    return self._like(make(current(), location(), lhs.handle, rhs.handle))


def _invert(self: _Arith) -> _Arith:
    if self.dtype.is_float:
        raise TypeError(f"`~` is not defined on {self.dtype} values")
    return _bitwise(self, "^", -1 if self.dtype != i1 else 1)


_Arith.__and__ = lambda self, o: _bitwise(self, "&", o)
_Arith.__rand__ = lambda self, o: _bitwise(self, "&", o, True)
_Arith.__or__ = lambda self, o: _bitwise(self, "|", o)
_Arith.__ror__ = lambda self, o: _bitwise(self, "|", o, True)
_Arith.__xor__ = lambda self, o: _bitwise(self, "^", o)
_Arith.__rxor__ = lambda self, o: _bitwise(self, "^", o, True)
_Arith.__lshift__ = lambda self, o: _bitwise(self, "<<", o)
_Arith.__rlshift__ = lambda self, o: _bitwise(self, "<<", o, True)
_Arith.__rshift__ = lambda self, o: _bitwise(self, ">>", o)
_Arith.__rrshift__ = lambda self, o: _bitwise(self, ">>", o, True)
_Arith.__invert__ = _invert
_Arith.__abs__ = absolute


# ---------------------------------------------------------------------------
# Compiler hints: optimization_barrier and assume_multiple.
# ---------------------------------------------------------------------------

__all__ += ["assume_multiple", "optimization_barrier"]


def optimization_barrier(*values: _Arith) -> _Arith | tuple[_Arith, ...]:
    """The same values, which the compiler may not move computations across
    (``mosaic_gpu.optimization_barrier``): one value for one, a tuple for
    several."""
    if not values:
        raise ValueError("`optimization_barrier` needs at least one value")
    for i, value in enumerate(values):
        check_type(value, (Vector, Scalar), f"values[{i}]")
    handles = _K.optimization_barrier(current(), location(), [v.handle for v in values])
    results = tuple(v._like(h) for v, h in zip(values, handles))
    return results[0] if len(results) == 1 else results


def assume_multiple(value: Scalar, multiple: int) -> Scalar:
    """``value`` (an integer or index Scalar), promised to be a multiple of
    ``multiple`` (``mosaic_gpu.assume_multiple``): divisibility checks, such
    as a TMA slice's against a tiling, may rely on it."""
    check_type(value, Scalar, "value")
    if value.dtype.is_float:
        raise TypeError(f"`value` must be an integer or index Scalar, got {value.dtype}")
    if not isinstance(multiple, int) or isinstance(multiple, bool) or not 0 < multiple < 2 ** 31:
        raise ValueError(f"`multiple` must be a positive int below 2**31, got {multiple!r}")
    return value._like(_K.assume_multiple(current(), location(), value.handle, multiple))
