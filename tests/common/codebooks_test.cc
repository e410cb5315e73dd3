// codebooks.bin (common/format/codebooks.*): the bytes round trip, and every
// kind of damage is refused with the file and the codebook named.

#include "common/format/codebooks.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "common/crc32c.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace warp {
namespace {

using ::testing::HasSubstr;
using ::warp::testing::StatusIs;

Vq3rCodebook Numbered(float base) {
  Vq3rCodebook book;
  for (uint32_t v = 0; v < kVq3rValues; ++v) book.centroids[v] = base + static_cast<float>(v);
  return book;
}

Codebooks TwoCodebooks() {
  Codebooks books;
  books.Add(3, "gate_proj", Numbered(0));
  books.Add(5, "down_proj", Numbered(1000));
  return books;
}

// Rewrites the trailing CRC so that a deliberate change reaches the parser's other checks.
std::string WithCrc(std::string bytes) {
  const uint32_t crc = Crc32c(std::string_view(bytes).substr(0, bytes.size() - 4));
  std::memcpy(bytes.data() + bytes.size() - 4, &crc, 4);
  return bytes;
}

// Offset of the first centroid of the first codebook (layer 3, "gate_proj").
constexpr size_t kFirstCentroid = 8 + 4 + 4 + 4 + 4 + 9;

TEST(CodebooksTest, RoundTripKeepsEveryValueAndTheKernelsLayout) {
  const Codebooks books = TwoCodebooks();
  absl::StatusOr<Codebooks> parsed = Codebooks::Parse(books.Serialize(), "m.warp/codebooks.bin");
  WARP_ASSERT_OK(parsed.status());
  ASSERT_EQ(parsed->size(), 2u);
  const Vq3rCodebook* gate = parsed->Find(3, "gate_proj");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->centroids, Numbered(0).centroids);
  EXPECT_EQ(parsed->Find(5, "down_proj")->centroids, Numbered(1000).centroids);
  EXPECT_EQ(parsed->Find(3, "down_proj"), nullptr);
  EXPECT_EQ(parsed->Find(4, "gate_proj"), nullptr);
  // sums[code * 4 + k] == C0[code & 63][k] + C1[code >> 6][k]
  EXPECT_EQ(gate->Centroid(1, 7, 2), static_cast<float>((64 + 7) * 4 + 2));
  EXPECT_EQ(gate->sums[(5 | 7 << 6) * 4 + 2], gate->Centroid(0, 5, 2) + gate->Centroid(1, 7, 2));
}

TEST(CodebooksTest, AFlippedByteIsACrcMismatch) {
  std::string bytes = TwoCodebooks().Serialize();
  bytes[kFirstCentroid + 100] ^= 1;
  EXPECT_THAT(Codebooks::Parse(bytes, "m.warp/codebooks.bin"),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("m.warp/codebooks.bin"), HasSubstr("CRC32C"))));
}

TEST(CodebooksTest, WrongMagicTruncationAndVersionAreRefused) {
  const std::string bytes = TwoCodebooks().Serialize();
  EXPECT_THAT(Codebooks::Parse("GGUF" + bytes.substr(4), "f"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("WARPVQ3R")));
  EXPECT_THAT(Codebooks::Parse(bytes.substr(0, 6), "f"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("not a codebooks file")));
  // Cut inside the second codebook, CRC rewritten: the count promises more than there is.
  EXPECT_THAT(Codebooks::Parse(WithCrc(bytes.substr(0, bytes.size() - 504)), "f"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("codebook 1 of 2 is truncated")));
  std::string version = bytes;
  version[8] = 2;
  EXPECT_THAT(Codebooks::Parse(WithCrc(version), "f"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("version 2")));
}

TEST(CodebooksTest, NonFiniteCentroidAndDuplicateAreNamed) {
  std::string bytes = TwoCodebooks().Serialize();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(bytes.data() + kFirstCentroid + 4 * 17, &nan, 4);
  EXPECT_THAT(Codebooks::Parse(WithCrc(bytes), "f"),
              StatusIs(absl::StatusCode::kDataLoss,
                       AllOf(HasSubstr("layer 3 gate_proj"), HasSubstr("value 17"))));

  Codebooks twice;
  twice.Add(3, "gate_proj", Numbered(0));
  twice.Add(4, "gate_proj", Numbered(0));
  std::string duplicate = twice.Serialize();
  const uint32_t three = 3;
  const size_t second_layer = kFirstCentroid + 4 * kVq3rValues;
  std::memcpy(duplicate.data() + second_layer, &three, 4);
  EXPECT_THAT(Codebooks::Parse(WithCrc(duplicate), "f"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("layer 3 gate_proj has two")));
}

TEST(CodebooksTest, AnOverlongNameIsMalformed) {
  Codebooks books;
  books.Add(1, std::string(65, 'x'), Numbered(0));
  EXPECT_THAT(Codebooks::Parse(books.Serialize(), "f"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("malformed")));
}

}  // namespace
}  // namespace warp
