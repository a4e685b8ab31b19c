//===- RuntimeBindings.cpp - Launching kernels from Python ----------------===//
//
// Each backend (`cuda`, `emulator`) has its own driver and device 0's
// primary context, opened on first use and kept for the process. Every
// function takes `backend`: "cuda", "emulator", or None for the one
// MOSAIC_GPU_BACKEND selects (cuda when unset); another name raises
// ValueError. Every runtime failure (no driver, no device, a bad argument
// the driver sees, a failing launch, on the emulator a fault or a hazard)
// raises RuntimeError with the runtime's message.
//
//===----------------------------------------------------------------------===//

#include "RuntimeBindings.h"

#include "mosaic/Contracts/ElementType.h"
#include "mosaic/Contracts/Manifest.h"
#include "mosaic/Runtime/Arguments.h"
#include "mosaic/Runtime/Device.h"
#include "mosaic/Runtime/Driver.h"
#include "mosaic/Runtime/Kernel.h"

#include <pybind11/stl.h>

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace py = pybind11;
namespace rt = mosaic::runtime;

namespace {

template <typename T> T take(mosaic::Expected<T> expected) {
  if (!expected.ok())
    throw std::runtime_error(expected.message());
  return std::move(*expected);
}

void check(const mosaic::Status &status) {
  if (!status.ok())
    throw std::runtime_error(status.message());
}

/// The backend `name` names, or MOSAIC_GPU_BACKEND's when it is None.
rt::Backend backend(const std::optional<std::string> &name) {
  mosaic::Expected<rt::Backend> chosen =
      name ? rt::parseBackend(*name) : rt::backendFromEnvironment();
  if (chosen.ok())
    return *chosen;
  if (name)
    throw py::value_error("backend must be 'cuda' or 'emulator', got '" +
                          *name + "'");
  throw py::value_error(chosen.message());
}

const rt::Driver &driver(rt::Backend backend) {
  return *take(rt::Driver::get(backend));
}

/// Device 0's context on `backend`, current on the calling thread.
const rt::Context &context(rt::Backend backend) {
  static std::map<rt::Backend, std::unique_ptr<rt::Context>> opened;
  std::unique_ptr<rt::Context> &slot = opened[backend];
  if (!slot)
    slot = std::make_unique<rt::Context>(
        take(rt::Context::open(driver(backend), 0)));
  check(slot->makeCurrent());
  return *slot;
}

/// Device memory and the backend it belongs to.
struct DeviceMemory {
  rt::Backend backend;
  rt::DeviceBuffer buffer;
};

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

/// A kernel loaded from its manifest into device 0's context on a backend
/// (on the emulator, the manifest's PTX).
struct LoadedKernel {
  LoadedKernel(const std::string &manifestPath, rt::Backend backend)
      : backend(backend), kernel(load(manifestPath, backend)) {}

  static rt::Kernel load(const std::string &manifestPath, rt::Backend backend) {
    mosaic::Manifest manifest = take(mosaic::loadManifest(manifestPath));
    return take(rt::Kernel::load(context(backend), std::move(manifest)));
  }

  /// Runs the kernel once on `(pointer, element type, shape)` buffers on
  /// `stream` (a CUstream handle; 0: the context's default stream) and
  /// waits for that stream.
  void launch(
      const std::vector<std::tuple<uint64_t, std::string, std::vector<int64_t>>>
          &buffers,
      uint64_t stream) {
    std::vector<rt::BufferArgument> arguments;
    for (const auto &[pointer, type, shape] : buffers) {
      std::optional<mosaic::ElementType> elementType =
          mosaic::parseElementType(type);
      if (!elementType)
        throw py::value_error("unknown element type `" + type + "`");
      arguments.push_back(
          {static_cast<CUdeviceptr>(pointer), *elementType, shape});
    }
    const rt::Context &ctx = context(backend);
    // Encoding tensor maps, the launch and the wait touch no Python object;
    // an emulated launch takes seconds that other threads may use.
    py::gil_scoped_release released;
    rt::Launch prepared = take(kernel.prepare(arguments));
    auto handle = reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream));
    check(prepared.run(handle));
    const rt::Driver &driver = ctx.driver();
    check(handle ? driver.check(driver.cuStreamSynchronize(handle),
                                "the kernel failed: cuStreamSynchronize")
                 : driver.check(driver.cuCtxSynchronize(),
                                "the kernel failed: cuCtxSynchronize"));
  }

  rt::Backend backend;
  rt::Kernel kernel;
};

} // namespace

