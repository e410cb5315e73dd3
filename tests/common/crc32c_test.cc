#include "common/crc32c.h"

#include <cstddef>
#include <cstdint>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "gtest/gtest.h"

namespace warp {
namespace {

using crc32c_internal::ExtendPortable;
using crc32c_internal::ExtendSse42;
using crc32c_internal::HasSse42;

// Bit-at-a-time reference, independent of both implementations' tables and tricks.
uint32_t ReferenceCrc32c(std::span<const std::byte> data) {
  uint32_t state = ~0u;
  for (std::byte b : data) {
    state ^= std::to_integer<uint32_t>(b);
    for (int bit = 0; bit < 8; ++bit) state = (state >> 1) ^ ((state & 1) ? 0x82F63B78 : 0);
  }
  return ~state;
}

std::vector<std::byte> RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::byte> bytes(n);
  for (std::byte& b : bytes) b = static_cast<std::byte>(rng());
  return bytes;
}

struct Vector {
  std::vector<std::byte> data;
  uint32_t crc;
};

// RFC 3720 (iSCSI) appendix B.4, plus the usual check value and the empty input.
std::vector<Vector> KnownVectors() {
  std::vector<Vector> vectors;
  vectors.push_back({std::vector<std::byte>(32, std::byte{0x00}), 0x8A9136AA});
  vectors.push_back({std::vector<std::byte>(32, std::byte{0xFF}), 0x62A8AB43});
  std::vector<std::byte> ascending(32);
  std::vector<std::byte> descending(32);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<std::byte>(i);
    descending[i] = static_cast<std::byte>(31 - i);
  }
  vectors.push_back({ascending, 0x46DD794E});
  vectors.push_back({descending, 0x113FDB5C});
  const std::string_view check = "123456789";
  const auto check_bytes = std::as_bytes(std::span(check.data(), check.size()));
  vectors.push_back({{check_bytes.begin(), check_bytes.end()}, 0xE3069283});
  vectors.push_back({{}, 0x00000000});
  return vectors;
}

TEST(Crc32cTest, KnownVectors) {
  for (const Vector& v : KnownVectors()) {
    EXPECT_EQ(Crc32c(v.data), v.crc) << "size " << v.data.size();
    EXPECT_EQ(ReferenceCrc32c(v.data), v.crc) << "size " << v.data.size();
  }
}

TEST(Crc32cTest, StringViewOverloadMatchesBytes) {
  EXPECT_EQ(Crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(Crc32c(std::string_view()), 0u);
  EXPECT_EQ(Crc32cExtend(Crc32c("1234"), "56789"), 0xE3069283u);
}

TEST(Crc32cTest, PortableKnownVectors) {
  for (const Vector& v : KnownVectors()) {
    EXPECT_EQ(ExtendPortable(0, v.data.data(), v.data.size()), v.crc) << "size " << v.data.size();
  }
}

TEST(Crc32cTest, Sse42KnownVectors) {
  if (!HasSse42()) GTEST_SKIP() << "CPU lacks SSE4.2 or PCLMULQDQ";
  for (const Vector& v : KnownVectors()) {
    EXPECT_EQ(ExtendSse42(0, v.data.data(), v.data.size()), v.crc) << "size " << v.data.size();
  }
}

TEST(Crc32cTest, ExtendAtEverySplitEqualsWhole) {
  // 3 * 3 * 256 + 37 bytes: the whole crosses the short 3-way group boundary.
  const std::vector<std::byte> data = RandomBytes(2341, 1);
  const std::span<const std::byte> all(data);
  const uint32_t whole = Crc32c(all);
  ASSERT_EQ(whole, ReferenceCrc32c(all));
  for (size_t split = 0; split <= data.size(); ++split) {
    ASSERT_EQ(Crc32cExtend(Crc32c(all.first(split)), all.subspan(split)), whole) << split;
  }
  EXPECT_EQ(Crc32cExtend(0, all), whole);
}

TEST(Crc32cTest, DiffersAfterSingleBitFlip) {
  std::vector<std::byte> data = RandomBytes(4096, 2);
  const uint32_t before = Crc32c(data);
  data[1234] ^= std::byte{0x10};
  EXPECT_NE(Crc32c(data), before);
}

TEST(Crc32cTest, PortableMatchesReferenceAtEveryOffsetAndSmallLength) {
  const std::vector<std::byte> data = RandomBytes(600, 3);
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t n = 0; offset + n <= data.size(); ++n) {
      const std::span<const std::byte> s = std::span(data).subspan(offset, n);
      ASSERT_EQ(ExtendPortable(0, s.data(), n), ReferenceCrc32c(s)) << offset << "+" << n;
    }
  }
}

TEST(Crc32cTest, Sse42MatchesPortableAtEveryOffsetAndSmallLength) {
  if (!HasSse42()) GTEST_SKIP() << "CPU lacks SSE4.2 or PCLMULQDQ";
  const std::vector<std::byte> data = RandomBytes(2000, 4);  // > 2 short groups of 768.
  for (size_t offset = 0; offset < 16; ++offset) {
    for (size_t n = 0; offset + n <= data.size(); ++n) {
      const std::byte* p = data.data() + offset;
      ASSERT_EQ(ExtendSse42(0x12345678, p, n), ExtendPortable(0x12345678, p, n))
          << offset << "+" << n;
    }
  }
}

TEST(Crc32cTest, Sse42MatchesPortableOnRandomLengthsAndOffsets) {
  if (!HasSse42()) GTEST_SKIP() << "CPU lacks SSE4.2 or PCLMULQDQ";
  constexpr size_t kMaxBytes = 70000;  // > 2 long groups of 3 * 8 KiB.
  constexpr size_t kMaxOffset = 64;
  const std::vector<std::byte> data = RandomBytes(kMaxBytes + kMaxOffset, 5);
  std::mt19937 rng(6);
  std::uniform_int_distribution<size_t> length_dist(0, kMaxBytes);
  std::uniform_int_distribution<size_t> offset_dist(0, kMaxOffset);
  for (int trial = 0; trial < 2000; ++trial) {
    const size_t n = length_dist(rng);
    const std::byte* p = data.data() + offset_dist(rng);
    const uint32_t seed_crc = static_cast<uint32_t>(rng());
    ASSERT_EQ(ExtendSse42(seed_crc, p, n), ExtendPortable(seed_crc, p, n))
        << "n=" << n << " offset=" << (p - data.data());
  }
}

TEST(Crc32cTest, Sse42MatchesReferenceOnLongInput) {
  if (!HasSse42()) GTEST_SKIP() << "CPU lacks SSE4.2 or PCLMULQDQ";
  const std::vector<std::byte> data = RandomBytes(3 * 3 * 8192 + 3 * 256 + 13, 7);
  EXPECT_EQ(ExtendSse42(0, data.data(), data.size()), ReferenceCrc32c(data));
}

}  // namespace
}  // namespace warp
