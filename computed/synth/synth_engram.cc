#include "computed/synth/synth_engram.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/format/engram_table.h"
#include "common/hash.h"
#include "common/status.h"
#include "computed/synth/presets.h"
#include "computed/synth/random_fill.h"

namespace warp::computed {
namespace {

// An E4M3 code from 8 random bits: the sign bit, exponent 5..8 (2^-2 .. 2^1),
// any mantissa; never 0x7F / 0xFF (NaN), never a subnormal.
uint8_t Code(uint8_t bits) {
  return static_cast<uint8_t>((bits & 0x80) | ((5 + ((bits >> 3) & 3)) << 3) | (bits & 7));
}

// Row `row` of a table into `out` (head_dim codes, then head_dim / 32 scales).
void FillRow(uint64_t stream, uint64_t row, uint32_t head_dim, std::span<std::byte> out) {
  const uint32_t words = head_dim / 8;
  for (uint32_t w = 0; w < words; ++w) {
    uint64_t bits = SplitMix64(stream + (row * words + w) * 0x9e3779b97f4a7c15ull);
    for (uint32_t b = 0; b < 8; ++b, bits >>= 8) {
      out[w * 8 + b] = std::byte{Code(static_cast<uint8_t>(bits))};
    }
  }
  uint64_t bits = SplitMix64(~stream ^ (row * 0x9e3779b97f4a7c15ull));
  for (uint32_t s = 0; s < head_dim / 32; ++s, bits >>= 8) {
    out[head_dim + s] = std::byte{static_cast<uint8_t>(126 + (bits & 0xFF) % 3)};
  }
}

}  // namespace

absl::Status WriteSynthEngramTables(ContainerWriter& writer, const ModelConfig& config,
                                    uint64_t seed, const std::function<void(uint64_t)>& progress) {
  const uint32_t head_dim = config.engram.head_dim;
  for (const EngramTableEntry& table : EngramTablesOf(config)) {
    const uint64_t stream = StreamKey(seed, absl::StrCat("engram-L", table.layer));
    const uint32_t per_record = EngramRowsPerRecord(table.row_bytes);
    WARP_RETURN_IF_ERROR(writer.BeginEngramTable(table));
    for (uint64_t first = 0; first < table.rows; first += per_record) {
      std::span<std::byte> record = writer.NextRecord();
      std::memset(record.data(), 0, uint64_t{per_record} * table.row_bytes);  // rows past the end
      for (uint64_t i = 0; i < per_record && first + i < table.rows; ++i) {
        FillRow(stream, first + i, head_dim, record.subspan(i * table.row_bytes, table.row_bytes));
      }
      writer.CommitRecord();
      progress(kEngramRecordBytes);
    }
    WARP_RETURN_IF_ERROR(writer.EndBank());
  }
  return absl::OkStatus();
}

}  // namespace warp::computed
