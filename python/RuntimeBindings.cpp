//===- RuntimeBindings.cpp - Launching kernels from Python ----------------===//
//
// Each backend (`cuda`, `emulator`) has its own driver and its devices'
// primary contexts (device 0 unless a kernel is loaded on another), opened
// on first use and kept for the process. Kernels that span devices run
// through `DeviceGroup` (runtime/include/mosaic/Runtime/Symmetric.h): one
// process's devices, or this process's device of a group of processes. Every
// function takes `backend`: "cuda", "emulator", or None for the one
// MOSAIC_GPU_BACKEND selects (cuda when unset); another name raises
// ValueError. Every runtime failure (no driver, no device, a bad argument
// the driver sees, a failing launch, on the emulator a fault or a hazard)
// raises RuntimeError with the runtime's message.
//
//===----------------------------------------------------------------------===//

#include "RuntimeBindings.h"
#ifdef MOSAIC_PYTHON_JAX_FFI
#include "JaxFfi.h"
#endif

#include "mosaic/Contracts/ElementType.h"
#include "mosaic/Contracts/Manifest.h"
#include "mosaic/Runtime/Arguments.h"
#include "mosaic/Runtime/Device.h"
#include "mosaic/Runtime/Driver.h"
#include "mosaic/Runtime/Kernel.h"
#include "mosaic/Runtime/Symmetric.h"

#include <pybind11/stl.h>

#include <chrono>
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

/// Device `ordinal`'s context on `backend`, current on the calling thread.
const rt::Context &context(rt::Backend backend, int ordinal = 0) {
  static std::map<std::pair<rt::Backend, int>, std::unique_ptr<rt::Context>>
      opened;
  std::unique_ptr<rt::Context> &slot = opened[{backend, ordinal}];
  if (!slot)
    slot = std::make_unique<rt::Context>(
        take(rt::Context::open(driver(backend), ordinal)));
  check(slot->makeCurrent());
  return *slot;
}

