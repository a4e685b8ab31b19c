"""Structured control flow: ``for_loop``, ``if_`` and ``while_loop``
(``scf.for``, ``scf.if``, ``scf.while``), each a decorator whose function is
the region's body, called once while the kernel is built."""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

from . import _mosaic
from .builder import current, location
from .dtypes import i1, index
from .values import Scalar, Vector, constant

__all__ = ["for_loop", "if_", "while_loop"]

Carried = Union[Scalar, Vector]
# One carried value, a sequence of them, or None.
Carry = Union[Carried, Sequence[Carried], None]
# What a decorator returns: the op's results, shaped as its carry.
Results = Union[Carried, tuple, None]


def _flatten(values: Carry, what: str) -> tuple[list[Carried], Callable[[list], Results]]:
    if values is None:
        return [], lambda handles: None
    single = isinstance(values, (Scalar, Vector))
    items = [values] if single else list(values)
    for v in items:
        if not isinstance(v, (Scalar, Vector)):
            raise TypeError(f"`{what}` must hold Scalars and Vectors, got {v!r}")

    def rebuild(handles: list) -> Results:
        made = [v._like(h) for v, h in zip(items, handles)]
        return made[0] if single else tuple(made)
    return items, rebuild


def _region(block: _mosaic.Block, body: Callable[..., Any],
            args_of: Callable[[list], list], what: str, expected: list[Carried]) -> None:
    """Builds ``body`` into ``block``, ending it with scf.yield of what it
    returns (which must match ``expected``)."""
    builder = current()
    builder.enter(block)
    try:
        returned = body(*args_of(block.arguments))
        items, _ = _flatten(returned, what)
        if [v.type for v in items] != [v.type for v in expected]:
            raise TypeError(f"`{what}` returned {[v.type for v in items]}, expected "
                            f"{[v.type for v in expected]}")
        builder.yield_(location(), [v.handle for v in items])
    finally:
        builder.exit()


def _index(value: int | Scalar, what: str) -> Scalar:
    if isinstance(value, int):
        return constant(value, "index")
    if isinstance(value, Scalar):
        return value.astype("index")
    raise TypeError(f"`{what}` must be an int or a Scalar, got {value!r}")


def _like(values: list[Carried], handles: list) -> list[Carried]:
    return [v._like(h) for v, h in zip(values, handles)]


def for_loop(lower: int | Scalar, upper: int | Scalar, step: int | Scalar = 1,
             carry: Carry = None) -> Callable[[Callable[..., Any]], Results]:
    """``scf.for``: decorates the body, called once with the index (and the
    carried values); it returns the new carried values. The decorated name
    becomes the loop's results.

        @for_loop(0, 64, carry=acc)
        def acc(k, acc):
            return wgmma(acc, a, b)
    """
    bounds = [_index(lower, "lower"), _index(upper, "upper"), _index(step, "step")]
    inits, rebuild = _flatten(carry, "carry")

    def build(body: Callable[..., Any]) -> Results:
        op = current().for_(location(), *[v.handle for v in bounds], [v.handle for v in inits])
        _region(op.block(0), body,
                lambda arguments: [Scalar(arguments[0], index)] + _like(inits, arguments[1:]),
                "for_loop body", inits)
        op.verify()
        return rebuild(op.results)
    return build


def if_(condition: Scalar, otherwise: Callable[[], Any] | None = None,
        results: Carry = None) -> Callable[[Callable[[], Any]], Results]:
    """``scf.if``: decorates the branch taken when ``condition`` (an i1
    Scalar) holds. With ``results`` (values whose types the branches
    return), ``otherwise`` is the other branch and the decorated name becomes
    the results."""
    if not isinstance(condition, Scalar) or condition.dtype != i1:
        raise TypeError(f"`condition` must be an i1 Scalar, got {condition!r}")
    expected, rebuild = _flatten(results, "results")
    if expected and otherwise is None:
        raise ValueError("an if_ with results needs `otherwise`")

    def build(then: Callable[[], Any]) -> Results:
        op = current().if_(location(), condition.handle, [v.handle for v in expected],
                           otherwise is not None)
        _region(op.block(0), then, lambda arguments: [], "if_ branch", expected)
        if otherwise is not None:
            _region(op.block(1), otherwise, lambda arguments: [], "if_ otherwise", expected)
        op.verify()
        return rebuild(op.results)
    return build


def while_loop(condition: Callable[..., Scalar],
               carry: Carry) -> Callable[[Callable[..., Any]], Results]:
    """``scf.while``: ``condition(*carry)`` returns an i1 Scalar; the
    decorated body maps the carried values to the next ones. The decorated
    name becomes the final values."""
    inits, rebuild = _flatten(carry, "carry")
    if not inits:
        raise ValueError("a while_loop needs a carried value")

    def build(body: Callable[..., Any]) -> Results:
        builder = current()
        op = builder.while_(location(), [v.handle for v in inits])
        before = op.block(0)
        builder.enter(before)
        try:
            args = _like(inits, before.arguments)
            flag = condition(*args)
            if not isinstance(flag, Scalar) or flag.dtype != i1:
                raise TypeError(f"`condition` must return an i1 Scalar, got {flag!r}")
            builder.condition(location(), flag.handle, [a.handle for a in args])
        finally:
            builder.exit()
        _region(op.block(1), body, lambda arguments: _like(inits, arguments),
                "while_loop body", inits)
        op.verify()
        return rebuild(op.results)
    return build
