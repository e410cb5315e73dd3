#pragma once

// An engram table (DeepSeek V4.1's n-gram memory, computed/model/kinds/
// engram.h) as a container stores it: `engram-L{layer}.bin`, rows of
// row_bytes = head_dim E4M3 codes then head_dim / 32 E8M0 scales (264 bytes
// for the release's 256), rows_per_record of them to a 4 KiB record that
// ends in the usual 32-byte footer (bank_format.h). The store reads and
// caches these records as it does experts, under keys of their own
// (EngramKeyLayer), through the bank entry EngramBank describes. docs/FORMAT.md
// is the contract.
//
//   engram-L{layer}.bin                one record (4096 bytes)
//   +----------------------+ 0         +----------------------------+ 0
//   | record 0: rows 0..14 |           | row 0: codes, then scales  | row_bytes each
//   +----------------------+ 4096      | row 1                      |
//   | record 1: rows 15..  |           | ...                        |
//   +----------------------+           +----------------------------+ payload_bytes
//   | ...                  |           | zero padding               |
//                                      +----------------------------+ 4064
//                                      | RecordFooter               |
//                                      +----------------------------+ 4096
//
// Every record's payload is rows_per_record rows: past the table's end, the
// last record's rows are zero.
//
// Thread-safe: value types and pure functions.

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"

namespace warp {

inline constexpr uint64_t kEngramRecordBytes = 4096;
// Keys of engram records: layer kEngramKeyBase + the table's layer (above
// any decoder layer, so they never meet an expert's), record index.
inline constexpr uint32_t kEngramKeyBase = uint32_t{1} << 20;

// Rows of `row_bytes` a record holds.
uint32_t EngramRowsPerRecord(uint32_t row_bytes);
uint64_t EngramRecords(const EngramTableEntry& table);

// The layer of the keys (ExpertKey) of the records of the table of `layer`.
constexpr uint32_t EngramKeyLayer(uint32_t layer) { return kEngramKeyBase + layer; }
// The record holding row `row`, and the row's offset in it.
uint64_t EngramRecordOf(const EngramTableEntry& table, uint64_t row);
uint64_t EngramOffsetInRecord(const EngramTableEntry& table, uint64_t row);

// The index in `tables` of the table whose records are keyed {key_layer,
// record}; NotFound naming the key if none is, or the table if the record is
// past its end.
absl::StatusOr<uint32_t> EngramTableOfKey(std::span<const EngramTableEntry> tables,
                                          uint32_t key_layer, uint64_t record);

// The bank the store reads the table as: layer EngramKeyLayer(layer), one "expert" per
// record, kEngramRecordBytes each, no matrices (rows are decoded by the engine).
BankEntry EngramBank(const EngramTableEntry& table);

}  // namespace warp
