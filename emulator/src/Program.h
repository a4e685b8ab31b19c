//===- Program.h - Decoded PTX, ready to execute --------------*- C++ -*-===//
//
// The parser turns PTX text into these records: every register is a slot of
// the per-thread register file, every branch target an instruction index,
// every modifier a field. Execution never looks at text again, except to
// quote an instruction in a message.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_PROGRAM_H
#define MOSAIC_EMULATOR_PROGRAM_H

#include "mosaic/Emulator/Machine.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <string>
#include <vector>

namespace mosaic::emulator {

/// PTX fundamental and packed types. `Pred` is a predicate register.
enum class Type : uint8_t {
  None,
  Pred,
  B8, B16, B32, B64, B128,
  U8, U16, U32, U64,
  S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64, TF32,
  E4M3, E5M2, E4M3x2, E5M2x2,
};

unsigned typeBits(Type type);
std::optional<Type> parseTypeName(std::string_view name);
bool isSigned(Type type);
bool isFloatType(Type type);
const char *typeName(Type type);

/// State spaces. `SharedCluster` is `.shared::cluster`; `Shared` is
/// `.shared` / `.shared::cta`.
enum class Space : uint8_t {
  Generic, Global, Shared, SharedCluster, Local, Param, Const,
};

enum class Special : uint8_t {
  TidX, TidY, TidZ, NtidX, NtidY, NtidZ,
  CtaidX, CtaidY, CtaidZ, NctaidX, NctaidY, NctaidZ,
  LaneId, WarpId, NWarpId, SmId, NSmId, GridId,
  ClusterIdX, ClusterIdY, ClusterIdZ, NClusterIdX, NClusterIdY, NClusterIdZ,
  ClusterCtaidX, ClusterCtaidY, ClusterCtaidZ,
  ClusterNctaidX, ClusterNctaidY, ClusterNctaidZ,
  ClusterCtarank, ClusterNctarank, IsExplicitCluster,
  LanemaskEq, LanemaskLt, LanemaskLe, LanemaskGt, LanemaskGe,
  Clock, Clock64, GlobalTimer, DynamicSmemSize, TotalSmemSize,
};

struct Operand {
  enum class Kind : uint8_t {
    None,
    Register, // `reg`
    Immediate, // `bits`
    Special,   // `special`
    Address,   // [reg + symbolAddress + offset]; reg may be -1
    Vector,    // `first`..`first+count` in Instruction::vectorSlots
    Symbol,    // the address of a variable or parameter: `bits`
    Sink,      // `_`
  };
  Kind kind = Kind::None;
  bool negated = false; // `!%p`
  Special special = Special::TidX;
  int32_t reg = -1;
  uint32_t first = 0, count = 0;
  uint64_t bits = 0;
  int64_t offset = 0;
  /// Address operands: the state space a symbol base lives in, or Generic
  /// for a plain register base.
  Space symbolSpace = Space::Generic;
  /// Refers to the dynamic shared memory (`.extern .shared x[]`), whose
  /// address is fixed once the function's static shared memory is known.
  bool dynamicShared = false;
};

/// One element of a `{...}` vector operand.
struct VectorElement {
  int32_t reg = -1;   // -1: immediate or sink
  uint64_t bits = 0;  // immediate
  bool sink = false;
};

enum class Op : uint16_t {
#define MOSAIC_EMULATOR_OP(name, text, handler, fewest, most, types) name,
#include "Ops.def"
};

/// Rounding for `cvt`, float arithmetic and `.rni`-style integer rounding.
enum class Rounding : uint8_t { Default, Rn, Rz, Rm, Rp, Rna, Rs };

/// The scope of a memory operation or fence (PTX ISA, "Scope"): the set of
/// threads it synchronizes with. `None` when the instruction names none
/// (a weak access, or an atomic's default: see `effectiveScope`).
enum class Scope : uint8_t { None, Cta, Cluster, Gpu, Sys };

enum class Compare : uint8_t {
  Eq, Ne, Lt, Le, Gt, Ge, Lo, Ls, Hi, Hs,
  Equ, Neu, Ltu, Leu, Gtu, Geu, Num, Nan,
};

struct Instruction {
  Op op = Op::Nop;
  Type type = Type::None;  // first type modifier
  Type type2 = Type::None; // second (cvt source, wgmma A/B, ...)
  Type type3 = Type::None;
  Space space = Space::Generic;
  Space space2 = Space::Generic; // second state space (cvta.to, cp.async)
  Rounding rounding = Rounding::Default;
  Compare compare = Compare::Eq;
  /// Op-specific small modifiers (see each op's handler for its use).
  uint8_t variant = 0;
  uint8_t boolOp = 0; // setp .and/.or/.xor: 0 none, 1 and, 2 or, 3 xor
  uint8_t vectorWidth = 1;
  uint8_t dims = 0; // tensor rank; wgmma: 1 = A from registers
  bool ftz = false, sat = false, approx = false, wide = false, hi = false,
       aligned = false, uni = false, multicast = false, relu = false,
       satfinite = false, shiftClamp = false, nan = false, xorsign = false,
       abs = false, read = false, trans = false, roundToInteger = false,
       cacheHint = false, to = false, acquire = false, release = false,
       strong = false, // .volatile/.relaxed/.acquire/.release: not a data race
       carryOut = false; // .cc: writes the carry flag CC.CF
  /// `.cta`, `.cluster`, `.gpu`, `.sys` of ld/st/atom/red/fence (and
  /// membar's `.cta`, `.gl`, `.sys`); `.volatile` is `.relaxed.sys`.
  Scope scope = Scope::None;
  uint16_t shapeM = 0, shapeN = 0, shapeK = 0;
  int32_t guard = -1; // predicate slot, -1: none
  bool guardNegated = false;
  uint32_t target = 0; // branch target
  /// Branches: where lanes that diverge here reconverge (the start of the
  /// branch's immediate post-dominator), or UINT32_MAX for the exit.
  uint32_t reconverge = UINT32_MAX;
  std::vector<Operand> operands;
  uint32_t line = 0;
};

struct Variable {
  std::string name;
  Space space = Space::Global;
  uint32_t align = 1;
  uint64_t size = 0;
  bool isExtern = false; // `.extern .shared ... []`: dynamic shared memory
  uint32_t elementSize = 1; // bytes of one element (x vector width)
  std::vector<uint8_t> init;
  /// Address in its space: the shared-memory offset for shared variables,
  /// the frame offset for locals, the byte offset for parameters; for
  /// globals and constants, the host address of `storage`.
  uint64_t address = 0;
  std::unique_ptr<uint8_t[]> storage;
};

struct Function {
  KernelInfo info;
  std::vector<Instruction> code;
  std::vector<VectorElement> vectorSlots;
  std::vector<std::string> registerNames; // by slot
  std::vector<Type> registerTypes;        // by slot
  std::vector<Variable> locals;           // `.local` and `.shared` in body
  uint32_t localBytes = 0;
  /// Static shared memory: the module's and the function's `.shared`
  /// variables laid out from kSharedBase; dynamic shared memory follows at
  /// `dynamicSharedOffset`.
  uint32_t staticSharedEnd = 0;
  uint32_t dynamicSharedOffset = 0;
};

/// Shared-memory addresses a CTA sees start here, not at zero, as on
/// Hopper (the first KiB is reserved).
constexpr uint32_t kSharedBase = 1024;

class Program {
public:
  std::vector<Function> functions;
  std::vector<Variable> globals; // module-scope .global/.const/.shared
  /// The PTX text's lines (from 1 at index 0), quoted in messages.
  std::vector<std::string> lines;
  std::string line(uint32_t number) const {
    return number >= 1 && number <= lines.size() ? lines[number - 1] : "";
  }
  const Function *find(std::string_view name) const {
    for (const Function &function : functions)
      if (function.info.name == name)
        return &function;
    return nullptr;
  }
  /// The module-scope global or constant variable containing the host
  /// address range, or nullptr.
  uint8_t *translateGlobalVariable(uint64_t address, uint64_t bytes) const;
};

Expected<std::unique_ptr<Program>> parsePtx(std::string_view text);

/// Sets every branch's reconvergence point from the function's control
/// flow graph (immediate post-dominators).
void computeReconvergence(Function &function);

/// Fills `instruction`'s op and modifiers from its dotted opcode and checks
/// its operands; the error names what is not supported.
Status decodeInstruction(Instruction &instruction, const std::string &opcode);

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_PROGRAM_H
