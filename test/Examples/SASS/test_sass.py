"""The matrix examples' machine code (GEMMs, attention): ptxas kept them on
Hopper's fast paths.

Each example in EXPECTED is compiled to a CUBIN with mosaic-compile and
disassembled with nvdisasm. The SASS must show the wgmma ops as HGMMA (QGMMA for
8-bit inputs; not the HMMA of the slower mma.sync path), the TMA copies as UTMALDG / UTMASTG,
and `setmaxnreg` as USETMAXREG with the counts the kernel asks for: ptxas
drops setmaxnreg with only an info message (C7508) when it cannot tell the
register count at entry. ptxas's `-v` report (kept in the manifest's
"ptxas" entry; mosaic-compile also prints it) must show no spills and no
"Potential Performance Loss", the prefix of both the wgmma serialization
warnings and C7508. The register count per kernel is printed at the end.

How setmaxnreg appears in SASS (ptxas 13.0, nvdisasm 13.5; the PTX of
test_setmaxnreg_in_sass, which checks it against the installed tools):
    setmaxnreg.dec.sync.aligned.u32 40   ->  USETMAXREG.DEALLOC.CTAPOOL 0x28
    setmaxnreg.inc.sync.aligned.u32 232  ->  USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8
(the increase retries in a loop until the CTA's register pool has room).
"""
from __future__ import annotations

import collections
import dataclasses
import pathlib
import re
import subprocess

import pytest

from conftest import GENERATED

REPO = pathlib.Path(__file__).resolve().parents[3]

# A register file of one SM: 64K 32-bit registers, allocated per thread in
# units of 8 (CUDA C++ Programming Guide, "Compute Capabilities", sm_90).
REGISTER_FILE = 65536
REGISTER_GRANULE = 8

SETMAXNREG_SASS = {"DEALLOC": "dec", "TRY_ALLOC": "inc"}


@dataclasses.dataclass(frozen=True)
class Expected:
    """What the SASS of one example must show."""
    # Opcodes (without modifiers) that must appear.
    present: tuple[str, ...]
    # Opcodes that must not: HMMA is the mma.sync fallback of a wgmma.
    absent: tuple[str, ...] = ("HMMA",)
    # The setmaxnreg counts, by direction ("dec", "inc"); empty: none at all.
    setmaxnreg: dict[str, set[int]] = dataclasses.field(default_factory=dict)
    # Whether some HGMMA takes A from registers (its second operand is a
    # register, not a gdesc shared-memory descriptor).
    register_a: bool = False


EXPECTED = {
    "gemm_bf16": Expected(present=("HGMMA", "UTMALDG", "UTMASTG")),
    # A TMA producer warpgroup gives registers back (40), the two consumer
    # warpgroups take them (232): 128 * (40 + 2 * 232) fits 64K.
    "gemm_bf16_ws": Expected(present=("HGMMA", "UTMALDG", "UTMASTG"),
                             setmaxnreg={"dec": {40}, "inc": {232}}),
    # The TMA producer keeps 24 registers, the two consumers take 240 each;
    # P V takes P from registers.
    "attention_fwd": Expected(present=("HGMMA", "UTMALDG", "UTMASTG"),
                              setmaxnreg={"dec": {24}, "inc": {240}}, register_a=True),
    # gemm_ws.py's pipeline (40 / 232) in its other forms: split-K's and
    # stream-K's f32 partial tiles, a fused bias + GELU epilogue (its
    # operands loaded by TMA, tanh on the MUFU), an e4m3 output with its
    # amax TMA-reduced (UTMAREDG), a shape that is not a tile multiple.
    "gemm_ws_split_k": Expected(present=("HGMMA", "UTMALDG", "UTMASTG"),
                                setmaxnreg={"dec": {40}, "inc": {232}}),
    "gemm_ws_stream_k": Expected(present=("HGMMA", "UTMALDG", "UTMASTG"),
                                 setmaxnreg={"dec": {40}, "inc": {232}}),
    "gemm_ws_bias_gelu": Expected(present=("HGMMA", "UTMALDG", "UTMASTG", "MUFU"),
                                  setmaxnreg={"dec": {40}, "inc": {232}}),
    "gemm_ws_fp8_amax": Expected(present=("HGMMA", "UTMALDG", "UTMASTG", "UTMAREDG", "F2FP"),
                                 setmaxnreg={"dec": {40}, "inc": {232}}),
    "gemm_ws_any_shape": Expected(present=("HGMMA", "UTMALDG", "UTMASTG"),
                                  setmaxnreg={"dec": {40}, "inc": {232}}),
    # The block-scaled FP8 GEMM: its wgmmas are QGMMA (8-bit inputs), and
    # it promotes each 128-K partial sum with FFMAs.
    "gemm_fp8_block": Expected(present=("QGMMA", "UTMALDG", "UTMASTG", "FFMA"),
                               setmaxnreg={"dec": {40}, "inc": {232}}),
    # The attention backward (24 / 240): P^T and dS^T are the register A of
    # dV's and dK's wgmmas, dQ's partial sums a TMA reduce-add (UTMAREDG),
    # the exponentials on the MUFU.
    "attention_bwd_d128": Expected(present=("HGMMA", "UTMALDG", "UTMAREDG", "MUFU"),
                                   setmaxnreg={"dec": {24}, "inc": {240}}, register_a=True),
    "attention_bwd_d256": Expected(present=("HGMMA", "UTMALDG", "UTMAREDG", "MUFU"),
                                   setmaxnreg={"dec": {24}, "inc": {240}}, register_a=True),
}

