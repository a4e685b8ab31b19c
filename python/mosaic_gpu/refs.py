"""Memory references and the ops on them: slicing (``memref.subview``),
transposed views (``memref.transpose``), shared-memory transforms, register
loads and stores, mbarriers, TMA transfers, ``wgmma`` and ``wgmma_wait``."""

from __future__ import annotations

from typing import Sequence, Union

from . import _mosaic
from .builder import check_ints, check_type, current, location
from .dtypes import DType, barrier as _barrier_dtype, i1, i32, index
from .layouts import Transform
from .values import Scalar, Value, Vector, constant, dimension

__all__ = [
    "BarrierRef", "Ref", "arrive", "arrive_expect_tx", "async_load", "async_prefetch",
    "async_store", "async_store_wait", "ds", "load", "named_barrier", "remote_ref", "semaphore_signal",
    "semaphore_wait", "transpose", "vector_load", "vector_store", "wait", "wgmma",
    "wgmma_wait", "with_transforms",
]

_K = _mosaic.KernelBuilder


class ds:
    """``ds(start, size)``: a slice of ``size`` elements at ``start`` (an int
    or a Scalar) when indexing a Ref."""

    def __init__(self, start: int | Scalar, size: int) -> None:
        if not isinstance(size, int) or size <= 0:
            raise ValueError(f"`size` must be a positive int, got {size!r}")
        self.start, self.size = start, size


Index = Union[int, Scalar, slice, ds]


class Ref(Value):
    """A memory reference: a kernel argument (global memory) or a scratch
    buffer (shared memory). Indexing makes a ``memref.subview``: an int or
    Scalar index drops the dimension, ``a:b`` (ints) or ``ds(start, size)``
    keeps a slice of it."""

    def __init__(self, handle: _mosaic.Value, shape: Sequence[int], dtype: DType,
                 strides: Sequence[int] | None = None, offset: int | None = 0,
                 smem: bool = False) -> None:
        super().__init__(handle)
        self.shape = tuple(shape)
        self.dtype = dtype
        self.strides = strides
        self.offset = offset
        self.smem = smem
        # A kernel argument marked `symmetric` (mosaic_gpu.kernel), and a
        # view of another device's copy of one (remote_ref).
        self.symmetric = False
        self.is_remote = False

    def _strides(self) -> tuple[int, ...]:
        if self.strides is not None:
            return tuple(self.strides)
        strides, size = [], 1
        for dim in reversed(self.shape):
            strides.insert(0, size)
            size *= dim
        return tuple(strides)

    def __getitem__(self, index: Index | tuple[Index, ...]) -> Ref:
        index = index if isinstance(index, tuple) else (index,)
        if len(index) > len(self.shape):
            raise IndexError(f"{len(index)} indices for a rank-{len(self.shape)} ref")
        index = index + (slice(None),) * (len(self.shape) - len(index))
        strides = self._strides()
        offsets, static_offsets, sizes, keep = [], [], [], []
        for dim, (size, item) in enumerate(zip(self.shape, index)):
            if isinstance(item, slice):
                if item.step not in (None, 1):
                    raise ValueError("ref slices must have step 1")
                start = 0 if item.start is None else item.start
                stop = size if item.stop is None else item.stop
                item = ds(start, stop - start)
            if isinstance(item, ds):
                start, length = item.start, item.size
                keep.append(dim)
            else:
                start, length = item, 1
            if isinstance(start, Scalar):
                offsets.append(start.astype("index").handle)
            elif isinstance(start, int):
                if not 0 <= start or start + length > size:
                    raise IndexError(f"slice [{start}, {start + length}) out of bounds of dim {dim} ({size})")
                offsets.append(start)
                static_offsets.append(start * strides[dim])
            else:
                raise TypeError(f"a ref index must be an int, a Scalar or a slice, got {item!r}")
            sizes.append(length)
        if self.offset is None or len(static_offsets) < len(offsets):
            offset = None
        else:
            offset = self.offset + sum(static_offsets)
        shape = [sizes[d] for d in keep]
        result_strides = tuple(strides[d] for d in keep)
        handle = _K.subview(current(), location(), self.handle, offsets, sizes, shape,
                            list(result_strides), offset)
        return self._sliced(handle, shape, result_strides, offset)

    def _sliced(self, handle: _mosaic.Value, shape: Sequence[int], strides: Sequence[int],
                offset: int | None) -> Ref:
        return Ref(handle, shape, self.dtype, strides, offset, self.smem)

    def remote(self, device: int | Scalar) -> Ref:
        """``remote_ref(self, device)``: device ``device``'s copy of this
        symmetric argument."""
        return remote_ref(self, device)

    @property
    def T(self) -> Ref:
        """The transposed view of a matrix: ``transpose(self, (1, 0))``."""
        if len(self.shape) != 2:
            raise ValueError(f"`.T` is the transpose of a matrix; this ref has shape {self.shape}: "
                             "use transpose(ref, permutation)")
        return transpose(self, (1, 0))


