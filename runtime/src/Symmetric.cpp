//===- Symmetric.cpp - Symmetric memory and launches on devices --------===//

#include "mosaic/Runtime/Symmetric.h"

#include "mosaic/Contracts/Format.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace mosaic::runtime {

namespace {

std::string plural(size_t n, const char *what) {
  return std::to_string(n) + " " + what + (n == 1 ? "" : "s");
}

/// Physical memory on device `ordinal` that can be exported as a POSIX
/// file descriptor.
CUmemAllocationProp allocationProperties(int ordinal) {
  CUmemAllocationProp prop = {};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = ordinal;
  prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

size_t alignUp(size_t value, size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

/// A number another rank sent, or an error naming the rank.
Expected<unsigned long long> received(const Contribution &from, unsigned rank,
                                      const char *what) {
  char *end = nullptr;
  unsigned long long value = std::strtoull(from.bytes.c_str(), &end, 10);
  if (from.bytes.empty() || *end)
    return Error{"rank " + std::to_string(rank) + " sent \"" + from.bytes +
                 "\" as its " + what + ", not a number"};
  return value;
}

} // namespace

//===----------------------------------------------------------------------===//
// DeviceGroup
//===----------------------------------------------------------------------===//

Expected<std::unique_ptr<DeviceGroup>> DeviceGroup::open(const Driver &driver,
                                                         unsigned count) {
  int available = 0;
  MOSAIC_RETURN_IF_ERROR(
      driver.check(driver.cuDeviceGetCount(&available), "cuDeviceGetCount"));
  if (count == 0 || count > static_cast<unsigned>(available))
    return Error{"a group of " + plural(count, "device") +
                 ", but the driver reports " + plural(available, "device") +
                 (driver.isEmulator()
                      ? " (the emulator reports MOSAIC_EMULATOR_DEVICES)"
                      : "")};
  if (count > 1)
    MOSAIC_RETURN_IF_ERROR(driver.requireMultiDevice("a group of devices"));
  std::unique_ptr<DeviceGroup> group(new DeviceGroup());
  group->cuda = &driver;
  group->count = count;
  group->contexts.resize(count);
  for (unsigned d = 0; d < count; ++d) {
    Expected<Context> context = Context::open(driver, static_cast<int>(d));
    MOSAIC_RETURN_IF_ERROR(context);
    group->contexts[d] = std::make_unique<Context>(std::move(*context));
    group->local.push_back(d);
    group->deviceOrdinals.push_back(static_cast<int>(d));
  }
  for (unsigned a = 0; a < count; ++a)
    for (unsigned b = 0; b < count; ++b)
      if (a != b)
        MOSAIC_RETURN_IF_ERROR(group->checkPeerAccess(a, b));
  MOSAIC_RETURN_IF_ERROR(group->createStreams());
  return group;
}

Expected<std::unique_ptr<DeviceGroup>>
DeviceGroup::join(const Driver &driver, const ProcessGroupOptions &options) {
  if (options.worldSize > 1)
    MOSAIC_RETURN_IF_ERROR(driver.requireMultiDevice("the multi-process form"));
  std::unique_ptr<DeviceGroup> group(new DeviceGroup());
  group->cuda = &driver;
  group->count = options.worldSize;
  group->contexts.resize(options.worldSize);
  Expected<Context> context = Context::open(driver, options.ordinal);
  if (!context.ok())
    return Error{"rank " + std::to_string(options.rank) + " (LOCAL_RANK " +
                 std::to_string(options.ordinal) + "): " + context.message()};
  group->contexts[options.rank] =
      std::make_unique<Context>(std::move(*context));
  group->local.push_back(options.rank);
  Expected<std::unique_ptr<Rendezvous>> meeting = Rendezvous::connect(options);
  MOSAIC_RETURN_IF_ERROR(meeting);
  group->meeting = std::move(*meeting);
  // Every rank's CUDA ordinal, to check peer access and to name devices.
  Expected<std::vector<Contribution>> ordinals =
      group->meeting->allGather(std::to_string(options.ordinal));
  MOSAIC_RETURN_IF_ERROR(ordinals);
  for (unsigned q = 0; q < options.worldSize; ++q) {
    Expected<unsigned long long> sent =
        received((*ordinals)[q], q, "device ordinal");
    MOSAIC_RETURN_IF_ERROR(sent);
    int ordinal = static_cast<int>(*sent);
    if (q != options.rank && ordinal == options.ordinal)
      return Error{"ranks " + std::to_string(std::min(q, options.rank)) +
                   " and " + std::to_string(std::max(q, options.rank)) +
                   " both run device " + std::to_string(ordinal) +
                   " (LOCAL_RANK): each process needs its own device"};
    group->deviceOrdinals.push_back(ordinal);
  }
  int available = 0;
  MOSAIC_RETURN_IF_ERROR(
      driver.check(driver.cuDeviceGetCount(&available), "cuDeviceGetCount"));
  for (unsigned q = 0; q < options.worldSize; ++q)
    if (q != options.rank && group->deviceOrdinals[q] < available)
      MOSAIC_RETURN_IF_ERROR(group->checkPeerAccess(options.rank, q));
  MOSAIC_RETURN_IF_ERROR(group->createStreams());
  return group;
}

Status DeviceGroup::checkPeerAccess(unsigned from, unsigned to) const {
  CUdevice a = 0, b = 0;
  MOSAIC_RETURN_IF_ERROR(
      cuda->check(cuda->cuDeviceGet(&a, deviceOrdinals[from]), "cuDeviceGet"));
  MOSAIC_RETURN_IF_ERROR(
      cuda->check(cuda->cuDeviceGet(&b, deviceOrdinals[to]), "cuDeviceGet"));
  int can = 0;
  MOSAIC_RETURN_IF_ERROR(cuda->check(cuda->cuDeviceCanAccessPeer(&can, a, b),
                                     "cuDeviceCanAccessPeer(" + describe(from) +
                                         ", " + describe(to) + ")"));
  if (!can)
    return Error{describe(from) + " cannot access the memory of " +
                 describe(to) +
                 " (cuDeviceCanAccessPeer): a kernel that spans devices "
                 "needs every pair of its devices to reach each other"};
  return Status();
}

Status DeviceGroup::createStreams() {
  streams.assign(count, nullptr);
  for (unsigned d : local) {
    MOSAIC_RETURN_IF_ERROR(contexts[d]->makeCurrent());
    MOSAIC_RETURN_IF_ERROR(
        cuda->check(cuda->cuStreamCreate(&streams[d], CU_STREAM_NON_BLOCKING),
                    describe(d) + ": cuStreamCreate"));
  }
  return Status();
}

DeviceGroup::~DeviceGroup() {
  // Nothing to report a failure to while tearing down.
  for (unsigned d : local)
    if (d < streams.size() && streams[d] && contexts[d]->makeCurrent().ok())
      (void)cuda->cuStreamDestroy(streams[d]);
}

bool DeviceGroup::isLocal(unsigned device) const {
  return device < contexts.size() && contexts[device] != nullptr;
}

const Context &DeviceGroup::context(unsigned device) const {
  return *contexts.at(device);
}

CUstream DeviceGroup::stream(unsigned device) const {
  return streams.at(device);
}

std::string DeviceGroup::describe(unsigned device) const {
  std::string text = "device " + std::to_string(device);
  if (isLocal(device))
    text += " (" + contexts[device]->name() + ")";
  return text;
}

Status DeviceGroup::synchronize() const {
  Status first;
  for (unsigned d : local) {
    Status status = contexts[d]->makeCurrent();
    if (status.ok())
      status = cuda->check(cuda->cuStreamSynchronize(streams[d]),
                           describe(d) + ": cuStreamSynchronize");
    if (first.ok() && !status.ok())
      first = status;
  }
  return first;
}

//===----------------------------------------------------------------------===//
// SymmetricHeap
//===----------------------------------------------------------------------===//

/// One physical allocation per device, mapped side by side into one
/// reserved range: device q's at `base + q * bytes`.
struct SymmetricHeap::Segment {
  const Driver *cuda = nullptr;
  size_t bytes = 0;
  CUdeviceptr base = 0;
  size_t reserved = 0;
  std::vector<CUmemGenericAllocationHandle> handles; // 0: none yet.
  std::vector<bool> mapped;

  ~Segment() {
    // Nothing to report a failure to while freeing.
    for (size_t q = 0; q < mapped.size(); ++q)
      if (mapped[q])
        (void)cuda->cuMemUnmap(base + q * bytes, bytes);
    for (CUmemGenericAllocationHandle handle : handles)
      if (handle)
        (void)cuda->cuMemRelease(handle);
    if (base)
      (void)cuda->cuMemAddressFree(base, reserved);
  }
};

Expected<std::unique_ptr<SymmetricHeap>>
SymmetricHeap::create(const DeviceGroup &group, size_t segmentBytes) {
  const Driver &cuda = group.driver();
  MOSAIC_RETURN_IF_ERROR(cuda.requireMultiDevice("symmetric memory"));
  std::unique_ptr<SymmetricHeap> heap(new SymmetricHeap());
  heap->group = &group;
  heap->grain = 1;
  for (unsigned d : group.localDevices()) {
    CUmemAllocationProp prop = allocationProperties(group.ordinals()[d]);
    size_t grain = 0;
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuMemGetAllocationGranularity(
                       &grain, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
                   group.describe(d) + ": cuMemGetAllocationGranularity"));
    heap->grain = std::max(heap->grain, grain);
  }
  if (Rendezvous *others = group.rendezvous()) {
    Expected<std::vector<Contribution>> grains =
        others->allGather(std::to_string(heap->grain));
    MOSAIC_RETURN_IF_ERROR(grains);
    for (unsigned q = 0; q < grains->size(); ++q) {
      Expected<unsigned long long> grain =
          received((*grains)[q], q, "granularity");
      MOSAIC_RETURN_IF_ERROR(grain);
      heap->grain = std::max<size_t>(heap->grain, *grain);
    }
  }
  heap->segmentBytes = alignUp(std::max<size_t>(segmentBytes, 1), heap->grain);
  return heap;
}

SymmetricHeap::~SymmetricHeap() = default;

Expected<std::unique_ptr<SymmetricHeap::Segment>>
SymmetricHeap::createSegment(size_t bytes) {
  const Driver &cuda = group->driver();
  unsigned count = group->deviceCount();
  auto segment = std::make_unique<Segment>();
  segment->cuda = &cuda;
  segment->bytes = bytes;
  segment->handles.assign(count, 0);
  segment->mapped.assign(count, false);
  std::string size = std::to_string(bytes) + " bytes";
  for (unsigned d : group->localDevices()) {
    CUmemAllocationProp prop = allocationProperties(group->ordinals()[d]);
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuMemCreate(&segment->handles[d], bytes, &prop, 0),
                   group->describe(d) + ": cuMemCreate(" + size + ")"));
  }

  if (Rendezvous *others = group->rendezvous()) {
    unsigned rank = others->rank();
    int exported = -1;
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuMemExportToShareableHandle(
                       &exported, segment->handles[rank],
                       CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0),
                   group->describe(rank) + ": cuMemExportToShareableHandle(" +
                       size + ")"));
    Expected<std::vector<Contribution>> all =
        others->allGather(std::to_string(bytes), exported);
    ::close(exported);
    MOSAIC_RETURN_IF_ERROR(all);
    Status status;
    for (unsigned q = 0; q < count; ++q) {
      Contribution &peer = (*all)[q];
      if (q == rank)
        continue;
      if (status.ok() && (peer.fd < 0 || peer.bytes != std::to_string(bytes)))
        status =
            Error{"rank " + std::to_string(q) + " shared " +
                  (peer.fd < 0 ? "no allocation" : peer.bytes + " bytes") +
                  " where rank " + std::to_string(rank) + " shared " + size};
      if (status.ok())
        status = cuda.check(
            cuda.cuMemImportFromShareableHandle(
                &segment->handles[q],
                reinterpret_cast<void *>(static_cast<uintptr_t>(peer.fd)),
                CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
            "cuMemImportFromShareableHandle(rank " + std::to_string(q) + "'s " +
                size + ")");
      if (peer.fd >= 0)
        ::close(peer.fd);
    }
    MOSAIC_RETURN_IF_ERROR(status);
  }

  segment->reserved = bytes * count;
  MOSAIC_RETURN_IF_ERROR(cuda.check(
      cuda.cuMemAddressReserve(&segment->base, segment->reserved, grain, 0, 0),
      "cuMemAddressReserve(" + std::to_string(segment->reserved) + " bytes)"));
  std::vector<CUmemAccessDesc> access;
  for (unsigned d : group->localDevices()) {
    CUmemAccessDesc desc = {};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = group->ordinals()[d];
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access.push_back(desc);
  }
  for (unsigned q = 0; q < count; ++q) {
    CUdeviceptr at = segment->base + q * bytes;
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuMemMap(at, bytes, 0, segment->handles[q], 0),
                   "cuMemMap(" + group->describe(q) + "'s " + size + " at " +
                       formatAddress(at) + ")"));
    segment->mapped[q] = true;
    MOSAIC_RETURN_IF_ERROR(
        cuda.check(cuda.cuMemSetAccess(at, bytes, access.data(), access.size()),
                   "cuMemSetAccess(" + group->describe(q) + "'s " + size +
                       " for " + plural(access.size(), "device") + ")"));
  }
  return segment;
}

