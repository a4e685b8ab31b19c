//===- JaxFfiTest.cpp - mosaic_gpu.to_jax's XLA FFI handlers --------------===//
//
// The handlers called as XLA calls them: through a call frame and an
// XLA_FFI_Api of our own, which hands out a stream and a device ordinal and
// records errors. JAX on the CPU reaches only the host handler (tests/
// test_jax_ops.py); here the CUDA handler runs too, on the PTX emulator
// opened as the CUDA driver (MOSAIC_CUDA_DRIVER), over buffers in its
// memory, as XLA's would be on a GPU. The kernel is examples/elementwise.mlir:
// out = x * y + x over 2^20 floats.
//
//===----------------------------------------------------------------------===//

#include "JaxFfi.h"

#include "mosaic/Runtime/Device.h"
#include "mosaic/Runtime/Driver.h"

#include "xla/ffi/api/c_api.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rt = mosaic::runtime;

namespace {

constexpr int64_t kElements = 1 << 20;

/// An error the handler made through our API.
struct RecordedError {
  XLA_FFI_Error_Code code;
  std::string message;
};

/// What our XLA_FFI_Api hands the handler: set per call.
CUstream gStream = nullptr;
int gStreamRequests = 0;

XLA_FFI_Error *createError(XLA_FFI_Error_Create_Args *args) {
  return reinterpret_cast<XLA_FFI_Error *>(
      new RecordedError{args->errc, args->message});
}

XLA_FFI_Error *getStream(XLA_FFI_Stream_Get_Args *args) {
  ++gStreamRequests;
  args->stream = gStream;
  return nullptr;
}

XLA_FFI_Error *getDeviceOrdinal(XLA_FFI_DeviceOrdinal_Get_Args *args) {
  args->device_ordinal = 0;
  return nullptr;
}

const XLA_FFI_Api &api() {
  static XLA_FFI_Api api = [] {
    XLA_FFI_Api made{};
    made.struct_size = XLA_FFI_Api_STRUCT_SIZE;
    made.api_version.struct_size = XLA_FFI_Api_Version_STRUCT_SIZE;
    made.api_version.major_version = XLA_FFI_API_MAJOR;
    made.api_version.minor_version = XLA_FFI_API_MINOR;
    made.XLA_FFI_Error_Create = createError;
    made.XLA_FFI_Stream_Get = getStream;
    made.XLA_FFI_DeviceOrdinal_Get = getDeviceOrdinal;
    return made;
  }();
  return api;
}

/// A buffer as XLA passes one: its data, element type and dimensions.
struct XlaBuffer {
  XlaBuffer(void *data, XLA_FFI_DataType type, std::vector<int64_t> shape)
      : dims(std::move(shape)) {
    buffer.struct_size = XLA_FFI_Buffer_STRUCT_SIZE;
    buffer.extension_start = nullptr;
    buffer.dtype = type;
    buffer.data = data;
    buffer.rank = static_cast<int64_t>(dims.size());
    buffer.dims = dims.data();
  }
  XlaBuffer(const XlaBuffer &) = delete;

