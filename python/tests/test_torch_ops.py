"""mosaic_gpu.to_torch: kernels as PyTorch operators. CPU tensors run on the
PTX emulator, so everything here runs without a GPU; the tests skip where
PyTorch is not installed (CI does not install it), but for the one that
checks the error without it."""
import runpy
import sys

import numpy as np
import pytest

import mosaic_gpu as mgpu
from conftest import REPO, needs_emulator, sum_and_product

EXAMPLES = REPO / "python" / "examples"


def test_without_pytorch_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"needs PyTorch \(pip install torch"):
        mgpu.to_torch(sum_and_product, "unused")


try:
    import torch
except ImportError:
    torch = None
needs_torch = pytest.mark.skipif(torch is None, reason="PyTorch is not installed")


@pytest.fixture(scope="module")
def ops():
    """Each kernel registered once per process: PyTorch keeps operators
    for the life of the process."""
    layer_norm = runpy.run_path(str(EXAMPLES / "layer_norm.py"))["layer_norm"]
    return {
        "sum_and_product": mgpu.to_torch(sum_and_product, "test_sum_and_product"),
        "layer_norm": mgpu.to_torch(layer_norm, "test_layer_norm", outputs=1),
        "layer_norm_list": mgpu.to_torch(layer_norm, "test_layer_norm_list"),
    }


def layer_norm_inputs(rows=64, columns=128, seed=0):
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(rows, columns, generator=generator),
            torch.randn(columns, generator=generator), torch.randn(columns, generator=generator))


@needs_torch
@needs_emulator
def test_a_fixed_kernel_runs_on_cpu_tensors(ops):
    x, y = torch.randn(1024), torch.randn(1024)
    total, product = ops["sum_and_product"](x, y)
    assert isinstance(total, torch.Tensor) and total.device.type == "cpu"
    torch.testing.assert_close(total, x + y)
    torch.testing.assert_close(product, x * y)
    # Non-contiguous inputs are made contiguous.
    wide = torch.randn(1024, 2)
    total, _ = ops["sum_and_product"](wide[:, 0], y)
    torch.testing.assert_close(total, wide[:, 0] + y)
    # A parameter (it requires a gradient) where autograd is off, as in an
    # autograd.Function: DLPack would refuse it undetached.
    weight = torch.nn.Parameter(torch.randn(1024))
    with torch.no_grad():
        total, _ = ops["sum_and_product"](weight, y)
    torch.testing.assert_close(total, weight.detach() + y)


@needs_torch
@needs_emulator
def test_a_generic_kernel_matches_pytorch(ops):
    x, gamma, beta = layer_norm_inputs(rows=128)
    y = ops["layer_norm"](x, gamma, beta)
    reference = torch.nn.functional.layer_norm(x.double(), (128,), gamma.double(),
                                               beta.double(), eps=1e-5)
    assert y.shape == x.shape and y.dtype == torch.float32
    np.testing.assert_allclose(y.numpy(), reference.numpy(), atol=2e-5, rtol=2e-5)
    listed = ops["layer_norm_list"](x, gamma, beta)
    assert isinstance(listed, list) and len(listed) == 1
    torch.testing.assert_close(listed[0], y)


@needs_torch
@needs_emulator
@pytest.mark.parametrize("backend", ["aot_eager", "inductor"])
def test_torch_compile_traces_through_without_a_graph_break(ops, backend):
    """Inductor (PyTorch's default) fuses the operations around the
    operator into C++ kernels of its own, from the fake implementation's
    shapes and strides."""
    x, gamma, beta = layer_norm_inputs()

    def model(x, gamma, beta):
        return torch.relu(ops["layer_norm"](x, gamma, beta)) * 2.0 + x

    compiled = torch.compile(model, backend=backend, fullgraph=True)
    torch.testing.assert_close(compiled(x, gamma, beta), model(x, gamma, beta))
    explanation = torch._dynamo.explain(model)(x, gamma, beta)
    assert explanation.graph_break_count == 0


@needs_torch
@needs_emulator
def test_the_registration_passes_pytorchs_checks(ops):
    x, gamma, beta = layer_norm_inputs()
    torch.library.opcheck(ops["layer_norm"], (x, gamma, beta),
                          test_utils=("test_schema", "test_faketensor",
                                      "test_aot_dispatch_static"))


@needs_torch
def test_the_fake_implementation_gives_shapes_without_running(ops):
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        x, gamma, beta = torch.empty(192, 64), torch.empty(64), torch.empty(64)
        y = ops["layer_norm"](x, gamma, beta)
        total, product = ops["sum_and_product"](torch.empty(1024), torch.empty(1024))
    assert tuple(y.shape) == (192, 64) and y.dtype == torch.float32
    assert tuple(total.shape) == (1024,) and tuple(product.shape) == (1024,)


@needs_torch
def test_mismatched_inputs_raise_the_launchers_errors(ops):
    with pytest.raises(ValueError, match=r"input 1 has shape \(512,\), the kernel expects "
                                         r"\(1024,\)"):
        ops["sum_and_product"](torch.randn(1024), torch.randn(512))
    with pytest.raises(TypeError, match=r"input 0 has dtype f16, the kernel expects f32"):
        ops["sum_and_product"](torch.randn(1024).half(), torch.randn(1024))
    with pytest.raises(TypeError, match=r"input 0 has dtype torch.complex64, which mosaic_gpu "
                                        r"kernels do not take"):
        ops["sum_and_product"](torch.randn(1024, dtype=torch.complex64), torch.randn(1024))
    # A generic kernel's own checks, with the signature named, while tracing.
    x, gamma, beta = layer_norm_inputs(rows=100)

    def model(x, gamma, beta):
        return ops["layer_norm"](x, gamma, beta)

    with pytest.raises(Exception, match=r"dim 0 \(100\) is not a multiple of the kernel's "
                                        r"tile \(64\)"):
        torch.compile(model, backend="aot_eager", fullgraph=True)(x, gamma, beta)


