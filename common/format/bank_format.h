#pragma once

// Byte layout of expert bank files (experts-L{layer}.bin) and of trunk.bin.
// docs/FORMAT.md is the contract; tests/golden pins a worked example.
//
//   experts-L{layer}.bin
//   +-----------------------------+  offset 0
//   | record of expert 0          |  record_bytes (a multiple of 4096)
//   +-----------------------------+  offset 1 * record_bytes
//   | record of expert 1          |
//   +-----------------------------+
//   | ...                         |  (a shard holds only its experts, in
//   +-----------------------------+   increasing expert order)
//
//   one record
//   +-----------------------------+  0
//   | matrix 0 data  (gate_proj)  |  each sub-tensor starts at a multiple of 64
//   | matrix 0 scale (if any)     |
//   | matrix 1 data  (up_proj)    |
//   | ...                         |
//   +-----------------------------+  payload_bytes
//   | zero padding                |
//   +-----------------------------+  record_bytes - 32
//   | RecordFooter (32 bytes)     |
//   +-----------------------------+  record_bytes
//
// All integers are little-endian.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace warp {

// O_DIRECT needs file offsets, lengths and buffers aligned to the logical block
// size; 4096 also matches the NVMe LBA and the page size, so one record is one
// aligned read.
inline constexpr uint64_t kBankAlignment = 4096;
// Sub-tensors inside a record start on a cache line, so AVX-512 loads of a row
// never straddle two lines at its start.
inline constexpr uint64_t kSubTensorAlignment = 64;
inline constexpr uint64_t kRecordFooterBytes = 32;
// "WXPR" (WARP eXPert Record) read as a little-endian uint32: the footer's
// first bytes spell it in a hex dump.
inline constexpr uint32_t kRecordMagic = 0x52505857;

// The last 32 bytes of every record.
struct RecordFooter {
  uint32_t magic = kRecordMagic;
  uint32_t layer = 0;           // decoder layer index
  uint32_t expert = 0;          // expert index within the layer
  uint32_t payload_crc32c = 0;  // CRC32C of bytes [0, payload_bytes) of the record
  uint64_t payload_bytes = 0;   // bytes before the zero padding
  uint64_t fingerprint = 0;     // the model fingerprint of manifest.json
};
static_assert(sizeof(RecordFooter) == kRecordFooterBytes);

constexpr uint64_t AlignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Smallest record size that holds `payload_bytes` and the footer.
constexpr uint64_t RecordBytesFor(uint64_t payload_bytes) {
  return AlignUp(payload_bytes + kRecordFooterBytes, kBankAlignment);
}

// Writes `footer` little-endian into the last 32 bytes of `record`.
void EncodeFooter(const RecordFooter& footer, std::span<std::byte> record);

// Reads the footer from the last 32 bytes of `record`. No validation.
RecordFooter DecodeFooter(std::span<const std::byte> record);

// What a record is expected to be; everything its footer and CRC are checked against.
struct RecordExpectation {
  uint32_t layer = 0;
  uint32_t expert = 0;
  uint64_t payload_bytes = 0;
  uint64_t fingerprint = 0;
};

// Checks the footer fields and, if `check_crc`, the payload CRC. Errors are
// DataLoss and begin "expert E of layer L: ", e.g. "expert 3 of layer 1:
// checksum mismatch". REQUIRES: record.size() >= payload_bytes + 32.
absl::Status CheckRecord(std::span<const std::byte> record, const RecordExpectation& expected,
                         bool check_crc);

// The same checks against the payload's CRC32C computed by the caller (as
// its bytes landed: PayloadDigest); nullopt checks the footer only.
absl::Status CheckRecordAgainstCrc(std::span<const std::byte> record,
                                   const RecordExpectation& expected,
                                   std::optional<uint32_t> payload_crc);

// The CRC32C of a payload taken a landed prefix at a time (UringReader's
// OnLanded), so that it is ready when the last byte is.
//
// Thread-compatible.
class PayloadDigest {
 public:
  explicit PayloadDigest(std::span<const std::byte> payload) : payload_(payload) {}

  // Digests the payload's bytes before `landed` (clamped to the payload) not
  // digested yet.
  void Landed(uint64_t landed);

  // The whole payload's CRC, digesting first whatever has not been.
  uint32_t Crc() {
    Landed(payload_.size());
    return crc_;
  }

 private:
  std::span<const std::byte> payload_;
  uint64_t digested_ = 0;
  uint32_t crc_ = 0;  // of payload_.first(digested_)
};

}  // namespace warp