Expected<SymmetricBuffer> SymmetricHeap::allocate(size_t bytes,
                                                  size_t alignment) {
  unsigned number = allocations++;
  std::string what = "symmetric allocation " + std::to_string(number);
  if (bytes == 0)
    return Error{what + ": a symmetric buffer needs at least one byte"};
  if (alignment == 0 || (alignment & (alignment - 1)) || alignment > grain)
    return Error{what + ": alignment " + std::to_string(alignment) +
                 " is not a power of two up to the granularity " +
                 std::to_string(grain)};
  if (Rendezvous *others = group->rendezvous()) {
    std::string request = std::to_string(bytes) + " bytes aligned to " +
                          std::to_string(alignment);
    Expected<std::vector<Contribution>> all = others->allGather(request);
    MOSAIC_RETURN_IF_ERROR(all);
    for (unsigned q = 0; q < all->size(); ++q)
      if ((*all)[q].bytes != request)
        return Error{what + ": rank " + std::to_string(others->rank()) +
                     " asks for " + request + ", rank " + std::to_string(q) +
                     " for " + (*all)[q].bytes +
                     ": every process must allocate the same buffers in "
                     "the same order"};
  }
  size_t offset = alignUp(used, alignment);
  if (segments.empty() || offset + bytes > segments.back()->bytes) {
    Expected<std::unique_ptr<Segment>> segment =
        createSegment(std::max(segmentBytes, alignUp(bytes, grain)));
    if (!segment.ok())
      return Error{what + " (" + std::to_string(bytes) +
                   " bytes): " + segment.message()};
    segments.push_back(std::move(*segment));
    offset = 0;
  }
  used = offset + bytes;
  const Segment &segment = *segments.back();
  SymmetricBuffer buffer;
  buffer.group = group;
  buffer.bytes = bytes;
  for (unsigned q = 0; q < group->deviceCount(); ++q)
    buffer.pointers.push_back(segment.base + q * segment.bytes + offset);
  return buffer;
}

