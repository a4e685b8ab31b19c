//===- Format.cpp - Numbers in error messages ---------------------------===//

#include "mosaic/Contracts/Format.h"

#include <cinttypes>
#include <cstdio>

namespace mosaic {

std::string formatAddress(uint64_t address) {
  char text[32];
  std::snprintf(text, sizeof(text), "0x%" PRIx64, address);
  return text;
}

} // namespace mosaic
