//===- Status.h - Errors as values ----------------------------*- C++ -*-===//
//
// The contracts library and the runtime report every failure as a message
// the caller can print: `Status` for operations without a result,
// `Expected<T>` for those with one.
// Nothing here throws or aborts on user input.
//
//===----------------------------------------------------------------------===//

#ifndef MOSAIC_CONTRACTS_STATUS_H
#define MOSAIC_CONTRACTS_STATUS_H

#include <optional>
#include <string>
#include <utility>

namespace mosaic {

/// The message of a failure; converts to a failed `Status` or `Expected`.
struct Error {
  std::string message;
};

class [[nodiscard]] Status {
public:
  /// Success.
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
  Status status() const { return ok() ? Status() : Status(Error{text}); }

  T &operator*() { return *value; }
  const T &operator*() const { return *value; }
  T *operator->() { return &*value; }
  const T *operator->() const { return &*value; }

private:
  std::optional<T> value;
  std::string text;
};

} // namespace mosaic

/// Returns the failed status of `expr` (a `Status` or an `Expected`) from the
/// enclosing function.
#define MOSAIC_RETURN_IF_ERROR(expr)                                           \
  do {                                                                         \
    if (auto &&mosaicStatus_ = (expr); !mosaicStatus_.ok())                    \
      return ::mosaic::Error{mosaicStatus_.message()};                         \
  } while (false)

#endif // MOSAIC_CONTRACTS_STATUS_H
