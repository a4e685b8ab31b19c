//===- WgmmaInFlight.h - Uses of async wgmma results ------------*- C++ -*-===//
//
// An async `wgmma` leaves its result in flight: the registers are written by
// the tensor cores until a `wgmma_wait` covers its group. This check follows
// the in-flight results through a kernel's structured control flow and
// reports every op that reads one too early.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_DIALECT_MOSAICGPU_WGMMAINFLIGHT_H
#define MOSAIC_DIALECT_MOSAICGPU_WGMMAINFLIGHT_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"

namespace mosaic_gpu {

/// Checks every function under `root`: an async wgmma's result may be the
/// accumulator of another wgmma or be passed on by scf.yield (and loop
/// inits) while in flight; any other use must come after a `wgmma_wait`
/// that lets fewer groups stay pending than were committed after it, on
/// every path. An accumulator that an async wgmma overwrote in flight is
/// never read again. Emits an error on each offending op.
///
/// With `completed`, also collects every value that a `wgmma_wait` (or a
/// synchronous wgmma, which waits for all groups) completes: the values
/// whose registers the tensor cores may write until that point. The
/// lowering orders each later read of them after the wait.
mlir::LogicalResult
verifyWgmmaInFlightUses(mlir::Operation *root,
                        llvm::DenseSet<mlir::Value> *completed = nullptr);

} // namespace mosaic_gpu

#endif // MOSAIC_DIALECT_MOSAICGPU_WGMMAINFLIGHT_H