  std::vector<int64_t> dims;
  XLA_FFI_Buffer buffer;
};

/// Calls `handler` as XLA's execute stage does, with the attributes
/// `inputs` (by default, as many as `inputs` has) and `manifest`; the error
/// it returned, if any.
std::optional<RecordedError>
call(XLA_FFI_Error *(*handler)(XLA_FFI_CallFrame *),
     const std::string &manifest, const std::vector<XlaBuffer *> &inputs,
     const std::vector<XlaBuffer *> &outputs,
     std::optional<int64_t> kernelInputs = std::nullopt) {
  std::vector<XLA_FFI_ArgType> argTypes(inputs.size(), XLA_FFI_ArgType_BUFFER);
  std::vector<void *> args;
  for (XlaBuffer *input : inputs)
    args.push_back(&input->buffer);
  std::vector<XLA_FFI_RetType> retTypes(outputs.size(), XLA_FFI_RetType_BUFFER);
  std::vector<void *> rets;
  for (XlaBuffer *output : outputs)
    rets.push_back(&output->buffer);
  // XLA passes the attributes sorted by name.
  int64_t inputCount = kernelInputs.value_or(inputs.size());
  XLA_FFI_Scalar count{XLA_FFI_DataType_S64, &inputCount};
  XLA_FFI_ByteSpan countName{"inputs", 6};
  XLA_FFI_ByteSpan manifestName{"manifest", 8};
  XLA_FFI_ByteSpan path{manifest.data(), manifest.size()};
  XLA_FFI_ByteSpan *names[] = {&countName, &manifestName};
  XLA_FFI_AttrType attrTypes[] = {XLA_FFI_AttrType_SCALAR,
                                  XLA_FFI_AttrType_STRING};
  void *attrs[] = {&count, &path};

  XLA_FFI_CallFrame frame{};
  frame.struct_size = XLA_FFI_CallFrame_STRUCT_SIZE;
  frame.api = &api();
  // Never read through: our API's functions ignore it.
  frame.ctx = reinterpret_cast<XLA_FFI_ExecutionContext *>(&frame);
  frame.stage = XLA_FFI_ExecutionStage_EXECUTE;
  frame.args = {XLA_FFI_Args_STRUCT_SIZE, nullptr,
                static_cast<int64_t>(args.size()), argTypes.data(),
                args.data()};
  frame.rets = {XLA_FFI_Rets_STRUCT_SIZE, nullptr,
                static_cast<int64_t>(rets.size()), retTypes.data(),
                rets.data()};
  frame.attrs = {
      XLA_FFI_Attrs_STRUCT_SIZE, nullptr, 2, attrTypes, names, attrs};
  XLA_FFI_Error *error = handler(&frame);
  if (!error)
    return std::nullopt;
  std::unique_ptr<RecordedError> recorded(
      reinterpret_cast<RecordedError *>(error));
  return *recorded;
}

std::vector<float> iota(float scale) {
  std::vector<float> values(kElements);
  for (int64_t i = 0; i < kElements; ++i)
    values[i] = scale * static_cast<float>(i % 1000) - 3.0f;
  return values;
}

/// The kernel's three buffers in host memory, as XLA's host platform
/// passes them: x and y filled, `out` of `outElements` floats; x said to
/// be of `xType` (of another width than f32, it must be refused before
/// it is read).
struct HostBuffers {
  explicit HostBuffers(int64_t outElements = kElements,
                       XLA_FFI_DataType xType = XLA_FFI_DataType_F32)
      : x(iota(0.5f)), y(iota(-0.25f)), out(outElements, 7.0f),
        xBuffer(x.data(), xType, {kElements}),
        yBuffer(y.data(), XLA_FFI_DataType_F32, {kElements}),
        outBuffer(out.data(), XLA_FFI_DataType_F32, {outElements}) {}

  std::vector<XlaBuffer *> inputs() { return {&xBuffer, &yBuffer}; }
  std::vector<XlaBuffer *> outputs() { return {&outBuffer}; }

  std::vector<float> x, y, out;
  XlaBuffer xBuffer, yBuffer, outBuffer;
};

class JaxFfi : public testing::Test {
protected:
  static void SetUpTestSuite() {
    // The CUDA backend opens the emulator, so the CUDA handler runs.
    setenv("MOSAIC_CUDA_DRIVER", MOSAIC_EMULATOR_DRIVER, 1);
    std::string cubin = testing::TempDir() + "jax_ffi_elementwise.cubin";
    manifest = new std::string(cubin.substr(0, cubin.size() - 6) + ".json");
    std::remove(manifest->c_str());
    std::string command = std::string(MOSAIC_COMPILE_PATH) + " " +
                          MOSAIC_EXAMPLES_DIR + "/elementwise.mlir -o " +
                          cubin + " 2>&1";
    FILE *output = popen(command.c_str(), "r");
    ASSERT_NE(output, nullptr) << command;
    std::string text;
    char chunk[256];
    while (size_t read = fread(chunk, 1, sizeof(chunk), output))
      text.append(chunk, read);
    int status = pclose(output);
    if (text.find("ptxas not found") != std::string::npos)
      skipReason = new std::string("no ptxas to compile the kernel with");
    else
      ASSERT_EQ(status, 0) << command << "\n" << text;
  }

  void SetUp() override {
    if (skipReason)
      GTEST_SKIP() << *skipReason;
  }

  static void TearDownTestSuite() {
    delete manifest;
    delete skipReason;
  }

  static void expectElementwise(const std::vector<float> &x,
                                const std::vector<float> &y,
                                const std::vector<float> &out) {
    for (int64_t i = 0; i < kElements; i += 4099)
      ASSERT_EQ(out[i], x[i] * y[i] + x[i]) << "element " << i;
    ASSERT_EQ(out.back(), x.back() * y.back() + x.back());
  }

