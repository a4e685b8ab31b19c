//===- TestKernels.cpp - Hand-written PTX kernels for the emulator tests --===//
//
// Kernels are sm_90a PTX written by hand, as small as the behaviour they
// check allows. Lines that a test looks up carry a `// NAME` marker comment;
// in the hazard kernels the fix is a line that is present or absent (or
// moved), so the mutant and the fixed kernel are otherwise identical.
//
//===----------------------------------------------------------------------===//

#include "TestKernels.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>

namespace mosaic::emulator::test {

// --- Helpers ---------------------------------------------------------------

std::string ptxModule(std::string_view body) {
  return std::string(".version 8.0\n.target sm_90a\n.address_size 64\n") +
         std::string(body);
}

uint32_t lineOf(std::string_view text, std::string_view marker) {
  uint32_t line = 1;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos)
      end = text.size();
    if (text.substr(start, end - start).find(marker) != std::string_view::npos)
      return line;
    ++line;
    start = end + 1;
  }
  return 0;
}

bool namesLine(const std::string &message, uint32_t line) {
  std::string needle = "line " + std::to_string(line);
  for (size_t at = message.find(needle); at != std::string::npos;
       at = message.find(needle, at + 1)) {
    size_t after = at + needle.size();
    if (after == message.size() ||
        !std::isdigit(static_cast<unsigned char>(message[after])))
      return true;
  }
  return false;
}

Options testOptions(AsyncPolicy policy) {
  Options options;
  options.policy = policy;
  options.hostThreads = 1;
  options.checkHazards = true;
  options.seed = 1;
  return options;
}

Parameters::Parameters(const KernelInfo &info)
    : info(info), buffer(info.parameterBytes, 0) {}

Parameters &Parameters::set(std::string_view name, const void *data,
                            size_t bytes) {
  for (const KernelParameter &parameter : info.parameters) {
    if (parameter.name != name)
      continue;
    if (parameter.size != bytes) {
      ADD_FAILURE() << "parameter `" << name << "` of `" << info.name
                    << "` has " << parameter.size << " bytes, given " << bytes;
      return *this;
    }
    std::memcpy(buffer.data() + parameter.offset, data, bytes);
    return *this;
  }
  ADD_FAILURE() << "`" << info.name << "` has no parameter `" << name << "`";
  return *this;
}

DeviceBuffer allocate(DeviceMemory &memory, size_t bytes) {
  DeviceBuffer buffer;
  Expected<uint64_t> address = memory.allocate(bytes);
  if (!address.ok()) {
    ADD_FAILURE() << address.message();
    return buffer;
  }
  buffer.address = *address;
  buffer.host = memory.translate(*address, bytes);
  buffer.bytes = bytes;
  if (!buffer.host)
    ADD_FAILURE() << "the allocation of " << bytes << " bytes is not mapped";
  return buffer;
}

std::array<uint8_t, kTensorMapBytes>
tensorMap2d(uint64_t address, uint32_t dataType, uint64_t rows,
            uint64_t columns, uint32_t boxRows, uint32_t boxColumns,
            uint32_t swizzle) {
  std::array<uint8_t, kTensorMapBytes> bytes{};
  unsigned element = dataType == kTensorFloat32 ? 4 : 2;
  uint64_t globalDim[2] = {columns, rows};
  uint64_t globalStrides[1] = {columns * element};
  uint32_t boxDim[2] = {boxColumns, boxRows};
  uint32_t elementStrides[2] = {1, 1};
  Status status =
      encodeTiled(bytes.data(), dataType, 2, address, globalDim, globalStrides,
                  boxDim, elementStrides, 0, swizzle, 0, 0);
  if (!status.ok())
    ADD_FAILURE() << "cannot encode the tensor map: " << status.message();
  return bytes;
}

Kernel::Kernel(std::string ptxText, std::string kernelName)
    : ptx(std::move(ptxText)), name(std::move(kernelName)) {
  Expected<std::shared_ptr<const Module>> loaded = Module::load(ptx);
  if (!loaded.ok()) {
    ADD_FAILURE() << "the PTX of `" << name
                  << "` does not load: " << loaded.message();
    return;
  }
  module = *loaded;
  info = module->kernel(name);
  if (!info)
    ADD_FAILURE() << "no kernel `" << name << "` in the module";
}

LaunchReport Kernel::launch(uint32_t threads, const Parameters &parameters,
                            DeviceMemory &memory, const Options &options,
                            uint32_t dynamicSharedBytes) const {
  LaunchConfig config;
  config.block = {threads, 1, 1};
  config.dynamicSharedBytes = dynamicSharedBytes;
  return launch(config, parameters, memory, options);
}

LaunchReport Kernel::launch(LaunchConfig config, const Parameters &parameters,
                            DeviceMemory &memory,
                            const Options &options) const {
  if (!ok()) {
    LaunchReport report;
    report.ok = false;
    report.message = "the kernel did not load";
    return report;
  }
  config.parameters = parameters.bytes();
  return emulator::launch(*module, name, config, memory, options);
}

namespace {

/// Replaces every `{{KEY}}` in `text`.
std::string substitute(std::string text, std::string_view key,
                       std::string_view value) {
  std::string pattern = "{{" + std::string(key) + "}}";
  for (size_t at = text.find(pattern); at != std::string::npos;
       at = text.find(pattern, at + value.size()))
    text.replace(at, pattern.size(), value);
  return text;
}

} // namespace

// --- Execution kernels
// --------------------------------------------------------

// Results, by index: 0 add.s32, 1 sub.s32, 2-3 mul.wide.s32 (low word
// first), 4 mul.lo.s32, 5 mul.hi.s32, 6 mul.hi.u32, 7 mad.lo.s32,
// 8 mad.hi.s32, 9 div.s32, 10 rem.s32, 11 div.u32, 12 rem.u32,
// 13 shl.b32 a, c, 14 shr.s32 a, c, 15 shr.u32 a, c, 16 bfe.u32 a, c, 12,
// 17 bfe.s32 a, c, 8, 18 bfi.b32 a into b at c, 12 bits,
// 19 prmt.b32 a, b, 0xB3E1, 20 lop3.b32 (a & b) ^ c, 21 popc, 22 clz,
// 23 brev (all of a).
const char *const kIntegerOpsKernel = R"PTX(
.visible .entry integer_ops(.param .u64 in, .param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %a, %b, %c, %t, %r<24>;
  .reg .b64 %rd<5>;
  mov.u32 %t, %tid.x;
  ld.param.u64 %rd0, [in];
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %t, 12;
  add.s64 %rd2, %rd0, %rd2;
  ld.global.u32 %a, [%rd2];
  ld.global.u32 %b, [%rd2+4];
  ld.global.u32 %c, [%rd2+8];
  mul.wide.u32 %rd3, %t, 96;
  add.s64 %rd3, %rd1, %rd3;
  add.s32 %r0, %a, %b;
  sub.s32 %r1, %a, %b;
  mul.wide.s32 %rd4, %a, %b;
  mul.lo.s32 %r4, %a, %b;
  mul.hi.s32 %r5, %a, %b;
  mul.hi.u32 %r6, %a, %b;
  mad.lo.s32 %r7, %a, %b, %c;
  mad.hi.s32 %r8, %a, %b, %c;
  div.s32 %r9, %a, %b;
  rem.s32 %r10, %a, %b;
  div.u32 %r11, %a, %b;
  rem.u32 %r12, %a, %b;
  shl.b32 %r13, %a, %c;
  shr.s32 %r14, %a, %c;
  shr.u32 %r15, %a, %c;
  bfe.u32 %r16, %a, %c, 12;
  bfe.s32 %r17, %a, %c, 8;
  bfi.b32 %r18, %a, %b, %c, 12;
  prmt.b32 %r19, %a, %b, 0xB3E1;
  lop3.b32 %r20, %a, %b, %c, 0x6A;
  popc.b32 %r21, %a;
  clz.b32 %r22, %a;
  brev.b32 %r23, %a;
  st.global.u32 [%rd3], %r0;
  st.global.u32 [%rd3+4], %r1;
  st.global.u64 [%rd3+8], %rd4;
  st.global.v4.u32 [%rd3+16], {%r4, %r5, %r6, %r7};
  st.global.v4.u32 [%rd3+32], {%r8, %r9, %r10, %r11};
  st.global.v4.u32 [%rd3+48], {%r12, %r13, %r14, %r15};
  st.global.v4.u32 [%rd3+64], {%r16, %r17, %r18, %r19};
  st.global.v4.u32 [%rd3+80], {%r20, %r21, %r22, %r23};
  ret;
}
)PTX";

