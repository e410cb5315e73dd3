#include "common/utf8.h"

#include <string>
#include <string_view>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace warp::utf8 {
namespace {

TEST(Utf8Test, EncodeThenDecodeRoundTripsEveryLength) {
  for (char32_t code_point : {U'A', U'\u00e9', U'\u20ac', U'\U0001F600', U'\U0010FFFF'}) {
    std::string bytes;
    Append(code_point, bytes);
    EXPECT_EQ(bytes.size(), LeadLength(bytes[0]));
    size_t length = 0;
    EXPECT_EQ(DecodeValid(bytes, 0, &length), code_point);
    EXPECT_EQ(length, bytes.size());
    char32_t lenient = 0;
    EXPECT_EQ(DecodeLenient(bytes, 0, &lenient), bytes.size());
    EXPECT_EQ(lenient, code_point);
    const Subpart part = ScanSequence(bytes, 0);
    EXPECT_TRUE(part.complete);
    EXPECT_EQ(part.length, bytes.size());
    for (size_t i = 1; i < bytes.size(); ++i) EXPECT_TRUE(IsContinuation(bytes[i]));
  }
}

TEST(Utf8Test, StrictScanRejectsOverlongSurrogateAndOutOfRangeByMaximalSubpart) {
  struct Case {
    std::string_view bytes;
    size_t length;
  };
  for (const Case& c : {Case{"\xC0\x80", 1}, Case{"\xE0\x80\x80", 1}, Case{"\xED\xA0\x80", 1},
                        Case{"\xF4\x90\x80\x80", 1}, Case{"\x80", 1}, Case{"\xE2\x82", 2},
                        Case{"\xF0\x9F\x98", 3}}) {
    const Subpart part = ScanSequence(c.bytes, 0);
    EXPECT_FALSE(part.complete) << ::testing::PrintToString(std::string(c.bytes));
    EXPECT_EQ(part.length, c.length) << ::testing::PrintToString(std::string(c.bytes));
  }
}

TEST(Utf8Test, LenientDecodeReplacesOneBadByteAtATime) {
  char32_t code_point = 0;
  EXPECT_EQ(DecodeLenient("\x80", 0, &code_point), 1u);
  EXPECT_EQ(code_point, kReplacement);
  EXPECT_EQ(DecodeLenient("\xE2\x82", 0, &code_point), 1u);  // truncated
  EXPECT_EQ(code_point, kReplacement);
  EXPECT_EQ(DecodeLenient("\xE2" "A" "\xAC", 0, &code_point), 1u);  // not a continuation
  EXPECT_EQ(code_point, kReplacement);
  // A surrogate is decoded as written: JavaScript strings can hold one.
  EXPECT_EQ(DecodeLenient("\xED\xA0\x80", 0, &code_point), 3u);
  EXPECT_EQ(code_point, char32_t{0xD800});
}

}  // namespace
}  // namespace warp::utf8
