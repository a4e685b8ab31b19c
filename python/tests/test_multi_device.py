"""Kernels that span devices from Python (mosaic_gpu.multi_device): argument
checks, and on the emulator (several devices, each test in a process of its
own, since the emulator's device count is fixed when it loads) symmetric
arrays, a ring through peers in one process and across processes, the
collective table a kernel sees, and launches from raw peer pointers (the
PyTorch adapter's path). The PyTorch handle itself is tested where torch is
installed."""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import mosaic_gpu as mgpu

from conftest import emulator_available

# Device d stores d + 1 at index d of the next device's buffer through the
# collective table's peers[0][(d + 1) % D]; dump_table copies its table out.
PTX = r""".version 8.0
.target sm_90a
.address_size 64

.visible .entry ring(.param .u64 buf, .param .u64 table)
{
  .reg .pred %p1;
  .reg .b32 %r<6>;
  .reg .b64 %rd<7>;
  mov.u32 %r1, %tid.x;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
  ld.param.u64 %rd1, [table];
  cvta.to.global.u64 %rd1, %rd1;
  ld.global.u32 %r2, [%rd1];
  ld.global.u32 %r3, [%rd1+4];
  add.u32 %r4, %r2, 1;
  rem.u32 %r4, %r4, %r3;
  mul.wide.u32 %rd2, %r4, 8;
  add.u64 %rd3, %rd1, %rd2;
  ld.global.u64 %rd4, [%rd3+16];
  cvta.to.global.u64 %rd4, %rd4;
  mul.wide.u32 %rd5, %r2, 4;
  add.u64 %rd6, %rd4, %rd5;
  add.u32 %r5, %r2, 1;
  st.global.u32 [%rd6], %r5;
DONE:
  ret;
}

.visible .entry dump_table(.param .u64 out, .param .u64 sym, .param .u64 table)
{
  .reg .b32 %r<3>;
  .reg .b64 %rd<6>;
  ld.param.u64 %rd1, [out];
  ld.param.u64 %rd2, [table];
  cvta.to.global.u64 %rd1, %rd1;
  cvta.to.global.u64 %rd2, %rd2;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  add.u64 %rd4, %rd2, %rd3;
  add.u64 %rd5, %rd1, %rd3;
  ld.global.u32 %r2, [%rd4];
  st.global.u32 [%rd5], %r2;
  ret;
}
"""

RING = {
    "arch": "sm_90a", "block": [32, 1, 1], "cluster": [1, 1, 1], "cubin": "collective.ptx",
    "dynamic_smem_bytes": 0, "entry": "ring", "grid": [1, 1, 1],
    "parameters": [
        {"alignment": 16, "element_type": "i32", "index": 0, "kind": "buffer", "shape": [8],
         "symmetric": True},
        {"index": 1, "kind": "collective"}],
    "tensor_maps": []}

# A plain i32 output of 128 words (a table of three devices) and a
# symmetric f32 buffer with a peer tensor map.
DUMP = {
    "arch": "sm_90a", "block": [128, 1, 1], "cluster": [1, 1, 1], "cubin": "collective.ptx",
    "dynamic_smem_bytes": 0, "entry": "dump_table", "grid": [1, 1, 1],
    "parameters": [
        {"alignment": 16, "element_type": "i32", "index": 0, "kind": "buffer", "shape": [128]},
        {"alignment": 16, "element_type": "f32", "index": 1, "kind": "buffer",
         "shape": [256, 32], "symmetric": True},
        {"index": 2, "kind": "collective"}],
    "tensor_maps": [
        {"index": 0, "parameter": 2, "buffer": 1, "element_type": "f32", "rank": 2,
         "global_dims": [32, 256], "global_strides": [128], "box_dims": [32, 64],
         "element_strides": [1, 1], "swizzle": 128, "interleave": "none",
         "l2_promotion": "128B", "oob_fill": "none", "peer": True}]}


@pytest.fixture
def kernels(tmp_path):
    """The ring and dump_table manifests."""
    (tmp_path / "collective.ptx").write_text(PTX)
    for name, manifest in (("ring", RING), ("dump", DUMP)):
        (tmp_path / f"{name}.json").write_text(json.dumps(manifest))
    return tmp_path