//===----------------------------------------------------------------------===//
// SymmetricBuffer
//===----------------------------------------------------------------------===//

namespace {

/// The context of `device`, current, or why there is none.
Expected<const Context *> localContext(const DeviceGroup &group,
                                       unsigned device) {
  if (device >= group.deviceCount())
    return Error{"device " + std::to_string(device) + " of a group of " +
                 plural(group.deviceCount(), "device")};
  if (!group.isLocal(device))
    return Error{"device " + std::to_string(device) +
                 " belongs to another process (rank " + std::to_string(device) +
                 "); copy from that process"};
  const Context &context = group.context(device);
  MOSAIC_RETURN_IF_ERROR(context.makeCurrent());
  return &context;
}

} // namespace

Status SymmetricBuffer::upload(unsigned device, const void *host) const {
  Expected<const Context *> context = localContext(*group, device);
  MOSAIC_RETURN_IF_ERROR(context);
  const Driver &cuda = group->driver();
  return cuda.check(cuda.cuMemcpyHtoD(pointers[device], host, bytes),
                    group->describe(device) + ": cuMemcpyHtoD(" +
                        formatAddress(pointers[device]) + ", " +
                        std::to_string(bytes) + " bytes)");
}

Status SymmetricBuffer::download(unsigned device, void *host) const {
  Expected<const Context *> context = localContext(*group, device);
  MOSAIC_RETURN_IF_ERROR(context);
  const Driver &cuda = group->driver();
  return cuda.check(cuda.cuMemcpyDtoH(host, pointers[device], bytes),
                    group->describe(device) + ": cuMemcpyDtoH(" +
                        formatAddress(pointers[device]) + ", " +
                        std::to_string(bytes) + " bytes)");
}

