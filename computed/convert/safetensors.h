#pragma once

// Reader of Hugging Face checkpoints in safetensors form: one file, or many
// with model.safetensors.index.json. Validates every header at open (dtype,
// shape, offsets inside the file, sizes) so reads need no further checks.
// Streams: nothing is held in memory but the headers.
//
// Thread-safe after Open (reads are preads).

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/tensor_format.h"
#include "common/io/file.h"

namespace warp::computed {

// U8, I8 and F8_E8M0 are codes read as bytes (MXFP4 blocks, E8M0 scales);
// I32 and I64 integers (DeepSeek V4's tid2eid expert ids), read as values.
// kGgmlBlocks comes from GGUF files (gguf_import.h): rows of whole ggml
// blocks, kept as the container's ggml_* format SourceTensor::ggml_format.
enum class SourceDtype { kF32, kF16, kBF16, kF8E4M3, kU8, kI8, kF8E8M0, kI32, kI64, kGgmlBlocks };

// True for the dtypes whose bytes are codes rather than values.
inline bool IsCodeDtype(SourceDtype dtype) {
  return dtype == SourceDtype::kU8 || dtype == SourceDtype::kI8 || dtype == SourceDtype::kF8E8M0;
}

std::string_view SourceDtypeName(SourceDtype dtype);
// Bytes an element; 0 for ggml blocks (DataBytes of their format).
uint64_t SourceDtypeBytes(SourceDtype dtype);

struct SourceTensor {
  std::string name;
  SourceDtype dtype = SourceDtype::kF32;
  TensorFormat ggml_format = TensorFormat::kF32;  // kGgmlBlocks: which ggml_* blocks
  std::vector<uint64_t> shape;
  uint64_t offset = 0;  // absolute, in `file`
  uint64_t bytes = 0;
  size_t file = 0;  // index into Checkpoint files
  // GGUF `llama` Q and K projections: llama.cpp's converter permuted their rows
  // (within each of this many heads, row 2i + j holds Hugging Face row
  // j * head_dim / 2 + i) for its interleaved rope; Read returns them in
  // Hugging Face order again. 0: rows as stored.
  uint32_t llama_rope_heads = 0;
  // gpt-oss from GGUF: the data alternates units of `unit` bytes from
  // `offset` (even units) and from this second run (odd units), each bytes / 2
  // long: the gate and up rows (or bias elements) the release interleaves.
  struct Interleaved {
    size_t file = 0;
    uint64_t offset = 0;
    uint64_t unit = 0;
  };
  std::optional<Interleaved> interleaved;
  // From GGUF: the file's own tensor name ("blk.0.ffn_down_exps.weight, expert 3"),
  // for messages; empty for safetensors.
  std::string gguf_name;
};

// The container format that keeps a GGUF tensor's blocks; nullopt for other dtypes.
inline std::optional<TensorFormat> GgmlBlockFormat(const SourceTensor& tensor) {
  if (tensor.dtype != SourceDtype::kGgmlBlocks) return std::nullopt;
  return tensor.ggml_format;
}

// The tensor's type for messages: its dtype, or its ggml block format.
std::string SourceTypeName(const SourceTensor& tensor);

// The FP8 formats (kTiledFp8Formats) whose tile t gives `scale`'s shape as the
// grid of block scales of F8_E4M3 `tensor`, [ceil(rows/t), ceil(cols/t)]:
// one, or both for a matrix of at most 32 x 32 (one scale, the same values
// either way); none for a grid of no tile, a scale that is not F32 or
// F8_E8M0, or a tensor that is not 2-D.
std::vector<TensorFormat> Fp8FormatsOfScales(const SourceTensor& tensor, const SourceTensor& scale);

// The FP8 format an F8_E4M3 `tensor` with block scales `scale` is kept as:
// the one whose grid `scale` is. Where both are (one scale), `declared` (the
// config's weight_block_size) decides, and without it the tensor is refused;
// so is a grid of neither tile, or of the tile `declared` is not. Errors
// name both tensors and their shapes.
absl::StatusOr<TensorFormat> Fp8FormatOf(const SourceTensor& tensor, const SourceTensor& scale,
                                         std::optional<TensorFormat> declared);

class Checkpoint {
 public:
  // Opens `dir`: model.safetensors.index.json if present, else every
  // *.safetensors file in it. Errors name the file and tensor.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> Open(const std::filesystem::path& dir);
  // A checkpoint of tensors another reader has checked (GGUF import): each
  // `file` indexes `files`, which are opened here.
  static absl::StatusOr<std::unique_ptr<Checkpoint>> FromTensors(
      std::vector<std::filesystem::path> files, std::map<std::string, SourceTensor> tensors);

  const SourceTensor* Find(const std::string& name) const;
  const std::map<std::string, SourceTensor>& tensors() const { return tensors_; }
  uint64_t total_bytes() const { return total_bytes_; }

  // Reads bytes [offset, offset + out.size()) of `tensor`'s data (in Hugging
  // Face row order, see llama_rope_heads).
  absl::Status Read(const SourceTensor& tensor, uint64_t offset, std::span<std::byte> out) const;

  // Reads a block-scale tensor as float32: F32 as it is (DeepSeek V3's
  // *_scale_inv), or F8_E8M0 exponents 2^(e - 127) (DeepSeek V4's *.scale; 255 is NaN).
  absl::Status ReadScales(const SourceTensor& scale, std::span<float> out) const;

  // Reads rows [row_begin, row_begin + num_rows) of a tensor as float32: rows
  // of its last dimension (1-D: the whole tensor is one row; [E, A, B]: E x A
  // rows of B). Code tensors (U8, I8, F8_E8M0) are not values: InvalidArgument. FP8 tensors
  // need `scale_inv` (F32 or F8_E8M0, one per 128x128 or 32x32 tile: Fp8FormatsOfScales)
  // and are dequantized code x scale.
  absl::Status ReadRowsAsFloat(const SourceTensor& tensor, const SourceTensor* scale_inv,
                               uint64_t row_begin, uint64_t num_rows, std::span<float> out) const;

 private:
  Checkpoint() = default;
  absl::Status AddFile(const std::filesystem::path& path);

  std::vector<std::filesystem::path> paths_;
  std::vector<ScopedFd> fds_;
  std::map<std::string, SourceTensor> tensors_;
  uint64_t total_bytes_ = 0;
};

}  // namespace warp::computed