needs_emulator = pytest.mark.skipif(not emulator_available(),
                                    reason="this build has no emulator")


def run(script, devices=4, **env):
    """Runs ``script`` in a new process on the emulator with ``devices``
    devices; returns what it printed as JSON."""
    environment = dict(os.environ, MOSAIC_EMULATOR_DEVICES=str(devices),
                       MOSAIC_GPU_BACKEND="emulator", **env)
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=environment,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_argument_errors():
    with pytest.raises(TypeError, match=r"`count` must be an int, got '2'"):
        mgpu.Devices("2")
    with pytest.raises(ValueError, match=r"`count` must be at least 1, got 0"):
        mgpu.Devices(0)
    with pytest.raises(ValueError, match=r"backend must be 'cuda' or 'emulator', got 'tpu'"):
        mgpu.Devices(2, backend="tpu")
    with pytest.raises(ValueError, match=r"`rank` is 2, but `world_size` is 2"):
        mgpu.ProcessGroup(2, 2, 0, "/tmp/x.sock")
    with pytest.raises(TypeError, match=r"`pointers` must be a non-empty list of ints"):
        mgpu.PeerPointers([], (8,), "i32")
    with pytest.raises(ValueError, match=r"`pointers` must be non-null 64-bit addresses"):
        mgpu.PeerPointers([0, 256], (8,), "i32")
    with pytest.raises(ValueError, match=r"`shape` must have positive dimensions, got \(8, 0\)"):
        mgpu.PeerPointers([256, 512], (8, 0), "i32")
    with pytest.raises(ValueError, match=r"`dtype`: unknown dtype 'int32'"):
        mgpu.PeerPointers([256, 512], (8,), "int32")
    with pytest.raises(TypeError, match=r"`handle` has no `buffer_ptrs`"):
        mgpu.PeerPointers.from_torch(object(), (8,), "i32")


