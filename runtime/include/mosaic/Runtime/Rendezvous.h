//===- Rendezvous.h - Processes of one node meeting on a socket -*- C++ -*-===//
//
// The multi-process form of a multi-device launch runs one process per
// device, as torchrun does. The processes exchange the POSIX file
// descriptors of their virtual-memory allocations (and a few bytes each)
// over a Unix domain socket: rank 0 listens at a path the job names, every
// other rank connects to it, and each exchange is an all-gather through
// rank 0, the descriptors passed with SCM_RIGHTS. Every wait has a
// deadline, and a peer that never shows up, or goes away, is an error
// naming its rank and the path.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_RUNTIME_RENDEZVOUS_H
#define MOSAIC_RUNTIME_RENDEZVOUS_H

#include "mosaic/Contracts/Status.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace mosaic::runtime {

/// Who this process is among the processes of one job on one node.
struct ProcessGroupOptions {
  unsigned rank = 0;      // The logical device id: RANK.
  unsigned worldSize = 1; // The device count: WORLD_SIZE.
  int ordinal = 0;        // The CUDA device this process runs: LOCAL_RANK.
  /// The Unix socket's path, at most 107 bytes.
  std::string rendezvous;
  std::chrono::milliseconds timeout{60000};

  /// The options torchrun's environment gives: RANK, WORLD_SIZE,
  /// LOCAL_RANK (LOCAL_WORLD_SIZE must equal WORLD_SIZE: one node), and
  /// the path MOSAIC_GPU_RENDEZVOUS names, else one derived from the job:
  /// `<TMPDIR or /tmp>/mosaic-gpu-<uid>-<TORCHELASTIC_RUN_ID or
  /// MASTER_PORT>.sock`. MOSAIC_GPU_RENDEZVOUS_TIMEOUT (seconds) sets the
  /// timeout. Errors name the variable that is missing or malformed.
  static Expected<ProcessGroupOptions> fromEnvironment();
};

/// What one rank contributed to an exchange: its bytes, and its file
/// descriptor (owned by the receiver; -1 when it sent none).
struct Contribution {
  std::string bytes;
  int fd = -1;
};

class Rendezvous {
public:
  /// Rank 0 listens at `options.rendezvous` (replacing a stale socket
  /// there) and waits for every other rank; the others connect, retrying
  /// until rank 0 is there. Each side gives up at the timeout.
  static Expected<std::unique_ptr<Rendezvous>>
  connect(const ProcessGroupOptions &options);

  Rendezvous(const Rendezvous &) = delete;
  Rendezvous &operator=(const Rendezvous &) = delete;
  ~Rendezvous();

  unsigned rank() const { return options.rank; }
  unsigned worldSize() const { return options.worldSize; }

  /// Every rank's `bytes` and `fd` (-1 for none), indexed by rank. Every
  /// rank must call it, in the same order. The descriptors received are
  /// the caller's to close; this rank's own entry is `fd` itself.
  Expected<std::vector<Contribution>> allGather(const std::string &bytes,
                                                int fd = -1);

private:
  explicit Rendezvous(ProcessGroupOptions options)
      : options(std::move(options)) {}

  ProcessGroupOptions options;
  /// Rank 0: the socket of each rank (index = rank; -1 for itself). Other
  /// ranks: one, to rank 0.
  std::vector<int> sockets;
};

} // namespace mosaic::runtime

#endif // MOSAIC_RUNTIME_RENDEZVOUS_H
