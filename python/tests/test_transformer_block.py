"""python/examples/transformer_block_jax.py and transformer_block_torch.py:
a transformer block whose attention and MLP run on our kernels (on the
emulator here) matches the framework's own block, forward and backward
(and, in PyTorch, under torch.compile(fullgraph=True)); and the check they
print fails when the reference is wrong or the kernels' backward is; the
sizes the kernels cannot take are refused, saying why.

Each framework's tests skip where it is not installed: the JAX ones run in
ctest python-jax, the PyTorch ones in a Python with PyTorch."""
import re
import runpy

import pytest

from conftest import REPO, needs_emulator, run_example

EXAMPLES = REPO / "python" / "examples"
# A few seconds on the emulator, with edges: two sequences of 96 tokens
# (the attention's key and query blocks cut short), 192 tokens and 384
# hidden units (GEMM tiles of 128 rows and 256 columns cut short).
SMALL = ["--emulate", "--batch", "2", "--seq", "96", "--heads", "2", "--head-dim", "64",
         "--hidden", "384"]
# What the examples compare: the output, then the gradients.
RESULTS = ["y", "dwq", "dwk", "dwv", "dwo", "dw1", "db1", "dw2", "db2", "dx"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One kernel cache for the module's runs: they build the same kernels."""
    return tmp_path_factory.mktemp("kernels")


def verdicts(output):
    """[(result name, 'ok' or 'FAIL')] for each comparison line of a run,
    in the order printed (a compiled run's lines after the eager run's)."""
    return re.findall(r"^\s+(\w+): max \|error\| .* (ok|FAIL)$", output, re.MULTILINE)


def run(framework, cache, patch=""):
    """Runs the example of ``framework`` on SMALL, after ``patch`` (Python
    run with the example imported as ``example`` and
    transformer_block_kernels as ``blocks``)."""
    source = (f"import sys; sys.path.insert(0, {str(EXAMPLES)!r})\n"
              f"import transformer_block_{framework} as example\n"
              "import transformer_block_kernels as blocks\n"
              f"{patch}\n"
              "sys.exit(example.main())\n")
    return run_example(None, SMALL, cache, source=source)


@pytest.fixture(params=["jax", "torch"])
def framework(request):
    pytest.importorskip(request.param)
    return request.param


@pytest.mark.parametrize("sizes, message", [
    ((2, 64, 2, 32, 256), "--head-dim must be 64, 128 or 256"),
    ((2, 64, 2, 64, 100), "--hidden 100 must be a multiple of 64"),
    ((1, 61, 2, 64, 256), "61 tokens must be a multiple of 8"),
    ((0, 64, 2, 64, 256), "--batch must be positive, got 0"),
])
def test_sizes_the_kernels_cannot_take_are_refused(sizes, message):
    blocks = runpy.run_path(str(EXAMPLES / "transformer_block_kernels.py"))
    with pytest.raises(ValueError, match=re.escape(message)):
        blocks["Shape"](*sizes).check()


@needs_emulator
def test_matches_the_framework_forward_and_backward(framework, cache):
    result = run(framework, cache)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    # PyTorch's runs twice: eager, then compiled with fullgraph=True.
    passes = 2 if framework == "torch" else 1
    assert verdicts(result.stdout) == [(name, "ok") for name in RESULTS] * passes, output
    assert f"transformer_block_{framework}: PASS" in result.stdout, output
    if framework == "jax":  # every kernel an XLA custom call: none through the host
        assert "the jitted step: 11 mosaic_gpu kernel calls, 0 host callbacks" in output


# A reference whose attention is not causal: the mistake the check is there
# to catch, the output of every token but the last off by much more than
# bf16's roundings.
NOT_CAUSAL = {
    "jax": ("def everything(q, k, v):\n"
            "    scores = example.jnp.einsum('bqhd,bkhd->bhqk', q, k) / q.shape[3] ** 0.5\n"
            "    weights = example.jax.nn.softmax(scores, axis=-1)\n"
            "    return example.jnp.einsum('bhqk,bkhd->bqhd', weights, v)\n"
            "example.reference_attention = everything\n"),
    "torch": ("def everything(self, q, k, v):\n"
              "    o = example.F.scaled_dot_product_attention(\n"
              "        q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))\n"
              "    return o.transpose(1, 2)\n"
              "example.TransformerBlock.attend = everything\n"),
}


@needs_emulator
def test_a_wrong_reference_fails_the_check(framework, cache):
    result = run(framework, cache, NOT_CAUSAL[framework])
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    found = dict(verdicts(result.stdout))
    assert found["y"] == "FAIL", output
    assert f"transformer_block_{framework}: FAIL" in result.stdout, output


# The GELU derivative without the derivative of its tanh (a plausible
# slip): the forward is right, the MLP's backward on the kernels wrong.
DERIVATIVE_OF_OUTSIDE_ONLY = (
    "def outside_only(u, tanh):\n"
    "    return 0.5 * (1 + tanh(0.7978845608028654 * (u + 0.044715 * u * u * u)))\n"
    "blocks.gelu_tanh_derivative = outside_only\n")


@needs_emulator
def test_a_wrong_backward_fails_the_check(framework, cache):
    result = run(framework, cache, DERIVATIVE_OF_OUTSIDE_ONLY)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    found = verdicts(result.stdout)
    # The forward and the gradients taken before the MLP's GELU pass; dw1
    # (and what flows back through it) fail.
    assert ("y", "ok") in found and ("dw2", "ok") in found and ("db2", "ok") in found, output
    assert ("dw1", "FAIL") in found, output
    assert f"transformer_block_{framework}: FAIL" in result.stdout, output