Status SymmetricBuffer::fill(unsigned device, uint8_t value) const {
  Expected<const Context *> context = localContext(*group, device);
  MOSAIC_RETURN_IF_ERROR(context);
  const Driver &cuda = group->driver();
  return cuda.check(cuda.cuMemsetD8(pointers[device], value, bytes),
                    group->describe(device) + ": cuMemsetD8(" +
                        formatAddress(pointers[device]) + ", " +
                        std::to_string(bytes) + " bytes)");
}

//===----------------------------------------------------------------------===//
// GroupKernel and GroupLaunch
//===----------------------------------------------------------------------===//

Expected<GroupKernel> GroupKernel::load(const DeviceGroup &group,
                                        const Manifest &manifest) {
  GroupKernel result;
  result.group = &group;
  for (unsigned d : group.localDevices()) {
    Expected<Kernel> kernel = Kernel::load(group.context(d), manifest);
    if (!kernel.ok())
      return Error{group.describe(d) + ": " + kernel.message()};
    result.kernels.push_back(std::move(*kernel));
  }
  return result;
}

Expected<GroupLaunch> GroupKernel::prepare(
    const std::vector<std::vector<GroupArgument>> &arguments) const {
  const std::vector<unsigned> &local = group->localDevices();
  if (arguments.size() != local.size())
    return Error{"the launch gives arguments for " +
                 plural(arguments.size(), "device") +
                 ", but this process runs " + plural(local.size(), "device") +
                 " of the group"};
  const Manifest &m = manifest();
  bool spansDevices = m.collectiveParameter().has_value();
  std::vector<unsigned> symmetric = m.symmetricBuffers();
  GroupLaunch launch;
  launch.group = group;
  // The symmetric buffers device 0 (of this process) passed: the others
  // must pass the same.
  std::vector<const std::vector<CUdeviceptr> *> first(symmetric.size());
  for (size_t i = 0; i < local.size(); ++i) {
    unsigned d = local[i];
    std::string device = group->describe(d) + ": ";
    std::vector<BufferArgument> buffers;
    CollectiveArguments collective;
    collective.deviceId = d;
    collective.deviceCount = group->deviceCount();
    if (arguments[i].size() != m.buffers.size())
      return Error{device + "`" + m.entry + "` takes " +
                   plural(m.buffers.size(), "buffer argument") + ", got " +
                   std::to_string(arguments[i].size())};
    for (size_t j = 0; j < m.buffers.size(); ++j) {
      const BufferParameter &parameter = m.buffers[j];
      std::string where =
          device + "parameter " + std::to_string(parameter.index);
      if (const auto *plain = std::get_if<BufferArgument>(&arguments[i][j])) {
        if (spansDevices && parameter.symmetric)
          return Error{where + " is symmetric: pass a symmetric buffer "
                               "(SymmetricHeap::allocate), not device memory"};
        buffers.push_back(*plain);
        continue;
      }
      const auto &given = std::get<SymmetricArgument>(arguments[i][j]);
      if (!given.buffer)
        return Error{where + ": the symmetric buffer is null"};
      if (given.buffer->size() < parameter.byteSize())
        return Error{where + ": the symmetric buffer has " +
                     std::to_string(given.buffer->size()) +
                     " bytes, but the kernel accesses a " +
                     parameter.describe()};
      buffers.push_back(
          {given.buffer->pointer(d), given.elementType, given.shape});
    }
    for (size_t s = 0; s < symmetric.size() && spansDevices; ++s) {
      const auto &given =
          std::get<SymmetricArgument>(arguments[i][symmetric[s]]);
      const std::vector<CUdeviceptr> &row = given.buffer->allPointers();
      if (!first[s])
        first[s] = &row;
      else if (*first[s] != row)
        return Error{device + "parameter " +
                     std::to_string(m.buffers[symmetric[s]].index) +
                     " is another symmetric buffer than " +
                     group->describe(local[0]) +
                     " passes: every device passes the same one"};
      collective.peers.push_back(row);
    }
    Expected<Launch> prepared = kernels[i].prepare(buffers, collective);
    if (!prepared.ok())
      return Error{device + prepared.message()};
    launch.launches.push_back(std::move(*prepared));
  }
  return launch;
}

