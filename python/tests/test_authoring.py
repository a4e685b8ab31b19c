"""The kernel-authoring API: ops, operators, control flow, layouts,
locations, and the errors it raises."""
import threading

import numpy as np
import pytest

import mosaic_gpu as mgpu

F32_64x128 = [((4096, 128), "f32")]


def rows_kernel(body, smem=()):
    """A 64-row softmax-shaped kernel whose body is `body(x, out, *smem)`."""
    return mgpu.kernel(grid=(64, 1, 1), block=(128, 1, 1), inputs=F32_64x128,
                       outputs=F32_64x128, smem=smem, name="rows")(body)


def tile(x):
    return x[mgpu.ds(mgpu.block_id() * 64, 64), :]


def test_module_holds_the_kernel():
    @mgpu.kernel(grid=(2, 3, 1), block=(128, 1, 1), cluster=(2, 1, 1),
                 inputs=[((256,), "f32")], outputs=[((256,), "f32")])
    def copy(x, out):
        mgpu.vector_store(mgpu.vector_load(x[0:128]) * 2.0, out[128:256])

    text = str(copy.module)
    assert "gpu.func @copy(%arg0: memref<256xf32>, %arg1: memref<256xf32>) kernel" in text
    assert "known_grid_size = array<i32: 2, 3, 1>" in text
    assert "mosaic_gpu.cluster = array<i32: 2, 1, 1>" in text
    assert "memref.subview %arg1[128] [128] [1] : memref<256xf32> to memref<128xf32, strided<[1], offset: 128>>" in text
    assert "arith.constant dense<2.000000e+00> : vector<128xf32>" in text
    assert copy.grid == (2, 3, 1) and copy.__name__ == "copy"
    assert str(mgpu.Module.parse(text)) == text


def test_ops_are_located_at_the_python_line():
    def body(x, out):
        v = mgpu.vector_load(tile(x))
        mgpu.vector_store(mgpu.exp(v), tile(out))  # the exp line

    kernel = rows_kernel(body)
    line = body.__code__.co_firstlineno + 2
    exps = [op for op in mgpu.infer_layouts(kernel.module) if op.op == "math.exp"]
    assert exps[0].location.startswith(f"{__file__}:{line}:")


