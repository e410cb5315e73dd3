#include "common/crc32c.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace warp {
namespace crc32c_internal {
namespace {

constexpr uint32_t kPoly = 0x82F63B78;  // Castagnoli, bit-reflected.

// kTables[0] is the classic byte-at-a-time table; kTables[k][b] is the CRC of
// byte b followed by k zero bytes, so eight lookups consume eight bytes at once.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

constexpr Tables MakeTables() {
  Tables t{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? kPoly : 0);
    t[0][b] = crc;
  }
  for (size_t k = 1; k < t.size(); ++k) {
    for (size_t b = 0; b < 256; ++b) {
      t[k][b] = (t[k - 1][b] >> 8) ^ t[0][t[k - 1][b] & 0xFF];
    }
  }
  return t;
}

constexpr Tables kTables = MakeTables();
static_assert(kTables[0][1] == 0xF26B8303);  // Spot check against the published table.

// Byte-by-byte loads keep this correct on big-endian hosts; on x86 GCC and
// Clang fold them into a single mov.
inline uint32_t LoadLe32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

inline uint32_t StepByte(uint32_t state, uint8_t byte) {
  return (state >> 8) ^ kTables[0][(state ^ byte) & 0xFF];
}

}  // namespace

uint32_t ExtendPortable(uint32_t crc, const std::byte* data, size_t n) {
  const auto* p = reinterpret_cast<const uint8_t*>(data);
  const uint8_t* const end = p + n;
  uint32_t state = ~crc;
  while (p != end && reinterpret_cast<uintptr_t>(p) % 4 != 0) state = StepByte(state, *p++);
  while (end - p >= 8) {
    const uint32_t lo = state ^ LoadLe32(p);
    const uint32_t hi = LoadLe32(p + 4);
    state = kTables[7][lo & 0xFF] ^ kTables[6][(lo >> 8) & 0xFF] ^ kTables[5][(lo >> 16) & 0xFF] ^
            kTables[4][lo >> 24] ^ kTables[3][hi & 0xFF] ^ kTables[2][(hi >> 8) & 0xFF] ^
            kTables[1][(hi >> 16) & 0xFF] ^ kTables[0][hi >> 24];
    p += 8;
  }
  while (p != end) state = StepByte(state, *p++);
  return ~state;
}

bool HasSse42() {
#if defined(__x86_64__)
  static const bool has = [] {
    __builtin_cpu_init();  // Idempotent; needed if we run before libgcc's constructor.
    return __builtin_cpu_supports("sse4.2") && __builtin_cpu_supports("pclmul");
  }();
  return has;
#else
  return false;  // ExtendSse42 uses _mm_crc32_u64, which exists only on x86-64.
#endif
}

}  // namespace crc32c_internal

uint32_t Crc32cExtend(uint32_t crc, std::span<const std::byte> data) {
  using Fn = uint32_t (*)(uint32_t, const std::byte*, size_t);
  static const Fn extend =
      crc32c_internal::HasSse42() ? crc32c_internal::ExtendSse42 : crc32c_internal::ExtendPortable;
  return extend(crc, data.data(), data.size());
}

uint32_t Crc32c(std::span<const std::byte> data) { return Crc32cExtend(0, data); }

}  // namespace warp