/// Launches each local device's instance on its stream, in order, stopping
/// at the first that fails (its error in `failed`); returns how many were
/// launched.
static size_t launchEach(const DeviceGroup &group,
                         const std::vector<Launch> &launches, Status &failed) {
  const std::vector<unsigned> &local = group.localDevices();
  size_t launched = 0;
  for (; launched < local.size(); ++launched) {
    unsigned d = local[launched];
    Status status = group.context(d).makeCurrent();
    if (status.ok())
      status = launches[launched].run(group.stream(d));
    if (!status.ok()) {
      failed = Error{group.describe(d) + ": " + status.message()};
      break;
    }
  }
  return launched;
}

/// Waits for the streams of `local[0 .. launched)`; the first error, unless
/// `failed` already holds one.
static void waitEach(const DeviceGroup &group, size_t launched,
                     Status &failed) {
  const Driver &cuda = group.driver();
  for (size_t i = 0; i < launched; ++i) {
    unsigned d = group.localDevices()[i];
    Status status = group.context(d).makeCurrent();
    if (status.ok())
      status = cuda.check(cuda.cuStreamSynchronize(group.stream(d)),
                          group.describe(d) +
                              ": the kernel failed: cuStreamSynchronize");
    if (failed.ok() && !status.ok())
      failed = status;
  }
}

Status GroupLaunch::run() const {
  // Every launch before any wait: an instance that waits for a peer's
  // signal only finishes once the peer runs too.
  Status failed;
  size_t launched = launchEach(*group, launches, failed);
  waitEach(*group, launched, failed);
  return failed;
}

Status GroupLaunch::start() const {
  Status failed;
  size_t launched = launchEach(*group, launches, failed);
  if (!failed.ok())
    waitEach(*group, launched, failed);
  return failed;
}

} // namespace mosaic::runtime
