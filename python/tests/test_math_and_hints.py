"""The authoring API's elementwise math, integer bit operators, select,
compiler hints (optimization_barrier, assume_multiple), TMA store
reductions, oob_fill_mode and ``mgpu.range`` loops: the IR they build,
their errors, and their results on the emulator against NumPy."""
import math

import numpy as np
import pytest

import mosaic_gpu as mgpu
from conftest import needs_emulator, run_check_in_process

N = 1024
# Arguments in each function's domain, from values of about N(0, 9); the
# same expressions on NumPy arrays and on Vectors.
def ANY(a):
    return a


def POSITIVE(a):
    return abs(a) + 0.5


def UNIT(a):
    return a * (1 / 16)  # |a| < 16 here


def AT_LEAST_ONE(a):
    return abs(a) + 1.0


# name: (function, NumPy reference, domain)
UNARY = {
    "rsqrt": (mgpu.rsqrt, lambda x: 1 / np.sqrt(x), POSITIVE),
    "sqrt": (mgpu.sqrt, np.sqrt, POSITIVE),
    "cbrt": (mgpu.cbrt, np.cbrt, ANY),
    "log": (mgpu.log, np.log, POSITIVE),
    "log2": (mgpu.log2, np.log2, POSITIVE),
    "log10": (mgpu.log10, np.log10, POSITIVE),
    "log1p": (mgpu.log1p, np.log1p, POSITIVE),
    "exp2": (mgpu.exp2, np.exp2, ANY),
    "expm1": (mgpu.expm1, np.expm1, ANY),
    "tanh": (mgpu.tanh, np.tanh, ANY),
    "sinh": (mgpu.sinh, np.sinh, ANY),
    "cosh": (mgpu.cosh, np.cosh, ANY),
    "asinh": (mgpu.asinh, np.arcsinh, ANY),
    "acosh": (mgpu.acosh, np.arccosh, AT_LEAST_ONE),
    "atanh": (mgpu.atanh, np.arctanh, UNIT),
    "asin": (mgpu.asin, np.arcsin, UNIT),
    "acos": (mgpu.acos, np.arccos, UNIT),
    "atan": (mgpu.atan, np.arctan, ANY),
    "sin": (mgpu.sin, np.sin, ANY),
    "cos": (mgpu.cos, np.cos, ANY),
    "tan": (mgpu.tan, np.tan, ANY),
    # Large arguments take libdevice's exact range reduction (a carry chain).
    "sin of large arguments": (mgpu.sin, np.sin, lambda a: a * 1.0e5),
    "erf": (mgpu.erf, np.vectorize(math.erf), ANY),
    "erfc": (mgpu.erfc, np.vectorize(math.erfc), ANY),
    "abs": (abs, np.abs, ANY),
    "floor": (mgpu.floor, np.floor, ANY),
    "ceil": (mgpu.ceil, np.ceil, ANY),
    "rint": (mgpu.rint, np.rint, lambda a: a * 2.0 + 0.5),  # halves included
}
BINARY = {
    "power": (lambda a, b: mgpu.power(abs(a) + 0.5, b), lambda a, b: np.power(np.abs(a) + 0.5, b)),
    "copysign": (mgpu.copysign, np.copysign),
    "atan2": (mgpu.atan2, np.arctan2),
    "select": (lambda a, b: mgpu.select(a > b, a, 0.0), lambda a, b: np.where(a > b, a, 0)),
    "fma": (lambda a, b: mgpu.fma(a, b, 0.5), lambda a, b: a.astype(np.float64) * b + 0.5),
}
BITWISE = {
    "and": (lambda i, j: i & j), "or": (lambda i, j: i | j), "xor": (lambda i, j: i ^ j),
    "shift left": (lambda i, j: i << 2), "shift right": (lambda i, j: i >> 1),
    "invert": (lambda i, j: ~i), "and with an int": (lambda i, j: 6 & i),
    "unsigned conversions": (
        lambda i, j: (i > j).astype("i32", unsigned=True)
        + (abs(i) & 7).astype("f32", unsigned=True).astype("i32", unsigned=True)),
}
# NumPy's side of each bit operation where Python's operators differ.
NUMPY_BITWISE = {
    "unsigned conversions": lambda i, j: (i > j).astype(np.int32) + (np.abs(i) & 7),
}


def math_kernel():
    count = len(UNARY) + len(BINARY)

    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((N,), "f32"), ((N,), "f32")],
                 outputs=[((N,), "f32")] * count + [((N,), "i32")] * len(BITWISE))
    def elementwise_math(x, y, *outs):
        a, b = mgpu.vector_load(x), mgpu.vector_load(y)
        results = [f(domain(a)) for f, _, domain in UNARY.values()]
        results += [f(a, b) for f, _ in BINARY.values()]
        i, j = a.astype("i32"), b.astype("i32")
        results += [f(i, j) for f in BITWISE.values()]
        for value, out in zip(results, outs):
            mgpu.vector_store(value, out)
    return elementwise_math