void mosaic::python::registerRuntime(py::module_ &m) {
  m.def(
      "cuda_driver_version",
      [](std::optional<std::string> name) {
        return driver(backend(name)).version();
      },
      py::arg("backend") = py::none(),
      "The driver's CUDA version (e.g. 13000); loads the backend's driver: "
      "for 'cuda', MOSAIC_CUDA_DRIVER or libcuda.so.1; for 'emulator', "
      "MOSAIC_CUDA_DRIVER or the emulator of this build. Raises RuntimeError "
      "('no CUDA driver: ...') where there is none.");
  m.def(
      "driver_library",
      [](std::optional<std::string> name) {
        return take(rt::driverLibrary(backend(name)));
      },
      py::arg("backend") = py::none(),
      "The library the backend's driver is loaded from (without loading "
      "it). Raises RuntimeError for the emulator in a build without one.");

  py::class_<DeviceMemory>(m, "DeviceMemory",
                           "A buffer in device 0's global memory on a backend.")
      .def(py::init([](size_t bytes, std::optional<std::string> name) {
             rt::Backend chosen = backend(name);
             return DeviceMemory{chosen, take(rt::DeviceBuffer::allocate(
                                             context(chosen), bytes))};
           }),
           py::arg("bytes"), py::arg("backend") = py::none())
      .def_property_readonly(
          "pointer",
          [](const DeviceMemory &memory) { return memory.buffer.pointer(); })
      .def_property_readonly(
          "size",
          [](const DeviceMemory &memory) { return memory.buffer.size(); })
      .def_property_readonly("backend",
                             [](const DeviceMemory &memory) {
                               return rt::backendName(memory.backend);
                             })
      .def(
          "upload",
          [](const DeviceMemory &memory, py::buffer host) {
            py::buffer_info info = hostBuffer(memory.buffer, host, false);
            context(memory.backend);
            py::gil_scoped_release released;
            check(memory.buffer.upload(info.ptr));
          },
          py::arg("host"), "Copies a whole host buffer to the device.")
      .def(
          "download",
          [](const DeviceMemory &memory, py::buffer host) {
            py::buffer_info info = hostBuffer(memory.buffer, host, true);
            context(memory.backend);
            py::gil_scoped_release released;
            check(memory.buffer.download(info.ptr));
          },
          py::arg("host"), "Copies the device buffer into a host buffer.");

  py::class_<LoadedKernel>(m, "LoadedKernel",
                           "A compiled kernel loaded on device 0 of a backend.")
      .def(py::init([](const std::string &manifest,
                       std::optional<std::string> name) {
             return std::make_unique<LoadedKernel>(manifest, backend(name));
           }),
           py::arg("manifest"), py::arg("backend") = py::none(),
           "Loads the CUBIN the manifest (mosaic-compile's JSON) names, or "
           "on the emulator its PTX.")
      .def_property_readonly("backend",
                             [](const LoadedKernel &loaded) {
                               return rt::backendName(loaded.backend);
                             })
      .def("launch", &LoadedKernel::launch, py::arg("buffers"),
           py::arg("stream") = 0,
           "Runs the kernel on (device pointer, element type, shape) "
           "buffers, one per parameter, on `stream` (a CUstream handle, 0 "
           "for the default stream) and waits for that stream. The GIL is "
           "released meanwhile.");
  m.def("set_emulator_library", &rt::setEmulatorLibrary, py::arg("library"),
        "Makes the emulator backend open `library` (unless "
        "MOSAIC_CUDA_DRIVER names another): the installed package's own "
        "emulator. Applies to a backend not opened yet.");
}
