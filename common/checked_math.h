#pragma once

// Size arithmetic that cannot wrap: a product or sum of byte counts taken
// from files or flags is nullopt when it does not fit 64 bits, and the
// caller names what overflowed.
//
// Thread-safe: pure functions.

#include <cstdint>
#include <optional>

namespace warp {

inline std::optional<uint64_t> CheckedMul(uint64_t a, uint64_t b) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
  return product;
}

inline std::optional<uint64_t> CheckedAdd(uint64_t a, uint64_t b) {
  uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
  return sum;
}

}  // namespace warp
