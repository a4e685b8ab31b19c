"""mosaic_gpu.to_jax: kernels as JAX functions, inside jax.jit, jax.vmap
and shard_map, on the CPU platform (the PTX emulator, through the XLA FFI
handler; tests/ffi/JaxFfiTest.cpp calls the CUDA one). CI runs this file in a
virtual environment with JAX (ctest `python-jax`: JAX needs NumPy 2, which
Debian 12's Python does not have); elsewhere it skips where JAX is not
installed, but for the test of the error without it."""
import os
import pathlib
import re
import runpy
import subprocess
import sys

import numpy as np
import pytest

import mosaic_gpu as mgpu
from conftest import REPO, needs_emulator, sum_and_product

EXAMPLES = REPO / "python" / "examples"


def test_without_jax_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "jax", None)
    with pytest.raises(ImportError, match=r"needs JAX \(pip install jax\)"):
        mgpu.to_jax(sum_and_product)


try:
    import jax
    import jax.numpy as jnp
except ImportError:
    jax = None
needs_jax = pytest.mark.skipif(jax is None, reason="JAX is not installed")


@pytest.fixture(scope="module")
def layer_norm():
    return mgpu.to_jax(runpy.run_path(str(EXAMPLES / "layer_norm.py"))["layer_norm"])


def layer_norm_reference(x, gamma, beta):
    x = x.astype(jnp.float32)
    mean = x.mean(1, keepdims=True)
    return (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(1, keepdims=True) + 1e-5) * gamma + beta


def layer_norm_inputs(rows=64, columns=128, seed=0):
    keys = jax.random.split(jax.random.key(seed), 3)
    return (jax.random.normal(keys[0], (rows, columns)), jax.random.normal(keys[1], (columns,)),
            jax.random.normal(keys[2], (columns,)))


@needs_jax
@needs_emulator
def test_a_fixed_kernel_inside_jit():
    f = mgpu.to_jax(sum_and_product)
    x, y = jnp.arange(1024.0), jnp.full(1024, 2.0)

    @jax.jit
    def model(x, y):
        total, product = f(x, y)
        return total - product

    np.testing.assert_allclose(model(x, y), (x + y) - x * y)


@needs_jax
@needs_emulator
def test_a_generic_kernel_inside_jit_matches_jax_numpy(layer_norm):
    x, gamma, beta = layer_norm_inputs(rows=128)
    model = jax.jit(lambda x, gamma, beta: jax.nn.relu(layer_norm(x, gamma, beta)))
    np.testing.assert_allclose(model(x, gamma, beta),
                               jax.nn.relu(layer_norm_reference(x, gamma, beta)),
                               rtol=2e-5, atol=2e-5)


@needs_jax
@needs_emulator
def test_vmap_runs_once_per_batch_element(layer_norm):
    x, gamma, beta = layer_norm_inputs()
    batch = jnp.stack([x, 2 * x + 1])
    y = jax.jit(jax.vmap(layer_norm, in_axes=(0, None, None)))(batch, gamma, beta)
    assert y.shape == (2, 64, 128)
    for i in range(2):
        np.testing.assert_allclose(y[i], layer_norm_reference(batch[i], gamma, beta),
                                   rtol=2e-5, atol=2e-5)


@needs_jax
def test_shapes_come_from_the_signature_while_tracing(layer_norm):
    x, gamma, beta = layer_norm_inputs(rows=192, columns=64)
    shaped = jax.eval_shape(layer_norm, x, gamma, beta)
    assert shaped.shape == (192, 64) and shaped.dtype == jnp.float32
    total, product = jax.eval_shape(mgpu.to_jax(sum_and_product), jnp.zeros(1024),
                                    jnp.zeros(1024))
    assert total.shape == product.shape == (1024,)