def check_math_matches_numpy():
    rng = np.random.default_rng(0)
    x = (3 * rng.standard_normal(N)).astype(np.float32)
    y = (3 * rng.standard_normal(N)).astype(np.float32)
    results = list(math_kernel().launch(x, y, backend="emulator"))
    for name, (_, reference, domain) in UNARY.items():
        np.testing.assert_allclose(results.pop(0), reference(domain(x).astype(np.float64)),
                                   rtol=2e-6, atol=1e-6, err_msg=name)
    for name, (_, reference) in BINARY.items():
        np.testing.assert_allclose(results.pop(0), reference(x, y), rtol=1e-6, atol=1e-6,
                                   err_msg=name)
    i, j = x.astype(np.int32), y.astype(np.int32)
    for name, function in BITWISE.items():
        np.testing.assert_array_equal(results.pop(0), NUMPY_BITWISE.get(name, function)(i, j),
                                      err_msg=name)


def check_tma_store_reduction():
    @mgpu.kernel(grid=(2, 1, 1), block=(128, 1, 1),
                 inputs=[((128, 64), "f32"), ((128, 64), "f32")], outputs=[((128, 64), "f32")],
                 smem=[mgpu.SmemBuffer((64, 64), "f32"), mgpu.Barriers(1, 1)])
    def accumulate(x, y, out, tile, bars):
        row = mgpu.assume_multiple(mgpu.block_id("x").astype("i32") * 64, 64)
        for parity, (source, reduction) in enumerate([(x, None), (y, "add")]):
            mgpu.arrive_expect_tx(bars[0], 64 * 64 * 4)
            mgpu.async_load(source, tile, bars[0], indices=[row, 0],
                            oob_fill_mode="promise_in_bounds")
            mgpu.wait(bars[0], parity=bool(parity))
            mgpu.async_store(tile, out, indices=[row, 0], reduction=reduction)

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 128, 64), dtype=np.float32)
    np.testing.assert_array_equal(accumulate.launch(x, y, backend="emulator"), x + y)


def run_check(check, cache):
    run_check_in_process("test_math_and_hints", check, cache)


@needs_emulator
def test_math_matches_numpy_on_the_emulator(tmp_path):
    run_check("check_math_matches_numpy", tmp_path)


@needs_emulator
def test_tma_store_reduction_on_the_emulator(tmp_path):
    run_check("check_tma_store_reduction", tmp_path)


def test_each_function_makes_its_op():
    text = str(math_kernel().module)
    for op in ["arith.extui", "arith.uitofp", "arith.fptoui", "math.rsqrt", "math.sqrt",
               "math.log ", "math.log2", "math.log1p", "math.exp2",
               "math.expm1", "math.tanh", "math.erf", "math.absf", "math.floor", "math.ceil",
               "math.powf", "math.copysign", "math.atan2", "math.fma", "arith.select",
               "arith.andi",
               "arith.ori", "arith.xori", "arith.shli", "arith.shrsi"]:
        assert op in text, op


def test_fma_is_one_instruction():
    """mgpu.fma is PTX's fma.rn.f32 (one rounding), where a * b + c is a
    mul.rn and an add.rn that ptxas may not fuse."""
    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((N,), "f32")] * 3,
                 outputs=[((N,), "f32")])
    def fused(a, b, c, out):
        mgpu.vector_store(mgpu.fma(mgpu.vector_load(a), mgpu.vector_load(b),
                                   mgpu.vector_load(c)), out)
    ptx = fused.compile(emit="ptx").ptx
    assert "fma.rn.f32" in ptx and "mul.rn.f32" not in ptx
    with pytest.raises(TypeError, match="`fma` takes float values, got i32"):
        @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((N,), "i32")],
                     outputs=[((N,), "i32")])
        def integers(a, out):
            mgpu.vector_store(mgpu.fma(mgpu.vector_load(a), 2, 1), out)


def test_integer_and_index_scalars():
    @mgpu.kernel(grid=(4, 1, 1), block=(128, 1, 1), inputs=[((N,), "f32")],
                 outputs=[((N,), "f32")])
    def scalars(x, out):
        block = mgpu.block_id("x")
        shifted = (block << 8) >> 1                       # index: logical shift right
        signed = abs(block.astype("i32") - 2) & 3
        mgpu.assume_multiple(shifted, 128)
        hidden, = [mgpu.optimization_barrier(signed)]
        pair = mgpu.optimization_barrier(signed, hidden)
        assert isinstance(pair, tuple) and pair[0].dtype == "i32"
        start = mgpu.select(block < 2, block * 256, 0)
        mgpu.vector_store(mgpu.vector_load(x[mgpu.ds(start, 256)]), out[mgpu.ds(start, 256)])

    text = str(scalars.module)
    for op in ["arith.shli", "arith.shrui", "math.absi", "arith.andi", "arith.select",
               "mosaic_gpu.assume_multiple", "mosaic_gpu.optimization_barrier"]:
        assert op in text, op