// Results: 0-13 setp.{eq,ne,lt,le,gt,ge,equ,neu,ltu,leu,gtu,geu,num,nan}
// as 1/0, 14 selp.f32 (x < y ? x : y), 15 selp.s32 (nan ? -1 : 7).
const char *const kCompareKernel = R"PTX(
.visible .entry compare_ops(.param .u64 in, .param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %r<16>;
  .reg .f32 %x, %y, %m;
  .reg .pred %p<14>;
  .reg .b64 %rd<4>;
  mov.u32 %t, %tid.x;
  ld.param.u64 %rd0, [in];
  ld.param.u64 %rd1, [out];
  mul.wide.u32 %rd2, %t, 8;
  add.s64 %rd2, %rd0, %rd2;
  ld.global.v2.f32 {%x, %y}, [%rd2];
  setp.eq.f32 %p0, %x, %y;
  setp.ne.f32 %p1, %x, %y;
  setp.lt.f32 %p2, %x, %y;
  setp.le.f32 %p3, %x, %y;
  setp.gt.f32 %p4, %x, %y;
  setp.ge.f32 %p5, %x, %y;
  setp.equ.f32 %p6, %x, %y;
  setp.neu.f32 %p7, %x, %y;
  setp.ltu.f32 %p8, %x, %y;
  setp.leu.f32 %p9, %x, %y;
  setp.gtu.f32 %p10, %x, %y;
  setp.geu.f32 %p11, %x, %y;
  setp.num.f32 %p12, %x, %y;
  setp.nan.f32 %p13, %x, %y;
  selp.u32 %r0, 1, 0, %p0;
  selp.u32 %r1, 1, 0, %p1;
  selp.u32 %r2, 1, 0, %p2;
  selp.u32 %r3, 1, 0, %p3;
  selp.u32 %r4, 1, 0, %p4;
  selp.u32 %r5, 1, 0, %p5;
  selp.u32 %r6, 1, 0, %p6;
  selp.u32 %r7, 1, 0, %p7;
  selp.u32 %r8, 1, 0, %p8;
  selp.u32 %r9, 1, 0, %p9;
  selp.u32 %r10, 1, 0, %p10;
  selp.u32 %r11, 1, 0, %p11;
  selp.u32 %r12, 1, 0, %p12;
  selp.u32 %r13, 1, 0, %p13;
  selp.f32 %m, %x, %y, %p2;
  mov.b32 %r14, %m;
  selp.s32 %r15, -1, 7, %p13;
  mul.wide.u32 %rd3, %t, 64;
  add.s64 %rd3, %rd1, %rd3;
  st.global.v4.u32 [%rd3], {%r0, %r1, %r2, %r3};
  st.global.v4.u32 [%rd3+16], {%r4, %r5, %r6, %r7};
  st.global.v4.u32 [%rd3+32], {%r8, %r9, %r10, %r11};
  st.global.v4.u32 [%rd3+48], {%r12, %r13, %r14, %r15};
  ret;
}
)PTX";

// Results: 0-3 cvt.{rni,rzi,rmi,rpi}.s32.f32, 4-5 cvt.{rni,rzi}.u32.f32,
// 6-9 cvt.{rn,rz,rm,rp}.f32.s32, 10-13 cvt.{rn,rz,rm,rp}.f32.u32,
// 14 cvt.rni.f32.f32, 15 cvt.rzi.s16.f32 sign-extended to 32 bits.
const char *const kConvertKernel = R"PTX(
.visible .entry convert_ops(.param .u64 fin, .param .u64 iin, .param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %i, %r<16>;
  .reg .b16 %h;
  .reg .f32 %f, %g<9>;
  .reg .b64 %rd<6>;
  mov.u32 %t, %tid.x;
  ld.param.u64 %rd0, [fin];
  ld.param.u64 %rd1, [iin];
  ld.param.u64 %rd2, [out];
  mul.wide.u32 %rd3, %t, 4;
  add.s64 %rd4, %rd0, %rd3;
  ld.global.f32 %f, [%rd4];
  add.s64 %rd4, %rd1, %rd3;
  ld.global.u32 %i, [%rd4];
  cvt.rni.s32.f32 %r0, %f;
  cvt.rzi.s32.f32 %r1, %f;
  cvt.rmi.s32.f32 %r2, %f;
  cvt.rpi.s32.f32 %r3, %f;
  cvt.rni.u32.f32 %r4, %f;
  cvt.rzi.u32.f32 %r5, %f;
  cvt.rn.f32.s32 %g0, %i;
  cvt.rz.f32.s32 %g1, %i;
  cvt.rm.f32.s32 %g2, %i;
  cvt.rp.f32.s32 %g3, %i;
  cvt.rn.f32.u32 %g4, %i;
  cvt.rz.f32.u32 %g5, %i;
  cvt.rm.f32.u32 %g6, %i;
  cvt.rp.f32.u32 %g7, %i;
  cvt.rni.f32.f32 %g8, %f;
  cvt.rzi.s16.f32 %h, %f;
  cvt.s32.s16 %r15, %h;
  mul.wide.u32 %rd5, %t, 64;
  add.s64 %rd5, %rd2, %rd5;
  st.global.v4.u32 [%rd5], {%r0, %r1, %r2, %r3};
  st.global.v2.u32 [%rd5+16], {%r4, %r5};
  st.global.v2.f32 [%rd5+24], {%g0, %g1};
  st.global.v4.f32 [%rd5+32], {%g2, %g3, %g4, %g5};
  st.global.v2.f32 [%rd5+48], {%g6, %g7};
  st.global.f32 [%rd5+56], %g8;
  st.global.u32 [%rd5+60], %r15;
  ret;
}
)PTX";

const char *const kFmaKernel = R"PTX(
.visible .entry fma_vs_mul_add(.param .u64 in, .param .u64 out)
.maxntid 32, 1, 1
{
  .reg .f32 %a, %b, %c, %f<3>;
  .reg .b64 %rd<2>;
  ld.param.u64 %rd0, [in];
  ld.param.u64 %rd1, [out];
  ld.global.v2.f32 {%a, %b}, [%rd0];
  ld.global.f32 %c, [%rd0+8];
  fma.rn.f32 %f0, %a, %b, %c;    // one rounding
  mul.rn.f32 %f1, %a, %b;        // two roundings
  add.rn.f32 %f2, %f1, %c;
  st.global.v2.f32 [%rd1], {%f0, %f2};
  ret;
}
)PTX";