def test_scalar_arithmetic_and_casts():
    def body(x, out):
        i = mgpu.block_id("y")
        j = (i + 3) * 2 - 1
        k = (j // 4) % 5
        assert k.dtype == "index" and k.astype("i32").dtype == "i32"
        assert (k.astype("i32") < 7).dtype == "i1"
        mgpu.vector_store(mgpu.vector_load(x[mgpu.ds(k * 64, 64), :]), tile(out))

    text = str(rows_kernel(body).module)
    for op in ("arith.addi", "arith.muli", "arith.subi", "arith.divui", "arith.remui",
               "arith.index_cast", "arith.cmpi slt"):
        assert op in text, op


def test_vector_ops():
    def body(x, out):
        v = mgpu.vector_load(tile(x))
        m = mgpu.reduce(v, "min", axis=1)
        s = v.reduce("add", axis=(1,))
        w = mgpu.maximum(v, mgpu.broadcast_in_dim(m + s, v.shape, [0])) - 1.0
        w = mgpu.layout_cast(-w / v, mgpu.WGMMA)
        w = w + mgpu.iota((64, 128), "i32", 1).astype("f32")
        mgpu.vector_store(w.astype("bf16").astype("f32"), tile(out))

    text = str(rows_kernel(body).module)
    for op in ("vector.multi_reduction <minimumf>", "vector.multi_reduction <add>",
               "arith.maximumf", "arith.negf", "arith.divf", "mosaic_gpu.layout_cast",
               "to #wgmma", "mosaic_gpu.broadcasted_iota", "arith.sitofp",
               "arith.truncf", "arith.extf", "dense<0x7F800000>"):
        assert op in text, op
    mgpu.compile(rows_kernel(body).module, emit="ptx")


def test_for_while_and_if():
    def body(x, out):
        v = mgpu.vector_load(tile(x))

        @mgpu.for_loop(0, 4, carry=(v, mgpu.constant(0, "i32")))
        def loop(i, acc, n):
            return acc * 0.5, n + 1

        acc, n = loop

        @mgpu.while_loop(lambda a, c: c < 10, carry=(acc, n))
        def again(a, c):
            return a + 1.0, c + 2

        @mgpu.if_(n == 4, otherwise=lambda: again[0], results=acc)
        def result():
            return acc

        @mgpu.if_(mgpu.block_id() == 0)
        def _():
            mgpu.vector_store(result, tile(out))

    text = str(rows_kernel(body).module)
    for op in ("scf.for", "iter_args", "scf.while", "scf.condition", "scf.if", "} else {"):
        assert op in text, op
    mgpu.compile(rows_kernel(body).module, emit="ptx")


def test_layouts_and_transforms_print_as_attributes():
    assert mgpu.WGMMA.attribute() == (
        "#mosaic_gpu.TiledLayout<[[64, 8], [16, 8], [8, 8], [2]], warp_dims = [-7], "
        "lane_dims = [-3, -2], vector_dim = -1>")
    assert "Replicated<times = 4>" in mgpu.WGMMA_ROW.attribute()
    assert mgpu.Strided(4).attribute((512,)) == "#mosaic_gpu.WGStridedFragLayout<[512], 4>"
    # Printing checks the layout as the IR would: 128 elements do not fill a
    # warpgroup's 128 threads with 4 each.
    with pytest.raises(mgpu.MosaicError, match="WGStridedFragLayout"):
        mgpu.Strided(4).attribute((128,))
    assert mgpu.Splat.attribute((2, 8)) == "#mosaic_gpu.WGSplatFragLayout<[2, 8]>"
    assert str(mgpu.Tile((8, 64))) == "#mosaic_gpu.tile<[8, 64]>"
    assert str(mgpu.Swizzle(64)) == "#mosaic_gpu.swizzle<k64ByteSwizzle>"
    with pytest.raises(ValueError, match="swizzle must be 32, 64 or 128"):
        mgpu.Swizzle(16)


def test_layout_cast_reaches_inference():
    def body(x, out):
        v = mgpu.layout_cast(mgpu.vector_load(tile(x)), mgpu.WGMMA)
        mgpu.vector_store(v, tile(out))

    casts = [op for op in mgpu.infer_layouts(rows_kernel(body).module)
             if op.op == "mosaic_gpu.layout_cast"]
    assert casts[0].out_layouts == ["#wgmma"]


def test_unsatisfiable_layouts_raise_mosaic_error_with_notes():
    def body(x, out):
        v = mgpu.vector_load(tile(x))
        a = mgpu.layout_cast(v, mgpu.WGMMA)
        b = mgpu.layout_cast(v, mgpu.Strided(4))
        mgpu.vector_store(a + b, tile(out))

    kernel = rows_kernel(body)
    with pytest.raises(mgpu.MosaicError) as error:
        mgpu.infer_layouts(kernel.module)
    assert error.value.diagnostics
    located = [d.location for d in error.value.diagnostics] + [
        n.location for d in error.value.diagnostics for n in d.notes]
    assert any(loc.startswith(__file__) for loc in located)
    assert any(d.notes for d in error.value.diagnostics)
    with pytest.raises(mgpu.MosaicError):
        kernel.compile(emit="ptx")


def test_verifier_errors_point_at_the_call():
    def body(x, out, bars):
        mgpu.async_load(x, tile(out), bars[0], indices=[0, 0])  # gmem to gmem

    with pytest.raises(mgpu.MosaicError) as error:
        rows_kernel(body, smem=[mgpu.Barriers(2)])
    line = body.__code__.co_firstlineno + 1
    assert error.value.diagnostics[0].location.startswith(f"{__file__}:{line}:")


@pytest.mark.parametrize("arguments, exception, message", [
    (dict(grid=(1, 1)), TypeError, "`grid` must be 3 ints"),
    (dict(block=(0, 1, 1)), ValueError, "`block` sizes must be positive"),
    (dict(inputs=[((4096,), "f33")]), ValueError, r"`inputs\[0\]`: unknown dtype 'f33'"),
    (dict(inputs=[((4096, -1), "f32")]), ValueError, r"`inputs\[0\]` must be a non-empty"),
    (dict(outputs=[(4096, "f32")]), TypeError, r"`outputs\[0\]` must be a tuple of ints"),
    (dict(smem=[((128,), "f32")]), TypeError, r"`smem\[0\]` must be a SmemBuffer"),
])
def test_bad_kernel_arguments(arguments, exception, message):
    description = dict(grid=(1, 1, 1), block=(128, 1, 1), inputs=F32_64x128, outputs=[])
    description.update(arguments)
    with pytest.raises(exception, match=message):
        mgpu.kernel(**description)


@pytest.mark.parametrize("body, exception, message", [
    (lambda x, out: mgpu.vector_load(tile(x)) + mgpu.vector_load(x[0:64, 0:64]),
     ValueError, r"`\+`: operands are f32\[64, 128\] and f32\[64, 64\]"),
    (lambda x, out: mgpu.vector_store(mgpu.vector_load(x[0:64, 0:64]), tile(out)),
     ValueError, r"`value` is f32\[64, 64\] but `ref` holds f32\[64, 128\]"),
    (lambda x, out: mgpu.vector_store(mgpu.vector_load(tile(x)), tile(out), valid=[64]),
     ValueError, "`valid` has 1 entries for the rank-2 `ref`; give one per dim"),
    (lambda x, out: mgpu.vector_store(mgpu.vector_load(tile(x)), tile(out), valid=[64, 1.5]),
     TypeError, "`valid` must hold ints or i32/index Scalars, got 1.5"),
    (lambda x, out: mgpu.vector_load(tile(x)) + mgpu.block_id(),
     ValueError, r"`\+`: operands are f32\[64, 128\] and a index scalar; use astype"),
    (lambda x, out: mgpu.vector_load(tile(x)) + "one",
     TypeError, "cannot combine a vector"),
    (lambda x, out: mgpu.block_id() + mgpu.constant(1, "i32"),
     TypeError, "operands are index and i32"),
    (lambda x, out: mgpu.vector_load(tile(x)).reduce("avg", axis=1),
     ValueError, "`kind` must be one of"),
    (lambda x, out: mgpu.vector_load(tile(x)).reduce("add", axis=2),
     ValueError, "`axis` 2 out of range"),
    (lambda x, out: mgpu.broadcast_in_dim(mgpu.vector_load(x[0:64, 0]), (64, 128), [1]),
     ValueError, "`dims`"),
    (lambda x, out: mgpu.layout_cast(mgpu.vector_load(tile(x)), "wgmma"),
     TypeError, "`layout` must be a Layout"),
    (lambda x, out: mgpu.vector_load(x[0:4097, :]), IndexError, "out of bounds"),
    (lambda x, out: mgpu.wait(x, False), TypeError, "`barrier` must be one barrier"),
    (lambda x, out: mgpu.constant(1.5, "i32"), TypeError, "cannot make an i32 constant"),
    (lambda x, out: bool(mgpu.block_id() < 3), TypeError, "use mosaic_gpu.if_"),
    (lambda x, out: mgpu.for_loop(0, 4, carry=mgpu.constant(0.0, "f32", (4,)))(lambda i, c: i),
     TypeError, "`for_loop body` returned"),
])
def test_bad_op_arguments(body, exception, message):
    with pytest.raises(exception, match=message):
        rows_kernel(body)


def test_kernel_names_must_be_identifiers():
    with pytest.raises(ValueError, match="must be an identifier, got '<lambda>'; pass name="):
        mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[], outputs=[])(lambda: None)


