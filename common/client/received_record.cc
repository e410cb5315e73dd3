#include "common/client/received_record.h"

#include "absl/strings/str_cat.h"
#include "common/format/bank_format.h"

namespace warp {

absl::Status CheckReceived(std::span<const std::byte> bytes, const ExpertKey& key,
                           uint64_t fingerprint, bool check_crc) {
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
  return CheckRecord(bytes,
                     {.layer = key.layer,
                      .expert = key.expert,
                      .payload_bytes = footer.payload_bytes,
                      .fingerprint = fingerprint},
                     check_crc);
}

}  // namespace warp