// x = t + 100 on even lanes, 3t on odd lanes, plus 1000 on lanes 3 mod 4
// (a branch nested in the odd path); then every lane must be back for the
// bar.sync and the full-warp shfl.
const char *const kDivergeKernel = R"PTX(
.visible .entry diverge(.param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %x, %y, %bit;
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  mov.u32 %t, %tid.x;
  and.b32 %bit, %t, 1;
  setp.eq.u32 %p0, %bit, 1;
  @%p0 bra $L_odd;
  add.u32 %x, %t, 100;
  bra $L_join;
$L_odd:
  mul.lo.u32 %x, %t, 3;
  and.b32 %bit, %t, 2;
  setp.ne.u32 %p1, %bit, 0;
  @!%p1 bra $L_join;
  add.u32 %x, %x, 1000;
$L_join:
  bar.sync 0;
  shfl.sync.bfly.b32 %y, %x, 1, 0x1f, 0xffffffff;
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %t, 8;
  add.s64 %rd1, %rd0, %rd1;
  st.global.v2.u32 [%rd1], {%x, %y};
  ret;
}
)PTX";

// Lane t runs the body n = t % 5 times: sum = sum over i < n of (i t + 1).
const char *const kLatchFirstLoopKernel = R"PTX(
.visible .entry latch_first_loop(.param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %n, %i, %sum;
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  mov.u32 %t, %tid.x;
  rem.u32 %n, %t, 5;
  mov.u32 %i, 0;
  mov.u32 %sum, 0;
  setp.eq.u32 %p0, %n, 0;
  @%p0 bra $L_done;
  bra $L_body;
$L_latch:                      // the latch, laid out before the body
  add.u32 %i, %i, 1;
  setp.lt.u32 %p1, %i, %n;
  @!%p1 bra $L_done;
$L_body:
  mad.lo.u32 %sum, %i, %t, %sum;
  add.u32 %sum, %sum, 1;
  bra $L_latch;
$L_done:
  bar.sync 0;                  // legal only once every lane is back
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %t, 4;
  add.s64 %rd1, %rd0, %rd1;
  st.global.u32 [%rd1], %sum;
  ret;
}
)PTX";

// v = 10 t + 7. Words per lane: 0 v[t ^ 1], 1 v[t ^ 6], 2 v[5],
// 3 v[(t & ~7) | 2] (segments of 8 lanes), 4 shfl.up by 3 (own value on
// lanes 0-2), 5 its predicate.
const char *const kShuffleKernel = R"PTX(
.visible .entry shuffles(.param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %v, %r<6>;
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  mov.u32 %t, %tid.x;
  mad.lo.u32 %v, %t, 10, 7;
  shfl.sync.bfly.b32 %r0, %v, 1, 0x1f, 0xffffffff;
  shfl.sync.bfly.b32 %r1|%p0, %v, 6, 0x1f, 0xffffffff;
  shfl.sync.idx.b32 %r2, %v, 5, 0x1f, 0xffffffff;
  shfl.sync.idx.b32 %r3, %v, 2, 0x181f, 0xffffffff;
  shfl.sync.up.b32 %r4|%p1, %v, 3, 0, 0xffffffff;
  selp.u32 %r5, 1, 0, %p1;
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %t, 24;
  add.s64 %rd1, %rd0, %rd1;
  st.global.u32 [%rd1], %r0;
  st.global.u32 [%rd1+4], %r1;
  st.global.u32 [%rd1+8], %r2;
  st.global.u32 [%rd1+12], %r3;
  st.global.u32 [%rd1+16], %r4;
  st.global.u32 [%rd1+20], %r5;
  ret;
}
)PTX";

std::string divergedAlignedKernel(std::string_view instruction) {
  return substitute(R"PTX(
.visible .entry diverged_aligned(.param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t;
  .reg .pred %p;
  mov.u32 %t, %tid.x;
  setp.lt.u32 %p, %t, 16;
  @%p bra $L_skip;
  {{INSTRUCTION}}   // ALIGNED
$L_skip:
  ret;
}
)PTX",
                    "INSTRUCTION", instruction);
}

const char *const kFaultKernel = R"PTX(
.visible .entry faults(.param .u64 out, .param .u32 mode)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %mode, %v;
  .reg .pred %p;
  .reg .b64 %rd<2>;
  mov.u32 %t, %tid.x;
  ld.param.u64 %rd0, [out];
  ld.param.u32 %mode, [mode];
  setp.ne.u32 %p, %mode, 0;
  @%p bra $L_misaligned;
  mul.wide.u32 %rd1, %t, 4;
  add.s64 %rd1, %rd0, %rd1;
  st.global.u32 [%rd1], %t;     // OUT_OF_BOUNDS
  ret;
$L_misaligned:
  ld.global.u32 %v, [%rd0+2];   // MISALIGNED
  st.global.u32 [%rd0], %v;
  ret;
}
)PTX";

const char *const kStuckBarrierKernel = R"PTX(
.visible .entry stuck_bar(.param .u64 out)
.maxntid 96, 1, 1
{
  .reg .b32 %t;
  .reg .pred %p;
  mov.u32 %t, %tid.x;
  setp.ge.u32 %p, %t, 64;
  @%p bra $L_exit;
  bar.sync 1, 96;    // STUCK: the third warp exits instead
$L_exit:
  ret;
}
)PTX";

const char *const kPipelineKernel = R"PTX(
.visible .entry pipeline(.param .align 64 .b8 in_map[128],
                         .param .align 64 .b8 out_map[128])
.maxntid 64, 1, 1
{
  .reg .b32 %t, %src, %dst;
  .reg .f32 %x, %y, %tf;
  .reg .pred %p<2>;
  .shared .align 128 .b8 src_tile[256];
  .shared .align 128 .b8 dst_tile[256];
  .shared .align 8 .b64 bar;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
  @%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [src_tile], [in_map, {0, 0}], [bar];
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
  @!%p1 bra $L_wait;
  mov.u32 %src, src_tile;
  mad.lo.u32 %src, %t, 4, %src;
  ld.shared.f32 %x, [%src];
  cvt.rn.f32.u32 %tf, %t;
  fma.rn.f32 %y, %x, %x, %tf;
  mov.u32 %dst, dst_tile;
  mad.lo.u32 %dst, %t, 4, %dst;
  st.shared.f32 [%dst], %y;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @%p0 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [out_map, {0, 0}], [dst_tile];
  @%p0 cp.async.bulk.commit_group;
  @%p0 cp.async.bulk.wait_group.read 0;
  ret;
}
)PTX";

// --- Parser kernels
// -----------------------------------------------------------

// Words per lane t at out + 32 t:
//  0: predication and scopes: 1 on lane 0, else 15, + 100 on lanes >= 8,
//     + 1000 on lanes >= 16 (each scope has its own %tmp and $L_skip);
//  1: the outer %tmp (7), untouched by the scopes' own %tmp;
//  2-3: mov.b64 {t, 0xABCD} stored as a u64;
//  4-5: ld.shared.v2 of [scratch+8]: words 2 and 3 of scratch, i.e. 22, 33;
//  6: the f32 bits of 0f3F800000 + 0f40000000 (3.0);
//  7: dyn[t] after a TMA load of the box at column 8, row 0 of a 16x8 f32
//     tensor whose map comes from a register and coordinates from
//     registers.
const char *const kSyntaxKernel = R"PTX(
.file 1 "syntax.cu"
/* A module-scope shared array, addressed as [scratch+8] below. */
.shared .align 16 .b8 scratch[64];
.extern .shared .align 1024 .b8 dyn[];