# An instruction line of `nvdisasm -c`: "/*0c40*/  @!P0 HGMMA.64x128x16.F32.BF16 R88, ... ;"
INSTRUCTION = re.compile(
    r"/\*[0-9a-f]+\*/\s+(?:@!?U?P(?:[0-9]+|T)\s+)?"
    r"(?P<opcode>[A-Z][A-Z0-9_]*(?:\.[A-Za-z0-9_]+)*)(?P<operands>[^;]*);")


@dataclasses.dataclass(frozen=True)
class Instruction:
    opcode: str  # with its modifiers: HGMMA.64x128x16.F32.BF16
    operands: str

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]


def parse_sass(text: str) -> list[Instruction]:
    return [Instruction(match["opcode"], match["operands"].strip())
            for match in INSTRUCTION.finditer(text)]


def setmaxnreg_counts(instructions: list[Instruction]) -> dict[str, set[int]]:
    """The register counts of the USETMAXREG instructions, by direction."""
    counts: dict[str, set[int]] = collections.defaultdict(set)
    for instruction in instructions:
        if instruction.base != "USETMAXREG":
            continue
        kinds = [SETMAXNREG_SASS[m] for m in instruction.opcode.split(".")[1:]
                 if m in SETMAXNREG_SASS]
        assert len(kinds) == 1, f"unknown USETMAXREG form: {instruction}"
        counts[kinds[0]].add(int(instruction.operands.split(",")[-1], 0))
    return dict(counts)


def opcode_counts(instructions: list[Instruction]) -> collections.Counter:
    return collections.Counter(instruction.base for instruction in instructions)


# ---------------------------------------------------------------------------
# The parser, on text from nvdisasm 13.5.

SAMPLE = """
        /*0040*/              @!P0 BRA `(.L_x_0) ;
        /*0060*/                   USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xe8 ;
        /*00b0*/                   USETMAXREG.DEALLOC.CTAPOOL 0x28;
        /*0c40*/                   HGMMA.64x128x16.F32.BF16 R88, gdesc[UR28].tnspB, R88 ;
        /*02d0*/              @UP0 UTMALDG.4D [UR24], [UR8] ;
"""


def test_parse_sass():
    instructions = parse_sass(SAMPLE)
    assert [i.base for i in instructions] == ["BRA", "USETMAXREG", "USETMAXREG", "HGMMA",
                                              "UTMALDG"]
    assert instructions[3].opcode == "HGMMA.64x128x16.F32.BF16"
    assert setmaxnreg_counts(instructions) == {"inc": {232}, "dec": {40}}
    assert not register_a(instructions[3])
    assert register_a(parse_sass("/*0d10*/ HGMMA.64x128x16.F32.BF16 R88, R152, "
                                 "gdesc[UR12].tnspB, R88 ;")[0])


# The register split of a warp-specialized kernel in PTX: warpgroup 0 gives
# registers back, the others take them. `.maxntid` with `.minnctapersm 1`
# fixes the register count at entry; without them ptxas ignores setmaxnreg.
SETMAXNREG_PTX = """
.version 8.0
.target sm_90a
.address_size 64
.visible .entry split()
{BOUNDS}
{
  .reg .b32 %r<3>;
  .reg .pred %p<2>;
  mov.u32 %r1, %tid.x;
  shr.u32 %r2, %r1, 7;
  setp.eq.u32 %p1, %r2, 0;
  @%p1 bra PRODUCER;
  setmaxnreg.inc.sync.aligned.u32 232;
  ret;
PRODUCER:
  setmaxnreg.dec.sync.aligned.u32 40;
  ret;
}
"""