  static std::string *manifest;
  static std::string *skipReason;
};

std::string *JaxFfi::manifest = nullptr;
std::string *JaxFfi::skipReason = nullptr;

TEST_F(JaxFfi, TheHostHandlerRunsTheKernelOnTheEmulator) {
  HostBuffers buffers;
  std::optional<RecordedError> error = call(
      MosaicGpuJaxKernelHost, *manifest, buffers.inputs(), buffers.outputs());
  ASSERT_FALSE(error) << error->message;
  expectElementwise(buffers.x, buffers.y, buffers.out);
}

TEST_F(JaxFfi, TheCudaHandlerLaunchesOnXlasStreamOverXlasBuffers) {
  mosaic::Expected<const rt::Driver *> driver =
      rt::Driver::get(rt::Backend::Cuda);
  ASSERT_TRUE(driver.ok()) << driver.message();
  ASSERT_TRUE((*driver)->isEmulator());
  mosaic::Expected<rt::Context> context = rt::Context::open(**driver, 0);
  ASSERT_TRUE(context.ok()) << context.message();
  std::vector<float> x = iota(0.5f), y = iota(-0.25f);
  std::vector<rt::DeviceBuffer> device;
  for (int i = 0; i < 3; ++i) {
    mosaic::Expected<rt::DeviceBuffer> buffer =
        rt::DeviceBuffer::allocate(*context, kElements * sizeof(float));
    ASSERT_TRUE(buffer.ok()) << buffer.message();
    device.push_back(std::move(*buffer));
  }
  ASSERT_TRUE(device[0].upload(x.data()).ok());
  ASSERT_TRUE(device[1].upload(y.data()).ok());
  ASSERT_TRUE(device[2].fill(0xff).ok());
  const rt::Driver &cuda = **driver;
  CUstream stream = nullptr;
  ASSERT_EQ(cuda.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  gStream = stream;
  gStreamRequests = 0;
  auto pointer = [&](int i) {
    return reinterpret_cast<void *>(
        static_cast<uintptr_t>(device[i].pointer()));
  };
  XlaBuffer xBuffer(pointer(0), XLA_FFI_DataType_F32, {kElements});
  XlaBuffer yBuffer(pointer(1), XLA_FFI_DataType_F32, {kElements});
  XlaBuffer outBuffer(pointer(2), XLA_FFI_DataType_F32, {kElements});
  std::optional<RecordedError> error = call(MosaicGpuJaxKernelCuda, *manifest,
                                            {&xBuffer, &yBuffer}, {&outBuffer});
  ASSERT_FALSE(error) << error->message;
  EXPECT_EQ(gStreamRequests, 1);
  ASSERT_EQ(cuda.cuStreamSynchronize(stream), CUDA_SUCCESS);
  std::vector<float> out(kElements);
  ASSERT_TRUE(device[2].download(out.data()).ok());
  expectElementwise(x, y, out);
  EXPECT_EQ(cuda.cuStreamDestroy(stream), CUDA_SUCCESS);
}

TEST_F(JaxFfi, AMissingManifestIsAnErrorNamingIt) {
  HostBuffers buffers;
  std::optional<RecordedError> error =
      call(MosaicGpuJaxKernelHost, "/nonexistent/kernel.json", buffers.inputs(),
           buffers.outputs());
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, XLA_FFI_Error_Code_INTERNAL);
  EXPECT_NE(error->message.find("mosaic_gpu kernel /nonexistent/kernel.json: "),
            std::string::npos)
      << error->message;
}

TEST_F(JaxFfi, ABufferTypeNoKernelTakesIsAnInvalidArgument) {
  HostBuffers buffers(kElements, XLA_FFI_DataType_C64);
  std::optional<RecordedError> error = call(
      MosaicGpuJaxKernelHost, *manifest, buffers.inputs(), buffers.outputs());
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, XLA_FFI_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(error->message.find("input 0 has an XLA element type"),
            std::string::npos)
      << error->message;
}

TEST_F(JaxFfi, BuffersThatDoNotMatchTheKernelAreRefusedBeforeTheLaunch) {
  HostBuffers buffers(kElements / 2);
  std::optional<RecordedError> error = call(
      MosaicGpuJaxKernelHost, *manifest, buffers.inputs(), buffers.outputs());
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("524288"), std::string::npos) << error->message;
  // One buffer too few: the count is checked too.
  error = call(MosaicGpuJaxKernelHost, *manifest, {&buffers.xBuffer},
               buffers.outputs());
  ASSERT_TRUE(error);
  EXPECT_NE(error->message.find("mosaic_gpu kernel"), std::string::npos)
      << error->message;
  // More kernel inputs than arguments.
  error = call(MosaicGpuJaxKernelHost, *manifest, buffers.inputs(),
               buffers.outputs(), 3);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->code, XLA_FFI_Error_Code_INVALID_ARGUMENT);
  EXPECT_NE(error->message.find("names 3 kernel inputs but has 2 arguments"),
            std::string::npos)
      << error->message;
}

TEST_F(JaxFfi, ArgumentsAfterTheKernelsInputsAreNotPassedToIt) {
  // An initial value of the output, aliased to it as XLA does: the kernel
  // still gets its three buffers, x, y and out.
  HostBuffers buffers;
  XlaBuffer initial(buffers.out.data(), XLA_FFI_DataType_F32, {kElements});
  std::optional<RecordedError> error = call(
      MosaicGpuJaxKernelHost, *manifest,
      {&buffers.xBuffer, &buffers.yBuffer, &initial}, buffers.outputs(), 2);
  ASSERT_FALSE(error) << error->message;
  expectElementwise(buffers.x, buffers.y, buffers.out);
}

} // namespace