.visible .entry syntax(
    .param .u64 out,
    .param .u64 map_ptr
)
.maxntid 32, 1, 1
{
  .reg .b32 %r<12>;
  .reg .b32 %tmp;
  .reg .b64 %rd<6>;
  .reg .f32 %f<3>;
  .reg .pred %p<3>;
  .shared .align 8 .b64 bar;
  .loc 1 10 3
  mov.u32 %r0, %tid.x;
  setp.eq.u32 %p0, %r0, 0;
  mov.u32 %tmp, 7;
  mov.u32 %r1, 5;
  @%p0 mov.u32 %r1, 1;
  @!%p0 add.u32 %r1, %r1, 10;
  {
    .reg .pred %q;
    .reg .b32 %tmp;
    setp.lt.u32 %q, %r0, 8;
    mov.u32 %tmp, 100;
    @%q bra $L_skip;
    add.u32 %r1, %r1, %tmp;
  $L_skip:
  }
  {
    .reg .pred %q;
    .reg .b32 %tmp;
    setp.lt.u32 %q, %r0, 16;
    mov.u32 %tmp, 1000;
    @%q bra $L_skip;
    add.u32 %r1, %r1, %tmp;
  $L_skip:
  }
  // scratch[i] = 11 i for i < 16, then [scratch+8] is {22, 33}.
  setp.lt.u32 %p1, %r0, 16;
  mov.u32 %r2, scratch;
  mad.lo.u32 %r2, %r0, 4, %r2;
  mul.lo.u32 %r3, %r0, 11;
  @%p1 st.shared.u32 [%r2], %r3;
  bar.sync 0;
  ld.shared.v2.u32 {%r4, %r5}, [scratch+8];
  mov.u32 %r6, 0xABCD;
  mov.b64 %rd1, {%r0, %r6};
  mov.f32 %f0, 0f3F800000;
  add.f32 %f1, %f0, 0f40000000;
  // TMA: the map address from a register, coordinates (8, 0) in registers.
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  ld.param.u64 %rd2, [map_ptr];
  mov.u32 %r7, 8;
  mov.u32 %r8, 0;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
  @%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [dyn], [%rd2, {%r7, %r8}], [bar];
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra $L_wait;
  mov.u32 %r9, dyn;
  mad.lo.u32 %r9, %r0, 4, %r9;
  ld.shared.f32 %f2, [%r9];
  .pragma "nounroll";
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd3, %r0, 32;
  add.s64 %rd0, %rd0, %rd3;
  st.global.v2.u32 [%rd0], {%r1, %tmp};
  st.global.u64 [%rd0+8], %rd1;
  st.global.v2.u32 [%rd0+16], {%r4, %r5};
  st.global.f32 [%rd0+24], %f1;
  st.global.f32 [%rd0+28], %f2;
  ret;
}
)PTX";

// --- Hazard kernels
// -----------------------------------------------------------

std::string raceKernel(bool withBarrier) {
  return substitute(R"PTX(
.visible .entry race(.param .u64 out)
.maxntid 64, 1, 1
{
  .reg .b32 %t, %v;
  .reg .pred %p<2>;
  .reg .b64 %rd0;
  .shared .align 4 .b32 cell;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  setp.eq.u32 %p1, %t, 32;
  mov.u32 %v, 42;
  @%p0 st.shared.u32 [cell], %v;     // WRITE by thread 0 (warp 0)
  {{BARRIER}}
  @%p1 ld.shared.u32 %v, [cell];     // READ by thread 32 (warp 1)
  ld.param.u64 %rd0, [out];
  @%p1 st.global.u32 [%rd0], %v;
  ret;
}
)PTX",
                    "BARRIER",
                    withBarrier ? "bar.sync 0;                        // FIX"
                                : "// (no barrier)");
}

std::string twoReadersKernel(bool allSynchronize) {
  return substitute(R"PTX(
.visible .entry two_readers(.param .u64 out)
.maxntid 96, 1, 1
{
  .reg .b32 %t, %v, %w;
  .reg .pred %p<4>;
  .reg .b64 %rd<2>;
  .shared .align 4 .b32 cell;
  mov.u32 %t, %tid.x;
  shr.u32 %w, %t, 5;
  setp.eq.u32 %p0, %t, 0;
  setp.eq.u32 %p1, %t, 32;
  setp.eq.u32 %p2, %t, 64;
  setp.ne.u32 %p3, %w, 0;            // warps 1 and 2
  mov.u32 %v, 0;
  @%p0 ld.shared.u32 %v, [cell];     // READ0 by thread 0 (warp 0)
  @%p1 ld.shared.u32 %v, [cell];     // READ1 by thread 32 (warp 1)
  {{BARRIER}}
  mov.u32 %v, 9;
  @%p2 st.shared.u32 [cell], %v;     // WRITE by thread 64 (warp 2)
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %w, 4;
  add.s64 %rd0, %rd0, %rd1;
  st.global.u32 [%rd0], %w;
  ret;
}
)PTX",
                    "BARRIER",
                    allSynchronize
                        ? "bar.sync 0;                        // FIX"
                        : "@%p3 bar.sync 1, 64;               // warps 1, 2");
}

std::string tmaReadKernel(bool afterWait) {
  const char *read = "ld.shared.f32 %x, [%addr];         // READ";
  std::string text = R"PTX(
.visible .entry tma_read(.param .align 64 .b8 map[128], .param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %addr;
  .reg .f32 %x;
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  .shared .align 128 .b8 tile[256];
  .shared .align 8 .b64 bar;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  mov.u32 %addr, tile;
  mad.lo.u32 %addr, %t, 4, %addr;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
  @%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [tile], [map, {0, 0}], [bar];   // TMA
  {{EARLY}}
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
  @!%p1 bra $L_wait;
  {{LATE}}
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %t, 4;
  add.s64 %rd0, %rd0, %rd1;
  st.global.f32 [%rd0], %x;
  ret;
}
)PTX";
  text =
      substitute(text, "EARLY", afterWait ? "// (read after the wait)" : read);
  return substitute(text, "LATE",
                    afterWait ? read : "// (read before the wait)");
}

std::string tmaStoreKernel(bool fenced) {
  return substitute(R"PTX(
.visible .entry tma_store(.param .align 64 .b8 map[128])
.maxntid 64, 1, 1
{
  .reg .b32 %t, %addr;
  .reg .f32 %x;
  .reg .pred %p0;
  .shared .align 128 .b8 tile[256];
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  cvt.rn.f32.u32 %x, %t;
  mov.u32 %addr, tile;
  mad.lo.u32 %addr, %t, 4, %addr;
  st.shared.f32 [%addr], %x;         // WRITE
  {{FENCE}}
  bar.sync 0;
  @%p0 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [map, {0, 0}], [tile];   // STORE
  @%p0 cp.async.bulk.commit_group;
  @%p0 cp.async.bulk.wait_group.read 0;
  ret;
}
)PTX",
                    "FENCE",
                    fenced ? "fence.proxy.async.shared::cta;     // FIX"
                           : "// (no fence.proxy.async)");
}

std::string storeReuseKernel(bool waitFirst) {
  return substitute(R"PTX(
.visible .entry store_reuse(.param .align 64 .b8 map[128])
.maxntid 64, 1, 1
{
  .reg .b32 %t, %addr;
  .reg .f32 %x;
  .reg .pred %p0;
  .shared .align 128 .b8 tile[256];
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  cvt.rn.f32.u32 %x, %t;
  mov.u32 %addr, tile;
  mad.lo.u32 %addr, %t, 4, %addr;
  st.shared.f32 [%addr], %x;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  @%p0 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [map, {0, 0}], [tile];   // STORE
  @%p0 cp.async.bulk.commit_group;
  {{WAIT}}
  add.f32 %x, %x, 0f42C80000;
  st.shared.f32 [%addr], %x;         // OVERWRITE
  ret;
}
)PTX",
                    "WAIT",
                    waitFirst
                        ? "@%p0 cp.async.bulk.wait_group.read 0;   // FIX\n"
                          "  bar.sync 0;"
                        : "// (the tile is reused before the store read it)");
}

