//===- Status.h - Errors as values for the emulator -----------*- C++ -*-===//
//
// The emulator never throws or aborts on input it is given (PTX text, launch
// arguments): every failure is a message the caller can print, as the
// runtime's are, with the same types (mosaic/Contracts/Status.h).
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_STATUS_H
#define MOSAIC_EMULATOR_STATUS_H

#include "mosaic/Contracts/Status.h"

namespace mosaic::emulator {

using mosaic::Error;
using mosaic::Expected;
using mosaic::Status;

} // namespace mosaic::emulator

#endif // MOSAIC_EMULATOR_STATUS_H