@needs_jax
def test_mismatched_inputs_raise_the_launchers_errors_at_trace_time(layer_norm):
    f = mgpu.to_jax(sum_and_product)
    with pytest.raises(ValueError, match=r"input 1 has shape \(512,\), the kernel expects "
                                         r"\(1024,\)"):
        jax.jit(f).trace(jnp.zeros(1024), jnp.zeros(512))
    with pytest.raises(TypeError, match="input 0 has dtype i32, the kernel expects f32"):
        jax.jit(f).trace(jnp.zeros(1024, jnp.int32), jnp.zeros(1024))
    with pytest.raises(TypeError, match="takes its 2 inputs; got 1 arrays"):
        f(jnp.zeros(1024))
    with pytest.raises(TypeError, match="takes its 2 inputs; got 3 arrays"):
        f(jnp.zeros(1024), jnp.zeros(1024), jnp.zeros(1024))
    x, gamma, beta = layer_norm_inputs(rows=100)
    with pytest.raises(ValueError, match=r"dim 0 \(100\) is not a multiple of the kernel's "
                                         r"tile \(64\)"):
        jax.jit(layer_norm).trace(x, gamma, beta)
    with pytest.raises(TypeError, match="to_jax takes a mosaic_gpu Kernel or @jit kernel, "
                                        "got function"):
        mgpu.to_jax(lambda x: x)


needs_ffi = pytest.mark.skipif(not hasattr(mgpu._mosaic, "jax_ffi_handlers"),
                               reason="mosaic_gpu was built without jaxlib's FFI headers")


@needs_jax
@needs_ffi
def test_the_call_is_one_xla_ffi_custom_call_naming_the_compiled_kernel():
    lowered = jax.jit(mgpu.to_jax(sum_and_product)).lower(jnp.zeros(1024), jnp.zeros(1024))
    text = lowered.as_text()
    assert text.count('custom_call @mosaic_gpu_kernel') == 1, text
    assert "callback" not in text
    manifest = text.split('manifest = "', 1)[1].split('"', 1)[0]
    assert manifest.endswith(".json")
    assert mgpu.cache_dir() in pathlib.Path(manifest).parents


@needs_jax
@needs_emulator
def test_shard_map_runs_the_kernel_on_every_device(tmp_path):
    """Two CPU devices (XLA's flag must be set before JAX starts, hence a
    process of its own), the rows of layer_norm's input split between them:
    each shard is a call of the kernel specialized to 64 rows."""
    script = tmp_path / "sharded.py"
    script.write_text(f"""
import runpy
import numpy as np
import jax, jax.numpy as jnp
from jax.sharding import Mesh, PartitionSpec as P
import mosaic_gpu as mgpu

layer_norm = mgpu.to_jax(runpy.run_path({str(EXAMPLES / "layer_norm.py")!r})["layer_norm"])
assert len(jax.devices()) == 2, jax.devices()
mesh = Mesh(np.array(jax.devices()), ("rows",))
keys = jax.random.split(jax.random.key(0), 3)
x = jax.random.normal(keys[0], (128, 128))
gamma, beta = jax.random.normal(keys[1], (128,)), jax.random.normal(keys[2], (128,))
sharded = jax.jit(jax.shard_map(layer_norm, mesh=mesh, in_specs=(P("rows"), P(), P()),
                                out_specs=P("rows")))
y = sharded(x, gamma, beta)
assert len(y.sharding.device_set) == 2
assert "64,128" in sharded.lower(x, gamma, beta).as_text().replace(" ", "").replace("x", ",")
mean = x.mean(1, keepdims=True)
expected = (x - mean) / jnp.sqrt(((x - mean) ** 2).mean(1, keepdims=True) + 1e-5) * gamma + beta
np.testing.assert_allclose(y, expected, rtol=2e-5, atol=2e-5)
print("sharded ok")
""")
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=2",
               JAX_PLATFORMS="cpu")
    done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "sharded ok" in done.stdout


@needs_jax
@needs_emulator
def test_without_the_ffi_handlers_the_cpu_platform_uses_a_host_callback(monkeypatch):
    """An extension built without jaxlib's headers still runs kernels
    inside jit on the CPU, and on another platform says how to get them."""
    monkeypatch.delattr(mgpu._mosaic, "jax_ffi_handlers", raising=False)
    f = mgpu.to_jax(sum_and_product)
    x, y = jnp.arange(1024.0), jnp.full(1024, 3.0)
    assert "callback" in jax.jit(f).lower(x, y).as_text()
    total, product = jax.jit(f)(x, y)
    np.testing.assert_allclose(total, x + y)
    np.testing.assert_allclose(product, x * y)
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    with pytest.raises(NotImplementedError, match="built without jaxlib's XLA FFI headers, "
                                                  "so its kernels run inside JAX on the CPU "
                                                  "platform only"):
        jax.jit(mgpu.to_jax(sum_and_product)).trace(x, y)  # a new function: traced anew


