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

}  // namespace warp
