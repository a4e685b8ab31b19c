//===- DriverQueue.cpp - Queued work of the streams -----------------------===//
//
// Launches and event records wait on their stream until a call must observe
// them (Driver.h). Running the queue repeatedly takes the oldest work of
// every stream of every context whose dependencies completed: event
// records complete at once; launches run together as one co-scheduled group
// (`launchTogether`), whatever their devices.
//
// Work still queued when the process exits runs then (an atexit handler
// cuInit registers), so that what a kernel writes to memory shared with
// another process, and what it faults with, is not lost.
//
// What orders work: a stream's own order; cuStreamWaitEvent; and the legacy
// default stream, which waits for the context's blocking streams and which
// they wait for. Every default stream handle (null, CU_STREAM_LEGACY,
// CU_STREAM_PER_THREAD) is the context's one default stream.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"

#include <algorithm>

namespace mosaic::emulator::driver {

namespace {

/// The work queued on `stream` of `context` must wait for, besides the
/// stream's own.
std::vector<uint64_t> dependencies(Context *context, Stream *key) {
  State &s = state();
  std::vector<uint64_t> after;
  auto waits = s.streamWaits.find({context, key});
  if (waits != s.streamWaits.end()) {
    after = std::move(waits->second);
    s.streamWaits.erase(waits);
  }
  auto blocking = [&](Stream *stream) {
    return !stream ||
           !(s.streams.at(stream)->flags & unsigned(CU_STREAM_NON_BLOCKING));
  };
  if (!blocking(key))
    return after;
  for (const auto &[queueKey, queue] : s.queues)
    if (queueKey.first == context && queueKey.second != key && !queue.empty() &&
        (key == nullptr) != (queueKey.second == nullptr) &&
        blocking(queueKey.second))
      after.push_back(queue.back().sequence);
  return after;
}

/// The error a GPU reports for a fault of this kind.
CUresult faultCode(FaultKind kind) {
  switch (kind) {
  case FaultKind::IllegalAddress:
    return CUDA_ERROR_ILLEGAL_ADDRESS;
  case FaultKind::MisalignedAddress:
    return CUDA_ERROR_MISALIGNED_ADDRESS;
  case FaultKind::IllegalInstruction:
    return CUDA_ERROR_ILLEGAL_INSTRUCTION;
  case FaultKind::Configuration:
  case FaultKind::Unspecified:
  case FaultKind::Hazard:
    break;
  }
  return CUDA_ERROR_LAUNCH_FAILED;
}

void complete(QueuedWork &work) {
  for (Event *event : work.completionEvents) {
    event->recorded = Clock::now();
    event->pending.reset();
  }
}

/// Drops work that can no longer run (its context faulted or was
/// destroyed) and completes the event records that are ready. True if it
/// changed a queue.
bool settleHeads(const std::set<uint64_t> &pending) {
  State &s = state();
  bool changed = false;
  for (auto &[key, queue] : s.queues) {
    while (!queue.empty()) {
      QueuedWork &head = queue.front();
      bool dead = !live(head.context) || head.context->fault;
      bool ready = std::none_of(head.after.begin(), head.after.end(),
                                [&](uint64_t w) { return pending.count(w); });
      if (dead) {
        for (Event *event : head.completionEvents)
          event->pending.reset();
      } else if (!head.module && ready) {
        complete(head);
      } else {
        break;
      }
      queue.pop_front();
      changed = true;
    }
  }
  return changed;
}

} // namespace

Stream *streamKey(CUstream stream) {
  return isDefaultStream(stream) ? nullptr : reinterpret_cast<Stream *>(stream);
}

uint64_t queueWork(CUstream stream, QueuedWork work) {
  State &s = state();
  Stream *key = streamKey(stream);
  work.sequence = s.nextSequence++;
  work.after = dependencies(work.context, key);
  uint64_t sequence = work.sequence;
  s.queues[{work.context, key}].push_back(std::move(work));
  return sequence;
}

void recordEvent(Event *event, Context *context, CUstream stream) {
  State &s = state();
  // A record replaces the previous one, queued or not.
  forgetEvent(event);
  Stream *key = streamKey(stream);
  if (key)
    context = key->context;
  auto queue = s.queues.find({context, key});
  bool queued = queue != s.queues.end() && !queue->second.empty();
  std::vector<uint64_t> after = dependencies(context, key);
  if (!queued && after.empty()) {
    event->recorded = Clock::now();
    event->pending.reset();
    return;
  }
  QueuedWork work;
  work.sequence = s.nextSequence++;
  work.context = context;
  work.after = std::move(after);
  work.completionEvents.push_back(event);
  event->pending = work.sequence;
  s.queues[{context, key}].push_back(std::move(work));
}

void waitForEvent(Context *context, CUstream stream, const Event *event) {
  Stream *key = streamKey(stream);
  if (key)
    context = key->context;
  if (event->pending)
    state().streamWaits[{context, key}].push_back(*event->pending);
}

void forgetEvent(const Event *event) {
  for (auto &[key, queue] : state().queues)
    for (QueuedWork &work : queue)
      work.completionEvents.erase(std::remove(work.completionEvents.begin(),
                                              work.completionEvents.end(),
                                              event),
                                  work.completionEvents.end());
}

void runQueuedWorkAtExit() {
  // A thread still inside the driver holds the lock: its call is cut short
  // by the exit, and so is the queued work.
  std::unique_lock<std::mutex> lock(state().mutex, std::try_to_lock);
  if (lock && state().options && state().options->ok())
    runQueuedWork();
}

CUresult observeQueuedWork(const char *function) {
  MOSAIC_EMU_TRY(requireInit(function));
  runQueuedWork();
  return CUDA_SUCCESS;
}

void runQueuedWork() {
  State &s = state();
  for (;;) {
    std::set<uint64_t> pending;
    for (const auto &[key, queue] : s.queues)
      for (const QueuedWork &work : queue)
        pending.insert(work.sequence);
    if (pending.empty())
      break;
    if (settleHeads(pending))
      continue;
    // The launches at the heads whose dependencies completed. The oldest
    // pending work is always among them: it waits only for older work.
    std::vector<std::deque<QueuedWork> *> members;
    std::vector<DeviceLaunch> group;
    for (auto &[key, queue] : s.queues) {
      if (queue.empty())
        continue;
      const QueuedWork &head = queue.front();
      if (std::any_of(head.after.begin(), head.after.end(),
                      [&](uint64_t w) { return pending.count(w); }))
        continue;
      members.push_back(&queue);
      group.push_back(head.launch);
    }
    // A launch alone runs a cluster at a time (`launch`), as each branch ran
    // it before the two met (the engine's driver, the driver's sequential
    // launchTogether): launchTogether keeps every cluster of the group in
    // memory at once, 22 GB for the 8192 blocks of the elementwise example.
    std::vector<LaunchReport> reports =
        group.size() == 1
            ? std::vector<LaunchReport>{launch(
                  *group[0].module, group[0].kernel, group[0].config, s.memory,
                  **s.options, group[0].device)}
            : launchTogether(group, s.memory, **s.options);
    s.lastWarpInstructions = 0;
    s.lastThreadInstructions = 0;
    s.lastSeconds = 0;
    for (size_t i = 0; i < members.size(); ++i) {
      QueuedWork &work = members[i]->front();
      const LaunchReport &report = reports[i];
      s.lastWarpInstructions += report.warpInstructions;
      s.lastThreadInstructions += report.threadInstructions;
      s.lastSeconds = std::max(s.lastSeconds, report.seconds);
      if (report.ok) {
        complete(work);
      } else {
        CUresult code = faultCode(report.kind);
        s.lastReport = report.message;
        work.context->fault = Context::StickyFault{code, report.message};
        failLoudly(code, work.function, report.message);
        for (Event *event : work.completionEvents)
          event->pending.reset();
      }
      members[i]->pop_front();
    }
  }
  for (auto it = s.queues.begin(); it != s.queues.end();)
    it = it->second.empty() ? s.queues.erase(it) : std::next(it);
}

} // namespace mosaic::emulator::driver
