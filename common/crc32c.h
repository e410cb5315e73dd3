#pragma once

// CRC32C (Castagnoli; reflected polynomial 0x82F63B78, init ~0, final xor ~0),
// the checksum of iSCSI, LevelDB and ext4, and of every WARP record
// (docs/FORMAT.md). Owns only the arithmetic: an SSE4.2 + PCLMUL path and a
// portable slicing-by-8 fallback, chosen once per process at run time.
//
// Thread-safe: pure functions; the one-time CPU dispatch is a function-local static.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace warp {

// CRC32C of `data` (standard check value: Crc32c("123456789") == 0xE3069283).
uint32_t Crc32c(std::span<const std::byte> data);

// Continues a CRC: Crc32cExtend(Crc32c(a), b) == Crc32c(a + b). Crc32cExtend(0, x) == Crc32c(x).
uint32_t Crc32cExtend(uint32_t crc, std::span<const std::byte> data);

inline uint32_t Crc32c(std::string_view data) {
  return Crc32c(std::as_bytes(std::span(data.data(), data.size())));
}

inline uint32_t Crc32cExtend(uint32_t crc, std::string_view data) {
  return Crc32cExtend(crc, std::as_bytes(std::span(data.data(), data.size())));
}

// The two implementations, exposed for tests and the benchmark. Both have the
// contract of Crc32cExtend (they take and return the finalized CRC).
namespace crc32c_internal {

// Slicing-by-8 over compile-time tables (8 KiB); about 1-2 GB/s.
uint32_t ExtendPortable(uint32_t crc, const std::byte* data, size_t n);

// The `crc32` instruction on three interleaved streams, joined with PCLMULQDQ.
// REQUIRES: HasSse42(). Defined in crc32c_sse42.cc, the only file built with
// -msse4.2 -mpclmul.
uint32_t ExtendSse42(uint32_t crc, const std::byte* data, size_t n);

// True if this CPU has both SSE4.2 and PCLMULQDQ. Cached after the first call.
bool HasSse42();

}  // namespace crc32c_internal
}  // namespace warp