def test_ops_outside_a_kernel():
    with pytest.raises(RuntimeError, match="inside a @mosaic_gpu.kernel"):
        mgpu.block_id()


def test_smem_layout():
    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((128, 64), "bf16")], outputs=[],
                 smem=[mgpu.SmemBuffer((10,), "f32"),
                       mgpu.SmemBuffer((128, 64), "bf16", transforms=[mgpu.Tile((8, 64)), mgpu.Swizzle(128)]),
                       mgpu.Barriers(count=3, arrival_count=2)])
    def scratch(x, small, tiles, bars):
        assert bars[2].shape == () and tiles.shape == (128, 64)

    text = str(scratch.module)
    assert "mosaic_gpu.slice_smem 0 : memref<10xf32" in text
    assert "mosaic_gpu.slice_smem 1024 : memref<128x64xbf16" in text
    assert "mosaic_gpu.slice_smem 17408 : memref<3x!mosaic_gpu.barrier" in text
    assert "arrival_count = 2, num_barriers = 3" in text
    assert "with [#mosaic_gpu.tile<[8, 64]>, #mosaic_gpu.swizzle<k128ByteSwizzle>]" in text
    assert scratch.smem_bytes == 17408 + 24


def test_integer_vectors_and_comparisons():
    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((16, 128), "i8")],
                 outputs=[((16, 128), "i16")])
    def widen(x, out):
        v = mgpu.vector_load(x)
        wide = v.astype("i16")
        mgpu.vector_store(wide * 3 + (wide // 2), out)
        assert (wide < 5).type == "vector<16x128xi1>"

    text = str(widen.module)
    for op in ("arith.extsi", "arith.divsi", "arith.cmpi slt", "vector<16x128xi16>"):
        assert op in text, op


def test_collective_predicated_tma_and_prefetch():
    @mgpu.kernel(grid=(4, 1, 1), block=(128, 1, 1), cluster=(2, 1, 1),
                 inputs=[((256, 64), "bf16")], outputs=[],
                 smem=[mgpu.SmemBuffer((128, 64), "bf16", transforms=[mgpu.Tile((8, 64)), mgpu.Swizzle(128)]),
                       mgpu.Barriers(1)])
    def multicast(x, tile, bars):
        first = mgpu.cluster_block_id("x") == 0
        mgpu.async_prefetch(x, [0, 0], (128, 64), predicate=first)
        mgpu.arrive_expect_tx(bars[0], 128 * 64 * 2)
        mgpu.async_load(x, tile, bars[0], [0, 0], collective="x", predicate=first)
        mgpu.wait(bars[0])

    text = str(multicast.module)
    assert "gpu.cluster_block_id  x" in text
    assert "mosaic_gpu.async_prefetch %arg0[%c0_i32, %c0_i32_0] if" in text
    assert "{collective = [#mosaic_gpu.dim<x>]}" in text
    mgpu.compile(multicast.module, emit="ptx")
    with pytest.raises(ValueError, match="`collective` must be 'x', 'y' or 'z'"):
        mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((256, 64), "bf16")], outputs=[],
                    smem=[mgpu.SmemBuffer((128, 64), "bf16"), mgpu.Barriers(1)], name="bad")(
            lambda x, t, b: mgpu.async_load(x, t, b[0], [0, 0], collective="w"))


