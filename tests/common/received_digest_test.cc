#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "common/client/received_record.h"
#include "common/crc32c.h"
#include "common/format/bank_format.h"
#include "gtest/gtest.h"

namespace warp {
namespace {

constexpr uint64_t kFingerprint = 0x1234;
constexpr ExpertKey kKey{.layer = 2, .expert = 5};

// A record of `record_bytes` whose payload is its first `payload_bytes`.
std::vector<std::byte> Record(uint64_t payload_bytes, uint64_t record_bytes) {
  std::vector<std::byte> record(record_bytes);
  for (uint64_t i = 0; i < payload_bytes; ++i) record[i] = std::byte(i * 131 + 17);
  EncodeFooter({.layer = kKey.layer,
                .expert = kKey.expert,
                .payload_crc32c = Crc32c(std::span(record).first(payload_bytes)),
                .payload_bytes = payload_bytes,
                .fingerprint = kFingerprint},
               record);
  return record;
}

// Digests `record` as the gRPC client does: every piece of `piece` bytes but
// the last, which holds the footer.
ReceivedDigest DigestAllButLast(std::span<const std::byte> record, uint64_t piece) {
  ReceivedDigest digest;
  for (uint64_t at = 0; at + piece < record.size(); at += piece) {
    digest.Copied(at, record.subspan(at, piece));
  }
  return digest;
}

TEST(ReceivedDigestTest, GivesThePayloadsCrcWhereverThePayloadEnds) {
  for (uint64_t payload : {uint64_t{1}, uint64_t{5000}, uint64_t{12000}, uint64_t{40000}}) {
    const std::vector<std::byte> record = Record(payload, 10 * kBankAlignment);
    const uint32_t want = Crc32c(std::span(record).first(payload));
    for (uint64_t piece : {uint64_t{4096}, uint64_t{10000}, uint64_t{65536}}) {
      EXPECT_EQ(DigestAllButLast(record, piece).PayloadCrc(record, payload), want)
          << payload << " payload bytes, pieces of " << piece;
      EXPECT_TRUE(CheckReceived(record, kKey, kFingerprint, DigestAllButLast(record, piece)).ok());
    }
  }
}

TEST(ReceivedDigestTest, PiecesOutOfOrderAreCheckedWhole) {
  const std::vector<std::byte> record = Record(30000, 8 * kBankAlignment);
  ReceivedDigest digest;
  digest.Copied(0, std::span(record).first(4096));
  digest.Copied(8192, std::span(record).subspan(8192, 4096));  // a gap: the digest gives up
  digest.Copied(4096, std::span(record).subspan(4096, 4096));
  EXPECT_EQ(digest.PayloadCrc(record, 30000), Crc32c(std::span(record).first(30000)));
}

TEST(ReceivedDigestTest, AByteCorruptedInTransitIsDataLoss) {
  std::vector<std::byte> record = Record(30000, 8 * kBankAlignment);
  record[5000] ^= std::byte{1};  // as it arrived, before it was digested
  const absl::Status status =
      CheckReceived(record, kKey, kFingerprint, DigestAllButLast(record, 4096));
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(status.message().find("expert 5 of layer 2: checksum mismatch"), std::string::npos)
      << status;
}

}  // namespace
}  // namespace warp
