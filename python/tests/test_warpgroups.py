"""The warp-specialization ops of the authoring API: warpgroup_id,
set_max_registers, async wgmma, wgmma_wait and collective arrive; transposed
views and the fp8
dtypes that K-major wgmma operands need; and their bad inputs, in Python and
at the typed C++ entry points."""
import re

import pytest

import mosaic_gpu as mgpu
from mosaic_gpu import _mosaic

SMEM = [mgpu.SmemBuffer((64, 64), "bf16"), mgpu.SmemBuffer((64, 128), "bf16")]


def roles_kernel(body, block=(256, 1, 1), smem=SMEM):
    """A kernel of `block` threads with a 64x64 A and a 64x128 B in shared
    memory; `body(out, a, b)`."""
    return mgpu.kernel(grid=(1, 1, 1), block=block, inputs=[],
                       outputs=[((64, 128), "f32")], smem=smem, name="roles")(body)


def test_roles_registers_and_async_wgmma():
    def body(out, a, b):
        role = mgpu.warpgroup_id()
        assert role.dtype == mgpu.index

        def consumer():
            mgpu.set_max_registers(232, action="increase")
            acc = mgpu.constant(0.0, "f32", (64, 128))
            acc = mgpu.wgmma(acc, a, b, async_=True)
            acc = mgpu.wgmma(acc, a, b, async_=True)
            mgpu.wgmma_wait(1)
            mgpu.wgmma_wait(0)
            mgpu.vector_store(acc, out)

        @mgpu.if_(role == 0, otherwise=consumer)
        def _():
            mgpu.set_max_registers(40, action="decrease")

    kernel = roles_kernel(body)
    text = str(kernel.module)
    assert "mosaic_gpu.warpgroup_id : index" in text
    assert re.search(r"mosaic_gpu.set_max_registers\s+decrease 40", text)
    assert re.search(r"mosaic_gpu.set_max_registers\s+increase 232", text)
    assert text.count("mosaic_gpu.wgmma async") == 2
    assert "mosaic_gpu.wgmma_wait 1" in text and "mosaic_gpu.wgmma_wait 0" in text
    assert str(mgpu.Module.parse(text)) == text
    ptx = " ".join(kernel.compile(emit="ptx").ptx.split())
    for instruction in ("setmaxnreg.dec.sync.aligned.u32 40;",
                        "setmaxnreg.inc.sync.aligned.u32 232;",
                        "wgmma.wait_group.sync.aligned 1;", "wgmma.wait_group.sync.aligned 0;"):
        assert instruction in ptx, instruction


def test_an_in_flight_result_read_before_its_wait_is_an_error_at_its_line():
    def body(out, a, b):
        acc = mgpu.wgmma(mgpu.constant(0.0, "f32", (64, 128)), a, b, async_=True)
        mgpu.vector_store(acc, out)  # no wgmma_wait

    kernel = roles_kernel(body, block=(128, 1, 1))
    with pytest.raises(mgpu.MosaicError, match="in flight") as error:
        kernel.compile(emit="ptx")
    line = body.__code__.co_firstlineno + 2
    assert error.value.diagnostics[0].location.startswith(f"{__file__}:{line}:")
    notes = error.value.diagnostics[0].notes
    issuer = [n for n in notes if n.message == "the async wgmma"]
    assert issuer and issuer[0].location.startswith(f"{__file__}:{line - 1}:")


