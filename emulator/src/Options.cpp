//===- Options.cpp - Emulator options from the environment --------------===//
//
// An unset or empty variable keeps the default; any other value must be one
// the variable documents (keywords match case-insensitively), else the error
// names the variable, the value and what it accepts.
//
//===----------------------------------------------------------------------===//

#include "mosaic/Emulator/Machine.h"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <utility>

namespace mosaic::emulator {

namespace {

/// The variable's value, or nullopt when it is unset or empty.
std::optional<std::string> variable(const char *name) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return std::nullopt;
  return std::string(value);
}

std::string lowercase(std::string text) {
  for (char &c : text)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

Error unreadable(const char *name, const std::string &value,
                 const std::string &accepted) {
  return Error{std::string(name) + " is `" + value + "`; expected " + accepted};
}

/// The value of `name` among `choices` (keyword, value), if it is set.
template <typename T, size_t N>
Status readKeyword(const char *name,
                   const std::pair<const char *, T> (&choices)[N], T &out) {
  std::optional<std::string> value = variable(name);
  if (!value)
    return Status();
  std::string key = lowercase(*value);
  std::string accepted = "one of ";
  for (size_t i = 0; i < N; ++i) {
    if (key == choices[i].first) {
      out = choices[i].second;
      return Status();
    }
    accepted += std::string(i ? ", " : "") + choices[i].first;
  }
  return unreadable(name, *value, accepted);
}

/// A decimal integer in [0, max], if `name` is set.
template <typename T>
Status readUnsigned(const char *name, T &out, const std::string &accepted) {
  std::optional<std::string> value = variable(name);
  if (!value)
    return Status();
  T parsed = 0;
  const char *begin = value->data();
  const char *end = begin + value->size();
  auto [last, error] = std::from_chars(begin, end, parsed, 10);
  if (error != std::errc() || last != end)
    return unreadable(name, *value, accepted);
  out = parsed;
  return Status();
}

} // namespace

Expected<Options> Options::fromEnvironment() {
  Options options;
  static const std::pair<const char *, AsyncPolicy> policies[] = {
      {"eager", AsyncPolicy::Eager},
      {"lazy", AsyncPolicy::Lazy},
      {"random", AsyncPolicy::Random}};
  static const std::pair<const char *, bool> schedules[] = {
      {"roundrobin", false}, {"random", true}};
  static const std::pair<const char *, bool> switches[] = {{"on", true},
                                                           {"off", false}};
  MOSAIC_RETURN_IF_ERROR(
      readKeyword("MOSAIC_EMULATOR_POLICY", policies, options.policy));
  MOSAIC_RETURN_IF_ERROR(readKeyword("MOSAIC_EMULATOR_SCHEDULE", schedules,
                                         options.randomSchedule));
  MOSAIC_RETURN_IF_ERROR(
      readUnsigned("MOSAIC_EMULATOR_SEED", options.seed,
                   "an unsigned 64-bit decimal integer"));
  MOSAIC_RETURN_IF_ERROR(readUnsigned(
      "MOSAIC_EMULATOR_THREADS", options.hostThreads,
      "a number of host threads in decimal (0: one per core), at most " +
          std::to_string(std::numeric_limits<unsigned>::max())));
  MOSAIC_RETURN_IF_ERROR(
      readKeyword("MOSAIC_EMULATOR_HAZARDS", switches, options.checkHazards));
  const std::string deviceRange =
      "a device count from 1 to " + std::to_string(kMaxEmulatedDevices);
  MOSAIC_RETURN_IF_ERROR(
      readUnsigned("MOSAIC_EMULATOR_DEVICES", options.devices, deviceRange));
  if (options.devices < 1 || options.devices > kMaxEmulatedDevices)
    return unreadable("MOSAIC_EMULATOR_DEVICES",
                      std::to_string(options.devices), deviceRange);
  if (std::optional<std::string> value =
          variable("MOSAIC_EMULATOR_POLL_TIMEOUT")) {
    char *end = nullptr;
    double seconds = std::strtod(value->c_str(), &end);
    if (end != value->c_str() + value->size() || !(seconds >= 0))
      return unreadable("MOSAIC_EMULATOR_POLL_TIMEOUT", *value,
                        "a number of seconds, at least 0");
    options.pollTimeoutSeconds = seconds;
  }
  return options;
}

} // namespace mosaic::emulator