def test_float_comparisons_follow_python():
    """`!=` on floats is `une` (true when either side is NaN, as in Python);
    the other comparisons are ordered (false on NaN)."""
    def body(x, out):
        v = mgpu.vector_load(tile(x))
        s = mgpu.constant(1.0, "f32")
        for compared in (v != 0.0, s != 2.0, v == 0.0, v < 0.0, v <= 0.0, v > 0.0, v >= 0.0):
            assert compared.dtype == "i1"

    text = str(rows_kernel(body).module)
    assert text.count("arith.cmpf une") == 2 and "arith.cmpf one" not in text
    for predicate in ("oeq", "olt", "ole", "ogt", "oge"):
        assert f"arith.cmpf {predicate}," in text, predicate


def test_dtype_objects():
    assert mgpu.f32.bitwidth == 32 and mgpu.f32.is_float and not mgpu.f32.is_int
    assert mgpu.i8.is_int and mgpu.i8.itemsize == 1 and mgpu.i1.itemsize == 1
    assert not mgpu.index.is_int and not mgpu.index.is_float and mgpu.index.numpy is None
    assert mgpu.f16.numpy == np.float16 and mgpu.i32.numpy == np.int32
    assert mgpu.bf16 == "bf16" and "bf16" == mgpu.bf16 and mgpu.bf16 != mgpu.f16
    assert {mgpu.f32: 1}["f32"] == 1 and str(mgpu.f32) == "f32"
    assert repr(mgpu.bf16) == "mosaic_gpu.bf16"


def test_dtype_objects_and_names_build_the_same_kernel():
    def body(x, out):
        i = mgpu.block_id().astype(mgpu.i32) + mgpu.constant(1, mgpu.i32)
        v = mgpu.vector_load(x).astype(mgpu.bf16).astype(mgpu.f32)
        mgpu.vector_store(v + mgpu.iota((128,), mgpu.f32, 0), out)
        assert i.dtype is mgpu.i32 and v.dtype is mgpu.f32

    def by_name(x, out):
        i = mgpu.block_id().astype("i32") + mgpu.constant(1, "i32")
        v = mgpu.vector_load(x).astype("bf16").astype("f32")
        mgpu.vector_store(v + mgpu.iota((128,), "f32", 0), out)

    def build(dtype, fn):
        return str(mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((128,), dtype)],
                               outputs=[((128,), dtype)], name="k")(fn).module)

    objects, names = build(mgpu.f32, body), build("f32", by_name)
    assert objects.replace(f":{body.__code__.co_firstlineno}", "") == names.replace(
        f":{by_name.__code__.co_firstlineno}", "")
    assert mgpu.SmemBuffer((128,), mgpu.bf16).bytes == 256