std::string mixedChunkStoreKernel(bool allFence) {
  return substitute(
      R"PTX(
.visible .entry store_mixed(.param .align 64 .b8 map[128])
.maxntid 64, 1, 1
{
  .reg .b32 %t, %i, %w, %addr;
  .reg .f32 %x;
  .reg .pred %p<2>;
  .shared .align 128 .b8 tile[256];
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  setp.ge.u32 %p1, %t, 32;
  // Word i = 2 (t % 32) + t / 32: each chunk holds two words of each warp.
  and.b32 %i, %t, 31;
  shl.b32 %i, %i, 1;
  shr.u32 %w, %t, 5;
  add.u32 %i, %i, %w;
  cvt.rn.f32.u32 %x, %i;
  mov.u32 %addr, tile;
  mad.lo.u32 %addr, %i, 4, %addr;
  st.shared.f32 [%addr], %x;         // WRITE
  {{FENCE}}
  bar.sync 0;
  @%p0 cp.async.bulk.tensor.2d.global.shared::cta.tile.bulk_group [map, {0, 0}], [tile];   // STORE
  @%p0 cp.async.bulk.commit_group;
  @%p0 cp.async.bulk.wait_group.read 0;
  ret;
}
)PTX",
      "FENCE",
      allFence ? "fence.proxy.async.shared::cta;     // FIX"
               : "@%p1 fence.proxy.async.shared::cta;   // warp 1 only");
}

std::string mixedChunkRefillKernel(bool withBarrier) {
  return substitute(R"PTX(
.visible .entry refill_mixed(.param .align 64 .b8 map[128], .param .u64 out)
.maxntid 64, 1, 1
{
  .reg .b32 %t, %i, %w, %addr;
  .reg .f32 %x;
  .reg .pred %p<5>;
  .reg .b64 %rd<2>;
  .shared .align 128 .b8 tile[256];
  .shared .align 8 .b64 bar;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  setp.eq.u32 %p1, %t, 32;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
  @%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [tile], [map, {0, 0}], [bar];
$L_fill:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [bar], 0;
  @!%p2 bra $L_fill;
  // Word i = 2 (t % 32) + t / 32: each chunk is read by both warps.
  and.b32 %i, %t, 31;
  shl.b32 %i, %i, 1;
  shr.u32 %w, %t, 5;
  add.u32 %i, %i, %w;
  mov.u32 %addr, tile;
  mad.lo.u32 %addr, %i, 4, %addr;
  ld.shared.f32 %x, [%addr];         // READ
  {{BARRIER}}
  @%p1 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
  @%p1 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [tile], [map, {0, 0}], [bar];   // REFILL
$L_refill:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 1;
  @!%p3 bra $L_refill;
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %i, 4;
  add.s64 %rd0, %rd0, %rd1;
  st.global.f32 [%rd0], %x;
  ret;
}
)PTX",
                    "BARRIER",
                    withBarrier ? "bar.sync 0;                        // FIX"
                                : "// (no barrier before the refill)");
}

std::string wgmmaKernel(WgmmaMutation mutation) {
  const char *zero = "mov.f32 %d0, 0f00000000;           // ZERO\n"
                     "  mov.f32 %d1, 0f00000000;\n"
                     "  mov.f32 %d2, 0f00000000;\n"
                     "  mov.f32 %d3, 0f00000000;";
  bool late = mutation == WgmmaMutation::AccumulatorWrittenAfterFence;
  std::string text = R"PTX(
.visible .entry wgmma_kernel(.param .align 64 .b8 map[128], .param .u64 out)
.maxntid 128, 1, 1
{
  .reg .b32 %t, %ones, %a, %b;
  .reg .b64 %rd<4>;
  .reg .f32 %d<4>;
  .reg .f32 %x;
  .reg .pred %p<4>;
  .shared .align 128 .b8 bufA[2048];
  .shared .align 128 .b8 bufB[256];
  .shared .align 8 .b64 bar;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  setp.lt.u32 %p1, %t, 64;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  // A (64x16) and B (16x8) are all ones (bf16 0x3F80), written by threads.
  mov.u32 %ones, 0x3F803F80;
  mov.u32 %a, bufA;
  mad.lo.u32 %a, %t, 4, %a;
  st.shared.u32 [%a], %ones;
  st.shared.u32 [%a+512], %ones;
  st.shared.u32 [%a+1024], %ones;
  st.shared.u32 [%a+1536], %ones;
  mov.u32 %b, bufB;
  mad.lo.u32 %b, %t, 4, %b;
  @%p1 st.shared.u32 [%b], %ones;
  fence.proxy.async.shared::cta;
  bar.sync 0;
  // K-major, no swizzle: 8-row x 16-byte core matrices, the next one along
  // K at LBO = 128 bytes, the next 8 rows at SBO = 256 bytes.
  mov.u32 %a, bufA;
  cvt.u64.u32 %rd0, %a;
  shr.u64 %rd0, %rd0, 4;
  or.b64 %rd0, %rd0, 0x0000001000080000;
  mov.u32 %b, bufB;
  cvt.u64.u32 %rd1, %b;
  shr.u64 %rd1, %rd1, 4;
  or.b64 %rd1, %rd1, 0x0000001000080000;
  setp.ne.u32 %p2, %t, 1000;         // scale-d: true
  {{ZERO_EARLY}}
  wgmma.fence.sync.aligned;          // FENCE
  {{ZERO_LATE}}
  wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%d0, %d1, %d2, %d3}, %rd0, %rd1, %p2, 1, 1, 0, 0;   // MMA
  wgmma.commit_group.sync.aligned;
  {{EARLY_READ}}
  wgmma.wait_group.sync.aligned 0;   // WAIT
  {{BARRIER}}
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
  @%p0 cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [bufB], [map, {0, 0}], [bar];   // REFILL
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;
  @!%p3 bra $L_wait;
  ld.param.u64 %rd2, [out];
  mul.wide.u32 %rd3, %t, 16;
  add.s64 %rd2, %rd2, %rd3;
  st.global.v4.f32 [%rd2], {%d0, %d1, %d2, %d3};
  ret;
}
)PTX";
  text = substitute(text, "ZERO_EARLY",
                    late ? "// (zeroed after the fence)" : zero);
  text = substitute(text, "ZERO_LATE",
                    late ? zero : "// (zeroed before the fence)");
  text = substitute(text, "EARLY_READ",
                    mutation == WgmmaMutation::AccumulatorReadBeforeWait
                        ? "mov.f32 %x, %d0;                   // EARLY_READ"
                        : "// (no accumulator access in flight)");
  return substitute(text, "BARRIER",
                    mutation == WgmmaMutation::RefillWithoutBarrier
                        ? "// (no barrier before the refill)"
                        : "bar.sync 1, 128;                   // FIX");
}

std::string arriveInitKernel(bool initFirst) {
  const char *init = "@%p0 mbarrier.init.shared::cta.b64 [bar], 32;   // INIT\n"
                     "  bar.sync 0;";
  std::string text = R"PTX(
.visible .entry arrive_init(.param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t;
  .reg .b64 %state, %rd0;
  .reg .pred %p<2>;
  .shared .align 8 .b64 bar;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  {{INIT_FIRST}}
  mbarrier.arrive.shared::cta.b64 %state, [bar];   // ARRIVE
  {{INIT_LATE}}
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
  @!%p1 bra $L_wait;
  ld.param.u64 %rd0, [out];
  @%p0 st.global.u32 [%rd0], %t;
  ret;
}
)PTX";
  text = substitute(text, "INIT_FIRST",
                    initFirst ? init : "// (init comes later)");
  return substitute(text, "INIT_LATE",
                    initFirst ? "// (init came first)" : init);
}

