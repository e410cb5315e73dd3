#include "common/byte_size.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace warp {
namespace {

constexpr uint64_t kKiB = uint64_t{1} << 10;
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kTiB = uint64_t{1} << 40;

uint64_t ParseOrDie(const std::string& text) {
  absl::StatusOr<uint64_t> bytes = ParseByteSize(text);
  EXPECT_TRUE(bytes.ok()) << text << ": " << bytes.status();
  return bytes.value_or(0);
}

void ExpectInvalid(const std::string& text) {
  absl::StatusOr<uint64_t> bytes = ParseByteSize(text);
  ASSERT_FALSE(bytes.ok()) << "\"" << text << "\" parsed as " << *bytes;
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument) << bytes.status();
  EXPECT_NE(bytes.status().message().find(absl::StrCat("\"", text, "\"")), std::string::npos)
      << bytes.status();
}

TEST(ParseByteSizeTest, PlainNumberIsBytes) {
  EXPECT_EQ(ParseOrDie("0"), 0u);
  EXPECT_EQ(ParseOrDie("4096"), 4096u);
  EXPECT_EQ(ParseOrDie("4096B"), 4096u);
  EXPECT_EQ(ParseOrDie("18446744073709551615"), std::numeric_limits<uint64_t>::max());
}

TEST(ParseByteSizeTest, SuffixesAreBinary) {
  EXPECT_EQ(ParseOrDie("512K"), 512 * kKiB);
  EXPECT_EQ(ParseOrDie("20G"), 20 * kGiB);
  EXPECT_EQ(ParseOrDie("3T"), 3 * kTiB);
  EXPECT_EQ(ParseOrDie("2GB"), 2 * kGiB);  // "GB" is binary too, by design
  EXPECT_EQ(ParseOrDie("64MiB"), 64 * kMiB);
}

TEST(ParseByteSizeTest, SuffixesAreCaseInsensitive) {
  EXPECT_EQ(ParseOrDie("64m"), 64 * kMiB);
  EXPECT_EQ(ParseOrDie("64mib"), 64 * kMiB);
  EXPECT_EQ(ParseOrDie("64MIB"), 64 * kMiB);
  EXPECT_EQ(ParseOrDie("64mb"), 64 * kMiB);
  EXPECT_EQ(ParseOrDie("7b"), 7u);
}

TEST(ParseByteSizeTest, FractionsAreExactAndRoundDown) {
  EXPECT_EQ(ParseOrDie("1.5G"), kGiB + kGiB / 2);
  EXPECT_EQ(ParseOrDie("0.5K"), 512u);
  EXPECT_EQ(ParseOrDie("1.3K"), 1331u);  // 1331.2
  EXPECT_EQ(ParseOrDie("0.999999999999999999999T"), kTiB - 1);
  EXPECT_EQ(ParseOrDie("37.25GiB"), 37 * kGiB + kGiB / 4);
}

TEST(ParseByteSizeTest, AcceptsWhitespaceSoFormatBytesRoundTrips) {
  EXPECT_EQ(ParseOrDie("  20G "), 20 * kGiB);
  EXPECT_EQ(ParseOrDie("1.50 GiB"), kGiB + kGiB / 2);
  EXPECT_EQ(ParseOrDie(FormatBytes(37 * kGiB + kGiB / 4)), 37 * kGiB + kGiB / 4);
  EXPECT_EQ(ParseOrDie(FormatBytes(512)), 512u);
}

TEST(ParseByteSizeTest, ErrorQuotesTextAndNamesSuffixes) {
  absl::StatusOr<uint64_t> bytes = ParseByteSize("12X");
  ASSERT_FALSE(bytes.ok());
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(bytes.status().message(),
            "invalid size \"12X\": expected a number with an optional K, M, G or T suffix");
}

TEST(ParseByteSizeTest, RejectsMalformedText) {
  for (const char* text : {"", "   ", "G", "-1", "-1G", "+1G", "1.", "1.G", ".5G", "1..5G", "1e3",
                           "0x10", "12X", "12KX", "12KiBB", "12 K B", "1 2K", "1,5G", "12P"}) {
    SCOPED_TRACE(text);
    ExpectInvalid(text);
  }
}

TEST(ParseByteSizeTest, RejectsFractionWithoutSuffix) {
  ExpectInvalid("1.5");
  ExpectInvalid("1.5B");
}

TEST(ParseByteSizeTest, RejectsOverflow) {
  ExpectInvalid("18446744073709551616");
  ExpectInvalid("99999999999999999999999");
  ExpectInvalid("16777216T");  // 2^24 * 2^40 = 2^64
  EXPECT_EQ(ParseOrDie("16777215T"), 16777215 * kTiB);
  EXPECT_EQ(ParseOrDie("16777215.99999999999999999999999T"), std::numeric_limits<uint64_t>::max());
}

TEST(FormatBytesTest, SmallCountsAreExact) {
  EXPECT_EQ(FormatBytes(0), "0 B");
  EXPECT_EQ(FormatBytes(1), "1 B");
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1023), "1023 B");
}

TEST(FormatBytesTest, LargerCountsUseBinaryUnitsWithTwoDecimals) {
  EXPECT_EQ(FormatBytes(kKiB), "1.00 KiB");
  EXPECT_EQ(FormatBytes(4 * kKiB), "4.00 KiB");
  EXPECT_EQ(FormatBytes(kGiB + kGiB / 2), "1.50 GiB");
  EXPECT_EQ(FormatBytes(37 * kGiB + kGiB / 4), "37.25 GiB");
  EXPECT_EQ(FormatBytes(3 * kTiB), "3.00 TiB");
  EXPECT_EQ(FormatBytes(std::numeric_limits<uint64_t>::max()), "16.00 EiB");
}

TEST(FormatBytesTest, RoundingUpMovesToTheNextUnit) {
  EXPECT_EQ(FormatBytes(kMiB - 1), "1.00 MiB");
  EXPECT_EQ(FormatBytes(kGiB - kKiB), "1.00 GiB");
  EXPECT_EQ(FormatBytes(1023 * kKiB), "1023.00 KiB");
}

}  // namespace
}  // namespace warp
