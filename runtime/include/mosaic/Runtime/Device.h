//===- Device.h - A device's context and its memory -----------*- C++ -*-===//

#ifndef MOSAIC_RUNTIME_DEVICE_H
#define MOSAIC_RUNTIME_DEVICE_H

#include "mosaic/Runtime/Driver.h"
#include "mosaic/Contracts/Status.h"

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace mosaic::runtime {

/// The primary context of one device, retained while this object lives and
/// current on the thread that opened it.
class Context {
public:
  static Expected<Context> open(const Driver &driver, int ordinal);

  Context(Context &&other) noexcept;
  Context &operator=(Context &&) = delete;
  Context(const Context &) = delete;
  ~Context();

  const Driver &driver() const { return *cuda; }
  int ordinal() const { return deviceOrdinal; }
  CUdevice device() const { return cuDevice; }
  /// "NVIDIA H100 80GB HBM3".
  const std::string &name() const { return deviceName; }
  /// 90 for compute capability 9.0.
  int computeCapability() const { return capability; }

  Expected<int> attribute(CUdevice_attribute attribute, const char *what) const;
  /// Makes this context current on the calling thread.
  Status makeCurrent() const;

private:
  Context() = default;

  const Driver *cuda = nullptr;
  int deviceOrdinal = 0;
  CUdevice cuDevice = 0;
  CUcontext context = nullptr;
  std::string deviceName;
  int capability = 0;
};

/// Device memory from cuMemAlloc, freed when this object dies.
class DeviceBuffer {
public:
  static Expected<DeviceBuffer> allocate(const Context &context, size_t bytes);

  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&) = delete;
  DeviceBuffer(const DeviceBuffer &) = delete;
  ~DeviceBuffer();

  CUdeviceptr pointer() const { return address; }
  size_t size() const { return bytes; }

  /// Copies `size()` bytes from or to the host.
  Status upload(const void *host) const;
  Status download(void *host) const;
  /// Sets every byte to `value`.
  Status fill(uint8_t value) const;

private:
  DeviceBuffer() = default;

  const Driver *cuda = nullptr;
  CUdeviceptr address = 0;
  size_t bytes = 0;
};

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_DEVICE_H
