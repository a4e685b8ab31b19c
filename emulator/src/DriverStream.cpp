//===- DriverStream.cpp - Streams and events ------------------------------===//
//
// cuda.h's stream management and event management: streams hold queued
// launches and event records (DriverQueue.cpp); synchronizing and querying
// run the queued work of every stream.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamCreateWithPriority(
    CUstream *phStream, unsigned int flags, int priority) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, phStream, "phStream"));
  if (flags & ~unsigned(CU_STREAM_NON_BLOCKING))
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`flags` " + hex(flags) +
                    " has bits other than CU_STREAM_NON_BLOCKING");
  auto stream = std::make_unique<Stream>();
  stream->context = context;
  stream->flags = flags;
  // Out-of-range priorities are clamped, as cuda.h says.
  stream->priority = std::clamp(priority, kGreatestStreamPriority, 0);
  Stream *handle = stream.get();
  s.streams.emplace(handle, std::move(stream));
  *phStream = reinterpret_cast<CUstream>(handle);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamCreate(CUstream *phStream,
                                                  unsigned int Flags) {
  return cuStreamCreateWithPriority(phStream, Flags, 0);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  auto found = s.streams.find(reinterpret_cast<Stream *>(hStream));
  if (found == s.streams.end())
    return fail(CUDA_ERROR_INVALID_HANDLE, __func__,
                "stream " + hex(reinterpret_cast<uint64_t>(hStream)) +
                    " is not a stream created by cuStreamCreate");
  // The stream's work still runs, as on a GPU; run it now, while the
  // stream's flags still order it.
  runQueuedWork();
  s.streamWaits.erase({found->second->context, found->first});
  s.streams.erase(found);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  return checkStream(__func__, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamQuery(CUstream hStream) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  return checkStream(__func__, hStream);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream,
                                                     CUevent hEvent,
                                                     unsigned int Flags) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(checkStream(__func__, hStream));
  Event *event = nullptr;
  MOSAIC_EMU_TRY(findEvent(__func__, hEvent, event));
  if (Flags & ~unsigned(CU_EVENT_WAIT_EXTERNAL))
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`Flags` " + hex(Flags) + " has unknown bits");
  waitForEvent(context, hStream, event);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventCreate(CUevent *phEvent,
                                                 unsigned int Flags) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, phEvent, "phEvent"));
  const unsigned known =
      CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (Flags & ~known)
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`Flags` " + hex(Flags) + " has unknown bits");
  if ((Flags & CU_EVENT_INTERPROCESS) && !(Flags & CU_EVENT_DISABLE_TIMING))
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "CU_EVENT_INTERPROCESS needs CU_EVENT_DISABLE_TIMING");
  auto event = std::make_unique<Event>();
  event->context = context;
  event->flags = Flags;
  Event *handle = event.get();
  s.events.emplace(handle, std::move(event));
  *phEvent = reinterpret_cast<CUevent>(handle);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventDestroy(CUevent hEvent) {
  State &s = state();
  Lock lock(s.mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Event *event = nullptr;
  MOSAIC_EMU_TRY(findEvent(__func__, hEvent, event));
  forgetEvent(event);
  s.events.erase(event);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventRecordWithFlags(CUevent hEvent,
                                                          CUstream hStream,
                                                          unsigned int flags) {
  Lock lock(state().mutex);
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Event *event = nullptr;
  MOSAIC_EMU_TRY(findEvent(__func__, hEvent, event));
  MOSAIC_EMU_TRY(checkStream(__func__, hStream));
  if (flags & ~unsigned(CU_EVENT_RECORD_EXTERNAL))
    return fail(CUDA_ERROR_INVALID_VALUE, __func__,
                "`flags` " + hex(flags) + " has unknown bits");
  recordEvent(event, context, hStream);
  return CUDA_SUCCESS;
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventRecord(CUevent hEvent,
                                                 CUstream hStream) {
  return cuEventRecordWithFlags(hEvent, hStream, 0);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Event *event = nullptr;
  return findEvent(__func__, hEvent, event);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventQuery(CUevent hEvent) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  Event *event = nullptr;
  return findEvent(__func__, hEvent, event);
}

MOSAIC_EMU_EXPORT CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds,
                                                      CUevent hStart,
                                                      CUevent hEnd) {
  Lock lock(state().mutex);
  MOSAIC_EMU_TRY(observeQueuedWork(__func__));
  Context *context = nullptr;
  MOSAIC_EMU_TRY(current(__func__, context));
  MOSAIC_EMU_TRY(nonNull(__func__, pMilliseconds, "pMilliseconds"));
  Event *start = nullptr;
  Event *end = nullptr;
  MOSAIC_EMU_TRY(findEvent(__func__, hStart, start));
  MOSAIC_EMU_TRY(findEvent(__func__, hEnd, end));
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING)
    return fail(CUDA_ERROR_INVALID_HANDLE, __func__,
                "an event created with CU_EVENT_DISABLE_TIMING has no time");
  if (!start->recorded || !end->recorded)
    return fail(CUDA_ERROR_INVALID_HANDLE, __func__,
                std::string("`") + (start->recorded ? "hEnd" : "hStart") +
                    "` has not been recorded");
  *pMilliseconds = std::chrono::duration<float, std::milli>(*end->recorded -
                                                            *start->recorded)
                       .count();
  return CUDA_SUCCESS;
}