std::string txCountKernel(uint32_t bytes) {
  return substitute(R"PTX(
.visible .entry tx_count(.param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %one;
  .reg .pred %p<2>;
  .reg .b64 %rd0;
  .shared .align 8 .b64 bar;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  bar.sync 0;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], {{BYTES}};   // EXPECT
  @%p0 mbarrier.complete_tx.shared::cta.b64 [bar], {{BYTES}};   // COMPLETE
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
  @!%p1 bra $L_wait;
  mov.u32 %one, 1;
  ld.param.u64 %rd0, [out];
  @%p0 st.global.u32 [%rd0], %one;
  ret;
}
)PTX",
                    "BYTES", std::to_string(bytes));
}

std::string phaseBehindKernel(unsigned phases) {
  std::string arrivals;
  for (unsigned i = 0; i < phases; ++i)
    arrivals += "  @%p2 mbarrier.arrive.shared::cta.b64 %state, [bar];   // "
                "phase " +
                std::to_string(i) + " completes\n";
  return substitute(R"PTX(
.visible .entry phases(.param .u64 out)
.maxntid 64, 1, 1
{
  .reg .b32 %t;
  .reg .b64 %state, %rd0;
  .reg .pred %p<4>;
  .shared .align 8 .b64 bar;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  bar.sync 0;
  setp.ge.u32 %p1, %t, 32;
  @!%p1 bra $L_waiter;
  // Warp 1: thread 32 completes the phases, then the handshake.
  setp.eq.u32 %p2, %t, 32;
{{ARRIVALS}}  bar.sync 1, 64;
  ret;
$L_waiter:
  // Warp 0: after the handshake, wait for "phase 0" (parity 0).
  bar.sync 1, 64;
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;   // WAIT
  @!%p3 bra $L_wait;
  ld.param.u64 %rd0, [out];
  @%p0 st.global.u32 [%rd0], %t;
  ret;
}
)PTX",
                    "ARRIVALS", arrivals);
}

const char *const kPhaseInStepKernel = R"PTX(
.visible .entry phases(.param .u64 out)
.maxntid 64, 1, 1
{
  .reg .b32 %t, %one;
  .reg .b64 %state, %rd0;
  .reg .pred %p<6>;
  .shared .align 8 .b64 bar;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  bar.sync 0;
  setp.ge.u32 %p1, %t, 32;
  @!%p1 bra $L_waiter;
  // Warp 1: one phase per handshake pair (barrier 1: the phase is complete,
  // barrier 2: warp 0 has seen it).
  setp.eq.u32 %p2, %t, 32;
  @%p2 mbarrier.arrive.shared::cta.b64 %state, [bar];
  bar.sync 1, 64;
  bar.sync 2, 64;
  @%p2 mbarrier.arrive.shared::cta.b64 %state, [bar];
  bar.sync 1, 64;
  bar.sync 2, 64;
  @%p2 mbarrier.arrive.shared::cta.b64 %state, [bar];
  bar.sync 1, 64;
  ret;
$L_waiter:
  bar.sync 1, 64;
$L_wait0:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [bar], 0;
  @!%p3 bra $L_wait0;
  bar.sync 2, 64;
  bar.sync 1, 64;
$L_wait1:
  mbarrier.try_wait.parity.shared::cta.b64 %p4, [bar], 1;
  @!%p4 bra $L_wait1;
  bar.sync 2, 64;
  bar.sync 1, 64;
$L_wait2:
  mbarrier.try_wait.parity.shared::cta.b64 %p5, [bar], 0;
  @!%p5 bra $L_wait2;
  mov.u32 %one, 1;
  ld.param.u64 %rd0, [out];
  @%p0 st.global.u32 [%rd0], %one;
  ret;
}
)PTX";

std::string stuckMbarrierKernel(bool withCopy) {
  return substitute(R"PTX(
.visible .entry stuck_mbarrier(.param .align 64 .b8 map[128], .param .u64 out)
.maxntid 64, 1, 1
{
  .reg .b32 %t, %one;
  .reg .pred %p<2>;
  .reg .b64 %rd0;
  .shared .align 128 .b8 tile[256];
  .shared .align 8 .b64 bar;
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p0, %t, 0;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  bar.sync 0;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;   // EXPECT
  {{COPY}}
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;   // WAIT
  @!%p1 bra $L_wait;
  mov.u32 %one, 1;
  ld.param.u64 %rd0, [out];
  @%p0 st.global.u32 [%rd0], %one;
  ret;
}
)PTX",
                    "COPY",
                    withCopy
                        ? "@%p0 cp.async.bulk.tensor.2d.shared::cluster."
                          "global.tile.mbarrier::complete_tx::bytes "
                          "[tile], [map, {0, 0}], [bar];   // FIX"
                        : "// (the copy that brings the bytes is missing)");
}

// --- Warp specialization and clusters
// ------------------------------------------

std::string warpRolesKernel(std::string_view bounds, std::string_view producer,
                            std::string_view consumer) {
  std::string text = R"PTX(
.visible .entry warp_roles(.param .u64 out)
{{BOUNDS}}
{
  .reg .b32 %t, %wg, %i, %x;
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  mov.u32 %t, %tid.x;
  shr.u32 %wg, %t, 7;
  mov.u32 %x, %t;
  setp.ne.u32 %p0, %wg, 0;
  @%p0 bra $L_consumer;
  // The producer works first, so the consumers reach their setmaxnreg
  // before it releases registers.
  mov.u32 %i, 0;
$L_work:
  mad.lo.u32 %x, %x, 1664525, 1013904223;
  add.u32 %i, %i, 1;
  setp.lt.u32 %p1, %i, 200;
  @%p1 bra $L_work;
  {{PRODUCER}}   // PRODUCER
  bra.uni $L_store;
$L_consumer:
  {{CONSUMER}}   // CONSUMER
  add.u32 %x, %t, 1000;
$L_store:
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %t, 4;
  add.s64 %rd0, %rd0, %rd1;
  st.global.u32 [%rd0], %x;
  ret;
}
)PTX";
  text = substitute(text, "BOUNDS", bounds);
  text = substitute(text, "PRODUCER", producer);
  return substitute(text, "CONSUMER", consumer);
}

const char *const kMismatchedSetmaxnregKernel = R"PTX(
.visible .entry mismatched_setmaxnreg()
.maxntid 128, 1, 1
.minnctapersm 1
{
  .reg .b32 %w;
  .reg .pred %p;
  mov.u32 %w, %tid.x;
  shr.u32 %w, %w, 5;
  setp.eq.u32 %p, %w, 2;
  @%p bra $L_other;
  setmaxnreg.dec.sync.aligned.u32 40;   // FIRST
  bra.uni $L_done;
$L_other:
  setmaxnreg.dec.sync.aligned.u32 48;   // OTHER
$L_done:
  ret;
}
)PTX";

const char *const kSetmaxnregExitKernel = R"PTX(
.visible .entry setmaxnreg_exit()
.maxntid 128, 1, 1
.minnctapersm 1
{
  .reg .b32 %w;
  .reg .pred %p;
  mov.u32 %w, %tid.x;
  shr.u32 %w, %w, 5;
  setp.eq.u32 %p, %w, 3;
  @%p bra $L_exit;
  setmaxnreg.dec.sync.aligned.u32 40;   // DEC
$L_exit:
  ret;   // EXIT
}
)PTX";

std::string setmaxnregTwiceKernel(std::string_view between) {
  return substitute(R"PTX(
.visible .entry setmaxnreg_twice()
.maxntid 128, 1, 1
.minnctapersm 1
{
  .reg .b32 %i;
  .reg .pred %p;
  setmaxnreg.dec.sync.aligned.u32 40;
  {{BETWEEN}}
  setmaxnreg.dec.sync.aligned.u32 32;   // SECOND
  ret;
}
)PTX",
                    "BETWEEN", between);
}

