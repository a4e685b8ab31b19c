"""mosaic_gpu._mosaic.KernelBuilder's typed entry points, called directly:
what they make, and the errors (never a crash) for inputs the authoring API
would have refused before calling them."""
import pytest

import mosaic_gpu as mgpu
from mosaic_gpu import _mosaic

E = _mosaic.ElementType
HERE = ("kernel.py", 7, 3)


@pytest.fixture
def builder():
    return _mosaic.KernelBuilder.start("k", [([128], E.f32), ([4, 128], E.bf16)], (2, 1, 1),
                                       (128, 1, 1), (2, 1, 1), "kernel.py", 1)


def test_the_skeleton_and_typed_ops(builder):
    x, y = builder.arguments()
    v = builder.vector_load(HERE, x)
    two = builder.constant_float(HERE, 2.0, E.f32, [128])
    builder.vector_store(HERE, builder.mulf(HERE, v, two), x)
    row = builder.subview(HERE, y, [builder.constant_int(HERE, 1, E.index), 0], [1, 128],
                          [128], [1], None)
    bars = builder.slice_smem(HERE, 0, [2], E.barrier)
    builder.initialize_barrier(HERE, bars, 1, 2)
    loop = builder.for_(HERE, *(builder.constant_int(HERE, i, E.index) for i in (0, 4, 1)), [v])
    builder.enter(loop.block(0))
    index, carried = loop.block(0).arguments
    builder.yield_(HERE, [builder.negf(HERE, carried)])
    builder.exit()
    loop.verify()
    text = str(builder.finish())
    assert ("gpu.func @k(%arg0: memref<128xf32>, %arg1: memref<4x128xbf16>) kernel attributes "
            "{known_block_size = array<i32: 128, 1, 1>, known_grid_size = array<i32: 2, 1, 1>, "
            "mosaic_gpu.cluster = array<i32: 2, 1, 1>}") in text
    assert "memref<4x128xbf16> to memref<128xbf16, strided<[1], offset: ?>>" in text
    assert "arrival_count = 1, num_barriers = 2 : memref<2x!mosaic_gpu.barrier" in text
    assert "scf.for" in text and "arith.negf" in text and row.type.startswith("memref<128xbf16")


def test_ops_are_verified_as_they_are_made(builder):
    x, _ = builder.arguments()
    with pytest.raises(mgpu.MosaicError, match="invalid `arith.addf`") as error:
        builder.addf(HERE, x, x)
    assert error.value.diagnostics[0].location == "kernel.py:7:3"
    # The failed op is gone: the kernel still verifies.
    builder.finish()


@pytest.mark.parametrize("call, exception, message", [
    (lambda b, x: b.vector_load(HERE, b.constant_int(HERE, 0, E.i32)), TypeError,
     "`ref` must be a memref"),
    (lambda b, x: b.broadcast_in_dim(HERE, x, [4, 128], [1]), TypeError, "`x` must be a vector"),
    (lambda b, x: b.constant_float(HERE, 1.0, E.i32), TypeError,
     "a float constant needs a float type"),
    (lambda b, x: b.constant_int(HERE, 1, E.bf16), TypeError,
     "an integer constant needs an integer type"),
    (lambda b, x: b.subview(HERE, b.constant_int(HERE, 0, E.index), [0], [1], [], [], 0),
     TypeError, "`source` must be a memref"),
    (lambda b, x: b.layout_cast(HERE, b.vector_load(HERE, x),
                                _mosaic.splat_layout(_mosaic.Context(), [128])),
     ValueError, "`layout` was made in another context"),
    (lambda b, x: b.for_(HERE, x, x, x, []).block(1), ValueError, "`scf.for` has no block in region 1"),
    (lambda b, x: b.exit(), ValueError, r"exit\(\) without enter\(\)"),
    (lambda b, x: b.if_(HERE, b.constant_int(HERE, 1, E.i1), [], False).block(1), ValueError,
     "`scf.if` has no block in region 1"),
    # Types from numbers are checked by their verifiers.
    (lambda b, x: b.constant_float(HERE, 1.0, E.f32, [-4]), mgpu.MosaicError,
     "invalid builtin.vector\nerror: vector types must have positive constant sizes"),
    (lambda b, x: b.subview(HERE, x, [0], [128], [128], [1, 1], 0), mgpu.MosaicError,
     "expected the number of strides to match the rank"),
    (lambda b, x: b.slice_smem(HERE, 0, [-3], E.f32), mgpu.MosaicError, "invalid memref size"),
    # A pybind11 enum takes any int.
    (lambda b, x: b.constant_int(HERE, 1, E(42)), ValueError, "unknown element type 42"),
    (lambda b, x: b.cmpf(HERE, _mosaic.CmpFPredicate(99), x, x), ValueError,
     "`predicate` is 99, not one of its enum's values"),
    (lambda b, x: b.block_id(HERE, _mosaic.Dimension(3)), ValueError, "`dim` is 3"),
    (lambda b, x: b.async_prefetch(HERE, x, [], [128], [_mosaic.Dimension(7)]), ValueError,
     "`collective` is 7"),
])
def test_bad_inputs_raise(builder, call, exception, message):
    with pytest.raises(exception, match=message):
        call(builder, builder.arguments()[0])


def test_region_ops_are_verified_when_closed(builder):
    x, _ = builder.arguments()
    loop = builder.for_(HERE, x, x, x, [])  # memref bounds
    builder.enter(loop.block(0))
    builder.yield_(HERE, [])
    builder.exit()
    with pytest.raises(mgpu.MosaicError, match="`scf.for` does not verify"):
        loop.verify()


def test_values_and_blocks_belong_to_their_kernel(builder):
    other = _mosaic.KernelBuilder.start("o", [([128], E.f32)], (1, 1, 1), (128, 1, 1), (1, 1, 1))
    with pytest.raises(ValueError, match="`ref` belongs to another kernel"):
        builder.vector_load(HERE, other.arguments()[0])
    loop = other.for_(HERE, *(other.constant_int(HERE, i, E.index) for i in (0, 4, 1)), [])
    with pytest.raises(ValueError, match="the block belongs to another kernel"):
        builder.enter(loop.block(0))


def test_attributes_from_typed_values():
    context = _mosaic.Context()
    assert str(_mosaic.tiled_layout(context, [[64], [16], [8], [1]], [-4],
                                    [-2, _mosaic.Replicated(4)], -1)) == mgpu.WGMMA_ROW.attribute()
    with pytest.raises(mgpu.MosaicError, match="Replicated must have a positive `times`, got 0"):
        _mosaic.tiled_layout(context, [[64], [16], [8], [1]], [-4], [-2, _mosaic.Replicated(0)], -1)
    with pytest.raises(mgpu.MosaicError, match="not a multiple of 512"):
        _mosaic.strided_layout(context, [128], 4)
    with pytest.raises(mgpu.MosaicError, match="tile transform needs at least one tile dim"):
        _mosaic.tile_transform(context, [])
    with pytest.raises(ValueError, match="swizzle must be 32, 64 or 128 bytes, got 16"):
        _mosaic.swizzle_transform(context, 16)
