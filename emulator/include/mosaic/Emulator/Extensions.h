/*===- Extensions.h - Entry points only the emulator's driver has -*- C -*-===//
//
// The emulator's libcuda.so.1 exports these beside the CUDA driver API. A
// program finds them with dlsym on the driver it loaded: their presence says
// that the driver is the emulator, and they tell what the last launch did.
// The runtime uses them through dlsym only, so it runs unchanged on a real
// driver, which lacks them.
//
// Launches are queued on their streams; mosaicEmulatorLastReport and
// mosaicEmulatorLastLaunchCounts first run every queued launch, as a
// synchronization would, so that they describe the launches made so far.
// mosaicEmulatorLastError does not: it explains the last call that failed,
// which a queued launch running would overwrite.
//
// Strings returned stay valid until the next call into the driver that
// fails (mosaicEmulatorLastError) or the next launch that fails
// (mosaicEmulatorLastReport).
//
//===----------------------------------------------------------------------===*/

#ifndef MOSAIC_EMULATOR_EXTENSIONS_H
#define MOSAIC_EMULATOR_EXTENSIONS_H

#if defined(__GNUC__)
#define MOSAIC_EMULATOR_EXTENSION __attribute__((visibility("default")))
#else
#define MOSAIC_EMULATOR_EXTENSION
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* 1: the driver is the Mosaic PTX emulator. */
MOSAIC_EMULATOR_EXTENSION int mosaicEmulatorIsEmulator(void);

/* The message of the last launch that failed (a fault, a hazard, a
   deadlock): what, where and which thread. "" if no launch has failed. */
MOSAIC_EMULATOR_EXTENSION const char *mosaicEmulatorLastReport(void);

/* Why the last driver call that returned an error failed, e.g. which
   operand of a copy lies outside its allocation. "" if none has failed. */
MOSAIC_EMULATOR_EXTENSION const char *mosaicEmulatorLastError(void);

/* What the last launch (successful or not) executed: warp instructions,
   thread instructions (one per active thread of each warp instruction) and
   host seconds. When the last launches ran as one co-scheduled group
   (several streams or devices), the instruction counts are the group's
   sums and the seconds its longest launch's. Any pointer may be null. */
MOSAIC_EMULATOR_EXTENSION void
mosaicEmulatorLastLaunchCounts(unsigned long long *warpInstructions,
                               unsigned long long *threadInstructions,
                               double *seconds);

/* The types of the entry points above, for dlsym. */
typedef int (*mosaicEmulatorIsEmulatorFn)(void);
typedef const char *(*mosaicEmulatorLastReportFn)(void);
typedef const char *(*mosaicEmulatorLastErrorFn)(void);
typedef void (*mosaicEmulatorLastLaunchCountsFn)(unsigned long long *,
                                                 unsigned long long *,
                                                 double *);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MOSAIC_EMULATOR_EXTENSIONS_H */