const char *const kNamedBarriersKernel = R"PTX(
.visible .entry named_barriers(.param .u64 out)
.maxntid 384, 1, 1
{
  .reg .b32 %t, %w, %a, %b, %c, %v, %q, %base;
  .reg .pred %p<3>;
  .reg .b64 %rd<2>;
  .shared .align 4 .b8 words[1536];
  .shared .align 4 .b8 note[128];
  mov.u32 %t, %tid.x;
  shr.u32 %w, %t, 5;
  mov.u32 %base, words;
  mov.u32 %a, 0;
  mov.u32 %b, 0;
  mov.u32 %c, 0;
  setp.ge.u32 %p0, %t, 128;
  @%p0 bra $L_consumers;
  // Warpgroup 0 touches no barrier but 3: warp 0 leaves warp 4 a note.
  setp.ne.u32 %p1, %w, 0;
  @%p1 bra $L_store;
  mov.u32 %q, note;
  mad.lo.u32 %q, %t, 4, %q;
  add.u32 %v, %t, 1000;
  st.shared.u32 [%q], %v;
  bar.arrive 3, 64;
  bra.uni $L_store;
$L_consumers:
  mad.lo.u32 %q, %t, 4, %base;
  st.shared.u32 [%q], %t;
  setp.ge.u32 %p1, %t, 256;
  @%p1 bra $L_second;
  bar.sync 1, 128;
  bra.uni $L_synchronized;
$L_second:
  barrier.sync.aligned 15, 128;
$L_synchronized:
  xor.b32 %v, %t, 32;
  mad.lo.u32 %q, %v, 4, %base;
  ld.shared.u32 %a, [%q];
  bar.sync 7, 256;
  setp.lt.u32 %p2, %t, 256;
  selp.b32 %v, 128, -128, %p2;
  add.u32 %v, %t, %v;
  mad.lo.u32 %q, %v, 4, %base;
  ld.shared.u32 %b, [%q];
  setp.ne.u32 %p1, %w, 4;
  @%p1 bra $L_store;
  bar.sync 3, 64;
  mov.u32 %q, note;
  sub.u32 %v, %t, 128;
  mad.lo.u32 %q, %v, 4, %q;
  ld.shared.u32 %c, [%q];
$L_store:
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %t, 12;
  add.s64 %rd0, %rd0, %rd1;
  st.global.u32 [%rd0], %a;
  st.global.u32 [%rd0+4], %b;
  st.global.u32 [%rd0+8], %c;
  ret;
}
)PTX";

std::string barrierMisuseKernel(BarrierMisuse misuse) {
  std::string others, warp1;
  switch (misuse) {
  case BarrierMisuse::MismatchedCount:
    others = "bar.sync 2, 96;   // SET";
    warp1 = "barrier.sync.aligned 2, 64;   // MISMATCH";
    break;
  case BarrierMisuse::ArrivesTwice:
    others = "bar.arrive 4, 64;\n  bar.arrive 4, 64;   // AGAIN";
    warp1 = "bar.sync 4, 64;";
    break;
  case BarrierMisuse::CountAboveCta:
    others = warp1 = "bar.sync 1, 128;   // TOO_MANY";
    break;
  }
  std::string text = R"PTX(
.visible .entry barrier_misuse()
.maxntid 96, 1, 1
{
  .reg .b32 %w;
  .reg .pred %p;
  mov.u32 %w, %tid.x;
  shr.u32 %w, %w, 5;
  setp.eq.u32 %p, %w, 1;
  @%p bra $L_warp1;
  {{OTHERS}}
  ret;
$L_warp1:
  {{WARP1}}
  ret;
}
)PTX";
  return substitute(substitute(text, "OTHERS", others), "WARP1", warp1);
}

const char *const kClusterIdsKernel = R"PTX(
.visible .entry cluster_ids(.param .u64 out)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %r<13>, %v, %mine, %next, %n, %index;
  .reg .pred %p;
  .reg .b64 %rd<2>;
  .shared .align 4 .b8 word[4];
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p, %t, 0;
  mov.u32 %r10, %cluster_ctarank;
  mov.u32 %r11, %cluster_nctarank;
  mad.lo.u32 %v, %r10, 100, 7;
  mov.u32 %mine, word;
  @%p st.shared.u32 [%mine], %v;
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  add.u32 %n, %r10, 1;
  rem.u32 %n, %n, %r11;
  mapa.shared::cluster.u32 %next, %mine, %n;
  ld.shared::cluster.u32 %r12, [%next];
  // The next CTA reads this one's word: stay until it has.
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  mov.u32 %r0, %ctaid.x;
  mov.u32 %r1, %ctaid.y;
  mov.u32 %r2, %clusterid.x;
  mov.u32 %r3, %clusterid.y;
  mov.u32 %r4, %nclusterid.x;
  mov.u32 %r5, %nclusterid.y;
  mov.u32 %r6, %cluster_ctaid.x;
  mov.u32 %r7, %cluster_ctaid.y;
  mov.u32 %r8, %cluster_nctaid.x;
  mov.u32 %r9, %cluster_nctaid.y;
  mov.u32 %index, %nctaid.x;
  mad.lo.u32 %index, %r1, %index, %r0;
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %index, 64;
  add.s64 %rd0, %rd0, %rd1;
  @%p st.global.v4.u32 [%rd0], {%r0, %r1, %r2, %r3};
  @%p st.global.v4.u32 [%rd0+16], {%r4, %r5, %r6, %r7};
  @%p st.global.v4.u32 [%rd0+32], {%r8, %r9, %r10, %r11};
  @%p st.global.u32 [%rd0+48], %r12;
  ret;
}
)PTX";

std::string wsClusterKernel(bool clusterSyncAtEnd) {
  return substitute(R"PTX(
.visible .entry ws_cluster(.param .align 64 .b8 map[128], .param .u64 out)
.maxntid 384, 1, 1
.minnctapersm 1
.reqnctapercluster 2, 1, 1
{
  .reg .b32 %t, %wg, %rank, %i, %s, %ph, %full, %empty, %dst, %row, %e;
  .reg .b32 %addr, %mbar, %target, %first;
  .reg .f32 %x, %sum;
  .reg .pred %p<4>;
  .reg .b64 %rd<2>;
  .shared .align 128 .b8 stage[512];
  .shared .align 8 .b8 full[16];
  .shared .align 8 .b8 empty[16];
  mov.u32 %t, %tid.x;
  shr.u32 %wg, %t, 7;
  mov.u32 %rank, %cluster_ctarank;
  setp.eq.u32 %p0, %t, 0;
  @%p0 mbarrier.init.shared::cta.b64 [full], 1;
  @%p0 mbarrier.init.shared::cta.b64 [full+8], 1;
  @%p0 mbarrier.init.shared::cta.b64 [empty], 6;
  @%p0 mbarrier.init.shared::cta.b64 [empty+8], 6;
  fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  setp.ne.u32 %p1, %wg, 0;
  @%p1 bra $L_consumer;

  setmaxnreg.dec.sync.aligned.u32 40;
  @!%p0 bra $L_end;
  mov.u32 %i, 0;
$L_produce:
  and.b32 %s, %i, 1;
  shr.u32 %ph, %i, 1;
  and.b32 %ph, %ph, 1;
  xor.b32 %ph, %ph, 1;
  mov.u32 %empty, empty;
  mad.lo.u32 %empty, %s, 8, %empty;
$L_wait_empty:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%empty], %ph;
  @!%p2 bra $L_wait_empty;
  mov.u32 %full, full;
  mad.lo.u32 %full, %s, 8, %full;
  mbarrier.arrive.expect_tx.shared::cta.b64 _, [%full], 256;
  mov.u32 %dst, stage;
  mad.lo.u32 %dst, %s, 256, %dst;
  mad.lo.u32 %dst, %rank, 128, %dst;
  shl.b32 %row, %i, 3;
  mad.lo.u32 %row, %rank, 4, %row;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster [%dst], [map, {0, %row}], [%full], 3;   // MULTICAST
  add.u32 %i, %i, 1;
  setp.lt.u32 %p2, %i, 4;
  @%p2 bra $L_produce;
  bra.uni $L_end;

$L_consumer:
  setmaxnreg.inc.sync.aligned.u32 232;
  and.b32 %e, %t, 63;
  and.b32 %first, %t, 127;
  mov.f32 %sum, 0f00000000;
  mov.u32 %i, 0;
$L_consume:
  and.b32 %s, %i, 1;
  shr.u32 %ph, %i, 1;
  and.b32 %ph, %ph, 1;
  mov.u32 %full, full;
  mad.lo.u32 %full, %s, 8, %full;
$L_wait_full:
  mbarrier.try_wait.parity.shared::cta.b64 %p2, [%full], %ph;
  @!%p2 bra $L_wait_full;
  mov.u32 %addr, stage;
  mad.lo.u32 %addr, %s, 256, %addr;
  mad.lo.u32 %addr, %e, 4, %addr;
  ld.shared.f32 %x, [%addr];
  add.f32 %sum, %sum, %x;
  bar.sync %wg, 128;
  setp.ne.u32 %p3, %first, 0;
  @%p3 bra $L_released;
  mov.u32 %empty, empty;
  mad.lo.u32 %empty, %s, 8, %empty;
  mov.u32 %target, 0;
$L_release:
  mapa.shared::cluster.u32 %mbar, %empty, %target;
  setp.eq.u32 %p2, %wg, 1;
  @%p2 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%mbar];   // ARRIVE_ONE
  @!%p2 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%mbar], 2;   // ARRIVE_TWO
  add.u32 %target, %target, 1;
  setp.lt.u32 %p2, %target, 2;
  @%p2 bra $L_release;
