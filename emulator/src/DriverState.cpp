//===- DriverState.cpp - The driver's state and common checks -------------===//
//
// The process-wide state behind the lock, and the checks and error
// recording every entry point shares.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

namespace mosaic::emulator::driver {

namespace {

/// The entry point's name as the user wrote it: `__func__` of a definition
/// of `cuMemAlloc` is `cuMemAlloc_v2`.
std::string apiName(const char *function) {
  std::string name = function;
  size_t v = name.rfind("_v");
  if (v != std::string::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + v + 2, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    name.resize(v);
  return name;
}

} // namespace

State &state() {
  // Never destroyed: programs call the driver from their own static
  // destructors and atexit handlers, after this file's statics would be.
  static State *instance = new State();
  return *instance;
}

thread_local std::vector<Context *> contextStack;

std::string dimsText(const std::array<uint32_t, 3> &dims) {
  return "(" + std::to_string(dims[0]) + ", " + std::to_string(dims[1]) + ", " +
         std::to_string(dims[2]) + ")";
}

std::string hex(uint64_t value) {
  char text[24];
  std::snprintf(text, sizeof(text), "0x%llx",
                static_cast<unsigned long long>(value));
  return text;
}

CUresult fail(CUresult code, const char *function, const std::string &why) {
  state().lastError = apiName(function) + ": " + why;
  return code;
}

CUresult failLoudly(CUresult code, const char *function,
                    const std::string &why) {
  fail(code, function, why);
  std::fprintf(stderr, "mosaic emulator: %s\n", state().lastError.c_str());
  return code;
}

CUresult requireInit(const char *function) {
  const State &s = state();
  if (!s.options)
    return fail(CUDA_ERROR_NOT_INITIALIZED, function,
                "cuInit has not been called");
  if (!s.options->ok())
    return fail(CUDA_ERROR_NOT_INITIALIZED, function,
                "cuInit failed: " + s.options->message());
  return CUDA_SUCCESS;
}

uint32_t deviceCount() { return (*state().options)->devices; }

CUresult requireDevice(const char *function, CUdevice device) {
  MOSAIC_EMU_TRY(requireInit(function));
  uint32_t count = deviceCount();
  if (device < 0 || uint32_t(device) >= count)
    return fail(CUDA_ERROR_INVALID_DEVICE, function,
                "device " + std::to_string(device) +
                    " does not exist; the emulator has " +
                    (count == 1 ? std::string("one device, 0")
                                : std::to_string(count) + " devices, 0 to " +
                                      std::to_string(count - 1)) +
                    " (MOSAIC_EMULATOR_DEVICES)");
  return CUDA_SUCCESS;
}

Context &primaryContext(CUdevice device) {
  return state().primaries[static_cast<size_t>(device)];
}

namespace {
/// The device whose primary context `context` is, if it is one. Compares
/// addresses only: `context` may be any handle a program passed.
std::optional<uint32_t> primaryOf(const Context *context) {
  const State &s = state();
  auto address = reinterpret_cast<uintptr_t>(context);
  auto first = reinterpret_cast<uintptr_t>(s.primaries.data());
  auto end =
      reinterpret_cast<uintptr_t>(s.primaries.data() + s.primaries.size());
  if (address < first || address >= end ||
      (address - first) % sizeof(Context) != 0)
    return std::nullopt;
  return static_cast<uint32_t>((address - first) / sizeof(Context));
}
} // namespace

bool live(const Context *context) {
  const State &s = state();
  if (auto device = primaryOf(context))
    return s.primaryRetains[*device] > 0;
  return s.contexts.count(const_cast<Context *>(context)) != 0;
}

CUresult findContext(const char *function, CUcontext handle, Context *&out) {
  Context *context = reinterpret_cast<Context *>(handle);
  if (!context || !live(context))
    return fail(CUDA_ERROR_INVALID_CONTEXT, function,
                "context " + hex(reinterpret_cast<uint64_t>(handle)) +
                    " is not a live context");
  out = context;
  return CUDA_SUCCESS;
}

CUresult usable(const char *function, Context *context) {
  if (!live(context))
    return fail(CUDA_ERROR_INVALID_CONTEXT, function,
                "the context was destroyed or, if primary, released");
  if (context->fault)
    return fail(context->fault->code, function,
                "an earlier launch in this context failed: " +
                    context->fault->message);
  return CUDA_SUCCESS;
}

CUresult current(const char *function, Context *&out) {
  MOSAIC_EMU_TRY(requireInit(function));
  Context *context = contextStack.empty() ? nullptr : contextStack.back();
  if (!context)
    return fail(CUDA_ERROR_INVALID_CONTEXT, function,
                "no current context (cuCtxSetCurrent, cuCtxPushCurrent or "
                "cuCtxCreate makes one)");
  MOSAIC_EMU_TRY(usable(function, context));
  out = context;
  return CUDA_SUCCESS;
}

CUresult nonNull(const char *function, const void *pointer,
                 const char *operand) {
  if (!pointer)
    return fail(CUDA_ERROR_INVALID_VALUE, function,
                std::string("`") + operand + "` is null");
  return CUDA_SUCCESS;
}

bool isDefaultStream(CUstream stream) {
  return stream == nullptr || stream == CU_STREAM_LEGACY ||
         stream == CU_STREAM_PER_THREAD;
}

CUresult checkStream(const char *function, CUstream stream) {
  if (isDefaultStream(stream) ||
      state().streams.count(reinterpret_cast<Stream *>(stream)))
    return CUDA_SUCCESS;
  return fail(CUDA_ERROR_INVALID_HANDLE, function,
              "stream " + hex(reinterpret_cast<uint64_t>(stream)) +
                  " is not a live stream");
}

CUresult findEvent(const char *function, CUevent handle, Event *&out) {
  auto found = state().events.find(reinterpret_cast<Event *>(handle));
  if (found == state().events.end())
    return fail(CUDA_ERROR_INVALID_HANDLE, function,
                "event " + hex(reinterpret_cast<uint64_t>(handle)) +
                    " is not a live event");
  out = found->second.get();
  return CUDA_SUCCESS;
}

CUresult findFunction(const char *function, CUfunction handle, Function *&out) {
  Function *f = reinterpret_cast<Function *>(handle);
  if (!state().functions.count(f))
    return fail(CUDA_ERROR_INVALID_HANDLE, function,
                "function " + hex(reinterpret_cast<uint64_t>(handle)) +
                    " is not a function of a loaded module");
  out = f;
  return CUDA_SUCCESS;
}

CUresult findModule(const char *function, CUmodule handle, LoadedModule *&out) {
  auto found = state().modules.find(reinterpret_cast<LoadedModule *>(handle));
  if (found == state().modules.end())
    return fail(CUDA_ERROR_INVALID_HANDLE, function,
                "module " + hex(reinterpret_cast<uint64_t>(handle)) +
                    " is not a loaded module");
  out = found->second.get();
  return CUDA_SUCCESS;
}

void destroyResources(Context *context) {
  State &s = state();
  runQueuedWork();
  for (auto it = s.allocations.begin(); it != s.allocations.end();) {
    if (it->second.context == context) {
      (void)s.memory.free(it->first);
      it = s.allocations.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = s.modules.begin(); it != s.modules.end();) {
    if (it->second->context == context) {
      for (auto &[name, f] : it->second->functions)
        s.functions.erase(f.get());
      it = s.modules.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = s.streams.begin(); it != s.streams.end();)
    it = it->second->context == context ? s.streams.erase(it) : std::next(it);
  for (auto it = s.events.begin(); it != s.events.end();)
    it = it->second->context == context ? s.events.erase(it) : std::next(it);
  context->peers.clear();
  for (auto &[handle, other] : s.contexts)
    other->peers.erase(context);
  for (Context &other : s.primaries)
    other.peers.erase(context);
  updatePeerAccess();
  context->fault.reset();
}

void updatePeerAccess() {
  State &s = state();
  uint32_t count = deviceCount();
  std::set<std::pair<uint32_t, uint32_t>> enabled;
  auto collect = [&](const Context &context) {
    if (!live(&context))
      return;
    for (const Context *peer : context.peers)
      enabled.insert({context.device, peer->device});
  };
  for (const Context &primary : s.primaries)
    collect(primary);
  for (const auto &[handle, context] : s.contexts)
    collect(*context);
  for (uint32_t from = 0; from < count; ++from)
    for (uint32_t to = 0; to < count; ++to)
      if (from != to)
        s.memory.setPeerAccess(from, to, enabled.count({from, to}) != 0);
}

} // namespace mosaic::emulator::driver
