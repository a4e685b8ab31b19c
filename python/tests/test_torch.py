"""Real PyTorch tensors (CPU) through a launch on the emulator: inputs read
and outputs written in place through DLPack, returned outputs made as
tensors, bf16 included. Skipped where PyTorch is not installed (CI installs
only NumPy; test_interop.py covers the same paths, CUDA tensors and streams
included, with a stand-in for PyTorch and the fake driver)."""
import pytest

import mosaic_gpu as mgpu
from conftest import needs_emulator

torch = pytest.importorskip("torch")


def doubling(dtype):
    @mgpu.kernel(grid=(2, 1, 1), block=(128, 1, 1), inputs=[((128, 64), dtype)],
                 outputs=[((128, 64), dtype)])
    def double(x, out):
        rows = mgpu.ds(mgpu.block_id("x") * 64, 64)
        mgpu.vector_store(mgpu.vector_load(x[rows, :]) * 2.0, out[rows, :])
    return double


@needs_emulator
@pytest.mark.parametrize("dtype, torch_dtype", [("f32", torch.float32),
                                                ("bf16", torch.bfloat16)])
def test_cpu_tensors_in_and_out(dtype, torch_dtype, tmp_path, monkeypatch):
    monkeypatch.setenv("MOSAIC_GPU_CACHE_DIR", str(tmp_path))
    kernel = doubling(dtype)
    x = torch.randn(128, 64).to(torch_dtype)
    made = kernel.launch(x, backend="emulator")
    assert isinstance(made, torch.Tensor) and made.dtype == torch_dtype
    assert made.shape == (128, 64) and made.device.type == "cpu"
    assert torch.equal(made, x * 2)
    # An output given by the caller is written in place: same storage.
    out = torch.full((128, 64), float("nan"), dtype=torch_dtype)
    address = out.data_ptr()
    kernel.launch(x, out, backend="emulator")
    assert out.data_ptr() == address and torch.equal(out, x * 2)


@needs_emulator
def test_a_transposed_view_is_read_by_its_strides(tmp_path, monkeypatch):
    monkeypatch.setenv("MOSAIC_GPU_CACHE_DIR", str(tmp_path))
    x = torch.randn(64, 128).t()  # (128, 64), column-major
    assert torch.equal(doubling("f32").launch(x, backend="emulator"), x * 2)


def test_a_wrong_dtype_names_the_argument():
    kernel = doubling("f32")
    with pytest.raises(TypeError, match="input 0 has dtype f64, the kernel expects f32"):
        kernel.launch(torch.zeros(128, 64, dtype=torch.float64), backend="emulator")
