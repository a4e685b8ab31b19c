//===- Format.h - Numbers in error messages -------------------*- C++ -*-===//

#ifndef MOSAIC_CONTRACTS_FORMAT_H
#define MOSAIC_CONTRACTS_FORMAT_H

#include <cstdint>
#include <string>

namespace mosaic {

/// "[4096, 64]" for any sequence of integers.
template <typename Range> std::string formatList(const Range &values) {
  std::string out = "[";
  for (const auto &value : values)
    out += (out.size() > 1 ? ", " : "") + std::to_string(value);
  return out + "]";
}

/// "0x7f3a00000000".
std::string formatAddress(uint64_t address);

} // namespace mosaic

#endif // MOSAIC_CONTRACTS_FORMAT_H
