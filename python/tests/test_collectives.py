"""Kernels that span devices: symmetric arguments, device_id/device_count,
remote_ref and the semaphores, built and compiled (launching them on
several devices is the runtime's; see docs/RationaleMultiDevice.md)."""
import json

import pytest

import mosaic_gpu as mgpu

SHAPE = (128, 64)


def ring_kernel():
    """Each device sends its `x` to the next device's `y`, by vector stores
    and by TMA, then signals the next device and waits for the previous."""

    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1),
                 inputs=[(SHAPE, "f32")], outputs=[(SHAPE, "f32"), (SHAPE, "f32"), ((4,), "i32")],
                 smem=[mgpu.SmemBuffer(SHAPE, "f32"), mgpu.Barriers(count=1)],
                 symmetric=[0, 1, 3])
    def ring(x, y, out, sems, tile, barriers):
        me = mgpu.device_id()
        nxt = (me + 1) % mgpu.device_count()
        mgpu.vector_store(mgpu.vector_load(x), mgpu.remote_ref(y, nxt))
        mgpu.arrive_expect_tx(barriers[0], SHAPE[0] * SHAPE[1] * 4)
        mgpu.async_load(x.remote(nxt), tile, barriers[0], indices=[0, 0])
        mgpu.wait(barriers[0], parity=False)
        mgpu.async_store(tile, out, indices=[0, 0])
        mgpu.async_store(tile, y.remote(nxt), indices=[0, 0])
        mgpu.semaphore_signal(sems, 0, device=nxt)
        mgpu.semaphore_signal(sems.remote(nxt), 1, value=2)
        mgpu.semaphore_wait(sems, 0)
        mgpu.semaphore_wait(sems, [1], count=2)

    return ring


def test_builds_the_ops():
    text = str(ring_kernel().module)
    assert "{mosaic_gpu.symmetric}" in text
    assert text.count("{mosaic_gpu.symmetric}") == 3
    assert "mosaic_gpu.device_id : i32" in text
    assert "mosaic_gpu.device_count : i32" in text
    assert text.count("mosaic_gpu.remote_ref") == 4
    assert "mosaic_gpu.semaphore_signal" in text and " on " in text
    assert text.count("mosaic_gpu.semaphore_wait") == 2


def test_compiles_to_ptx():
    ptx = ring_kernel().compile(emit="ptx").ptx
    assert "red.release.sys.global.add.u32" in ptx
    assert "ld.acquire.sys.global.u32" in ptx
    assert "red.relaxed.sys.global.add.u32" in ptx
    assert "cp.async.bulk.tensor" in ptx


def test_manifest_lists_the_collective_table(ptxas):
    manifest = ring_kernel().compile().manifest
    if isinstance(manifest, str):
        manifest = json.loads(manifest)
    parameters = manifest["parameters"]
    # Four buffers, the map of the local store, then the table.
    assert [p["kind"] for p in parameters] == ["buffer"] * 4 + ["tensor_map", "collective"]
    assert [p.get("symmetric", False) for p in parameters[:4]] == [True, True, False, True]
    maps = manifest["tensor_maps"]
    assert [m.get("peer", False) for m in maps] == [True, False, True]
    assert [m["parameter"] for m in maps] == [5, 4, 5]
    assert [m["buffer"] for m in maps] == [0, 2, 1]


def build(body, symmetric=[0], outputs=((4,), "i32")):
    """A one-argument kernel whose body is `body(ref)`."""

    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[], outputs=[outputs],
                 symmetric=symmetric)
    def k(ref):
        body(ref)

    return k


@pytest.mark.parametrize("symmetric, error, message", [
    ((1,), ValueError, r"`symmetric` names argument 1, but the kernel has 1"),
    ((0, 0), ValueError, r"`symmetric` names argument 0 twice"),
    (("0",), TypeError, r"`symmetric` must hold ints"),
    (0, TypeError, r"`symmetric` must be a list"),
])
def test_bad_symmetric(symmetric, error, message):
    with pytest.raises(error, match=message):
        build(lambda ref: None, symmetric=symmetric)


@pytest.mark.parametrize("body, error, message", [
    (lambda r: mgpu.remote_ref(r, 0), ValueError, r"`ref` must be a kernel argument marked symmetric"),
    (lambda r: mgpu.semaphore_wait(r, 0), ValueError, r"`sems` must be a kernel argument marked symmetric"),
])
def test_not_symmetric(body, error, message):
    with pytest.raises(error, match=message):
        build(body, symmetric=[])


@pytest.mark.parametrize("body, error, message", [
    (lambda r: r.remote(0).remote(1), ValueError, r"`ref` is already a remote view"),
    (lambda r: r[0:2].remote(0), ValueError, r"`ref` must be a kernel argument marked symmetric"),
    (lambda r: mgpu.remote_ref(r, 1.5), TypeError, r"`device` must be an int or an i32/index Scalar"),
    (lambda r: mgpu.remote_ref(r, 2 ** 40), ValueError, r"`device` must fit in an i32"),
    (lambda r: mgpu.remote_ref("x", 0), TypeError, r"`ref`"),
    (lambda r: mgpu.semaphore_wait(r.remote(1), 0), ValueError,
     r"`sems` is a remote view; a device waits on its own semaphores only"),
    (lambda r: mgpu.semaphore_signal(r.remote(1), 0, device=1), ValueError,
     r"`device` is given, but `sems` is already a remote view"),
    (lambda r: mgpu.semaphore_signal(r, (0, 1)), ValueError,
     r"`index` has 2 entries for the rank-1 `sems`"),
    (lambda r: mgpu.semaphore_signal(r, 0, value="one"), TypeError, r"`value` must be an int"),
    (lambda r: mgpu.semaphore_wait(r, 0, count=mgpu.constant(1.0, "f32")), TypeError,
     r"`count` must be an int or an i32/index Scalar"),
    (lambda r: mgpu.semaphore_wait(r, "0"), TypeError, r"`index` must be an int"),
])
def test_bad_arguments(body, error, message):
    with pytest.raises(error, match=message):
        build(body)


def test_semaphores_must_be_i32():
    with pytest.raises(TypeError, match=r"`sems` must hold i32 semaphores, but it holds f32"):
        build(lambda r: mgpu.semaphore_signal(r, 0), outputs=((4,), "f32"))


def test_device_scalars_are_i32():
    seen = {}

    def body(ref):
        seen["id"], seen["count"] = mgpu.device_id(), mgpu.device_count()
        mgpu.semaphore_signal(ref, mgpu.device_id(), device=mgpu.constant(0, "index"))

    build(body)
    assert seen["id"].dtype == mgpu.i32 and seen["count"].dtype == mgpu.i32