class BarrierRef(Ref):
    """An array of mbarriers in shared memory; ``bars[i]`` is one barrier.
    ``arrival_count`` is the count the barriers were initialized with
    (``Barriers``), which helpers such as the pipeline check."""

    def __init__(self, handle: _mosaic.Value, shape: Sequence[int],
                 strides: Sequence[int] | None = None, offset: int | None = 0,
                 arrival_count: int | None = None) -> None:
        super().__init__(handle, shape, _barrier_dtype, strides, offset, smem=True)
        self.arrival_count = arrival_count

    def _sliced(self, handle: _mosaic.Value, shape: Sequence[int], strides: Sequence[int],
                offset: int | None) -> BarrierRef:
        return BarrierRef(handle, shape, strides, offset, self.arrival_count)


def transpose(ref: Ref, permutation: Sequence[int]) -> Ref:
    """The view of ``ref`` whose dim i is ``ref``'s dim ``permutation[i]``
    (``memref.transpose``; no data moves). wgmma takes a transposed
    shared-memory operand: ``b_stage.T`` of an N x K stage is a K-major
    K x N ``b``, the layout 8-bit inputs need."""
    check_type(ref, Ref, "ref")
    if isinstance(ref, BarrierRef):
        raise TypeError("barriers cannot be transposed")
    permutation = check_ints(permutation, "permutation")
    if sorted(permutation) != list(range(len(ref.shape))):
        raise ValueError(f"`permutation` {permutation} must hold each dim of the "
                         f"rank-{len(ref.shape)} `ref` once")
    strides = ref._strides()
    handle = _K.transpose(current(), location(), ref.handle, list(permutation))
    return Ref(handle, [ref.shape[d] for d in permutation], ref.dtype,
               tuple(strides[d] for d in permutation), ref.offset, ref.smem)


def with_transforms(ref: Ref, transforms: Sequence[Transform]) -> Ref:
    """``ref`` seen through shared-memory transforms (Tile, Swizzle)."""
    check_type(ref, Ref, "ref")
    builder = current()
    attributes = [check_type(t, Transform, "transforms")._attribute(builder.context)
                  for t in transforms]
    handle = _K.with_transforms(builder, location(), ref.handle, attributes)
    return Ref(handle, ref.shape, ref.dtype, ref.strides, ref.offset, ref.smem)


def vector_load(ref: Ref) -> Vector:
    """Loads all of ``ref`` into a vector (``mosaic_gpu.vector_load``)."""
    check_type(ref, Ref, "ref")
    return Vector(_K.vector_load(current(), location(), ref.handle), ref.shape, ref.dtype)


def load(ref: Ref) -> Scalar:
    """The one element of ``ref``, a view indexed down to rank 0 (an int or
    Scalar in every dim), as a Scalar: ``memref.load``, e.g. a sequence
    offset read at run time, ``load(cu_seqlens[b])``. Every thread loads it."""
    check_type(ref, Ref, "ref")
    if isinstance(ref, BarrierRef):
        raise TypeError("`ref` is a barrier; `load` reads global or shared memory")
    if ref.shape:
        raise ValueError(f"`ref` must be one element (index every dim), got shape "
                         f"{list(ref.shape)}")
    return Scalar(_K.load(current(), location(), ref.handle), ref.dtype)


