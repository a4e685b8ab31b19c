//===- TmaReductionTest.cpp - TMA reductions, compiled and emulated ------===//
//
// Built in the main build only, where mosaic-compile and the PTX emulator
// are. Compiles a kernel that reduces one shared-memory tile into global
// buffers with every integer TMA reduction whose result depends on how the
// elements are read (signed and unsigned min and max, inc, 64-bit add),
// checks the data type each tensor map names in the manifest, and runs it
// on the emulator from chosen inputs: `cp.reduce.async.bulk.tensor` has no
// type suffix, so only the tensor map's data type tells a signed min from
// an unsigned one. A machine without ptxas cannot make the manifest and
// skips.
//
//===----------------------------------------------------------------------===//

#include "TestSupport.h"

#include "mosaic/Runtime/Device.h"
#include "mosaic/Runtime/Driver.h"
#include "mosaic/Runtime/Kernel.h"
#include "mosaic/Contracts/Manifest.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

using namespace mosaic;
using namespace mosaic::runtime;
using mosaic::runtime::test::Outcome;
using mosaic::runtime::test::runCommand;
using mosaic::runtime::test::writeTempFile;

namespace {

// One block of one warpgroup: x (128x32 i32) and w (128x16 i64) go through
// shared memory and are reduced into the other buffers.
const char *kKernel = R"(
!tile = memref<128x32xi32, #gpu.address_space<workgroup>>
!wide = memref<128x16xi64, #gpu.address_space<workgroup>>
gpu.module @kernels {
  gpu.func @tma_reductions(%x: memref<128x32xi32>, %w: memref<128x16xi64>,
      %smin: memref<128x32xi32>, %umin: memref<128x32xi32>,
      %smax: memref<128x32xi32>, %umax: memref<128x32xi32>,
      %inc: memref<128x32xi32>, %add64: memref<128x16xi64>,
      %smin64: memref<128x16xi64>, %umin64: memref<128x16xi64>) kernel
      attributes {known_block_size = array<i32: 128, 1, 1>,
                  known_grid_size = array<i32: 1, 1, 1>} {
    %c0 = arith.constant 0 : i32
    %s = mosaic_gpu.slice_smem 0 : !tile
    %s64 = mosaic_gpu.slice_smem 16384 : !wide
    %v = mosaic_gpu.vector_load %x : memref<128x32xi32> -> vector<128x32xi32>
    mosaic_gpu.vector_store %v, %s : vector<128x32xi32>, !tile
    %v64 = mosaic_gpu.vector_load %w : memref<128x16xi64> -> vector<128x16xi64>
    mosaic_gpu.vector_store %v64, %s64 : vector<128x16xi64>, !wide
    mosaic_gpu.async_store %s to %smin[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<smin>} : !tile, memref<128x32xi32>
    mosaic_gpu.async_store %s to %umin[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<umin>} : !tile, memref<128x32xi32>
    mosaic_gpu.async_store %s to %smax[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<smax>} : !tile, memref<128x32xi32>
    mosaic_gpu.async_store %s to %umax[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<umax>} : !tile, memref<128x32xi32>
    mosaic_gpu.async_store %s to %inc[%c0, %c0] slice_lengths [128, 32]
        {reduction_op = #mosaic_gpu.tma_reduction<inc>} : !tile, memref<128x32xi32>
    mosaic_gpu.async_store %s64 to %add64[%c0, %c0] slice_lengths [128, 16]
        {reduction_op = #mosaic_gpu.tma_reduction<add>} : !wide, memref<128x16xi64>
    mosaic_gpu.async_store %s64 to %smin64[%c0, %c0] slice_lengths [128, 16]
        {reduction_op = #mosaic_gpu.tma_reduction<smin>} : !wide, memref<128x16xi64>
    mosaic_gpu.async_store %s64 to %umin64[%c0, %c0] slice_lengths [128, 16]
        {reduction_op = #mosaic_gpu.tma_reduction<umin>} : !wide, memref<128x16xi64>
    gpu.return
  }
}
)";

constexpr size_t kNarrow = 128 * 32, kWide = 128 * 16;

/// Deterministic bits, about half of them negative as signed integers.
uint64_t mix(uint64_t i, uint64_t seed) {
  uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
  z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
  return z ^ (z >> 29);
}

#define ASSIGN_OR_FAIL(name, expr)                                             \
  auto name##Expected = (expr);                                                \
  ASSERT_TRUE(name##Expected.ok()) << name##Expected.message();                \
  auto &name = *name##Expected

TEST(TmaReduction, SignednessComesFromTheTensorMap) {
  std::string source = writeTempFile("mosaic_tma_reductions.mlir", kKernel);
  std::string base = testing::TempDir() + "mosaic_tma_reductions";
  std::remove((base + ".json").c_str());
  Outcome compiled = runCommand(std::string(MOSAIC_COMPILE_PATH) + " " +
                                source + " -o " + base + ".cubin");
  if (compiled.output.find("ptxas not found") != std::string::npos)
    GTEST_SKIP() << "no ptxas to compile the kernel with";
  ASSERT_EQ(compiled.status, 0) << compiled.output;

  // Parameters 0 and 1 are read; 2 to 9 are reduced into, each through its
  // own map, which names the data type the reduction reads.
  ASSIGN_OR_FAIL(manifest, loadManifest(base + ".json"));
  const char *expected[] = {"int32",  "uint32", "int32", "uint32",
                            "uint32", "uint64", "int64", "uint64"};
  ASSERT_EQ(manifest.tensorMaps.size(), 8u);
  for (const TensorMapDescription &map : manifest.tensorMaps) {
    ASSERT_GE(map.buffer, 2u);
    ASSERT_TRUE(map.dataType.has_value()) << "map " << map.index;
    EXPECT_EQ(std::string(spelling(*map.dataType)), expected[map.buffer - 2])
        << "map " << map.index << " of buffer " << map.buffer;
  }

  Expected<const Driver *> driver = Driver::get(Backend::Emulator);
  ASSERT_TRUE(driver.ok()) << driver.message();
  ASSIGN_OR_FAIL(context, Context::open(**driver, 0));
  ASSIGN_OR_FAIL(kernel, Kernel::load(context, manifest));

  // What the tile holds, and what the reduced buffers hold before.
  std::vector<int32_t> x(kNarrow), old(kNarrow);
  std::vector<int64_t> w(kWide), old64(kWide);
  for (size_t i = 0; i < kNarrow; ++i) {
    x[i] = static_cast<int32_t>(mix(i, 1));
    old[i] = static_cast<int32_t>(mix(i, 2));
  }
  // inc counts up to the tile's value and then wraps to 0: small bounds and
  // old values around them, for the second run.
  std::vector<int32_t> bound(kNarrow), oldInc(kNarrow);
  for (size_t i = 0; i < kNarrow; ++i) {
    bound[i] = static_cast<int32_t>(i % 5);
    oldInc[i] = static_cast<int32_t>((i / 5) % 7);
  }
  for (size_t i = 0; i < kWide; ++i) {
    w[i] = static_cast<int64_t>(mix(i, 3));
    old64[i] = static_cast<int64_t>(mix(i, 4));
  }

  std::vector<DeviceBuffer> buffers;
  std::vector<BufferArgument> arguments;
  for (const BufferParameter &parameter : manifest.buffers) {
    ASSIGN_OR_FAIL(buffer,
                   DeviceBuffer::allocate(context, parameter.byteSize()));
    arguments.push_back(
        {buffer.pointer(), parameter.elementType, parameter.shape});
    buffers.push_back(std::move(buffer));
  }
  ASSERT_EQ(buffers.size(), 10u);
  auto upload = [&](size_t index, const void *data) {
    Status status = buffers[index].upload(data);
    ASSERT_TRUE(status.ok()) << status.message();
  };
  // First run: the tile is x, reduced into `old` (64-bit: w into `old64`).
  // With random bounds inc almost never wraps; a second run below gives it
  // small ones.
  upload(0, x.data());
  upload(1, w.data());
  for (size_t index = 2; index <= 6; ++index)
    upload(index, old.data());
  for (size_t index = 7; index <= 9; ++index)
    upload(index, old64.data());
  ASSIGN_OR_FAIL(launch, kernel.prepare(arguments));
  Status ran = launch.run(nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message() << "\n" << (*driver)->emulatorReport();
  Status synced = (*driver)->check((*driver)->cuCtxSynchronize(), "sync");
  ASSERT_TRUE(synced.ok()) << synced.message() << "\n"
                           << (*driver)->emulatorReport();

  auto download32 = [&](size_t index) {
    std::vector<int32_t> values(kNarrow);
    Status status = buffers[index].download(values.data());
    EXPECT_TRUE(status.ok()) << status.message();
    return values;
  };
  auto download64 = [&](size_t index) {
    std::vector<int64_t> values(kWide);
    Status status = buffers[index].download(values.data());
    EXPECT_TRUE(status.ok()) << status.message();
    return values;
  };
  // PTX ISA, `red`/`atom` semantics the reductions share: inc is
  // (old >= b) ? 0 : old + 1 on unsigned values.
  auto incOf = [](uint32_t a, uint32_t b) { return a >= b ? 0u : a + 1; };
  std::vector<int32_t> smin = download32(2), umin = download32(3),
                       smax = download32(4), umax = download32(5),
                       inc = download32(6);
  size_t signsDiffer = 0;
  for (size_t i = 0; i < kNarrow; ++i) {
    uint32_t a = static_cast<uint32_t>(old[i]), b = static_cast<uint32_t>(x[i]);
    ASSERT_EQ(smin[i], std::min(old[i], x[i])) << "smin, element " << i;
    ASSERT_EQ(static_cast<uint32_t>(umin[i]), std::min(a, b))
        << "umin, element " << i;
    ASSERT_EQ(smax[i], std::max(old[i], x[i])) << "smax, element " << i;
    ASSERT_EQ(static_cast<uint32_t>(umax[i]), std::max(a, b))
        << "umax, element " << i;
    ASSERT_EQ(static_cast<uint32_t>(inc[i]), incOf(a, b))
        << "inc, element " << i;
    signsDiffer += smin[i] != umin[i];
  }
  // The inputs make the signed and unsigned minima differ often.
  EXPECT_GT(signsDiffer, kNarrow / 4);

  std::vector<int64_t> add64 = download64(7), smin64 = download64(8),
                       umin64 = download64(9);
  for (size_t i = 0; i < kWide; ++i) {
    uint64_t a = static_cast<uint64_t>(old64[i]),
             b = static_cast<uint64_t>(w[i]);
    ASSERT_EQ(static_cast<uint64_t>(add64[i]), a + b) << "add, element " << i;
    ASSERT_EQ(smin64[i], std::min(old64[i], w[i])) << "smin, element " << i;
    ASSERT_EQ(static_cast<uint64_t>(umin64[i]), std::min(a, b))
        << "umin, element " << i;
  }

  // inc with small bounds, where it wraps: the tile holds `bound`.
  upload(0, bound.data());
  upload(6, oldInc.data());
  ran = launch.run(nullptr);
  ASSERT_TRUE(ran.ok()) << ran.message() << "\n" << (*driver)->emulatorReport();
  synced = (*driver)->check((*driver)->cuCtxSynchronize(), "sync");
  ASSERT_TRUE(synced.ok()) << synced.message();
  inc = download32(6);
  size_t wrapped = 0;
  for (size_t i = 0; i < kNarrow; ++i) {
    uint32_t a = static_cast<uint32_t>(oldInc[i]),
             b = static_cast<uint32_t>(bound[i]);
    ASSERT_EQ(static_cast<uint32_t>(inc[i]), incOf(a, b))
        << "inc of " << a << " up to " << b << ", element " << i;
    wrapped += inc[i] == 0;
  }
  EXPECT_GT(wrapped, 0u);
}

} // namespace