@pytest.mark.parametrize("bounds", [True, False], ids=["register-cap", "no-cap"])
def test_setmaxnreg_in_sass(bounds, ptxas, nvdisasm, tmp_path):
    """The installed ptxas and nvdisasm show setmaxnreg as this test reads
    it, and an ignored one is flagged in the report this test checks."""
    ptx = tmp_path / "split.ptx"
    ptx.write_text(SETMAXNREG_PTX.replace(
        "{BOUNDS}", ".maxntid 384, 1, 1\n.minnctapersm 1" if bounds else ""))
    cubin = tmp_path / "split.cubin"
    report = subprocess.run([str(ptxas), "-arch", "sm_90a", "-v", str(ptx), "-o", str(cubin)],
                            capture_output=True, text=True, check=True)
    sass = subprocess.run([str(nvdisasm), "-c", str(cubin)], capture_output=True, text=True,
                          check=True).stdout
    losses = "Potential Performance Loss" in report.stdout + report.stderr
    if bounds:
        assert setmaxnreg_counts(parse_sass(sass)) == {"dec": {40}, "inc": {232}}, sass
        assert not losses
    else:
        assert setmaxnreg_counts(parse_sass(sass)) == {}, sass
        assert losses


def test_every_matrix_example_has_expectations():
    examples = sorted(path.stem for pattern in ("gemm*.mlir", "attention*.mlir")
                      for path in (REPO / "examples").glob(pattern))
    missing = [name for name in examples if name not in EXPECTED]
    assert not missing, f"add the SASS expectations of {missing} to EXPECTED"


# ---------------------------------------------------------------------------
# The examples.


@pytest.fixture(params=sorted(EXPECTED))
def kernel(request):
    name = request.param
    if name not in GENERATED and not (REPO / "examples" / f"{name}.mlir").exists():
        pytest.skip(f"examples/{name}.mlir does not exist yet; its expectations "
                    "are in EXPECTED and apply once it lands")
    # Asked for here, so that a missing example is the reason given first.
    return request.getfixturevalue("compile_example")(name)


def test_matrix_and_tma_instructions(kernel):
    counts = opcode_counts(parse_sass(kernel.sass))
    expected = EXPECTED[kernel.name]
    missing = [op for op in expected.present if not counts[op]]
    unwanted = {op: counts[op] for op in expected.absent if counts[op]}
    assert not missing, f"{kernel.name}: no {missing} in the SASS; it has {dict(counts)}"
    assert not unwanted, f"{kernel.name}: {unwanted} in the SASS"


def register_a(instruction: Instruction) -> bool:
    """An HGMMA whose A comes from registers: `D, A, gdesc[B], C` with A a
    register, rather than `D, gdesc[A], gdesc[B], C`."""
    operands = [operand.strip() for operand in instruction.operands.split(",")]
    return (instruction.base == "HGMMA" and len(operands) > 2
            and re.fullmatch(r"R[0-9]+", operands[1]) is not None)


def test_register_a_operand(kernel):
    found = [i for i in parse_sass(kernel.sass) if register_a(i)]
    if EXPECTED[kernel.name].register_a:
        assert found, f"{kernel.name}: no HGMMA takes A from registers"
    else:
        assert not found, f"{kernel.name}: unexpected register-A HGMMA {found[0]}"


def test_register_reallocation(kernel):
    found = setmaxnreg_counts(parse_sass(kernel.sass))
    expected = EXPECTED[kernel.name].setmaxnreg
    report = kernel.ptxas["report"]
    assert found == expected, (
        f"{kernel.name}: USETMAXREG counts {found}, expected {expected}; "
        f"ptxas said:\n{report}")


def test_no_spills(kernel):
    ptxas = kernel.ptxas
    assert (ptxas["spill_stores"], ptxas["spill_loads"]) == (0, 0), ptxas["report"]


def test_no_performance_loss(kernel):
    """No wgmma serialization, no ignored setmaxnreg, nothing else ptxas
    flags as a performance loss."""
    report = kernel.ptxas["report"]
    losses = [line for line in report.splitlines() if "Potential Performance Loss" in line]
    assert not losses, "\n".join(losses)


def test_block_fits_register_file(kernel):
    registers = kernel.ptxas["registers"]
    allocated = -(-registers // REGISTER_GRANULE) * REGISTER_GRANULE
    assert allocated * kernel.threads <= REGISTER_FILE, (
        f"{kernel.name}: {registers} registers x {kernel.threads} threads "
        f"exceed one SM's {REGISTER_FILE} registers")