def vector_store(value: Vector, ref: Ref,
                 valid: Sequence[int | Scalar] | None = None) -> None:
    """Stores ``value`` to all of ``ref`` (``mosaic_gpu.vector_store``).
    With ``valid`` (one int or Scalar per dim) only the elements whose
    index is below it in every dim are stored: ``ref`` may then be a view
    of global memory that reaches past its array's end (``ds`` with a
    dynamic start), e.g. an edge tile of C whose rows TMA cannot store
    because they are not 16-byte aligned. The value needs a tiled layout
    (the WGMMA layout of an accumulator is one)."""
    check_type(value, Vector, "value")
    check_type(ref, Ref, "ref")
    if value.shape != ref.shape or value.dtype != ref.dtype:
        raise ValueError(f"`value` is {value.dtype}{list(value.shape)} but `ref` holds "
                         f"{ref.dtype}{list(ref.shape)}")
    extents = []
    if valid is not None:
        valid = list(valid)
        if len(valid) != len(ref.shape):
            raise ValueError(f"`valid` has {len(valid)} entries for the rank-{len(ref.shape)} "
                             "`ref`; give one per dim")
        if ref.smem:
            raise ValueError("`valid` bounds stores to global memory; `ref` is shared memory")
        for extent in valid:
            if isinstance(extent, int) and not isinstance(extent, bool):
                extent = constant(extent, "index")
            elif not isinstance(extent, Scalar) or extent.dtype not in (i32, index):
                raise TypeError(f"`valid` must hold ints or i32/index Scalars, got {extent!r}")
            extents.append(extent.astype("index").handle)
    _K.vector_store(current(), location(), value.handle, ref.handle, extents)


def _barrier(bar: object) -> BarrierRef:
    if not isinstance(bar, BarrierRef) or bar.shape:
        raise TypeError(f"`barrier` must be one barrier (barriers[i]), got {bar!r}")
    return bar


def arrive_expect_tx(barrier: BarrierRef, bytes: int) -> None:
    """Arrives on ``barrier`` expecting ``bytes`` of TMA transfers."""
    bytes = int(bytes)
    if not 0 <= bytes < 2 ** 32:
        raise ValueError(f"`bytes` must be 0 to 2**32 - 1, got {bytes}")
    _K.arrive_expect_tx(current(), location(), _barrier(barrier).handle, bytes)


def arrive(barrier: BarrierRef, collective: str | Sequence[str] = ()) -> None:
    """The warpgroup arrives once on ``barrier`` (``mosaic_gpu.arrive``).
    With ``collective`` ('x', 'y', 'z' or a tuple of them) it arrives on the
    barrier at the same offset in every block of the cluster that differs
    from this one only along those dims, this one included: consumers of a
    stage multicast to those blocks release it to every producer that
    writes it, and the barrier counts the arrivals of all of them."""
    _K.arrive(current(), location(), _barrier(barrier).handle, _collective(collective))


def wait(barrier: BarrierRef, parity: bool | Scalar = False) -> None:
    """Waits for ``barrier``'s phase of ``parity`` (a bool or an i1 Scalar)."""
    if isinstance(parity, bool):
        parity = constant(parity, "i1")
    elif not isinstance(parity, Scalar) or parity.dtype != i1:
        raise TypeError(f"`parity` must be a bool or an i1 Scalar, got {parity!r}")
    _K.wait(current(), location(), _barrier(barrier).handle, parity.handle)


def _indices(indices: Sequence[int | Scalar], ref: Ref, what: str) -> list[_mosaic.Value]:
    indices = list(indices)
    if len(indices) != len(ref.shape):
        raise ValueError(f"`indices` has {len(indices)} entries for the rank-{len(ref.shape)} `{what}`")
    result = []
    for i in indices:
        if isinstance(i, int):
            i = constant(i, "i32")
        elif not isinstance(i, Scalar) or i.dtype not in (i32, index):
            raise TypeError(f"`indices` must hold ints or i32/index Scalars, got {i!r}")
        result.append(i.astype("i32").handle)
    return result


