#include "computed/convert/engram_tables.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/format/engram_table.h"
#include "common/status.h"
#include "computed/model/layer_plan.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {
namespace {

std::string Shape(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// `name` with `dtype` and `shape`, or an error naming it and what it has.
absl::StatusOr<const SourceTensor*> Table(const Checkpoint& checkpoint, const std::string& name,
                                          SourceDtype dtype, const std::vector<uint64_t>& shape) {
  const SourceTensor* t = checkpoint.Find(name);
  if (t == nullptr) {
    return absl::NotFoundError(absl::StrCat("tensor ", name, " is missing from the checkpoint"));
  }
  if (t->dtype != dtype || t->shape != shape) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor ", name, " is ", std::string(SourceDtypeName(t->dtype)), " ", Shape(t->shape),
        "; the engram table must be ", std::string(SourceDtypeName(dtype)), " ", Shape(shape),
        " (config.json's engram_num_embeddings and engram_head_dim)"));
  }
  return t;
}

// Rows read per step: a few MiB of codes.
constexpr uint64_t kRowsPerStep = 16 * 1024;

absl::Status WriteTable(const Checkpoint& checkpoint, const EngramConfig& e,
                        const EngramPlan& plan, uint32_t layer, uint64_t rows,
                        ContainerWriter& writer, const std::function<void(uint64_t)>& progress) {
  const uint64_t dim = e.head_dim, scales = e.head_dim / 32;
  WARP_ASSIGN_OR_RETURN(const SourceTensor* codes,
                        Table(checkpoint, EngramTableCodes(plan), SourceDtype::kF8E4M3, {rows, dim}));
  WARP_ASSIGN_OR_RETURN(
      const SourceTensor* scale,
      Table(checkpoint, EngramTableScales(plan), SourceDtype::kF8E8M0, {rows, scales}));
  const EngramTableEntry table{.layer = layer,
                               .file = absl::StrCat("engram-L", layer, ".bin"),
                               .rows = rows,
                               .row_bytes = static_cast<uint32_t>(dim + scales)};
  const uint64_t per_record = EngramRowsPerRecord(table.row_bytes);
  WARP_RETURN_IF_ERROR(writer.BeginEngramTable(table));
  std::vector<std::byte> code_bytes, scale_bytes;
  for (uint64_t first = 0; first < rows; first += kRowsPerStep) {
    // Whole records per step: kRowsPerStep rounded to them.
    const uint64_t step_rows = std::min(rows - first, kRowsPerStep / per_record * per_record);
    code_bytes.resize(step_rows * dim);
    scale_bytes.resize(step_rows * scales);
    WARP_RETURN_IF_ERROR(checkpoint.Read(*codes, first * dim, code_bytes));
    WARP_RETURN_IF_ERROR(checkpoint.Read(*scale, first * scales, scale_bytes));
    for (uint64_t r = 0; r < step_rows; r += per_record) {
      std::span<std::byte> record = writer.NextRecord();
      std::memset(record.data(), 0, per_record * table.row_bytes);  // rows past the table: zero
      for (uint64_t i = 0; i < per_record && r + i < step_rows; ++i) {
        std::byte* row = record.data() + i * table.row_bytes;
        std::memcpy(row, &code_bytes[(r + i) * dim], dim);
        std::memcpy(row + dim, &scale_bytes[(r + i) * scales], scales);
      }
      writer.CommitRecord();
    }
    progress(step_rows * table.row_bytes);
  }
  return writer.EndBank();
}

}  // namespace

absl::Status WriteEngramTables(const Checkpoint& checkpoint, const ModelConfig& config,
                               ContainerWriter& writer,
                               const std::function<void(uint64_t bytes)>& progress) {
  const ModelPlan plan = PlanOf(config);
  for (uint32_t layer = 0; layer < plan.layers.size(); ++layer) {
    const EngramPlan& engram = plan.layers[layer].engram;
    if (!engram.present()) continue;
    WARP_RETURN_IF_ERROR(WriteTable(checkpoint, config.engram, engram, layer,
                                    config.engram.table_rows[engram.table], writer, progress));
  }
  return absl::OkStatus();
}

}  // namespace warp::computed
