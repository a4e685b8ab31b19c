//===- LaunchTogetherScaffold.cpp - launchTogether, one after another -----===//
//
// TEMPORARY: a sequential stand-in for the co-scheduling `launchTogether`
// (Machine.h) until the engine's own lands. Each launch runs to completion
// with `launch` on its device, in order: launches that do not wait for each
// other get their results, but a kernel waiting for a later member's signal
// hangs until the instruction limit. A fault stops the group, as the real
// one does: the launches after it are not run and their reports say so.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Emulator/Machine.h"

namespace mosaic::emulator {

std::vector<LaunchReport>
launchTogether(const std::vector<DeviceLaunch> &launches, DeviceMemory &memory,
               const Options &options) {
  std::vector<LaunchReport> reports(launches.size());
  for (size_t i = 0; i < launches.size(); ++i) {
    const DeviceLaunch &member = launches[i];
    reports[i] = launch(*member.module, member.kernel, member.config, memory,
                        options, member.device);
    if (reports[i].ok)
      continue;
    for (size_t j = 0; j < launches.size(); ++j) {
      if (j == i || !reports[j].ok)
        continue;
      reports[j].ok = false;
      reports[j].kind = reports[i].kind;
      reports[j].hazard = reports[i].hazard;
      reports[j].message = "stopped with its group: device " +
                           std::to_string(member.device) + ": " +
                           reports[i].message;
    }
    break;
  }
  return reports;
}

} // namespace mosaic::emulator
