#include "expertd/bank_scanner.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/io/file.h"
#include "common/status.h"

namespace warp::expertd {

absl::Status CheckRecordAt(std::span<const std::byte> record, const RecordExpectation& expected,
                           const std::filesystem::path& path, uint64_t offset) {
  absl::Status status = CheckRecord(record, expected, /*check_crc=*/true);
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(status.message(), " (", path.string(), " @", offset, ")"));
}

absl::Status ScanBank(const Container& container, const BankEntry& bank, AlignedBuffer& buffer,
                      absl::FunctionRef<absl::Status(const BankChunk&)> visit) {
  WARP_CHECK(buffer.size() >= bank.record_bytes);
  BankChunk chunk{.bank = &bank, .path = container.BankPath(bank)};
  WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(chunk.path, /*want_direct=*/true));
  const std::vector<uint32_t>& experts = container.HeldExperts(bank);
  const uint64_t per_read = std::max<uint64_t>(1, buffer.size() / bank.record_bytes);
  for (size_t first = 0; first < experts.size(); first += per_read) {
    const size_t count = std::min<size_t>(per_read, experts.size() - first);
    chunk.experts = std::span(experts).subspan(first, count);
    chunk.offset = first * bank.record_bytes;
    std::span<std::byte> bytes = buffer.span().first(count * bank.record_bytes);
    WARP_RETURN_IF_ERROR(PreadFull(file.fd.get(), bytes, chunk.offset, chunk.path.string()));
    chunk.bytes = bytes;
    chunk.checks.clear();
    for (size_t i = 0; i < count; ++i) {
      chunk.checks.push_back(CheckRecordAt(chunk.record(i),
                                           container.Expectation(bank.layer, chunk.experts[i]),
                                           chunk.path, chunk.record_offset(i)));
    }
    WARP_RETURN_IF_ERROR(visit(chunk));
  }
  return absl::OkStatus();
}

}  // namespace warp::expertd