@pytest.mark.parametrize("body, exception, message", [
    (lambda: mgpu.set_max_registers(30, action="increase"), ValueError,
     r"`count` must be a multiple of 8 in 24..256 \(setmaxnreg\), got 30"),
    (lambda: mgpu.set_max_registers(16, action="decrease"), ValueError, "got 16"),
    (lambda: mgpu.set_max_registers(264, action="increase"), ValueError, "got 264"),
    (lambda: mgpu.set_max_registers(40.0, action="decrease"), TypeError,
     "`count` must be an int, got 40.0"),
    (lambda: mgpu.set_max_registers(True, action="decrease"), TypeError, "`count` must be an int"),
    (lambda: mgpu.set_max_registers(40, action="shrink"), ValueError,
     "`action` must be 'increase' or 'decrease', got 'shrink'"),
    (lambda: mgpu.set_max_registers(40), TypeError, "action"),
    (lambda: mgpu.wgmma_wait(-1), ValueError,
     "`pending` must be a non-negative number of wgmma groups, got -1"),
    (lambda: mgpu.wgmma_wait(2 ** 31), ValueError, "got 2147483648"),
    (lambda: mgpu.wgmma_wait(1.0), TypeError, "`pending` must be an int, got 1.0"),
    (lambda: mgpu.wgmma_wait(False), TypeError, "`pending` must be an int"),
    (lambda: mgpu.async_store_wait(-1), ValueError,
     "`pending` must be a non-negative number of store groups, got -1"),
    (lambda: mgpu.async_store_wait(0.5), TypeError, "`pending` must be an int, got 0.5"),
    (lambda: mgpu.named_barrier(16, 2), ValueError,
     "`id` must be a named barrier in 1..15, got 16"),
    (lambda: mgpu.named_barrier(0, 2), ValueError, "`id` must be at least 1, got 0"),
    (lambda: mgpu.named_barrier(4, 0), ValueError, "`warpgroups` must be at least 1, got 0"),
    (lambda: mgpu.named_barrier(4, 2.0), TypeError, "`warpgroups` must be an int, got 2.0"),
])
def test_bad_arguments(body, exception, message):
    with pytest.raises(exception, match=message):
        roles_kernel(lambda out, a, b: body())


def test_async_must_be_a_bool():
    def body(out, a, b):
        mgpu.wgmma(mgpu.constant(0.0, "f32", (64, 128)), a, b, async_=1)

    with pytest.raises(TypeError, match="`async_` must be a bool, got 1"):
        roles_kernel(body)


def test_deferred_store():
    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[], outputs=[((64, 64), "bf16")],
                 smem=[mgpu.SmemBuffer((64, 64), "bf16")])
    def store(c, c_smem):
        mgpu.async_store_wait(0)
        mgpu.vector_store(mgpu.constant(1.0, "bf16", (64, 64)), c_smem)
        mgpu.async_store(c_smem, c, indices=[0, 0], defer_wait=True)
        with pytest.raises(TypeError, match="`defer_wait` must be a bool, got 1"):
            mgpu.async_store(c_smem, c, indices=[0, 0], defer_wait=1)

    text = str(store.module)
    assert "mosaic_gpu.async_store_wait 0" in text
    assert re.search(r"mosaic_gpu.async_store %\w+ to .* \{defer_wait\}", text)
    ptx = mgpu.compile(store.module, emit="ptx")
    # The exit waits for the deferred store.
    assert re.search(r"cp.async.bulk.wait_group\s+0;\s+ret;", ptx.ptx)


def test_named_barrier():
    @mgpu.kernel(grid=(1, 1, 1), block=(384, 1, 1), inputs=[], outputs=[])
    def meet():
        mgpu.named_barrier(4, 2)

    assert "mosaic_gpu.named_barrier 4, warpgroups = 2" in str(meet.module)
    assert re.search(r"bar\.sync\s+4, 256;", mgpu.compile(meet.module, emit="ptx").ptx)


def test_the_ops_need_a_kernel():
    for call in (mgpu.warpgroup_id, lambda: mgpu.set_max_registers(40, action="decrease"),
                 lambda: mgpu.wgmma_wait(0)):
        with pytest.raises(RuntimeError, match="inside a @mosaic_gpu.kernel"):
            call()


def test_collective_arrive():
    @mgpu.kernel(grid=(2, 1, 1), block=(128, 1, 1), cluster=(2, 1, 1), inputs=[], outputs=[],
                 smem=[mgpu.Barriers(1, arrival_count=2)])
    def release(bars):
        mgpu.arrive(bars[0], collective="x")
        mgpu.arrive(bars[0], collective=("x",))
        mgpu.arrive(bars[0])
        with pytest.raises(ValueError, match="`collective` must be 'x', 'y' or 'z', got 'w'"):
            mgpu.arrive(bars[0], collective="w")

    text = str(release.module)
    assert len(re.findall(r"mosaic_gpu.arrive %\w+ \{collective = \[#mosaic_gpu.dim<x>\]\}",
                          text)) == 2
    assert len(re.findall(r"mosaic_gpu.arrive %\w+ :", text)) == 1
    mgpu.compile(release.module, emit="ptx")


