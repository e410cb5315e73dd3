#pragma once

// ScanBank: the one chunked reader of bank files, shared by `expertd verify`,
// `expertd shard` and the shard-set verify. Reads the records a container
// holds of one bank in file order, in sequential O_DIRECT reads of as many
// whole records as the caller's buffer holds (one at least), checks each
// record (footer + CRC32C) and hands each chunk to the caller. Damaged
// records are reported in the chunk, not as a failure: the caller decides
// whether to list them (verify) or refuse to go on (shard).
//
// Thread-compatible: one scan per buffer at a time.

#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "common/format/bank_format.h"
#include "common/format/container.h"
#include "common/io/aligned_buffer.h"

namespace warp::expertd {

// Checks `record`, read from `path` at `offset`; an error names the record
// and where it lies, e.g. "expert 3 of layer 1: checksum mismatch
// (m.warp/experts-L1.bin @49152)".
absl::Status CheckRecordAt(std::span<const std::byte> record, const RecordExpectation& expected,
                           const std::filesystem::path& path, uint64_t offset);

// Consecutive records of one bank file, as read.
struct BankChunk {
  const BankEntry* bank = nullptr;
  std::filesystem::path path;         // the bank file
  std::span<const uint32_t> experts;  // the experts of the records, in file order
  uint64_t offset = 0;                // of the first record in the file
  std::span<const std::byte> bytes;   // experts.size() records
  std::vector<absl::Status> checks;   // per record: CheckRecordAt

  size_t size() const { return experts.size(); }
  uint64_t record_offset(size_t i) const { return offset + i * bank->record_bytes; }
  std::span<const std::byte> record(size_t i) const {
    return bytes.subspan(i * bank->record_bytes, bank->record_bytes);
  }
};

// Scans bank `bank` of `container` through `buffer`, calling `visit` for each
// chunk in file order. Fails if the file cannot be opened or read (naming
// it), or with the first error `visit` returns.
// REQUIRES: buffer.size() >= bank.record_bytes.
absl::Status ScanBank(const Container& container, const BankEntry& bank, AlignedBuffer& buffer,
                      absl::FunctionRef<absl::Status(const BankChunk&)> visit);

}  // namespace warp::expertd
