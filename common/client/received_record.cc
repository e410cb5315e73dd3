#include "common/client/received_record.h"

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "common/format/bank_format.h"

namespace warp {

namespace {

absl::Status CheckReceivedWith(std::span<const std::byte> bytes, const ExpertKey& key,
                               uint64_t fingerprint, bool check_crc,
                               const ReceivedDigest* digest) {
  if (bytes.size() < kBankAlignment || bytes.size() % kBankAlignment != 0) {
    return absl::DataLossError(absl::StrCat("expert ", key.expert, " of layer ", key.layer,
                                            ": received ", bytes.size(),
                                            " bytes, not a whole record"));
  }
  const RecordFooter footer = DecodeFooter(bytes);
  if (footer.payload_bytes > bytes.size() - kRecordFooterBytes) {
    return absl::DataLossError(absl::StrCat("expert ", key.expert, " of layer ", key.layer,
                                            ": footer payload_bytes out of range"));
  }
  const RecordExpectation expected{.layer = key.layer,
                                   .expert = key.expert,
                                   .payload_bytes = footer.payload_bytes,
                                   .fingerprint = fingerprint};
  if (digest == nullptr) return CheckRecord(bytes, expected, check_crc);
  return CheckRecordAgainstCrc(bytes, expected, digest->PayloadCrc(bytes, footer.payload_bytes));
}

}  // namespace

absl::Status CheckReceived(std::span<const std::byte> bytes, const ExpertKey& key,
                           uint64_t fingerprint, bool check_crc) {
  return CheckReceivedWith(bytes, key, fingerprint, check_crc, nullptr);
}

absl::Status CheckReceived(std::span<const std::byte> bytes, const ExpertKey& key,
                           uint64_t fingerprint, const ReceivedDigest& digest) {
  return CheckReceivedWith(bytes, key, fingerprint, true, &digest);
}

void ReceivedDigest::Copied(uint64_t offset, std::span<const std::byte> bytes) {
  if (!in_order_ || offset != digested_) {
    in_order_ = false;
    return;
  }
  crc_ = Crc32cExtend(crc_, bytes);
  digested_ += bytes.size();
}

uint32_t ReceivedDigest::PayloadCrc(std::span<const std::byte> record,
                                    uint64_t payload_bytes) const {
  if (!in_order_ || digested_ > payload_bytes) return Crc32c(record.first(payload_bytes));
  return Crc32cExtend(crc_, record.subspan(digested_, payload_bytes - digested_));
}

}  // namespace warp