@pytest.mark.parametrize("make, exception, message", [
    (lambda: mgpu.SmemBuffer((4,), 32), TypeError, r"`dtype` must be a DType \(mosaic_gpu.f32"),
    (lambda: mgpu.SmemBuffer((4,), mgpu.index), ValueError, "`dtype`: index is not allowed here"),
    (lambda: mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((4,), "index")], outputs=[]),
     ValueError, r"`inputs\[0\]`: unknown dtype 'index'"),
    (lambda: mgpu.TiledLayout([(64,)], [("times", 4)], [-1], -1), TypeError,
     r"a warp or lane dim must be an int or \('replicated', times\)"),
    (lambda: mgpu.Strided(4).attribute(), TypeError, "Strided\\(4\\) needs the vector's shape"),
])
def test_bad_descriptions(make, exception, message):
    with pytest.raises(exception, match=message):
        make()


@pytest.mark.parametrize("body, exception, message", [
    (lambda x, out: mgpu.constant(300, "i8"), ValueError, "300 is out of range for an i8 constant"),
    (lambda x, out: mgpu.constant(1, mgpu.index, (4,)), ValueError, "index is not allowed here"),
    (lambda x, out: mgpu.vector_load(x).astype("index"), ValueError, "unknown dtype 'index'"),
    (lambda x, out: mgpu.iota((64, 128), "i32", 2), ValueError, "`dimension` 2 out of range"),
    (lambda x, out: mgpu.with_transforms(x, ["tile"]), TypeError, "`transforms` must be a Transform"),
    (lambda x, out: mgpu.layout_cast(mgpu.vector_load(tile(x)), mgpu.Strided(3)),
     mgpu.MosaicError, "invalid mosaic_gpu.WGStridedFragLayout"),
    (lambda x, out: mgpu.layout_cast(mgpu.vector_load(tile(x)),
                                     mgpu.TiledLayout([(64,)], [-1], [-1], -1)),
     mgpu.MosaicError, "invalid mosaic_gpu.TiledLayout"),
    (lambda x, out: mgpu.async_prefetch(x, [0, 0], (64, "all")), TypeError,
     "`slice_lengths` must be a tuple of ints"),
    (lambda x, out: mgpu.wgmma(mgpu.vector_load(tile(x)), 1.0, x), TypeError,
     "`a` must be a Ref or Vector"),
    (lambda x, out: mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[], outputs=[],
                                name="inner")(lambda: None),
     RuntimeError, "kernels cannot be defined inside kernels"),
])
def test_bad_op_arguments_of_the_typed_builders(body, exception, message):
    with pytest.raises(exception, match=message):
        rows_kernel(body)


def test_barrier_bytes_must_fit_the_attribute():
    def body(x, out, bars):
        mgpu.arrive_expect_tx(bars[0], 2 ** 32)

    with pytest.raises(ValueError, match=r"`bytes` must be 0 to 2\*\*32 - 1, got 4294967296"):
        rows_kernel(body, smem=[mgpu.Barriers(1)])


def test_values_of_another_kernel_are_refused():
    kept = []
    rows_kernel(lambda x, out: kept.append(mgpu.vector_load(tile(x))))
    with pytest.raises(ValueError, match="`rhs` belongs to another kernel"):
        rows_kernel(lambda x, out: mgpu.vector_load(tile(x)) + kept[0])


def test_the_builder_is_active_only_while_its_kernel_is_built():
    """The active builder is a context (a ContextVar): gone after the kernel,
    even one that failed, and not seen by other threads."""
    seen = []

    def body(x, out):
        thread = threading.Thread(target=lambda: seen.append(_outside_a_kernel()))
        thread.start()
        thread.join()
        raise KeyError("the body fails")

    with pytest.raises(KeyError):
        rows_kernel(body)
    assert seen == [True] and _outside_a_kernel()


def _outside_a_kernel():
    try:
        mgpu.block_id()
    except RuntimeError as error:
        return "inside a @mosaic_gpu.kernel" in str(error)
    return False
