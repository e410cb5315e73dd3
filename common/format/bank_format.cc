#include "common/format/bank_format.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/check.h"
#include "common/crc32c.h"

namespace warp {
namespace {

static_assert(std::endian::native == std::endian::little,
              "WARP files are little-endian; a big-endian port must byte-swap here");

}  // namespace

void EncodeFooter(const RecordFooter& footer, std::span<std::byte> record) {
  WARP_CHECK(record.size() >= kRecordFooterBytes);
  std::memcpy(record.data() + record.size() - kRecordFooterBytes, &footer, kRecordFooterBytes);
}

RecordFooter DecodeFooter(std::span<const std::byte> record) {
  WARP_CHECK(record.size() >= kRecordFooterBytes);
  RecordFooter footer;
  std::memcpy(&footer, record.data() + record.size() - kRecordFooterBytes, kRecordFooterBytes);
  return footer;
}

absl::Status CheckRecord(std::span<const std::byte> record, const RecordExpectation& expected,
                         bool check_crc) {
  std::optional<uint32_t> crc;
  if (check_crc) {
    WARP_CHECK(record.size() >= expected.payload_bytes + kRecordFooterBytes);
    crc = Crc32c(record.first(expected.payload_bytes));
  }
  return CheckRecordAgainstCrc(record, expected, crc);
}

void PayloadDigest::Landed(uint64_t landed) {
  const uint64_t end = std::min<uint64_t>(landed, payload_.size());
  if (end <= digested_) return;
  crc_ = Crc32cExtend(crc_, payload_.subspan(digested_, end - digested_));
  digested_ = end;
}

absl::Status CheckRecordAgainstCrc(std::span<const std::byte> record,
                                   const RecordExpectation& expected,
                                   std::optional<uint32_t> payload_crc) {
  const std::string where = absl::StrCat("expert ", expected.expert, " of layer ", expected.layer);
  const RecordFooter footer = DecodeFooter(record);
  if (footer.magic != kRecordMagic) {
    return absl::DataLossError(absl::StrFormat("%s: bad footer magic 0x%08x (want 0x%08x)", where,
                                               footer.magic, kRecordMagic));
  }
  if (footer.layer != expected.layer || footer.expert != expected.expert) {
    return absl::DataLossError(
        absl::StrCat(where, ": footer names expert ", footer.expert, " of layer ", footer.layer));
  }
  if (footer.fingerprint != expected.fingerprint) {
    return absl::DataLossError(
        absl::StrFormat("%s: footer fingerprint %016x differs from the manifest's %016x", where,
                        footer.fingerprint, expected.fingerprint));
  }
  if (footer.payload_bytes != expected.payload_bytes) {
    return absl::DataLossError(absl::StrCat(where, ": footer payload_bytes ", footer.payload_bytes,
                                            " differs from the manifest's ",
                                            expected.payload_bytes));
  }
  if (payload_crc) {
    if (*payload_crc != footer.payload_crc32c) {
      return absl::DataLossError(absl::StrCat(where, ": checksum mismatch"));
    }
  }
  return absl::OkStatus();
}

}  // namespace warp