@mgpu.kernel(grid=(2, 1, 1), block=(128, 1, 1), inputs=[((1024,), "f32")],
             outputs=[((1024,), "f32"), ((1024,), "f32")])
def accumulate(x, total, doubled):
    """total += x (total read first: it must start initialized); doubled = 2 x."""
    rows = mgpu.ds(mgpu.block_id("x") * 512, 512)
    value = mgpu.vector_load(x[rows])
    mgpu.vector_store(mgpu.vector_load(total[rows]) + value, total[rows])
    mgpu.vector_store(value + value, doubled[rows])


def check_accumulate():
    f = mgpu.to_jax(accumulate, initialized_outputs=[0])
    x, start = jnp.arange(1024.0), jnp.full(1024, 100.0)
    total, doubled = jax.jit(f)(x, start)
    np.testing.assert_array_equal(total, start + x)
    np.testing.assert_array_equal(doubled, 2 * x)
    np.testing.assert_array_equal(start, 100.0)  # the caller's array is not changed
    # Under vmap, each batch element's output starts from its own value.
    totals, _ = jax.jit(jax.vmap(f))(jnp.stack([x, -x]), jnp.stack([start, 2 * start]))
    np.testing.assert_array_equal(totals, jnp.stack([start + x, 2 * start - x]))


@needs_jax
@needs_emulator
def test_an_initialized_output_starts_from_the_value_given():
    check_accumulate()


@needs_jax
@needs_emulator
def test_an_initialized_output_through_the_host_callback(monkeypatch):
    monkeypatch.delattr(mgpu._mosaic, "jax_ffi_handlers", raising=False)
    check_accumulate()


@needs_jax
def test_bad_initialized_outputs_are_refused():
    for bad, message in [(0, "must be a list of output positions"),
                         ([-1], "must be a list of output positions"),
                         ([True], "must be a list of output positions"),
                         ([1, 1], "names an output twice"),
                         ([2], "initialized_outputs names output 2, but accumulate has 2 "
                               "outputs")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            mgpu.to_jax(accumulate, initialized_outputs=bad)
    f = mgpu.to_jax(accumulate, initialized_outputs=[0])
    x = jnp.zeros(1024)
    with pytest.raises(TypeError, match=re.escape("accumulate takes its 1 inputs, then the "
                                                  "initial values of outputs [0]; got 1 arrays")):
        f(x)
    with pytest.raises(ValueError, match=re.escape("output 0 has shape (512,), the kernel "
                                                   "expects (1024,)")):
        jax.jit(f).trace(x, jnp.zeros(512))
    with pytest.raises(TypeError, match="output 0 has dtype i32, the kernel expects f32"):
        jax.jit(f).trace(x, jnp.zeros(1024, jnp.int32))
    # A generic kernel's outputs are known per call: checked there.
    layer_norm = runpy.run_path(str(EXAMPLES / "layer_norm.py"))["layer_norm"]
    g = mgpu.to_jax(layer_norm, initialized_outputs=[1])
    x, gamma, beta = layer_norm_inputs()
    with pytest.raises(ValueError, match="initialized_outputs names output 1, but layer_norm "
                                         "has 1 outputs"):
        jax.jit(g).trace(x, gamma, beta, x)


needs_jax_gpu = pytest.mark.skipif(
    jax is None or not any(device.platform == "gpu" for device in jax.devices()),
    reason="JAX has no GPU here")


@needs_jax
@needs_ffi
@needs_jax_gpu
def test_the_cuda_platform_runs_kernels_on_xlas_stream():
    """Inside jit on the GPU: XLA's buffers, XLA's stream, the outputs
    checked; an initialized output; a generic kernel at two shapes."""
    x, y = jnp.arange(1024.0), jnp.full(1024, 2.0)
    total, product = jax.jit(mgpu.to_jax(sum_and_product))(x, y)
    assert total.devices() == {jax.devices("gpu")[0]}
    np.testing.assert_array_equal(total, x + y)
    np.testing.assert_array_equal(product, x * y)
    check_accumulate()
    layer_norm = mgpu.to_jax(runpy.run_path(str(EXAMPLES / "layer_norm.py"))["layer_norm"])
    for rows in (64, 256):
        x, gamma, beta = layer_norm_inputs(rows=rows)
        np.testing.assert_allclose(jax.jit(layer_norm)(x, gamma, beta),
                                   layer_norm_reference(x, gamma, beta), rtol=2e-5, atol=2e-5)