def _slice_lengths(slice_lengths: Sequence[int] | None, shape: Sequence[int],
                   gmem_ref: Ref) -> list[int]:
    lengths = check_ints(tuple(shape if slice_lengths is None else slice_lengths),
                         "slice_lengths")
    if len(lengths) != len(gmem_ref.shape):
        raise ValueError(f"`slice_lengths` {lengths} must have one entry per dim of {gmem_ref.shape}")
    return list(lengths)


def _collective(collective: str | Sequence[str]) -> list[_mosaic.Dimension]:
    dims = [collective] if isinstance(collective, str) else list(collective)
    return [dimension(dim, "collective") for dim in dims]


def _predicate(predicate: Scalar | None) -> _mosaic.Value | None:
    if predicate is None:
        return None
    if not isinstance(predicate, Scalar) or predicate.dtype != i1:
        raise TypeError(f"`predicate` must be an i1 Scalar, got {predicate!r}")
    return predicate.handle


def async_load(src: Ref, dst: Ref, barrier: BarrierRef, indices: Sequence[int | Scalar],
               slice_lengths: Sequence[int] | None = None,
               collective: str | Sequence[str] = (), predicate: Scalar | None = None,
               oob_fill_mode: str | None = None) -> None:
    """TMA: copies the slice of global ``src`` at ``indices`` into shared
    ``dst``, completing on ``barrier`` (``mosaic_gpu.async_load``).
    ``collective`` ('x', 'y', 'z' or a tuple of them) multicasts it to the
    cluster's blocks along those dims; ``predicate`` (an i1 Scalar) guards
    it. ``oob_fill_mode`` says what the elements of a slice past the end of
    ``src`` may hold: 'zeros' (the default), 'undefined' or
    'promise_in_bounds' (the slice never leaves ``src``); the lowering
    fills zeros, which all three allow."""
    check_type(src, Ref, "src")
    check_type(dst, Ref, "dst")
    handles = _indices(indices, src, "src")
    guard = _predicate(predicate)
    fill = None
    if oob_fill_mode is not None:
        if oob_fill_mode not in _OOB_FILL_MODES:
            raise ValueError(f"`oob_fill_mode` must be one of {', '.join(_OOB_FILL_MODES)}, "
                             f"got {oob_fill_mode!r}")
        fill = _OOB_FILL_MODES[oob_fill_mode]
    _K.async_load(current(), location(), src.handle, dst.handle, _barrier(barrier).handle,
                  handles, _slice_lengths(slice_lengths, dst.shape, src),
                  _collective(collective), guard, oob_fill_mode=fill)


# The bindings name each enum member as MLIR spells it ('zeros', 'add').
_OOB_FILL_MODES = dict(_mosaic.OOBFillMode.__members__)
_TMA_REDUCTIONS = dict(_mosaic.TMAReduction.__members__)


def async_prefetch(src: Ref, indices: Sequence[int | Scalar], slice_lengths: Sequence[int],
                   collective: str | Sequence[str] = (), predicate: Scalar | None = None) -> None:
    """TMA: prefetches the slice of global ``src`` at ``indices`` into L2
    (``mosaic_gpu.async_prefetch``)."""
    check_type(src, Ref, "src")
    handles = _indices(indices, src, "src")
    guard = _predicate(predicate)
    _K.async_prefetch(current(), location(), src.handle, handles,
                      _slice_lengths(slice_lengths, (), src), _collective(collective), guard)


