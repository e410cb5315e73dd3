#pragma once

// The check a client applies to a record it received from an expertd (over
// gRPC, or in place in a daemon's shared cache), before anyone sees it.

#include <cstddef>
#include <cstdint>
#include <span>

#include "absl/status/status.h"
#include "common/store/expert_source.h"

namespace warp {

// Checks a received record the way BankSet checks one read from disk, with
// what the client knows: the key it asked for and the daemon's fingerprint.
// Size (a whole number of 4096-byte blocks), footer and, with `check_crc`,
// payload CRC32C; errors are DataLoss naming the key.
absl::Status CheckReceived(std::span<const std::byte> bytes, const ExpertKey& key,
                           uint64_t fingerprint, bool check_crc = true);

// The CRC32C of a record received in pieces, in order, taken as each piece is
// copied in, while it is in cache: the check then reads back only the last
// piece instead of the whole record from memory (19% of a gRPC client's CPU).
// The payload's size is known only from the footer, in the last piece: the
// pieces before it are digested whole.
//
// Thread-compatible.
class ReceivedDigest {
 public:
  // The bytes at [offset, offset + size) of the record were just copied in.
  // Digested if they continue the digested prefix; otherwise the digest
  // gives up and PayloadCrc computes the CRC whole.
  void Copied(uint64_t offset, std::span<const std::byte> bytes);

  // The CRC32C of record.first(payload_bytes).
  uint32_t PayloadCrc(std::span<const std::byte> record, uint64_t payload_bytes) const;

 private:
  uint64_t digested_ = 0;  // bytes of the record's prefix in crc_
  uint32_t crc_ = 0;
  bool in_order_ = true;
};

// CheckReceived with the payload's CRC taken from `digest`.
absl::Status CheckReceived(std::span<const std::byte> bytes, const ExpertKey& key,
                           uint64_t fingerprint, const ReceivedDigest& digest);

}  // namespace warp
