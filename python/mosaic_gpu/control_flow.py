"""Structured control flow: ``for_loop``, ``if_`` and ``while_loop``
(``scf.for``, ``scf.if``, ``scf.while``), each a decorator whose function is
the region's body, called once while the kernel is built; and ``range``,
the same ``scf.for`` written as a Python ``for`` statement."""

from __future__ import annotations

from typing import Any, Callable, Sequence, Union

from . import _mosaic
from .builder import current, location
from .dtypes import i1, index
from .values import Scalar, Vector, constant

__all__ = ["for_loop", "if_", "range", "while_loop"]

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


class range:
    """``scf.for`` as a Python loop: ``for i in range(upper)``,
    ``range(lower, upper, step)``; bounds are ints or Scalars. The loop
    body runs once, while the kernel is built, with ``i`` the loop's index
    (an index Scalar).

    With ``carry`` (a value or a sequence of them) each iteration yields a
    tuple: the index, then the carried values; and the body must end by passing the new
    ones to ``loop.carry(...)``; after the loop, ``loop.results`` holds the
    final values (shaped as ``carry``):

        loop = range(k_steps, carry=acc)
        for k, acc in loop:
            loop.carry(wgmma(acc, a[k], b[k]))
        acc = loop.results
    """

    def __init__(self, lower: int | Scalar, upper: int | Scalar | None = None,
                 step: int | Scalar = 1, *, carry: Carry = None) -> None:
        if upper is None:
            lower, upper = 0, lower
        self._bounds = [_index(lower, "lower"), _index(upper, "upper"), _index(step, "step")]
        self._inits, self._rebuild = _flatten(carry, "carry")
        self._carried = carry is not None
        self._next: list[Carried] | None = None
        self._results: Results = None
        self._done = False

    def carry(self, *values: Carried) -> None:
        """The carried values for the next iteration (the body's last call)."""
        if not self._carried:
            raise TypeError("this range carries no values: pass `carry=` to carry some")
        items, _ = _flatten(values[0] if len(values) == 1 else values, "carry")
        if [v.type for v in items] != [v.type for v in self._inits]:
            raise TypeError(f"`carry` got {[v.type for v in items]}, the loop carries "
                            f"{[v.type for v in self._inits]}")
        self._next = items

    @property
    def results(self) -> Results:
        """The carried values after the last iteration."""
        if not self._done:
            raise RuntimeError("`results` is known after the loop's body was built")
        return self._results

    def __iter__(self):
        builder = current()
        op = builder.for_(location(), *[v.handle for v in self._bounds],
                          [v.handle for v in self._inits])
        block = op.block(0)
        builder.enter(block)
        try:
            index_value = Scalar(block.arguments[0], index)
            if self._carried:
                carried = _like(self._inits, block.arguments[1:])
                yield (index_value, *carried)
                if self._next is None:
                    raise TypeError("the body of a range with `carry` must end with "
                                    "loop.carry(new values)")
            else:
                yield index_value
            builder.yield_(location(), [v.handle for v in (self._next or [])])
        finally:
            builder.exit()
        op.verify()
        self._results = self._rebuild(op.results)
        self._done = True