@needs_torch
def test_bad_registrations_are_refused(ops):
    with pytest.raises(TypeError, match="takes a mosaic_gpu Kernel or @jit kernel, got function"):
        mgpu.to_torch(lambda x: x, "not_a_kernel")
    with pytest.raises(ValueError, match="must be a Python identifier, got 'two words'"):
        mgpu.to_torch(sum_and_product, "two words")
    with pytest.raises(ValueError, match="test_sum_and_product is already registered"):
        mgpu.to_torch(sum_and_product, "test_sum_and_product")
    with pytest.raises(ValueError, match="sum_and_product has 2 outputs, not 1"):
        mgpu.to_torch(sum_and_product, "wrong_outputs", outputs=1)
    with pytest.raises(ValueError, match="`outputs` must be a positive int, got 0"):
        mgpu.to_torch(sum_and_product, "zero_outputs", outputs=0)


@needs_torch
@needs_emulator
def test_attention_trains_under_torch_compile():
    """The attention operators (forward, and backward through autograd)
    trace into one graph and give what eager mode gives."""
    from mosaic_gpu.attention import attention
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 128, 2, 64, generator=generator).half().requires_grad_()
               for _ in range(3))

    def loss(q, k, v):
        return attention(q, k, v, causal=True).float().square().sum()

    compiled = torch.compile(loss, backend="aot_eager", fullgraph=True)
    compiled(q, k, v).backward()
    traced = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    loss(q, k, v).backward()
    for gradient, t in zip(traced, (q, k, v)):
        torch.testing.assert_close(gradient, t.grad)
    explanation = torch._dynamo.explain(loss)(q, k, v)
    assert explanation.graph_break_count == 0
    # Against PyTorch's own attention, in float64.
    reference = torch.nn.functional.scaled_dot_product_attention(
        *(t.detach().double().transpose(1, 2) for t in (q, k, v)), is_causal=True)
    torch.testing.assert_close(attention(q, k, v, causal=True).double(),
                               reference.transpose(1, 2), atol=2e-3, rtol=2e-3)


@needs_torch
def test_the_attention_operators_trace_with_fake_tensors():
    from torch._subclasses.fake_tensor import FakeTensorMode
    from mosaic_gpu.attention import functions
    forward, backward = functions._torch_ops()
    with FakeTensorMode():
        q = torch.empty(2, 256, 4, 128, dtype=torch.bfloat16)
        k = torch.empty(2, 256, 2, 128, dtype=torch.bfloat16)
        o, lse = forward(q, k, k, False, None, None, None)
        dq, dk, dv = backward(o, q, k, k, o, lse, False, None, None, None)
        with pytest.raises(ValueError, match="head_dim must be one of"):
            bad = torch.empty(2, 256, 4, 96, dtype=torch.bfloat16)
            forward(bad, bad, bad, False, None, None, None)
    assert tuple(o.shape) == (2, 256, 4, 128) and tuple(lse.shape) == (2, 4, 256)
    assert lse.dtype == torch.float32
    assert tuple(dk.shape) == (2, 256, 2, 128) and dq.dtype == torch.bfloat16


needs_cuda = pytest.mark.skipif(torch is None or not torch.cuda.is_available(),
                                reason="PyTorch has no CUDA device here")


@needs_torch
@needs_cuda
def test_a_cuda_graph_captures_the_operators_and_replays_them_on_new_values(ops):
    """The launch on PyTorch's stream returns without waiting, so a CUDA
    graph records it; a replay reads the inputs' new values."""
    from mosaic_gpu.attention import attention
    x, y = torch.randn(1024, device="cuda"), torch.randn(1024, device="cuda")
    q = torch.randn(1, 128, 2, 64, device="cuda", dtype=torch.bfloat16)

    def step():
        total, product = ops["sum_and_product"](x, y)
        return total, product, attention(q, q, q, causal=True)

    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up: compiling and loading stay out of the graph
        step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        total, product, o = step()
    x.copy_(torch.randn(1024, device="cuda"))
    y.fill_(3.0)
    q.copy_(torch.randn_like(q))
    graph.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(total, x + y)
    torch.testing.assert_close(product, x * y)
    reference = torch.nn.functional.scaled_dot_product_attention(
        *(q.double().transpose(1, 2),) * 3, is_causal=True).transpose(1, 2)
    torch.testing.assert_close(o.double(), reference, atol=2e-2, rtol=2e-2)


@needs_torch
@needs_cuda
def test_torch_compile_with_cuda_graphs_runs_the_operators(ops):
    """mode="reduce-overhead": Inductor's graph, replayed as a CUDA graph."""
    x = torch.randn(128, 256, device="cuda")
    gamma, beta = torch.randn(256, device="cuda"), torch.randn(256, device="cuda")

    @torch.compile(mode="reduce-overhead", fullgraph=True)
    def block(x, gamma, beta):
        return torch.relu(ops["layer_norm"](x, gamma, beta)) + x

    expected = torch.relu(torch.nn.functional.layer_norm(x, (256,), gamma, beta, 1e-5)) + x
    for _ in range(3):  # recorded, then replayed
        torch.testing.assert_close(block(x, gamma, beta), expected, rtol=2e-5, atol=2e-5)
