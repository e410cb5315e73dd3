#include "common/format/manifest_checks.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "common/format/bank_format.h"
#include "common/format/engram_table.h"
#include "common/status.h"

namespace warp {
namespace {

// Checks that `extent` is aligned, sized for the tensor, inside [begin, limit),
// and returns its end.
absl::StatusOr<uint64_t> CheckExtent(const Extent& extent, uint64_t expected_bytes,
                                     uint64_t alignment, uint64_t begin, uint64_t limit,
                                     std::string_view what) {
  if (extent.offset % alignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": offset ", extent.offset,
                                                   " is not a multiple of ", alignment));
  }
  if (extent.bytes != expected_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": ", extent.bytes,
                                                   " bytes, but its format and shape need ",
                                                   expected_bytes));
  }
  if (extent.offset < begin) {
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": offset ", extent.offset,
                                                   " overlaps the previous tensor (ends at ", begin,
                                                   ")"));
  }
  if (extent.bytes > limit || extent.offset > limit - extent.bytes) {  // no overflow
    return absl::InvalidArgumentError(absl::StrCat(std::string(what), ": extent [", extent.offset,
                                                   ", ", extent.offset + extent.bytes,
                                                   ") runs past the end at ", limit));
  }
  return extent.offset + extent.bytes;
}

// Checks the tensors of a trunk or a record: sizes from format and shape,
// alignment, increasing non-overlapping extents inside `limit` bytes.
absl::Status CheckTensors(const std::vector<TensorEntry>& tensors, uint64_t alignment,
                          uint64_t limit, std::string_view where) {
  uint64_t end = 0;
  for (const TensorEntry& tensor : tensors) {
    const std::string what = absl::StrCat(std::string(where), " tensor ", tensor.name);
    WARP_ASSIGN_OR_RETURN(end, CheckExtent(tensor.data, DataBytes(tensor.format, tensor.shape),
                                           alignment, end, limit, what + " data"));
    if (tensor.scale) {
      WARP_ASSIGN_OR_RETURN(end, CheckExtent(*tensor.scale, ScaleBytes(tensor.format, tensor.shape),
                                             alignment, end, limit, what + " scale"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckBankEntry(const BankEntry& bank, const std::optional<ShardMap>& shard_map) {
  const std::string where = absl::StrCat("bank of layer ", bank.layer);
  if (bank.num_experts > kMaxExpertsPerBank) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": num_experts ", bank.num_experts,
                                                   " is above the format's ", kMaxExpertsPerBank));
  }
  if (bank.record_bytes > kMaxRecordBytes) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": record_bytes ", bank.record_bytes,
                                                   " is above the format's ", kMaxRecordBytes));
  }
  if (bank.record_bytes == 0 || bank.record_bytes % kBankAlignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": record_bytes ", bank.record_bytes,
                                                   " is not a positive multiple of ",
                                                   kBankAlignment));
  }
  if (bank.payload_bytes > bank.record_bytes - kRecordFooterBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": payload_bytes ", bank.payload_bytes, " leaves no room for the ",
                     kRecordFooterBytes, "-byte footer in record_bytes ", bank.record_bytes));
  }
  WARP_RETURN_IF_ERROR(CheckPlainFileName(bank.file, where));
  if (shard_map) {
    const std::span<const uint32_t> held = shard_map->HeldExperts(bank.layer);
    if (!held.empty() && held.back() >= bank.num_experts) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": shard_map.held names expert ",
                                                     held.back(), ", the bank has ",
                                                     bank.num_experts));
    }
  }
  return CheckTensors(bank.matrices, kSubTensorAlignment, bank.payload_bytes, where);
}

}  // namespace

// A table's rows fit a record, whole blocks of 32 codes and their scale;
// `previous` (or null) is the entry before it, of a lower layer.
absl::Status CheckEngramTable(const EngramTableEntry& table, const EngramTableEntry* previous,
                              const std::string& where) {
  if (previous != nullptr && table.layer <= previous->layer) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": layer ", table.layer,
                                                   " is not above the previous table's layer"));
  }
  if (table.layer >= kEngramKeyBase) {  // its keys' layers must stay above every decoder layer
    return absl::InvalidArgumentError(absl::StrCat(where, ".layer: ", table.layer, " is too large"));
  }
  if (table.row_bytes == 0 || table.row_bytes % 33 != 0 ||
      table.row_bytes > kEngramRecordBytes - kRecordFooterBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".row_bytes: ", table.row_bytes,
        " is not whole blocks of 32 E4M3 codes and an E8M0 scale (33 bytes) within a record"));
  }
  if (table.rows == 0 || EngramRecords(table) > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ".rows: ", table.rows, " is out of range"));
  }
  return CheckPlainFileName(table.file, where + ".file");
}

absl::Status CheckPlainFileName(const std::string& name, const std::string& where) {
  if (name.empty() || name.find('/') != std::string::npos || name == ".." || name == ".") {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": file \"", name, "\" must be a plain file name"));
  }
  return absl::OkStatus();
}

absl::Status CheckManifest(const Manifest& manifest) {
  if (manifest.trunk_bytes > kMaxTrunkBytes) {
    return absl::InvalidArgumentError(absl::StrCat("trunk.bytes ", manifest.trunk_bytes,
                                                   " is above the format's ", kMaxTrunkBytes));
  }
  WARP_RETURN_IF_ERROR(CheckTensors(manifest.trunk, kBankAlignment, manifest.trunk_bytes, "trunk"));
  for (const TensorEntry& tensor : manifest.trunk) {
    if (!tensor.crc32c) {
      return absl::InvalidArgumentError(
          absl::StrCat("trunk tensor ", tensor.name,
                       ": crc32c: missing (required in format version ", kFormatVersion, ")"));
    }
  }
  for (size_t i = 0; i < manifest.banks.size(); ++i) {
    if (i > 0 && manifest.banks[i].layer <= manifest.banks[i - 1].layer) {
      return absl::InvalidArgumentError(absl::StrCat("banks[", i, "]: layer ",
                                                     manifest.banks[i].layer,
                                                     " is not above the previous bank's layer"));
    }
    WARP_RETURN_IF_ERROR(CheckBankEntry(manifest.banks[i], manifest.shard_map));
  }
  if (manifest.shard_map) {
    for (const auto& [layer, experts] : manifest.shard_map->held) {
      if (manifest.FindBank(layer) == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("shard_map.held: layer ", layer, " has no bank"));
      }
    }
  }
  for (size_t i = 0; i < manifest.engram.size(); ++i) {
    WARP_RETURN_IF_ERROR(CheckEngramTable(manifest.engram[i], i > 0 ? &manifest.engram[i - 1] : nullptr,
                                          absl::StrCat("engram[", i, "]")));
  }
  if (manifest.tokenizer) {
    for (size_t i = 0; i < manifest.tokenizer->files.size(); ++i) {
      WARP_RETURN_IF_ERROR(CheckPlainFileName(manifest.tokenizer->files[i],
                                              absl::StrCat("tokenizer.files[", i, "]")));
    }
    if (!manifest.tokenizer->chat_template.empty()) {
      WARP_RETURN_IF_ERROR(
          CheckPlainFileName(manifest.tokenizer->chat_template, "tokenizer.chat_template"));
    }
  }
  if (manifest.codebooks_file) {
    WARP_RETURN_IF_ERROR(CheckPlainFileName(*manifest.codebooks_file, "codebooks"));
  }
  return absl::OkStatus();
}

}  // namespace warp
