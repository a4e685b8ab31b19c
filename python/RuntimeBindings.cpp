//===- RuntimeBindings.cpp - Launching kernels from Python ----------------===//
//
// Device 0's primary context is opened on first use and kept for the
// process; every runtime failure (no driver, no device, a bad argument the
// driver sees, a failing launch) raises RuntimeError with the runtime's
// message.
//
//===----------------------------------------------------------------------===//

#include "RuntimeBindings.h"

#include "mosaic/Runtime/Arguments.h"
#include "mosaic/Runtime/Device.h"
#include "mosaic/Runtime/Driver.h"
#include "mosaic/Runtime/ElementType.h"
#include "mosaic/Runtime/Kernel.h"
#include "mosaic/Runtime/Manifest.h"

#include <pybind11/stl.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace py = pybind11;
namespace rt = mosaic::runtime;

namespace {

template <typename T> T take(rt::Expected<T> expected) {
  if (!expected.ok())
    throw std::runtime_error(expected.message());
  return std::move(*expected);
}

void check(const rt::Status &status) {
  if (!status.ok())
    throw std::runtime_error(status.message());
}

const rt::Driver &driver() { return *take(rt::Driver::get()); }

/// Device 0's context, current on the calling thread.
const rt::Context &context() {
  static std::unique_ptr<rt::Context> opened;
  if (!opened)
    opened =
        std::make_unique<rt::Context>(take(rt::Context::open(driver(), 0)));
  check(opened->makeCurrent());
  return *opened;
}

/// Reads or writes a whole host buffer (any object with the buffer
/// protocol) of exactly the device buffer's size.
py::buffer_info hostBuffer(const rt::DeviceBuffer &device, py::buffer host,
                           bool writable) {
  py::buffer_info info = host.request(writable);
  if (static_cast<size_t>(info.size * info.itemsize) != device.size())
    throw py::value_error(
        "the host buffer has " + std::to_string(info.size * info.itemsize) +
        " bytes, the device buffer " + std::to_string(device.size()));
  return info;
}

/// A kernel loaded from its manifest into device 0's context.
struct LoadedKernel {
  explicit LoadedKernel(const std::string &manifestPath)
      : kernel(load(manifestPath)) {}

  static rt::Kernel load(const std::string &manifestPath) {
    rt::Manifest manifest = take(rt::loadManifest(manifestPath));
    return take(rt::Kernel::load(context(), std::move(manifest)));
  }

  /// Runs the kernel once on `(pointer, element type, shape)` buffers and
  /// waits for it.
  void launch(
      const std::vector<std::tuple<uint64_t, std::string, std::vector<int64_t>>>
          &buffers) {
    std::vector<rt::BufferArgument> arguments;
    for (const auto &[pointer, type, shape] : buffers) {
      std::optional<rt::ElementType> elementType = rt::parseElementType(type);
      if (!elementType)
        throw py::value_error("unknown element type `" + type + "`");
      arguments.push_back(
          {static_cast<CUdeviceptr>(pointer), *elementType, shape});
    }
    const rt::Context &ctx = context();
    rt::Launch prepared = take(kernel.prepare(arguments));
    check(prepared.run(nullptr));
    check(ctx.driver().check(ctx.driver().cuCtxSynchronize(),
                             "the kernel failed: cuCtxSynchronize"));
  }

  rt::Kernel kernel;
};

} // namespace

void mosaic::python::registerRuntime(py::module_ &m) {
  m.def(
      "cuda_driver_version", [] { return driver().version(); },
      "The CUDA driver's version (e.g. 13000); loads the driver "
      "(MOSAIC_CUDA_DRIVER or libcuda.so.1). Raises RuntimeError ('no CUDA "
      "driver: ...') where there is none.");

  py::class_<rt::DeviceBuffer>(m, "DeviceMemory",
                               "A buffer in device 0's global memory.")
      .def(py::init([](size_t bytes) {
             return take(rt::DeviceBuffer::allocate(context(), bytes));
           }),
           py::arg("bytes"))
      .def_property_readonly("pointer", &rt::DeviceBuffer::pointer)
      .def_property_readonly("size", &rt::DeviceBuffer::size)
      .def(
          "upload",
          [](const rt::DeviceBuffer &device, py::buffer host) {
            py::buffer_info info = hostBuffer(device, host, false);
            context();
            check(device.upload(info.ptr));
          },
          py::arg("host"), "Copies a whole host buffer to the device.")
      .def(
          "download",
          [](const rt::DeviceBuffer &device, py::buffer host) {
            py::buffer_info info = hostBuffer(device, host, true);
            context();
            check(device.download(info.ptr));
          },
          py::arg("host"), "Copies the device buffer into a host buffer.");

  py::class_<LoadedKernel>(m, "LoadedKernel",
                           "A compiled kernel loaded on device 0.")
      .def(py::init<const std::string &>(), py::arg("manifest"),
           "Loads the CUBIN the manifest (mosaic-compile's JSON) names.")
      .def("launch", &LoadedKernel::launch, py::arg("buffers"),
           "Runs the kernel on (device pointer, element type, shape) "
           "buffers, one per parameter, and waits for it.");
}
