#pragma once

// Small non-cryptographic hashes for identifiers (fingerprints, RNG stream
// keys). Not for integrity: records use CRC32C.

#include <cstdint>
#include <string_view>

namespace warp {

// FNV-1a's 64-bit offset basis: the hash of no bytes, where a chain starts.
inline constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ull;

// FNV-1a, 64-bit. Stable across builds and platforms: fingerprints depend on it.
constexpr uint64_t Fnv1a64(std::string_view bytes, uint64_t hash = kFnv1a64Basis) {
  for (char c : bytes) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

// SplitMix64 finalizer: a bijective 64-bit mix, good enough to turn a counter
// into uniform random bits.
constexpr uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace warp