$L_released:
  add.u32 %i, %i, 1;
  setp.lt.u32 %p2, %i, 4;
  @%p2 bra $L_consume;
  mov.u32 %addr, %ctaid.x;
  mad.lo.u32 %addr, %addr, 256, %t;
  sub.u32 %addr, %addr, 128;
  ld.param.u64 %rd0, [out];
  mul.wide.u32 %rd1, %addr, 4;
  add.s64 %rd0, %rd0, %rd1;
  st.global.f32 [%rd0], %sum;
$L_end:
  {{END}}
  ret;
}
)PTX",
                    "END",
                    clusterSyncAtEnd
                        ? "barrier.cluster.arrive.release.aligned;   // END\n"
                          "  barrier.cluster.wait.acquire.aligned;"
                        : "// (no cluster barrier before the exit)");
}

std::string latePeerKernel(bool waitAtEnd) {
  return substitute(R"PTX(
.visible .entry late_peer()
.maxntid 32, 1, 1
{
  .reg .b32 %t, %rank, %i, %bar, %remote;
  .reg .pred %p<3>;
  .shared .align 8 .b8 bar[8];
  mov.u32 %t, %tid.x;
  mov.u32 %rank, %cluster_ctarank;
  setp.eq.u32 %p0, %t, 0;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  setp.eq.u32 %p1, %rank, 0;
  @%p1 bra $L_end;
  mov.u32 %i, 0;
$L_work:
  add.u32 %i, %i, 1;
  setp.lt.u32 %p2, %i, 300;
  @%p2 bra $L_work;
  mov.u32 %bar, bar;
  mapa.shared::cluster.u32 %remote, %bar, 0;
  @%p0 mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%remote];   // LATE_ARRIVE
$L_end:
  {{END}}
  ret;
}
)PTX",
                    "END",
                    waitAtEnd ? "barrier.cluster.arrive.release.aligned;\n"
                                "  barrier.cluster.wait.acquire.aligned;"
                              : "// (rank 0 exits at once)");
}

const char *const kBulkMulticastKernel = R"PTX(
.visible .entry bulk_multicast(.param .u64 in, .param .u64 out)
.maxntid 32, 1, 1
.reqnctapercluster 2, 1, 1
{
  .reg .b32 %t, %rank, %dst, %a, %b;
  .reg .pred %p<2>;
  .reg .b64 %rd<3>;
  .shared .align 128 .b8 buffer[256];
  .shared .align 8 .b8 bar[8];
  mov.u32 %t, %tid.x;
  mov.u32 %rank, %cluster_ctarank;
  setp.eq.u32 %p0, %t, 0;
  @%p0 mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  @%p0 mbarrier.arrive.expect_tx.shared::cta.b64 _, [bar], 256;
  ld.param.u64 %rd0, [in];
  mul.wide.u32 %rd1, %rank, 128;
  add.s64 %rd0, %rd0, %rd1;
  mov.u32 %dst, buffer;
  mad.lo.u32 %dst, %rank, 128, %dst;
  @%p0 cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%dst], [%rd0], 128, [bar], 3;
$L_wait:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [bar], 0;
  @!%p1 bra $L_wait;
  mov.u32 %dst, buffer;
  mad.lo.u32 %dst, %t, 8, %dst;
  ld.shared.v2.u32 {%a, %b}, [%dst];
  ld.param.u64 %rd0, [out];
  mad.lo.u32 %dst, %rank, 32, %t;
  mul.wide.u32 %rd1, %dst, 8;
  add.s64 %rd0, %rd0, %rd1;
  st.global.v2.u32 [%rd0], {%a, %b};
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  ret;
}
)PTX";

std::string copyMisuseKernel(std::string_view copy) {
  return substitute(R"PTX(
.visible .entry copy_misuse(.param .u64 in)
.maxntid 32, 1, 1
{
  .reg .b32 %t, %bar, %remote;
  .reg .pred %p;
  .reg .b64 %rd0;
  .shared .align 128 .b8 buffer[128];
  .shared .align 8 .b8 bar[8];
  mov.u32 %t, %tid.x;
  setp.eq.u32 %p, %t, 0;
  @%p mbarrier.init.shared::cta.b64 [bar], 1;
  fence.mbarrier_init.release.cluster;
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  ld.param.u64 %rd0, [in];
  mov.u32 %bar, bar;
  mapa.shared::cluster.u32 %remote, %bar, 1;
  @%p {{COPY}}   // COPY
  barrier.cluster.arrive.release.aligned;
  barrier.cluster.wait.acquire.aligned;
  ret;
}
)PTX",
                    "COPY", copy);
}

const char *const kClusterBarrierExitKernel = R"PTX(
.visible .entry cluster_exit(.param .u64 out)
.maxntid 64, 1, 1
{
  .reg .b32 %t, %i, %one;
  .reg .pred %p<2>;
  .reg .b64 %rd<2>;
  mov.u32 %t, %tid.x;
  setp.ge.u32 %p0, %t, 32;
  @%p0 bra $L_wait;
  mov.u32 %i, 0;
$L_work:
  add.u32 %i, %i, 1;
  setp.lt.u32 %p1, %i, 300;
  @%p1 bra $L_work;
  ret;
$L_wait:
  barrier.cluster.arrive.aligned;
  barrier.cluster.wait.aligned;
  setp.ne.u32 %p1, %t, 32;
  @%p1 bra $L_done;
  mov.u32 %one, 1;
  ld.param.u64 %rd0, [out];
  mov.u32 %i, %ctaid.x;
  mul.wide.u32 %rd1, %i, 4;
  add.s64 %rd0, %rd0, %rd1;
  st.global.u32 [%rd0], %one;
$L_done:
  ret;
}
)PTX";

} // namespace mosaic::emulator::test