/// The element type `name` spells, or ValueError.
mosaic::ElementType elementType(const std::string &name) {
  std::optional<mosaic::ElementType> type = mosaic::parseElementType(name);
  if (!type)
    throw py::value_error("unknown element type `" + name + "`");
  return *type;
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

/// A kernel loaded from its manifest into one device's context on a
/// backend (on the emulator, the manifest's PTX).
struct LoadedKernel {
  LoadedKernel(const std::string &manifestPath, rt::Backend backend, int device)
      : backend(backend), device(device),
        kernel(load(manifestPath, backend, device)) {}

  static rt::Kernel load(const std::string &manifestPath, rt::Backend backend,
                         int device) {
    mosaic::Manifest manifest = take(mosaic::loadManifest(manifestPath));
    return take(
        rt::Kernel::load(context(backend, device), std::move(manifest)));
  }

  /// Runs the kernel once on `(pointer, element type, shape)` buffers on
  /// `stream` (a CUstream handle; 0: the context's default stream) and,
  /// with `wait`, waits for that stream. `collective`, for a kernel that
  /// spans devices: (device id, device count, peers[s][q]) from raw
  /// pointers.
  void launch(
      const std::vector<std::tuple<uint64_t, std::string, std::vector<int64_t>>>
          &buffers,
      uint64_t stream,
      const std::optional<
          std::tuple<uint32_t, uint32_t, std::vector<std::vector<uint64_t>>>>
          &collective,
      bool wait) {
    std::vector<rt::BufferArgument> arguments;
    for (const auto &[pointer, type, shape] : buffers)
      arguments.push_back(
          {static_cast<CUdeviceptr>(pointer), elementType(type), shape});
    std::optional<rt::CollectiveArguments> table;
    if (collective) {
      table.emplace();
      table->deviceId = std::get<0>(*collective);
      table->deviceCount = std::get<1>(*collective);
      for (const std::vector<uint64_t> &row : std::get<2>(*collective))
        table->peers.emplace_back(row.begin(), row.end());
    }
    const rt::Context &ctx = context(backend, device);
    // Encoding tensor maps, the launch and the wait touch no Python object;
    // an emulated launch takes seconds that other threads may use.
    py::gil_scoped_release released;
    rt::Launch prepared = take(table ? kernel.prepare(arguments, *table)
                                     : kernel.prepare(arguments));
    auto handle = reinterpret_cast<CUstream>(static_cast<uintptr_t>(stream));
    check(prepared.run(handle));
    if (!wait)
      return;
    const rt::Driver &driver = ctx.driver();
    check(handle ? driver.check(driver.cuStreamSynchronize(handle),
                                "the kernel failed: cuStreamSynchronize")
                 : driver.check(driver.cuCtxSynchronize(),
                                "the kernel failed: cuCtxSynchronize"));
  }

  /// Times the kernel with CUDA events on a stream of its own: `warmup`
  /// untimed launches, then `repeats` timed ones, each after `flush`
  /// (pointer, bytes: memset on the stream, to evict the L2; bytes 0 for
  /// none). Returns each timed launch's seconds, between events recorded
  /// around it (the flush and the host's work are not timed).
  std::vector<double> timeLaunches(
      const std::vector<std::tuple<uint64_t, std::string, std::vector<int64_t>>>
          &buffers,
      unsigned warmup, unsigned repeats,
      const std::tuple<uint64_t, uint64_t> &flush) {
    if (repeats == 0)
      throw std::invalid_argument("`repeats` must be at least 1");
    std::vector<rt::BufferArgument> arguments;
    for (const auto &[pointer, type, shape] : buffers)
      arguments.push_back(
          {static_cast<CUdeviceptr>(pointer), elementType(type), shape});
    const rt::Context &ctx = context(backend, device);
    const rt::Driver &driver = ctx.driver();
    py::gil_scoped_release released;
    rt::Launch prepared = take(kernel.prepare(arguments));
    CUstream stream = nullptr;
    check(driver.check(driver.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                       "cuStreamCreate"));
    std::vector<CUevent> events(2 * repeats, nullptr);
    // Destroys what was made, also when a step fails.
    auto release = [&] {
      for (CUevent event : events)
        if (event)
          (void)driver.cuEventDestroy(event);
      (void)driver.cuStreamDestroy(stream);
    };
    try {
      for (CUevent &event : events)
        check(driver.check(driver.cuEventCreate(&event, CU_EVENT_DEFAULT),
                           "cuEventCreate"));
      auto [flushPointer, flushBytes] = flush;
      auto evict = [&] {
        if (flushBytes)
          check(driver.check(
              driver.cuMemsetD8Async(static_cast<CUdeviceptr>(flushPointer), 0,
                                     flushBytes, stream),
              "cuMemsetD8Async (L2 flush)"));
      };
      for (unsigned i = 0; i < warmup; ++i) {
        evict();
        check(prepared.run(stream));
      }
      for (unsigned i = 0; i < repeats; ++i) {
        evict();
        check(driver.check(driver.cuEventRecord(events[2 * i], stream),
                           "cuEventRecord"));
        check(prepared.run(stream));
        check(driver.check(driver.cuEventRecord(events[2 * i + 1], stream),
                           "cuEventRecord"));
      }
      check(driver.check(driver.cuStreamSynchronize(stream),
                         "the timed launches failed: cuStreamSynchronize"));
      std::vector<double> seconds;
      for (unsigned i = 0; i < repeats; ++i) {
        float ms = 0;
        check(driver.check(
            driver.cuEventElapsedTime(&ms, events[2 * i], events[2 * i + 1]),
            "cuEventElapsedTime"));
        seconds.push_back(ms / 1000.0);
      }
      release();
      return seconds;
    } catch (...) {
      release();
      throw;
    }
  }

  rt::Backend backend;
  int device;
  rt::Kernel kernel;
};

/// A device group and its symmetric heap (made on first use), shared by the
/// memory and kernels made from it, which keep it alive.
struct Group {
  rt::Backend backend;
  std::unique_ptr<rt::DeviceGroup> group;
  std::unique_ptr<rt::SymmetricHeap> heap;
  size_t segmentBytes;

  rt::SymmetricHeap &symmetricHeap() {
    if (!heap)
      heap = take(rt::SymmetricHeap::create(*group, segmentBytes));
    return *heap;
  }

  void checkLocal(unsigned device) const {
    if (device >= group->deviceCount())
      throw py::value_error("`device` is " + std::to_string(device) +
                            ", but the group has " +
                            std::to_string(group->deviceCount()) + " devices");
    if (!group->isLocal(device))
      throw py::value_error("`device` " + std::to_string(device) +
                            " belongs to another process (rank " +
                            std::to_string(device) + ")");
  }
};

/// A buffer of a group's symmetric heap.
struct SymmetricMemory {
  std::shared_ptr<Group> owner;
  rt::SymmetricBuffer buffer;
};

/// Device memory of one device of a group.
struct LocalMemory {
  std::shared_ptr<Group> owner;
  unsigned device;
  std::unique_ptr<rt::DeviceBuffer> buffer;
};

/// Checks a host buffer of exactly `bytes` bytes.
py::buffer_info hostBytes(py::buffer host, size_t bytes, bool writable) {
  py::buffer_info info = host.request(writable);
  if (static_cast<size_t>(info.size * info.itemsize) != bytes)
    throw py::value_error("the host buffer has " +
                          std::to_string(info.size * info.itemsize) +
                          " bytes, the device buffer " + std::to_string(bytes));
  return info;
}

/// A kernel loaded on every local device of a group.
struct GroupLoadedKernel {
  std::shared_ptr<Group> owner;
  rt::GroupKernel kernel;

  /// `arguments[i]`: local device i's, one per buffer parameter, each
  /// (SymmetricMemory or a device pointer, element type, shape).
  void launch(const std::vector<std::vector<py::tuple>> &arguments) {
    std::vector<std::vector<rt::GroupArgument>> converted;
    for (const std::vector<py::tuple> &device : arguments) {
      std::vector<rt::GroupArgument> row;
      for (const py::tuple &argument : device) {
        if (argument.size() != 3)
          throw py::type_error("each argument is (memory or pointer, element "
                               "type, shape)");
        mosaic::ElementType type = elementType(argument[1].cast<std::string>());
        auto shape = argument[2].cast<std::vector<int64_t>>();
        if (py::isinstance<SymmetricMemory>(argument[0]))
          row.push_back(rt::SymmetricArgument{
              &argument[0].cast<SymmetricMemory &>().buffer, type, shape});
        else
          row.push_back(rt::BufferArgument{
              static_cast<CUdeviceptr>(argument[0].cast<uint64_t>()), type,
              shape});
      }
      converted.push_back(std::move(row));
    }
    py::gil_scoped_release released;
    rt::GroupLaunch prepared = take(kernel.prepare(converted));
    check(prepared.run());
  }
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
                           "A compiled kernel loaded on one device of a "
                           "backend.")
      .def(py::init([](const std::string &manifest,
                       std::optional<std::string> name, int device) {
             return std::make_unique<LoadedKernel>(manifest, backend(name),
                                                   device);
           }),
           py::arg("manifest"), py::arg("backend") = py::none(),
           py::arg("device") = 0,
           "Loads the CUBIN the manifest (mosaic-compile's JSON) names, or "
           "on the emulator its PTX, on device `device` (a CUDA ordinal).")
      .def_property_readonly("backend",
                             [](const LoadedKernel &loaded) {
                               return rt::backendName(loaded.backend);
                             })
      .def("launch", &LoadedKernel::launch, py::arg("buffers"),
           py::arg("stream") = 0, py::arg("collective") = py::none(),
           py::arg("wait") = true,
           "Runs the kernel on (device pointer, element type, shape) "
           "buffers, one per parameter, on `stream` (a CUstream handle, 0 "
           "for the default stream) and, with `wait`, waits for that stream "
           "(without, the launch is asynchronous, as the frameworks' "
           "operations are, and CUDA-graph capture can record it). A kernel "
           "that "
           "spans devices needs `collective`: (device id, device count, "
           "peers), peers[s][q] the address of symmetric buffer s on device "
           "q (PyTorch's buffer_ptrs). The GIL is released meanwhile.")
      .def("time_launches", &LoadedKernel::timeLaunches, py::arg("buffers"),
           py::arg("warmup"), py::arg("repeats"),
           py::arg("flush") = std::make_tuple(uint64_t(0), uint64_t(0)),
           "Times the kernel on `buffers` with CUDA events, on a stream of "
           "its own: `warmup` untimed launches, then `repeats` timed ones, "
           "each after a memset of `flush` = (device pointer, bytes) that "
           "evicts the L2 (bytes 0: none). Returns each timed launch's "
           "seconds between the events recorded around it. The GIL is "
           "released meanwhile.");

  py::class_<SymmetricMemory>(m, "SymmetricMemory",
                              "A buffer at the same offset of every device's "
                              "allocation of a group's symmetric heap.")
      .def_property_readonly(
          "size",
          [](const SymmetricMemory &memory) { return memory.buffer.size(); })
      .def_property_readonly(
          "pointers",
          [](const SymmetricMemory &memory) {
            return std::vector<uint64_t>(memory.buffer.allPointers().begin(),
                                         memory.buffer.allPointers().end());
          },
          "Each device's copy, as this process addresses "
          "it.")
      .def(
          "upload",
          [](const SymmetricMemory &memory, unsigned device, py::buffer host) {
            memory.owner->checkLocal(device);
            py::buffer_info info = hostBytes(host, memory.buffer.size(), false);
            py::gil_scoped_release released;
            check(memory.buffer.upload(device, info.ptr));
          },
          py::arg("device"), py::arg("host"))
      .def(
          "download",
          [](const SymmetricMemory &memory, unsigned device, py::buffer host) {
            memory.owner->checkLocal(device);
            py::buffer_info info = hostBytes(host, memory.buffer.size(), true);
            py::gil_scoped_release released;
            check(memory.buffer.download(device, info.ptr));
          },
          py::arg("device"), py::arg("host"))
      .def(
          "fill",
          [](const SymmetricMemory &memory, unsigned device, uint8_t value) {
            memory.owner->checkLocal(device);
            check(memory.buffer.fill(device, value));
          },
          py::arg("device"), py::arg("value"));

  py::class_<LocalMemory>(m, "GroupDeviceMemory",
                          "Device memory of one device of a group.")
      .def_property_readonly(
          "pointer",
          [](const LocalMemory &memory) { return memory.buffer->pointer(); })
      .def_property_readonly(
          "size",
          [](const LocalMemory &memory) { return memory.buffer->size(); })
      .def(
          "upload",
          [](const LocalMemory &memory, py::buffer host) {
            py::buffer_info info =
                hostBytes(host, memory.buffer->size(), false);
            check(memory.owner->group->context(memory.device).makeCurrent());
            py::gil_scoped_release released;
            check(memory.buffer->upload(info.ptr));
          },
          py::arg("host"))
      .def(
          "download",
          [](const LocalMemory &memory, py::buffer host) {
            py::buffer_info info = hostBytes(host, memory.buffer->size(), true);
            check(memory.owner->group->context(memory.device).makeCurrent());
            py::gil_scoped_release released;
            check(memory.buffer->download(info.ptr));
          },
          py::arg("host"));

  py::class_<GroupLoadedKernel>(m, "GroupLoadedKernel",
                                "A kernel loaded on every local device of a "
                                "group.")
      .def("launch", &GroupLoadedKernel::launch, py::arg("arguments"),
           "Prepares each local device's instance (its collective table "
           "included), launches them all, then waits for all. "
           "`arguments[i]` are local device i's: (SymmetricMemory or a "
           "device pointer, element type, shape) per buffer parameter.");

  py::class_<Group, std::shared_ptr<Group>>(
      m, "DeviceGroup",
      "The devices of kernels that span devices: all of them in this "
      "process, or this process's one of a group of processes (join).")
      .def(py::init([](unsigned count, std::optional<std::string> name,
                       size_t segmentBytes) {
             rt::Backend chosen = backend(name);
             const rt::Driver &cuda = driver(chosen);
             // More devices than there are is the caller's mistake, not the
             // driver's failure: a ValueError, as for any bad argument.
             int available = 0;
             if (cuda.cuDeviceGetCount(&available) == CUDA_SUCCESS &&
                 count > static_cast<unsigned>(available))
               throw py::value_error(
                   "`count` is " + std::to_string(count) + ", but the " +
                   rt::backendName(chosen) + " driver reports " +
                   std::to_string(available) + " device" +
                   (available == 1 ? "" : "s") +
                   (cuda.isEmulator() ? " (set MOSAIC_EMULATOR_DEVICES)" : ""));
             auto group = std::make_shared<Group>();
             group->backend = chosen;
             group->segmentBytes = segmentBytes;
             group->group = take(rt::DeviceGroup::open(cuda, count));
             return group;
           }),
           py::arg("count"), py::arg("backend") = py::none(),
           py::arg("segment_bytes") = size_t(64) << 20,
           "Devices 0 to count - 1 of this process; ValueError when the "
           "driver has fewer.")
      .def_static(
          "join",
          [](unsigned rank, unsigned worldSize, int localRank,
             const std::string &rendezvous, double timeoutSeconds,
             std::optional<std::string> name, size_t segmentBytes) {
            rt::Backend chosen = backend(name);
            rt::ProcessGroupOptions options;
            options.rank = rank;
            options.worldSize = worldSize;
            options.ordinal = localRank;
            options.rendezvous = rendezvous;
            options.timeout = std::chrono::milliseconds(
                static_cast<int64_t>(timeoutSeconds * 1000));
            auto group = std::make_shared<Group>();
            group->backend = chosen;
            group->segmentBytes = segmentBytes;
            const rt::Driver &cuda = driver(chosen);
            py::gil_scoped_release released;
            group->group = take(rt::DeviceGroup::join(cuda, options));
            return group;
          },
          py::arg("rank"), py::arg("world_size"), py::arg("local_rank"),
          py::arg("rendezvous"), py::arg("timeout") = 60.0,
          py::arg("backend") = py::none(),
          py::arg("segment_bytes") = size_t(64) << 20,
          "This process's device (`local_rank`) of a group of `world_size` "
          "processes meeting at the Unix socket `rendezvous`.")
      .def_static(
          "options_from_environment",
          []() {
            rt::ProcessGroupOptions options =
                take(rt::ProcessGroupOptions::fromEnvironment());
            py::dict result;
            result["rank"] = options.rank;
            result["world_size"] = options.worldSize;
            result["local_rank"] = options.ordinal;
            result["rendezvous"] = options.rendezvous;
            result["timeout"] = options.timeout.count() / 1000.0;
            return result;
          },
          "torchrun's RANK, WORLD_SIZE and LOCAL_RANK, and the rendezvous "
          "path (MOSAIC_GPU_RENDEZVOUS, else derived from "
          "TORCHELASTIC_RUN_ID or MASTER_PORT). Raises RuntimeError naming "
          "a missing or malformed variable.")
      .def_property_readonly(
          "backend",
          [](const Group &group) { return rt::backendName(group.backend); })
      .def_property_readonly(
          "device_count",
          [](const Group &group) { return group.group->deviceCount(); })
      .def_property_readonly(
          "local_devices",
          [](const Group &group) { return group.group->localDevices(); })
      .def("describe",
           [](const Group &group, unsigned device) {
             return group.group->describe(device);
           })
      .def(
          "allocate_symmetric",
          [](const std::shared_ptr<Group> &group, size_t bytes,
             size_t alignment) {
            rt::SymmetricHeap &heap = group->symmetricHeap();
            py::gil_scoped_release released;
            return SymmetricMemory{group,
                                   take(heap.allocate(bytes, alignment))};
          },
          py::arg("bytes"), py::arg("alignment") = 256,
          "A symmetric buffer (in the multi-process form, every process "
          "allocates the same sizes in the same order).")
      .def(
          "allocate",
          [](const std::shared_ptr<Group> &group, unsigned device,
             size_t bytes) {
            group->checkLocal(device);
            return LocalMemory{group, device,
                               std::make_unique<rt::DeviceBuffer>(
                                   take(rt::DeviceBuffer::allocate(
                                       group->group->context(device), bytes)))};
          },
          py::arg("device"), py::arg("bytes"),
          "Device memory of one local device.")
      .def(
          "load",
          [](const std::shared_ptr<Group> &group, const std::string &path) {
            mosaic::Manifest manifest = take(mosaic::loadManifest(path));
            return GroupLoadedKernel{
                group, take(rt::GroupKernel::load(*group->group, manifest))};
          },
          py::arg("manifest"), "Loads the kernel on every local device.")
      .def(
          "barrier",
          [](const Group &group) {
            py::gil_scoped_release released;
            check(group.group->synchronize());
            if (rt::Rendezvous *others = group.group->rendezvous())
              check(others->allGather("barrier").status());
          },
          "Waits for this process's devices, then (multi-process) for every "
          "process to get here.");
#ifdef MOSAIC_PYTHON_JAX_FFI
  m.def(
      "jax_ffi_handlers",
      [] {
        py::dict handlers;
        handlers["CUDA"] =
            py::capsule(reinterpret_cast<void *>(&MosaicGpuJaxKernelCuda));
        handlers["cpu"] =
            py::capsule(reinterpret_cast<void *>(&MosaicGpuJaxKernelHost));
        return handlers;
      },
      "mosaic_gpu.to_jax's XLA FFI handlers as capsules, by the platform name "
      "jax.ffi.register_ffi_target takes: \"CUDA\" (launches on XLA's "
      "stream) and \"cpu\" (runs on the PTX emulator). Only in an "
      "extension built with jaxlib's FFI headers.");
#endif
  m.def("set_emulator_library", &rt::setEmulatorLibrary, py::arg("library"),
        "Makes the emulator backend open `library` (unless "
        "MOSAIC_CUDA_DRIVER names another): the installed package's own "
        "emulator. Applies to a backend not opened yet.");
}
