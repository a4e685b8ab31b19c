//===- DriverExtensions.cpp - The emulator's own entry points -------------===//
//
// What Extensions.h declares: the last report, error and launch counts.
// The report and the counts are of launches: asking for them runs the
// queued work first, as a synchronization would.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "mosaic/Emulator/Extensions.h"

using namespace mosaic::emulator;
using namespace mosaic::emulator::driver;

MOSAIC_EMU_EXPORT int mosaicEmulatorIsEmulator(void) { return 1; }

namespace {
void runQueuedWorkIfInitialized() {
  if (state().options && state().options->ok())
    runQueuedWork();
}
} // namespace

MOSAIC_EMU_EXPORT const char *mosaicEmulatorLastReport(void) {
  Lock lock(state().mutex);
  runQueuedWorkIfInitialized();
  return state().lastReport.c_str();
}

MOSAIC_EMU_EXPORT const char *mosaicEmulatorLastError(void) {
  Lock lock(state().mutex);
  return state().lastError.c_str();
}

MOSAIC_EMU_EXPORT void
mosaicEmulatorLastLaunchCounts(unsigned long long *warpInstructions,
                               unsigned long long *threadInstructions,
                               double *seconds) {
  const State &s = state();
  Lock lock(state().mutex);
  runQueuedWorkIfInitialized();
  if (warpInstructions)
    *warpInstructions = s.lastWarpInstructions;
  if (threadInstructions)
    *threadInstructions = s.lastThreadInstructions;
  if (seconds)
    *seconds = s.lastSeconds;
}