def async_store(src: Ref, dst: Ref, indices: Sequence[int | Scalar],
                slice_lengths: Sequence[int] | None = None, *,
                defer_wait: bool = False, reduction: str | None = None) -> None:
    """TMA: copies shared ``src`` to the slice of global ``dst`` at
    ``indices`` (``mosaic_gpu.async_store``). By default the warpgroup
    waits until TMA has read ``src``; with ``defer_wait=True`` it goes on
    at once, and ``src`` may be written again only after
    ``async_store_wait`` (the emulator reports a write before it). With
    ``reduction`` ('add', 'min', 'max', 'inc', 'dec', 'and', 'or', 'xor',
    'umin', 'umax', 'smin', 'smax') TMA combines ``src`` into ``dst``
    instead of overwriting it (the verifier checks the element type)."""
    check_type(src, Ref, "src")
    check_type(dst, Ref, "dst")
    check_type(defer_wait, bool, "defer_wait")
    if reduction is not None and reduction not in _TMA_REDUCTIONS:
        raise ValueError(f"`reduction` must be one of {', '.join(_TMA_REDUCTIONS)}, "
                         f"got {reduction!r}")
    handles = _indices(indices, dst, "dst")
    _K.async_store(current(), location(), src.handle, dst.handle, handles,
                   _slice_lengths(slice_lengths, src.shape, dst),
                   defer_wait=defer_wait,
                   reduction=None if reduction is None else _TMA_REDUCTIONS[reduction])


def named_barrier(id: int, warpgroups: int, *, arrive: bool = False) -> None:
    """Waits until ``warpgroups`` warpgroups, this one included, reached
    named barrier ``id`` (``mosaic_gpu.named_barrier``): a role's own
    synchronization, without the rest of the block. ``id`` is above the
    block's warpgroup count (the lowering keeps 1 .. W) and at most 15.
    With ``arrive=True`` the warpgroup counts towards the barrier without
    waiting (``bar.arrive``): one side of a hand-over whose other side
    waits."""
    check_type(arrive, bool, "arrive")
    for name, value, low in (("id", id, 1), ("warpgroups", warpgroups, 1)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"`{name}` must be an int, got {value!r}")
        if value < low:
            raise ValueError(f"`{name}` must be at least {low}, got {value}")
    if id > 15:
        raise ValueError(f"`id` must be a named barrier in 1..15, got {id}")
    _K.named_barrier(current(), location(), id, warpgroups, arrive=arrive)


def async_store_wait(pending: int = 0, *, complete: bool = False) -> None:
    """Waits until at most ``pending`` of the warpgroup's deferred TMA
    stores still read their shared-memory sources
    (``mosaic_gpu.async_store_wait``). With ``complete=True``, until they
    have also written global memory: what a semaphore_signal that publishes
    the stored data to another device needs first."""
    if not isinstance(pending, int) or isinstance(pending, bool):
        raise TypeError(f"`pending` must be an int, got {pending!r}")
    if not 0 <= pending < 2 ** 31:
        raise ValueError(f"`pending` must be a non-negative number of store groups, got {pending}")
    check_type(complete, bool, "complete")
    _K.async_store_wait(current(), location(), pending, complete=complete)


def wgmma(acc: Vector, a: Ref | Vector, b: Ref, *, async_: bool = False) -> Vector:
    """``acc + a @ b`` on the tensor cores; ``a`` and ``b`` in shared memory
    (``a`` may be a vector) (``mosaic_gpu.wgmma``).

    By default the result is ready when the call returns. With
    ``async_=True`` the MMA is only issued, as one wgmma group, and its
    result is *in flight* until a ``wgmma_wait(n)`` lets at most ``n``
    younger groups pend: until then it may only be the ``acc`` of further
    wgmma calls or be carried by a loop, and ``a`` and ``b`` must not be
    overwritten (compile reports any other use as a MosaicError at the
    reading line)."""
    check_type(acc, Vector, "acc")
    if len(acc.shape) != 2:
        raise ValueError(f"`acc` must be a matrix, got shape {acc.shape}")
    check_type(a, (Ref, Vector), "a")
    check_type(b, Ref, "b")
    check_type(async_, bool, "async_")
    return acc._like(_K.wgmma(current(), location(), acc.handle, a.handle, b.handle,
                              async_=async_))


def wgmma_wait(pending: int) -> None:
    """Waits until at most ``pending`` of the executing warpgroup's async
    wgmma groups are in flight (``mosaic_gpu.wgmma_wait``): the results of
    the older ones may be read and their operands overwritten.
    ``wgmma_wait(0)`` waits for all; in a pipeline, ``wgmma_wait(1)`` after
    issuing step k completes step k - 1."""
    if not isinstance(pending, int) or isinstance(pending, bool):
        raise TypeError(f"`pending` must be an int, got {pending!r}")
    if not 0 <= pending < 2 ** 31:
        raise ValueError(f"`pending` must be a non-negative number of wgmma groups, got {pending}")
    _K.wgmma_wait(current(), location(), pending)


