#pragma once

// Codebooks: the vector-quantization codebooks of a container (codebooks.bin),
// one per vq3r_b32 matrix of each bank, and the file's byte layout
// (docs/FORMAT.md#codebooksbin). A vq3r_b32 code names one centroid of each
// of two stages; the element values are the sum of the two, times the block's
// scale (common/kernels/matrix_view.h).
//
// Thread-safe after construction: Find is const and the codebooks never move.

#include <array>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "common/format/manifest.h"

namespace warp {

inline constexpr uint32_t kVq3rStages = 2;
inline constexpr uint32_t kVq3rEntries = 64;  // per stage: a 6-bit index
inline constexpr uint32_t kVq3rDim = 4;       // elements of a row per code
inline constexpr uint32_t kVq3rValues = kVq3rStages * kVq3rEntries * kVq3rDim;
inline constexpr std::string_view kCodebooksFile = "codebooks.bin";

// The two stages of one matrix's codebook.
struct Vq3rCodebook {
  // centroids[(stage * 64 + entry) * 4 + k]: element k of a stage's centroid.
  std::array<float, kVq3rValues> centroids{};
  // Every code's four values before its block scale: sums[code * 4 + k] =
  // C0[code & 63][k] + C1[code >> 6][k], so that a kernel decodes a code with
  // one 16-byte load (64 KiB, the same floats DequantizeRow computes).
  std::array<float, kVq3rEntries * kVq3rEntries * kVq3rDim> sums{};

  float Centroid(uint32_t stage, uint32_t entry, uint32_t k) const {
    return centroids[(stage * kVq3rEntries + entry) * kVq3rDim + k];
  }
  // Fills `sums` from `centroids`.
  void ComputeSums();
};

class Codebooks {
 public:
  // The codebook of matrix `matrix` (e.g. "gate_proj") of the bank of `layer`, or nullptr.
  const Vq3rCodebook* Find(uint32_t layer, std::string_view matrix) const;
  void Add(uint32_t layer, std::string matrix, const Vq3rCodebook& codebook);
  bool empty() const { return codebooks_.empty(); }
  size_t size() const { return codebooks_.size(); }

  // The bytes of codebooks.bin.
  std::string Serialize() const;
  // Parses codebooks.bin; errors name `where` and what is wrong (magic, CRC,
  // an entry's layer and matrix, a value that is not finite).
  static absl::StatusOr<Codebooks> Parse(std::string_view bytes, std::string_view where);
  // Reads and parses `path` and checks it against `manifest`: exactly one
  // codebook for each vq3r_b32 matrix of each bank, and none for another.
  static absl::StatusOr<Codebooks> Load(const std::filesystem::path& path,
                                        const Manifest& manifest);

 private:
  std::map<std::pair<uint32_t, std::string>, Vq3rCodebook, std::less<>> codebooks_;
};

}  // namespace warp