def test_hints_and_tma_attributes_in_the_ir():
    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((64, 64), "f32")],
                 outputs=[((64, 64), "f32")],
                 smem=[mgpu.SmemBuffer((64, 64), "f32"), mgpu.Barriers(1, 1)])
    def hints(x, out, tile, bars):
        mgpu.arrive_expect_tx(bars[0], 64 * 64 * 4)
        mgpu.async_load(x, tile, bars[0], indices=[0, 0], oob_fill_mode="undefined")
        mgpu.wait(bars[0])
        mgpu.async_store(tile, out, indices=[0, 0], reduction="add")

    text = str(hints.module)
    assert "oob_fill_mode = #mosaic_gpu.oob_fill_mode<undefined>" in text
    assert "reduction_op = #mosaic_gpu.tma_reduction<add>" in text


def test_range_builds_the_same_loop_as_for_loop():
    def with_range(x, out):
        for i in mgpu.range(2, 8, 3):
            mgpu.vector_store(mgpu.vector_load(x[mgpu.ds(i * 128, 128)]), out[0:128])

    def with_for_loop(x, out):
        @mgpu.for_loop(2, 8, 3)
        def _(i):
            mgpu.vector_store(mgpu.vector_load(x[mgpu.ds(i * 128, 128)]), out[0:128])

    def build(body):
        kernel = mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((N,), "f32")],
                             outputs=[((N,), "f32")], name="loop")(body)
        return [line for line in str(kernel.module).splitlines() if "loc(" not in line]

    assert build(with_range) == build(with_for_loop)


def test_range_carries_values():
    @mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((N,), "f32")],
                 outputs=[((128,), "f32")])
    def sums(x, out):
        loop = mgpu.range(N // 128, carry=(mgpu.constant(0.0, "f32", (128,)),
                                           mgpu.constant(0, "i32")))
        for i, total, count in loop:
            loop.carry(total + mgpu.vector_load(x[mgpu.ds(i * 128, 128)]), count + 1)
        total, count = loop.results
        assert count.dtype == "i32"
        mgpu.vector_store(total, out)

    assert "scf.for" in str(sums.module) and "scf.yield" in str(sums.module)


@pytest.mark.parametrize("body, exception, message", [
    (lambda a, i: mgpu.rsqrt(i), TypeError, "`rsqrt` takes a float vector or scalar, got i32"),
    (lambda a, i: mgpu.power(i, 2), TypeError, "`power` takes float values, got i32"),
    (lambda a, i: mgpu.sqrt(3.0), TypeError, "`x` must be a Vector or Scalar"),
    (lambda a, i: a & a, TypeError, "`&` is not defined on f32 values"),
    (lambda a, i: ~a, TypeError, "`~` is not defined on f32 values"),
    (lambda a, i: i << 1.5, TypeError, "cannot make an i32 constant of 1.5"),
    (lambda a, i: abs(mgpu.block_id()), TypeError, "`absolute` takes float or integer values"),
    (lambda a, i: mgpu.assume_multiple(mgpu.constant(1.0, "f32"), 4), TypeError,
     "`value` must be an integer or index Scalar"),
    (lambda a, i: mgpu.assume_multiple(mgpu.block_id(), 0), ValueError,
     "`multiple` must be a positive int"),
    (lambda a, i: mgpu.optimization_barrier(), ValueError, "needs at least one value"),
    (lambda a, i: mgpu.range(4, carry=a).carry(i), TypeError, "the loop carries"),
    (lambda a, i: mgpu.range(4).carry(a), TypeError, "this range carries no values"),
    (lambda a, i: mgpu.range(4, carry=a).results, RuntimeError, "after the loop's body"),
    (lambda a, i: [None for _ in mgpu.range(4, carry=a)], TypeError,
     r"must end with loop.carry\(new values\)"),
    (lambda a, i: mgpu.range("4"), TypeError, "`upper` must be an int or a Scalar"),
    (lambda a, i: i.astype("f32", unsigned=1), TypeError, "`unsigned` must be a bool"),
])
def test_bad_arguments(body, exception, message):
    def kernel_body(x, out):
        a = mgpu.vector_load(x)
        body(a, a.astype("i32"))

    with pytest.raises(exception, match=message):
        mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((N,), "f32")],
                    outputs=[((N,), "f32")], name="bad")(kernel_body)


@pytest.mark.parametrize("option, message", [
    (dict(oob_fill_mode="nan"), "`oob_fill_mode` must be one of undefined, promise_in_bounds, "
                                "zeros, got 'nan'"),
    (dict(reduction="mean"), "`reduction` must be one of add, min, max"),
])
def test_bad_tma_options(option, message):
    def body(x, out, tile, bars):
        if "oob_fill_mode" in option:
            mgpu.async_load(x, tile, bars[0], indices=[0, 0], **option)
        else:
            mgpu.async_store(tile, out, indices=[0, 0], **option)

    with pytest.raises(ValueError, match=message):
        mgpu.kernel(grid=(1, 1, 1), block=(128, 1, 1), inputs=[((64, 64), "f32")],
                    outputs=[((64, 64), "f32")],
                    smem=[mgpu.SmemBuffer((64, 64), "f32"), mgpu.Barriers(1, 1)])(body)
