//===- Device.cpp - A device's context and its memory -------------------===//

#include "mosaic/Runtime/Device.h"

#include "mosaic/Contracts/Format.h"

namespace mosaic::runtime {

Expected<Context> Context::open(const Driver &driver, int ordinal) {
  int count = 0;
  MOSAIC_RETURN_IF_ERROR(
      driver.check(driver.cuDeviceGetCount(&count), "cuDeviceGetCount"));
  if (ordinal < 0 || ordinal >= count)
    return Error{"no CUDA device " + std::to_string(ordinal) +
                 ": the driver reports " + std::to_string(count) +
                 (count == 1 ? " device" : " devices")};
  Context result;
  result.cuda = &driver;
  result.deviceOrdinal = ordinal;
  std::string device = "device " + std::to_string(ordinal);
  MOSAIC_RETURN_IF_ERROR(
      driver.check(driver.cuDeviceGet(&result.cuDevice, ordinal),
                   "cuDeviceGet(" + device + ")"));
  char name[256] = {};
  MOSAIC_RETURN_IF_ERROR(driver.check(
      driver.cuDeviceGetName(name, sizeof(name) - 1, result.cuDevice),
      "cuDeviceGetName(" + device + ")"));
  result.deviceName = name;
  Expected<int> major = result.attribute(
      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "compute capability");
  MOSAIC_RETURN_IF_ERROR(major);
  Expected<int> minor = result.attribute(
      CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "compute capability");
  MOSAIC_RETURN_IF_ERROR(minor);
  result.capability = *major * 10 + *minor;
  MOSAIC_RETURN_IF_ERROR(driver.check(
      driver.cuDevicePrimaryCtxRetain(&result.context, result.cuDevice),
      "cuDevicePrimaryCtxRetain(" + device + ")"));
  MOSAIC_RETURN_IF_ERROR(result.makeCurrent());
  return result;
}

Context::Context(Context &&other) noexcept
    : cuda(other.cuda), deviceOrdinal(other.deviceOrdinal),
      cuDevice(other.cuDevice), context(other.context),
      deviceName(std::move(other.deviceName)), capability(other.capability) {
  other.context = nullptr;
}

Context::~Context() {
  // A failure to release at exit leaves nothing to report to.
  if (context)
    (void)cuda->cuDevicePrimaryCtxRelease(cuDevice);
}

Expected<int> Context::attribute(CUdevice_attribute attribute,
                                 const char *what) const {
  int value = 0;
  MOSAIC_RETURN_IF_ERROR(
      cuda->check(cuda->cuDeviceGetAttribute(&value, attribute, cuDevice),
                  std::string("cuDeviceGetAttribute(") + what + ")"));
  return value;
}

Status Context::makeCurrent() const {
  return cuda->check(cuda->cuCtxSetCurrent(context), "cuCtxSetCurrent");
}

Expected<DeviceBuffer> DeviceBuffer::allocate(const Context &context,
                                              size_t bytes) {
  // cuMemAlloc allocates on the current context's device.
  MOSAIC_RETURN_IF_ERROR(context.makeCurrent());
  DeviceBuffer buffer;
  buffer.cuda = &context.driver();
  buffer.bytes = bytes;
  MOSAIC_RETURN_IF_ERROR(context.driver().check(
      context.driver().cuMemAlloc(&buffer.address, bytes),
      "cuMemAlloc(" + std::to_string(bytes) + " bytes)"));
  return buffer;
}

DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : cuda(other.cuda), address(other.address), bytes(other.bytes) {
  other.address = 0;
}

DeviceBuffer::~DeviceBuffer() {
  if (address)
    (void)cuda->cuMemFree(address);
}

Status DeviceBuffer::upload(const void *host) const {
  return cuda->check(cuda->cuMemcpyHtoD(address, host, bytes),
                     "cuMemcpyHtoD(" + formatAddress(address) + ", " +
                         std::to_string(bytes) + " bytes)");
}

Status DeviceBuffer::download(void *host) const {
  return cuda->check(cuda->cuMemcpyDtoH(host, address, bytes),
                     "cuMemcpyDtoH(" + formatAddress(address) + ", " +
                         std::to_string(bytes) + " bytes)");
}

Status DeviceBuffer::fill(uint8_t value) const {
  return cuda->check(cuda->cuMemsetD8(address, value, bytes),
                     "cuMemsetD8(" + formatAddress(address) + ", " +
                         std::to_string(bytes) + " bytes)");
}

} // namespace mosaic::runtime