def _i32(value: int | Scalar, what: str) -> _mosaic.Value:
    """An int or an i32/index Scalar as an i32 value."""
    if isinstance(value, int) and not isinstance(value, bool):
        if not -(2 ** 31) <= value < 2 ** 31:
            raise ValueError(f"`{what}` must fit in an i32, got {value}")
        return constant(value, "i32").handle
    if isinstance(value, Scalar) and value.dtype in (i32, index):
        return value.astype("i32").handle
    raise TypeError(f"`{what}` must be an int or an i32/index Scalar, got {value!r}")


def remote_ref(ref: Ref, device: int | Scalar) -> Ref:
    """Device ``device``'s copy of ``ref``, a kernel argument marked
    symmetric (``mosaic_gpu.kernel(..., symmetric=[...])``), as this device
    addresses it (``mosaic_gpu.remote_ref``). ``async_load``,
    ``async_store``, ``vector_load``, ``vector_store`` and
    ``semaphore_signal`` accept it; ``semaphore_wait`` does not."""
    check_type(ref, Ref, "ref")
    if ref.is_remote:
        raise ValueError("`ref` is already a remote view; take remote_ref of the symmetric "
                         "argument itself")
    if not ref.symmetric:
        raise ValueError("`ref` must be a kernel argument marked symmetric "
                         "(mosaic_gpu.kernel(..., symmetric=[position]))")
    handle = _K.remote_ref(current(), location(), ref.handle, _i32(device, "device"))
    remote = Ref(handle, ref.shape, ref.dtype, ref.strides, ref.offset, ref.smem)
    remote.is_remote = True
    return remote


def _semaphore(sems: Ref, index: int | Scalar | Sequence[int | Scalar]) -> list[_mosaic.Value]:
    """The semaphore array's handle checks and ``index`` as its indices."""
    check_type(sems, Ref, "sems")
    if sems.dtype != i32:
        raise TypeError(f"`sems` must hold i32 semaphores, but it holds {sems.dtype}")
    if not (sems.symmetric or sems.is_remote):
        raise ValueError("`sems` must be a kernel argument marked symmetric "
                         "(mosaic_gpu.kernel(..., symmetric=[position])) or a remote_ref of one")
    indices = list(index) if isinstance(index, (tuple, list)) else [index]
    if len(indices) != len(sems.shape):
        raise ValueError(f"`index` has {len(indices)} entries for the rank-{len(sems.shape)} "
                         "`sems`")
    return [_i32(i, "index") for i in indices]


def semaphore_signal(sems: Ref, index: int | Scalar | Sequence[int | Scalar],
                     value: int | Scalar = 1, device: int | Scalar | None = None) -> None:
    """Adds ``value`` to the semaphore ``sems[index]`` with release
    semantics at system scope (``mosaic_gpu.semaphore_signal``): the
    warpgroup's earlier writes are visible to whoever waits for it. With
    ``device`` it is the semaphore of that device's copy; ``sems`` may also
    be a ``remote_ref`` (then without ``device``)."""
    indices = _semaphore(sems, index)
    if device is not None and sems.is_remote:
        raise ValueError("`device` is given, but `sems` is already a remote view")
    _K.semaphore_signal(current(), location(), sems.handle, indices, _i32(value, "value"),
                        None if device is None else _i32(device, "device"))


def semaphore_wait(sems: Ref, index: int | Scalar | Sequence[int | Scalar],
                   count: int | Scalar = 1) -> None:
    """Waits until this device's semaphore ``sems[index]`` holds at least
    ``count``, then subtracts ``count``, with acquire semantics at system
    scope (``mosaic_gpu.semaphore_wait``)."""
    indices = _semaphore(sems, index)
    if sems.is_remote:
        raise ValueError("`sems` is a remote view; a device waits on its own semaphores only")
    _K.semaphore_wait(current(), location(), sems.handle, indices, _i32(count, "count"))
