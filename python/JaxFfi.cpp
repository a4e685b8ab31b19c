//===- JaxFfi.cpp - Kernels as XLA FFI calls ------------------------------===//
//
// mosaic_gpu.to_jax's kernels run inside XLA programs as FFI custom calls
// (jax.ffi.ffi_call), through handlers compiled against the FFI headers
// jaxlib ships (xla/ffi/api/ffi.h: header-only, over a versioned C API, so
// the handlers need no XLA library to link). One target has a handler per
// platform:
//  - CUDA: the kernel runs on XLA's stream with XLA's buffers as its
//    arguments: no copies, no host synchronization;
//  - Host: the kernel runs on the PTX emulator: the inputs are copied into
//    the emulator's memory, the launch is waited for and the outputs copied
//    back.
// A call names its kernel by the path of its manifest (the attribute
// `manifest`: what compile_cached wrote), not by a pointer, so that a
// compiled XLA program never refers to freed memory; each handler loads the
// kernel once per device and keeps it for the process, as XLA may call it
// until the process exits.
//
//===----------------------------------------------------------------------===//

#include "JaxFfi.h"

#include "mosaic/Contracts/ElementType.h"
#include "mosaic/Contracts/Manifest.h"
#include "mosaic/Runtime/Arguments.h"
#include "mosaic/Runtime/Device.h"
#include "mosaic/Runtime/Driver.h"
#include "mosaic/Runtime/Kernel.h"

#include "xla/ffi/api/ffi.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace rt = mosaic::runtime;
namespace ffi = xla::ffi;

namespace {

/// The kernels FFI calls have loaded, by backend, device and manifest, and
/// the device contexts they live in; all kept for the process. One lock
/// guards both maps, and on the emulator (whose driver is not made to be
/// called from XLA's several threads at once) every whole call.
class LoadedKernels {
public:
  static LoadedKernels &process() {
    static LoadedKernels kernels;
    return kernels;
  }

  std::mutex lock;

  /// The kernel of `manifestPath` loaded on device `ordinal` of `backend`,
  /// loading it on first use; the device's context is made current. The
  /// caller holds `lock`.
  mosaic::Expected<const rt::Kernel *> kernel(rt::Backend backend, int ordinal,
                                              const std::string &manifestPath) {
    mosaic::Expected<const rt::Context *> ctx = context(backend, ordinal);
    MOSAIC_RETURN_IF_ERROR(ctx);
    std::unique_ptr<rt::Kernel> &slot =
        kernels[std::make_tuple(backend, ordinal, manifestPath)];
    if (!slot) {
      mosaic::Expected<mosaic::Manifest> manifest =
          mosaic::loadManifest(manifestPath);
      MOSAIC_RETURN_IF_ERROR(manifest);
      mosaic::Expected<rt::Kernel> loaded =
          rt::Kernel::load(**ctx, std::move(*manifest));
      MOSAIC_RETURN_IF_ERROR(loaded);
      slot = std::make_unique<rt::Kernel>(std::move(*loaded));
    }
    return slot.get();
  }

