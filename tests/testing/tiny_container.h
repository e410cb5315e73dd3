#pragma once

// Writes small valid containers for tests in milliseconds, with no model
// knowledge: a trunk of two f32 tensors and `num_layers` banks of
// `num_experts` records whose bytes are a known function of (layer, expert).

#include <cstdint>
#include <filesystem>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"

namespace warp::testing {

struct TinyContainerOptions {
  uint32_t num_layers = 2;  // banks are layers 1 .. num_layers (layer 0 is dense)
  uint32_t num_experts = 4;
  uint64_t rows = 8;  // of each f32 matrix gate/up/down: [rows, 32], [rows, 32], [32, rows]
  uint64_t fingerprint = 0x0123456789abcdefull;
  // Engram tables (DeepSeek V4.1) of engram_rows rows of 264 bytes, one per
  // layer listed, as engram-L{layer}.bin.
  std::vector<uint32_t> engram_layers;
  uint64_t engram_rows = 40;
};

// Byte `i` of the payload of (layer, expert): deterministic and distinct per record.
std::byte RecordByte(uint32_t layer, uint32_t expert, uint64_t i);

// Byte `i` of row `row` of the engram table of `layer`.
std::byte EngramRowByte(uint32_t layer, uint64_t row, uint32_t i);

absl::StatusOr<Manifest> WriteTinyContainer(const std::filesystem::path& dir,
                                            const TinyContainerOptions& options = {});

// Flips one bit of byte `offset` of the bank file of `layer` in `dir` (a
// corruption the footer's CRC32C catches).
absl::Status FlipBankByte(const std::filesystem::path& dir, uint32_t layer, uint64_t offset);

}  // namespace warp::testing