def test_transposed_views():
    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((128, 64), "f32")], outputs=[],
                 smem=[mgpu.SmemBuffer((3, 128, 64), "bf16"), mgpu.Barriers(2)])
    def views(x, ring, bars):
        t = x.T
        assert t.shape == (64, 128) and t.strides == (1, 64) and t.offset == 0
        stage = ring[mgpu.block_id() % 3].T
        assert stage.shape == (64, 128) and stage.strides == (1, 64) and stage.offset is None
        r = mgpu.transpose(ring, (0, 2, 1))
        assert r.shape == (3, 64, 128) and r.strides == (8192, 1, 64) and r.smem
        assert r[1].offset == 8192
        with pytest.raises(ValueError, match=r"`permutation` \(0, 0\) must hold each dim"):
            mgpu.transpose(x, (0, 0))
        with pytest.raises(ValueError, match="`.T` is the transpose of a matrix"):
            ring.T
        with pytest.raises(TypeError, match="barriers cannot be transposed"):
            mgpu.transpose(bars, (0,))

    text = str(views.module)
    assert ("memref.transpose %arg0 (d0, d1) -> (d1, d0) : memref<128x64xf32> to "
            "memref<64x128xf32, strided<[1, 64]>>") in text
    assert "to memref<3x64x128xbf16, strided<[8192, 1, 64]>, #gpu.address_space<workgroup>>" in text


def test_fp8_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert mgpu.f8e4m3fn.name == "f8E4M3FN" and mgpu.f8e5m2.name == "f8E5M2"
    assert mgpu.f8e4m3fn.itemsize == 1 and mgpu.f8e4m3fn.is_float
    assert mgpu.f8e4m3fn.numpy == ml_dtypes.float8_e4m3fn
    assert mgpu.f8e5m2.numpy == ml_dtypes.float8_e5m2

    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((64, 128), mgpu.f8e4m3fn)],
                 outputs=[((64, 128), "f8E5M2")])
    def fp8(x, y):
        pass

    assert "memref<64x128xf8E4M3FN>, %arg1: memref<64x128xf8E5M2>" in str(fp8.module)


def test_scratch_must_fit_shared_memory():
    assert mgpu.MAX_SMEM_BYTES == 227 * 1024
    entries = [mgpu.SmemBuffer((4, 128, 256), "bf16"), mgpu.Barriers(4)]
    assert mgpu.smem_bytes(entries) == 4 * 128 * 256 * 2 + 32
    with pytest.raises(ValueError, match=r"`smem` takes 262176 bytes of shared memory, laid out "
                                         r"1024-byte aligned; an sm_90a block has 232448"):
        mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[], outputs=[], smem=entries)


HERE = ("kernel.py", 3, 1)


@pytest.mark.parametrize("call, exception, message", [
    (lambda b, x: b.set_max_registers(HERE, _mosaic.RegisterAction(5), 40), ValueError,
     "`action` is 5, not one of its enum's values"),
    (lambda b, x: b.set_max_registers(HERE, _mosaic.RegisterAction.increase, 30),
     mgpu.MosaicError, "asks for 30 registers per thread; setmaxnreg takes a multiple of 8"),
    (lambda b, x: b.wgmma_wait(HERE, 2 ** 31), mgpu.MosaicError, "whose value is non-negative"),
    (lambda b, x: b.transpose(HERE, x, [0, 0]), ValueError,
     "`permutation` must hold each dim of `ref` once"),
    (lambda b, x: b.transpose(HERE, x, [1]), ValueError, "must hold each dim"),
    (lambda b, x: b.transpose(HERE, b.warpgroup_id(HERE), [0]), TypeError,
     "`ref` must be a memref"),
])
def test_bad_inputs_of_the_typed_builders(call, exception, message):
    E = _mosaic.ElementType
    builder = _mosaic.KernelBuilder.start("k", [([128, 64], E.f32)], (1, 1, 1), (128, 1, 1),
                                          (1, 1, 1), "kernel.py", 1)
    with pytest.raises(exception, match=message):
        call(builder, builder.arguments()[0])