  /// Device `ordinal`'s primary context on `backend` (XLA's GPU client
  /// runs in the primary contexts too), current on the calling thread. The
  /// caller holds `lock`.
  mosaic::Expected<const rt::Context *> context(rt::Backend backend,
                                                int ordinal) {
    std::unique_ptr<rt::Context> &slot = contexts[{backend, ordinal}];
    if (!slot) {
      mosaic::Expected<const rt::Driver *> driver = rt::Driver::get(backend);
      MOSAIC_RETURN_IF_ERROR(driver);
      mosaic::Expected<rt::Context> opened =
          rt::Context::open(**driver, ordinal);
      MOSAIC_RETURN_IF_ERROR(opened);
      slot = std::make_unique<rt::Context>(std::move(*opened));
    }
    MOSAIC_RETURN_IF_ERROR(slot->makeCurrent());
    return slot.get();
  }

private:
  std::map<std::pair<rt::Backend, int>, std::unique_ptr<rt::Context>> contexts;
  std::map<std::tuple<rt::Backend, int, std::string>,
           std::unique_ptr<rt::Kernel>>
      kernels;
};

/// Our element type of an XLA buffer's, or none for a type no kernel
/// buffer holds.
std::optional<mosaic::ElementType> elementType(ffi::DataType type) {
  switch (type) {
  case ffi::DataType::F32:
    return mosaic::ElementType::F32;
  case ffi::DataType::F16:
    return mosaic::ElementType::F16;
  case ffi::DataType::BF16:
    return mosaic::ElementType::BF16;
  case ffi::DataType::F64:
    return mosaic::ElementType::F64;
  case ffi::DataType::S8:
    return mosaic::ElementType::I8;
  case ffi::DataType::S16:
    return mosaic::ElementType::I16;
  case ffi::DataType::S32:
    return mosaic::ElementType::I32;
  case ffi::DataType::S64:
    return mosaic::ElementType::I64;
  case ffi::DataType::F8E4M3FN:
    return mosaic::ElementType::F8E4M3FN;
  case ffi::DataType::F8E5M2:
    return mosaic::ElementType::F8E5M2;
  default:
    return std::nullopt;
  }
}

/// One buffer of the call: the kernel's argument over it (its pointer is
/// XLA's, which on the host is host memory) and its size.
struct CallBuffer {
  rt::BufferArgument argument;
  void *data = nullptr;
  size_t bytes = 0;
};

/// The kernel's buffers of the call, its `kernelInputs` inputs (the first
/// arguments) then its outputs, as the kernel's buffer parameters are
/// ordered; or why one cannot be a kernel argument. The arguments after the
/// inputs are initial values of outputs, which XLA aliases to them.
ffi::ErrorOr<std::vector<CallBuffer>> callBuffers(ffi::RemainingArgs arguments,
                                                  int64_t kernelInputs,
                                                  ffi::RemainingRets outputs) {
  if (kernelInputs < 0 || static_cast<size_t>(kernelInputs) > arguments.size())
    return ffi::Unexpected(ffi::Error::InvalidArgument(
        "the call names " + std::to_string(kernelInputs) +
        " kernel inputs but has " + std::to_string(arguments.size()) +
        " arguments"));
  std::vector<CallBuffer> buffers;
  auto add = [&](const ffi::AnyBuffer &buffer,
                 const std::string &what) -> ffi::Error {
    std::optional<mosaic::ElementType> type =
        elementType(buffer.element_type());
    if (!type)
      return ffi::Error::InvalidArgument(
          what + " has an XLA element type (" +
          std::to_string(static_cast<int>(buffer.element_type())) +
          ") that mosaic_gpu kernels do not take");
    ffi::AnyBuffer::Dimensions dims = buffer.dimensions();
    CallBuffer call;
    call.argument = {reinterpret_cast<CUdeviceptr>(buffer.untyped_data()),
                     *type, std::vector<int64_t>(dims.begin(), dims.end())};
    call.data = buffer.untyped_data();
    call.bytes = buffer.size_bytes();
    buffers.push_back(std::move(call));
    return ffi::Error::Success();
  };
  for (int64_t i = 0; i < kernelInputs; ++i) {
    ffi::ErrorOr<ffi::AnyBuffer> input = arguments.get<ffi::AnyBuffer>(i);
    if (input.has_error())
      return ffi::Unexpected(input.error());
    if (ffi::Error error = add(*input, "input " + std::to_string(i));
        error.failure())
      return ffi::Unexpected(error);
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    ffi::ErrorOr<ffi::Result<ffi::AnyBuffer>> output =
        outputs.get<ffi::AnyBuffer>(i);
    if (output.has_error())
      return ffi::Unexpected(output.error());
    if (ffi::Error error = add(**output, "output " + std::to_string(i));
        error.failure())
      return ffi::Unexpected(error);
  }
  return buffers;
}

/// Whether output buffer `data` holds an initial value: XLA aliased it to
/// one of the arguments after the kernel's inputs.
bool isInitialized(const void *data, ffi::RemainingArgs arguments,
                   int64_t kernelInputs) {
  for (size_t i = kernelInputs; i < arguments.size(); ++i) {
    ffi::ErrorOr<ffi::AnyBuffer> value = arguments.get<ffi::AnyBuffer>(i);
    if (value.has_value() && value->untyped_data() == data)
      return true;
  }
  return false;
}

ffi::Error failed(const mosaic::Status &status, std::string_view manifest) {
  return ffi::Error::Internal("mosaic_gpu kernel " + std::string(manifest) +
                              ": " + status.message());
}

/// Launches on XLA's stream over XLA's device buffers; returns without
/// waiting, as every XLA operation on the stream does.
ffi::Error runOnGpu(CUstream stream, int32_t ordinal, int64_t kernelInputs,
                    std::string_view manifest, ffi::RemainingArgs arguments,
                    ffi::RemainingRets outputs) {
  ffi::ErrorOr<std::vector<CallBuffer>> buffers =
      callBuffers(arguments, kernelInputs, outputs);
  if (buffers.has_error())
    return buffers.error();
  std::vector<rt::BufferArgument> kernelArguments;
  for (const CallBuffer &buffer : *buffers)
    kernelArguments.push_back(buffer.argument);
  LoadedKernels &loaded = LoadedKernels::process();
  const rt::Kernel *kernel = nullptr;
  {
    std::lock_guard<std::mutex> held(loaded.lock);
    mosaic::Expected<const rt::Kernel *> found =
        loaded.kernel(rt::Backend::Cuda, ordinal, std::string(manifest));
    if (!found.ok())
      return failed(found.status(), manifest);
    kernel = *found;
  }
  mosaic::Expected<rt::Launch> launch = kernel->prepare(kernelArguments);
  if (!launch.ok())
    return failed(launch.status(), manifest);
  if (mosaic::Status status = launch->run(stream); !status.ok())
    return failed(status, manifest);
  return ffi::Error::Success();
}

/// Runs the kernel on the emulator's device 0 over copies of XLA's host
/// buffers (of the outputs too, where they hold initial values), and waits
/// for it.
ffi::Error runOnEmulator(int64_t kernelInputs, std::string_view manifest,
                         ffi::RemainingArgs arguments,
                         ffi::RemainingRets outputs) {
  ffi::ErrorOr<std::vector<CallBuffer>> buffers =
      callBuffers(arguments, kernelInputs, outputs);
  if (buffers.has_error())
    return buffers.error();
  LoadedKernels &loaded = LoadedKernels::process();
  std::lock_guard<std::mutex> held(loaded.lock);
  mosaic::Expected<const rt::Kernel *> kernel =
      loaded.kernel(rt::Backend::Emulator, 0, std::string(manifest));
  if (!kernel.ok())
    return failed(kernel.status(), manifest);
  mosaic::Expected<const rt::Context *> opened =
      loaded.context(rt::Backend::Emulator, 0);
  if (!opened.ok())
    return failed(opened.status(), manifest);
  const rt::Context &context = **opened;
  std::vector<rt::DeviceBuffer> device;
  std::vector<rt::BufferArgument> kernelArguments;
  for (size_t i = 0; i < buffers->size(); ++i) {
    const CallBuffer &buffer = (*buffers)[i];
    // The emulator refuses empty allocations; a kernel refuses empty
    // buffers anyway, and says so in `prepare`.
    mosaic::Expected<rt::DeviceBuffer> copy =
        rt::DeviceBuffer::allocate(context, std::max<size_t>(buffer.bytes, 1));
    if (!copy.ok())
      return failed(copy.status(), manifest);
    bool holdsValues = i < static_cast<size_t>(kernelInputs) ||
                       isInitialized(buffer.data, arguments, kernelInputs);
    if (holdsValues && buffer.bytes)
      if (mosaic::Status status = copy->upload(buffer.data); !status.ok())
        return failed(status, manifest);
    kernelArguments.push_back(buffer.argument);
    kernelArguments.back().pointer = copy->pointer();
    device.push_back(std::move(*copy));
  }
  mosaic::Expected<rt::Launch> launch = (*kernel)->prepare(kernelArguments);
  if (!launch.ok())
    return failed(launch.status(), manifest);
  if (mosaic::Status status = launch->run(nullptr); !status.ok())
    return failed(status, manifest);
  const rt::Driver &driver = context.driver();
  if (mosaic::Status status = driver.check(
          driver.cuCtxSynchronize(), "the kernel failed: cuCtxSynchronize");
      !status.ok())
    return failed(status, manifest);
  for (size_t i = kernelInputs; i < buffers->size(); ++i)
    if ((*buffers)[i].bytes)
      if (mosaic::Status status = device[i].download((*buffers)[i].data);
          !status.ok())
        return failed(status, manifest);
  return ffi::Error::Success();
}

} // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(MosaicGpuJaxKernelCuda, runOnGpu,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream>>()
                                  .Ctx<ffi::DeviceOrdinal>()
                                  .Attr<int64_t>("inputs")
                                  .Attr<std::string_view>("manifest")
                                  .RemainingArgs()
                                  .RemainingRets());

XLA_FFI_DEFINE_HANDLER_SYMBOL(MosaicGpuJaxKernelHost, runOnEmulator,
                              ffi::Ffi::Bind()
                                  .Attr<int64_t>("inputs")
                                  .Attr<std::string_view>("manifest")
                                  .RemainingArgs()
                                  .RemainingRets());
