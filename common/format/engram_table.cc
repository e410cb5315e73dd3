#include "common/format/engram_table.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/format/bank_format.h"

namespace warp {

uint32_t EngramRowsPerRecord(uint32_t row_bytes) {
  return row_bytes == 0 ? 0
                        : static_cast<uint32_t>((kEngramRecordBytes - kRecordFooterBytes) / row_bytes);
}

uint64_t EngramRecords(const EngramTableEntry& table) {
  const uint64_t per = EngramRowsPerRecord(table.row_bytes);
  return per == 0 ? 0 : (table.rows + per - 1) / per;
}

uint64_t EngramRecordOf(const EngramTableEntry& table, uint64_t row) {
  return row / EngramRowsPerRecord(table.row_bytes);
}

uint64_t EngramOffsetInRecord(const EngramTableEntry& table, uint64_t row) {
  return row % EngramRowsPerRecord(table.row_bytes) * table.row_bytes;
}

BankEntry EngramBank(const EngramTableEntry& table) {
  return {.layer = EngramKeyLayer(table.layer),
          .file = table.file,
          .num_experts = static_cast<uint32_t>(EngramRecords(table)),
          .record_bytes = kEngramRecordBytes,
          .payload_bytes = EngramRowsPerRecord(table.row_bytes) * uint64_t{table.row_bytes}};
}

absl::StatusOr<uint32_t> EngramTableOfKey(std::span<const EngramTableEntry> tables,
                                          uint32_t key_layer, uint64_t record) {
  for (uint32_t i = 0; i < tables.size(); ++i) {
    if (EngramKeyLayer(tables[i].layer) != key_layer) continue;
    if (record < EngramRecords(tables[i])) return i;
    return absl::NotFoundError(absl::StrCat("record ", record, " of the engram table of layer ",
                                            tables[i].layer, ": past its ",
                                            EngramRecords(tables[i]), " records"));
  }
  return absl::NotFoundError(absl::StrCat("layer ", key_layer, " expert ", record,
                                          ": not a record of the engram tables served here"));
}

}  // namespace warp