def test_from_environment_names_the_missing_variable(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(RuntimeError, match=r"the multi-process form needs RANK"):
        mgpu.ProcessGroup.from_environment()


def test_peer_pointers_from_a_handle_like_torchs():
    """The adapter reads buffer_ptrs or signal_pad_ptrs, as PyTorch's
    _SymmetricMemory handle has them."""
    class Handle:
        buffer_ptrs = [0x7f0000000000, 0x7f0000200000]
        signal_pad_ptrs = [0x7f1000000000, 0x7f1000200000]
    buffers = mgpu.PeerPointers.from_torch(Handle(), (1024,), "bf16")
    assert buffers.pointers == Handle.buffer_ptrs and buffers.shape == (1024,)
    pads = mgpu.PeerPointers.from_torch(Handle(), (64,), "i32", signal_pad=True)
    assert pads.pointers == Handle.signal_pad_ptrs and pads.dtype == "i32"


def test_torch_symmetric_memory():
    """A real handle, where torch with symmetric memory is installed (it is
    not on the build machine): the same attributes."""
    torch = pytest.importorskip("torch")
    symm = pytest.importorskip("torch.distributed._symmetric_memory")
    if not torch.cuda.is_available() or not torch.distributed.is_initialized():
        pytest.skip("needs CUDA and an initialized process group (torchrun)")
    tensor = symm.empty(1024, dtype=torch.int32, device="cuda")
    handle = symm.rendezvous(tensor, torch.distributed.group.WORLD.group_name)
    peers = mgpu.PeerPointers.from_torch(handle, (1024,), "i32")
    assert len(peers.pointers) == torch.distributed.get_world_size()


@needs_emulator
def test_ring_in_one_process(kernels):
    result = run(f"""
        import json, numpy as np, mosaic_gpu as mgpu
        devs = mgpu.Devices(3, backend="emulator")
        buf = devs.symmetric((8,), "i32")
        for d in devs.local_devices:
            buf.upload(d, np.zeros(8, np.int32))
        devs.launch("{kernels / 'ring.json'}", [[buf] for _ in range(3)])
        rows = [buf.download(d).tolist() for d in range(3)]
        offsets = [p - buf.pointers[0] for p in buf.pointers]
        print(json.dumps({{"rows": rows, "count": devs.device_count, "offsets": offsets}}))
    """)
    assert result["count"] == 3
    assert result["rows"] == [[0, 0, 3, 0, 0, 0, 0, 0], [1, 0, 0, 0, 0, 0, 0, 0],
                              [0, 2, 0, 0, 0, 0, 0, 0]]
    # The same offset in allocations of one size, side by side.
    assert result["offsets"][2] == 2 * result["offsets"][1] > 0


@needs_emulator
def test_each_device_sees_its_table(kernels):
    """dump_table copies the collective table out: id, count, the peers
    (the symmetric array's pointers) and the 128-byte aligned maps."""
    result = run(f"""
        import json, numpy as np, mosaic_gpu as mgpu
        devs = mgpu.Devices(3, backend="emulator")
        sym = devs.symmetric((256, 32), "f32")
        outs = [np.zeros(128, np.int32) for _ in range(3)]
        devs.launch("{kernels / 'dump.json'}", [[outs[d], sym] for d in range(3)])
        print(json.dumps({{"tables": [o.view(np.uint32).tolist() for o in outs],
                           "pointers": sym.pointers}}))
    """)
    # 16 + 3 * 8 bytes, the maps at 128: 512 bytes, the 128 words dumped.
    for d, words in enumerate(result["tables"]):
        assert words[:4] == [d, 3, 1, 128]
        peers = [words[4 + 2 * q] | words[5 + 2 * q] << 32 for q in range(3)]
        assert peers == result["pointers"]
        assert words[10:32] == [0] * 22  # padding up to the maps
        for q in range(3):  # one encoded map per device
            assert any(words[32 + 32 * q:64 + 32 * q])


@needs_emulator
def test_launch_errors(kernels):
    result = run(f"""
        import json, numpy as np, mosaic_gpu as mgpu
        devs = mgpu.Devices(2, backend="emulator")
        buf = devs.symmetric((8,), "i32")
        errors = []
        def attempt(call):
            try:
                call()
            except (TypeError, ValueError, RuntimeError) as error:
                errors.append(type(error).__name__ + ": " + str(error))
        ring = "{kernels / 'ring.json'}"
        attempt(lambda: devs.launch(ring, [[np.zeros(8, np.int32)], [buf]]))
        attempt(lambda: devs.launch(ring, [[buf]]))
        attempt(lambda: devs.launch(ring, [[devs.symmetric((8,), "f32")], [buf]]))
        attempt(lambda: devs.launch(ring, [[devs.symmetric((4,), "i32")], [buf]]))
        attempt(lambda: devs.launch(ring, [[buf], [devs.symmetric((8,), "i32")]]))
        attempt(lambda: buf.upload(0, np.zeros(4, np.int32)))
        attempt(lambda: buf.upload(2, np.zeros(8, np.int32)))
        attempt(lambda: mgpu.Devices(5, backend="emulator"))
        attempt(lambda: mgpu.launch_with_peers(ring, [np.zeros(8, np.int32)], device_id=0,
                                               backend="emulator"))
        print(json.dumps(errors))
    """)
    assert result == [
        "ValueError: `per_device_args[0][0]`: parameter 0 of `ring` is symmetric; pass an "
        "array from Devices.symmetric",
        "TypeError: `per_device_args` must hold one list of arrays per local device (2), got "
        f"[[<SymmetricArray i32 (8,) on 2 devices>]]",
        "TypeError: `per_device_args[0][0]` has dtype f32, parameter 0 is i32",
        "ValueError: `per_device_args[0][0]` has shape (4,), parameter 0 is (8,)",
        "RuntimeError: device 1 (Mosaic PTX emulator (sm_90a)): parameter 0 is another "
        "symmetric buffer than device 0 (Mosaic PTX emulator (sm_90a)) passes: every device "
        "passes the same one",
        "ValueError: `array` has shape (4,), the symmetric array (8,)",
        "ValueError: `device` is 2, but there are 2 devices",
        "ValueError: `count` is 5, but the emulator driver reports 4 devices (set "
        "MOSAIC_EMULATOR_DEVICES)",
        "ValueError: `arrays[0]`: parameter 0 of `ring` is symmetric; pass PeerPointers "
        "(e.g. PeerPointers.from_torch)",
    ]


@needs_emulator
def test_launch_with_raw_peer_pointers(kernels):
    """The PyTorch adapter's path: device 0 of 2 from plain pointers (both
    allocations of device 0 here, standing in for two devices' copies)."""
    result = run(f"""
        import json, numpy as np, mosaic_gpu as mgpu
        from mosaic_gpu import _mosaic
        copies = [_mosaic.DeviceMemory(32, "emulator") for _ in range(2)]
        for copy in copies:
            copy.upload(np.zeros(8, np.int32).view(np.uint8))
        peers = mgpu.PeerPointers([c.pointer for c in copies], (8,), "i32")
        mgpu.launch_with_peers("{kernels / 'ring.json'}", [peers], device_id=0, device=0,
                               backend="emulator")
        rows = []
        for copy in copies:
            row = np.zeros(8, np.int32)
            copy.download(row.view(np.uint8))
            rows.append(row.tolist())
        print(json.dumps(rows))
    """, devices=1)
    assert result == [[0] * 8, [1, 0, 0, 0, 0, 0, 0, 0]]


@needs_emulator
def test_ring_across_processes(kernels, tmp_path):
    """One process per device with torchrun's variables: the allocations go
    over the rendezvous as file descriptors."""
    script = textwrap.dedent(f"""
        import json, numpy as np, mosaic_gpu as mgpu
        pg = mgpu.ProcessGroup.from_environment(backend="emulator")
        buf = pg.symmetric((8,), "i32")
        buf.zero()
        pg.barrier()
        pg.launch("{kernels / 'ring.json'}", [[buf]])
        pg.barrier()
        print(json.dumps({{"rank": pg.rank, "row": buf.download(pg.rank).tolist(),
                           "local": pg.local_devices}}))
    """)
    processes = []
    for rank in range(3):
        env = dict(os.environ, MOSAIC_EMULATOR_DEVICES="3", MOSAIC_GPU_BACKEND="emulator",
                   RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE="3",
                   LOCAL_WORLD_SIZE="3", MASTER_PORT=str(40000 + os.getpid() % 20000),
                   TMPDIR=str(tmp_path), MOSAIC_GPU_RENDEZVOUS_TIMEOUT="120")
        processes.append(subprocess.Popen([sys.executable, "-c", script], env=env,
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True))
    rows = {}
    for process in processes:
        out, err = process.communicate(timeout=300)
        assert process.returncode == 0, err
        record = json.loads(out.strip().splitlines()[-1])
        rows[record["rank"]] = record["row"]
        assert record["local"] == [record["rank"]]
    assert rows == {0: [0, 0, 3, 0, 0, 0, 0, 0], 1: [1, 0, 0, 0, 0, 0, 0, 0],
                    2: [0, 2, 0, 0, 0, 0, 0, 0]}


@needs_emulator
def test_a_python_kernel_on_every_device(ptxas, tmp_path):
    """An mgpu.Kernel is compiled once and launched on each device, with
    NumPy arrays copied to that device and back."""
    result = run("""
        import json, numpy as np, mosaic_gpu as mgpu

        @mgpu.kernel(grid=(4, 1, 1), block=(128, 1, 1),
                     inputs=[((256, 128), "f32")], outputs=[((256, 128), "f32")])
        def double(x, out):
            rows = mgpu.ds(mgpu.block_id("x") * 64, 64)
            mgpu.vector_store(mgpu.vector_load(x[rows, :]) * 2.0, out[rows, :])

        devs = mgpu.Devices(2, backend="emulator")
        xs = [np.full((256, 128), d + 1, np.float32) for d in range(2)]
        outs = [np.zeros((256, 128), np.float32) for _ in range(2)]
        devs.launch(double, [[xs[d], outs[d]] for d in range(2)])
        print(json.dumps([float(o.min()) for o in outs] + [float(o.max()) for o in outs]))
    """, MOSAIC_GPU_CACHE_DIR=str(tmp_path))
    assert result == [2.0, 4.0, 2.0, 4.0]
