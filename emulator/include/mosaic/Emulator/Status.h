//===- Status.h - Errors as values for the emulator -----------*- C++ -*-===//
//
// The emulator never throws or aborts on input it is given (PTX text, launch
// arguments): every failure is a message the caller can print.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_EMULATOR_STATUS_H
#define MOSAIC_EMULATOR_STATUS_H

#include <optional>
#include <string>
#include <utility>

namespace mosaic::emulator {

struct Error {
  std::string message;
};

class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : failed(true), text(std::move(error.message)) {}
  bool ok() const { return !failed; }
  const std::string &message() const { return text; }

private:
  bool failed = false;
  std::string text;
};

template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : value(std::move(value)) {}
  Expected(Error error) : text(std::move(error.message)) {}
  bool ok() const { return value.has_value(); }
  const std::string &message() const { return text; }
  T &operator*() { return *value; }
  const T &operator*() const { return *value; }
  T *operator->() { return &*value; }
  const T *operator->() const { return &*value; }

private:
  std::optional<T> value;
  std::string text;
};

} // namespace mosaic::emulator

#define MOSAIC_EMU_RETURN_IF_ERROR(expr)                                       \
  do {                                                                         \
    if (auto &&emuStatus_ = (expr); !emuStatus_.ok())                          \
      return ::mosaic::emulator::Error{emuStatus_.message()};                  \
  } while (false)

#endif // MOSAIC_EMULATOR_STATUS_H
