#include "expertd/verify.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "common/format/bank_format.h"
#include "common/format/container.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"
#include "common/progress.h"
#include "common/status.h"
#include "expertd/bank_scanner.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;

uint64_t TotalBytes(const Container& container, bool check_trunk) {
  uint64_t total = 0;
  for (const TensorEntry& tensor : container.manifest().trunk) {
    if (!check_trunk) break;
    total += tensor.data.bytes + (tensor.scale ? tensor.scale->bytes : 0);
  }
  for (const BankEntry& bank : container.manifest().banks) {
    total += bank.record_bytes * container.HeldExperts(bank).size();
  }
  return total;
}

absl::Status VerifyBank(const Container& container, const BankEntry& bank, AlignedBuffer& buffer,
                        ProgressBar& progress, VerifyReport& report) {
  return ScanBank(container, bank, buffer, [&](const BankChunk& chunk) {
    for (const absl::Status& check : chunk.checks) {
      if (!check.ok()) report.problems.push_back(std::string(check.message()));
    }
    report.records_checked += chunk.size();
    report.bytes_read += chunk.bytes.size();
    progress.Advance(chunk.bytes.size());
    return absl::OkStatus();
  });
}

}  // namespace

// Streams each trunk sub-tensor through `buffer` with O_DIRECT: extents start
// on 4 KiB boundaries and trunk.bin is padded to one, so aligned reads of the
// rounded-up length stay inside the file.
absl::Status VerifyTrunk(const Container& container, AlignedBuffer& buffer, ProgressBar& progress,
                         VerifyReport& report) {
  const fs::path path = container.TrunkPath();
  WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(path, /*want_direct=*/true));
  for (const TensorEntry& tensor : container.manifest().trunk) {
    uint32_t crc = 0;
    for (const std::optional<Extent>& extent : {std::optional(tensor.data), tensor.scale}) {
      if (!extent) continue;
      for (uint64_t done = 0; done < extent->bytes; done += buffer.size()) {
        const uint64_t n = std::min<uint64_t>(buffer.size(), extent->bytes - done);
        std::span<std::byte> bytes = buffer.span().first(AlignUp(n, kBankAlignment));
        WARP_RETURN_IF_ERROR(PreadFull(file.fd.get(), bytes, extent->offset + done, path.string()));
        crc = Crc32cExtend(crc, bytes.first(n));
      }
      report.bytes_read += extent->bytes;
      progress.Advance(extent->bytes);
    }
    if (tensor.crc32c && crc != *tensor.crc32c) {
      report.problems.push_back(absl::StrCat("trunk tensor ", tensor.name, ": checksum mismatch (",
                                             path.string(), " @", tensor.data.offset, ")"));
    }
    ++report.trunk_tensors_checked;
  }
  return absl::OkStatus();
}

absl::StatusOr<VerifyReport> VerifyContainer(const fs::path& dir, const VerifyOptions& options) {
  // Footers are checked record by record below, so a bad first record is
  // reported with the others instead of failing the open.
  WARP_ASSIGN_OR_RETURN(auto container, Container::Open(dir, {.check_footers = false}));
  VerifyReport report;
  ProgressBar progress("verify", TotalBytes(*container, options.check_trunk),
                       options.show_progress);
  uint64_t max_record = 0;
  for (const BankEntry& bank : container->manifest().banks) {
    max_record = std::max(max_record, bank.record_bytes);
  }
  // A read is whole records, at most read_chunk_bytes unless one record is larger.
  AlignedBuffer buffer(std::max(max_record, options.read_chunk_bytes));
  if (options.check_trunk) {
    WARP_RETURN_IF_ERROR(VerifyTrunk(*container, buffer, progress, report));
  }
  for (const BankEntry& bank : container->manifest().banks) {
    WARP_RETURN_IF_ERROR(VerifyBank(*container, bank, buffer, progress, report));
  }
  progress.Finish();
  report.seconds = progress.elapsed_seconds();
  return report;
}

}  // namespace warp::expertd
