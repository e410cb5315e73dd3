#include "computed/convert/safetensors.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/json_depth.h"
#include "common/kernels/matrix_view.h"
#include "common/numeric/half.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// A safetensors header larger than this is not a checkpoint we can trust.
constexpr uint64_t kMaxHeaderBytes = 100 << 20;

absl::StatusOr<SourceDtype> ParseDtype(const std::string& name) {
  if (name == "F32") return SourceDtype::kF32;
  if (name == "F16") return SourceDtype::kF16;
  if (name == "BF16") return SourceDtype::kBF16;
  if (name == "F8_E4M3") return SourceDtype::kF8E4M3;
  if (name == "U8") return SourceDtype::kU8;
  if (name == "I8") return SourceDtype::kI8;
  if (name == "F8_E8M0") return SourceDtype::kF8E8M0;
  if (name == "I32") return SourceDtype::kI32;
  if (name == "I64") return SourceDtype::kI64;
  return absl::InvalidArgumentError(absl::StrCat(
      "dtype ", name, " is not supported (F32, F16, BF16, F8_E4M3, U8, I8, F8_E8M0, I32, I64)"));
}

json ParseJsonOrNull(const std::string& text) {
  // nlohmann::json reports syntax errors by exception only; caught at this boundary.
  if (!CheckJsonDepth(text, "").ok()) return nullptr;  // as malformed: the caller names the file
  try {
    return json::parse(text);
  } catch (const json::exception&) {  // parse_error, or out_of_range for a number like 1e400
    return json();
  }
}

absl::StatusOr<SourceTensor> ParseEntry(const std::string& name, const json& entry,
                                        uint64_t data_begin, uint64_t file_size) {
  if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
      !entry.contains("data_offsets") || !entry["dtype"].is_string() ||
      !entry["shape"].is_array() || !entry["data_offsets"].is_array() ||
      entry["data_offsets"].size() != 2) {
    return absl::InvalidArgumentError("needs dtype, shape and data_offsets [begin, end]");
  }
  SourceTensor tensor{.name = name};
  WARP_ASSIGN_OR_RETURN(tensor.dtype, ParseDtype(entry["dtype"].get<std::string>()));
  uint64_t elements = 1;
  for (const json& dim : entry["shape"]) {
    if (!dim.is_number_unsigned()) return absl::InvalidArgumentError("shape must be unsigned");
    tensor.shape.push_back(dim.get<uint64_t>());
    if (__builtin_mul_overflow(elements, tensor.shape.back(), &elements)) {
      return absl::InvalidArgumentError("shape overflows");
    }
  }
  const json& offsets = entry["data_offsets"];
  if (!offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
    return absl::InvalidArgumentError("data_offsets must be unsigned");
  }
  const uint64_t begin = offsets[0].get<uint64_t>();
  const uint64_t end = offsets[1].get<uint64_t>();
  if (end < begin || end > file_size - data_begin) {
    return absl::DataLossError(absl::StrCat("data_offsets [", begin, ", ", end,
                                            ") run past the end of the file (data section is ",
                                            file_size - data_begin, " bytes)"));
  }
  // Checked: shape [2^61] of I64 would need 2^64 bytes, which wraps to 0 and matched empty data.
  uint64_t needed = 0;
  if (__builtin_mul_overflow(elements, SourceDtypeBytes(tensor.dtype), &needed)) {
    return absl::InvalidArgumentError(absl::StrCat("shape ", entry["shape"].dump(), " of ",
                                                   entry["dtype"].get<std::string>(),
                                                   " needs more than 2^64 bytes"));
  }
  if (end - begin != needed) {
    return absl::InvalidArgumentError(
        absl::StrCat("data is ", end - begin, " bytes but shape ", entry["shape"].dump(), " of ",
                     entry["dtype"].get<std::string>(), " needs ", needed));
  }
  tensor.offset = data_begin + begin;
  tensor.bytes = end - begin;
  return tensor;
}

}  // namespace

std::string SourceTypeName(const SourceTensor& tensor) {
  if (tensor.dtype == SourceDtype::kGgmlBlocks) {
    return std::string(TensorFormatName(tensor.ggml_format));
  }
  return std::string(SourceDtypeName(tensor.dtype));
}

std::string_view SourceDtypeName(SourceDtype dtype) {
  switch (dtype) {
    case SourceDtype::kGgmlBlocks:
      return "ggml blocks";
    case SourceDtype::kF32:
      return "F32";
    case SourceDtype::kF16:
      return "F16";
    case SourceDtype::kBF16:
      return "BF16";
    case SourceDtype::kF8E4M3:
      return "F8_E4M3";
    case SourceDtype::kU8:
      return "U8";
    case SourceDtype::kI8:
      return "I8";
    case SourceDtype::kF8E8M0:
      return "F8_E8M0";
    case SourceDtype::kI32:
      return "I32";
    case SourceDtype::kI64:
      return "I64";
  }
  return "?";
}

uint64_t SourceDtypeBytes(SourceDtype dtype) {
  switch (dtype) {
    case SourceDtype::kGgmlBlocks:
      return 0;
    case SourceDtype::kF32:
      return 4;
    case SourceDtype::kF16:
    case SourceDtype::kBF16:
      return 2;
    case SourceDtype::kF8E4M3:
    case SourceDtype::kU8:
    case SourceDtype::kI8:
    case SourceDtype::kF8E8M0:
      return 1;
    case SourceDtype::kI32:
      return 4;
    case SourceDtype::kI64:
      return 8;
  }
  return 0;
}

namespace {

std::string ShapeText(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// The grid of one scale per `tile` x `tile` block of a [rows, cols] matrix.
std::vector<uint64_t> ScaleGrid(const std::vector<uint64_t>& shape, uint64_t tile) {
  return {(shape[0] + tile - 1) / tile, (shape[1] + tile - 1) / tile};
}

}  // namespace

std::vector<TensorFormat> Fp8FormatsOfScales(const SourceTensor& tensor,
                                             const SourceTensor& scale) {
  std::vector<TensorFormat> formats;
  if (tensor.shape.size() != 2 ||
      (scale.dtype != SourceDtype::kF32 && scale.dtype != SourceDtype::kF8E8M0)) {
    return formats;
  }
  for (TensorFormat format : kTiledFp8Formats) {
    if (scale.shape == ScaleGrid(tensor.shape, TraitsOf(format).scale.rows)) {
      formats.push_back(format);
    }
  }
  return formats;
}

absl::StatusOr<TensorFormat> Fp8FormatOf(const SourceTensor& tensor, const SourceTensor& scale,
                                         std::optional<TensorFormat> declared) {
  const std::string both = absl::StrCat("tensor ", tensor.name, " ", ShapeText(tensor.shape),
                                        " with scales ", scale.name, " ",
                                        std::string(SourceDtypeName(scale.dtype)), " ",
                                        ShapeText(scale.shape));
  const std::string declared_text =
      declared ? absl::StrCat("config.json's quantization_config.weight_block_size says ",
                              TraitsOf(*declared).scale.rows, "x", TraitsOf(*declared).scale.cols)
               : "";
  const std::vector<TensorFormat> formats = Fp8FormatsOfScales(tensor, scale);
  if (formats.empty()) {
    if (tensor.shape.size() != 2) {
      return absl::InvalidArgumentError(absl::StrCat(both, ": an F8_E4M3 tensor must be 2-D"));
    }
    if (scale.dtype != SourceDtype::kF32 && scale.dtype != SourceDtype::kF8E8M0) {
      return absl::InvalidArgumentError(
          absl::StrCat(both, ": F8_E4M3 block scales must be F32 or F8_E8M0"));
    }
    std::string grids;
    for (TensorFormat format : kTiledFp8Formats) {
      const uint64_t tile = TraitsOf(format).scale.rows;
      absl::StrAppend(&grids, grids.empty() ? "" : " or ", ShapeText(ScaleGrid(tensor.shape, tile)),
                      " (", tile, "x", tile, " tiles)");
    }
    return absl::InvalidArgumentError(absl::StrCat(
        both, ": the scale tile is neither 128x128 nor 32x32; the scales would be ", grids,
        declared ? absl::StrCat(" (", declared_text, ")") : ""));
  }
  if (formats.size() == 1) {
    if (declared && formats[0] != *declared) {
      const uint64_t tile = TraitsOf(formats[0]).scale.rows;
      return absl::InvalidArgumentError(absl::StrCat(both, ": the scale tile is ", tile, "x",
                                                     tile, ", but ", declared_text));
    }
    return formats[0];
  }
  if (declared) return *declared;
  return absl::InvalidArgumentError(absl::StrCat(
      both, ": one scale, whose tile (128x128 or 32x32) only config.json's "
            "quantization_config.weight_block_size can say, and it does not"));
}

absl::Status Checkpoint::AddFile(const fs::path& path) {
  const std::string where = path.string();
  WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(path, /*want_direct=*/false));
  WARP_ASSIGN_OR_RETURN(uint64_t size, FileSize(file.fd.get(), where));
  uint64_t header_bytes = 0;
  if (size < 8) return absl::DataLossError(absl::StrCat(where, ": truncated (", size, " bytes)"));
  WARP_RETURN_IF_ERROR(
      PreadFull(file.fd.get(), std::as_writable_bytes(std::span(&header_bytes, 1)), 0, where));
  if (header_bytes > kMaxHeaderBytes || header_bytes > size - 8) {
    return absl::DataLossError(absl::StrCat(where, ": header of ", header_bytes,
                                            " bytes does not fit in the ", size,
                                            "-byte file (truncated?)"));
  }
  std::string header(header_bytes, '\0');
  WARP_RETURN_IF_ERROR(
      PreadFull(file.fd.get(), std::as_writable_bytes(std::span(header)), 8, where));
  const json root = ParseJsonOrNull(header);
  if (!root.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": header is not a JSON object"));
  }
  for (const auto& [name, entry] : root.items()) {
    if (name == "__metadata__") continue;
    absl::StatusOr<SourceTensor> tensor = ParseEntry(name, entry, 8 + header_bytes, size);
    if (!tensor.ok()) return Annotate(tensor.status(), absl::StrCat(where, ": tensor ", name));
    tensor->file = paths_.size();
    total_bytes_ += tensor->bytes;
    if (!tensors_.emplace(name, *std::move(tensor)).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": tensor ", name, " appears twice"));
    }
  }
  paths_.push_back(path);
  fds_.push_back(std::move(file.fd));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::Open(const fs::path& dir) {
  auto checkpoint = std::unique_ptr<Checkpoint>(new Checkpoint());
  const fs::path index = dir / "model.safetensors.index.json";
  std::vector<fs::path> files;
  if (fs::exists(index)) {
    WARP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(index));
    const json root = ParseJsonOrNull(text);
    if (!root.is_object() || !root.contains("weight_map") || !root["weight_map"].is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(index.string(), ": needs a \"weight_map\" object"));
    }
    for (const auto& [name, file] : root["weight_map"].items()) {
      if (!file.is_string()) return absl::InvalidArgumentError(index.string() + ": bad entry");
      const fs::path path = dir / file.get<std::string>();
      if (std::find(files.begin(), files.end(), path) == files.end()) files.push_back(path);
    }
  } else {
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(dir, error)) {
      if (absl::EndsWith(entry.path().string(), ".safetensors")) files.push_back(entry.path());
    }
    if (error) return absl::NotFoundError(absl::StrCat(dir.string(), ": ", error.message()));
    std::sort(files.begin(), files.end());
  }
  if (files.empty()) {
    return absl::NotFoundError(absl::StrCat(dir.string(), ": no *.safetensors files"));
  }
  for (const fs::path& file : files) WARP_RETURN_IF_ERROR(checkpoint->AddFile(file));
  return checkpoint;
}

absl::StatusOr<std::unique_ptr<Checkpoint>> Checkpoint::FromTensors(
    std::vector<fs::path> files, std::map<std::string, SourceTensor> tensors) {
  auto checkpoint = std::unique_ptr<Checkpoint>(new Checkpoint());
  for (const fs::path& path : files) {
    WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(path, /*want_direct=*/false));
    checkpoint->fds_.push_back(std::move(file.fd));
  }
  checkpoint->paths_ = std::move(files);
  for (const auto& [name, tensor] : tensors) checkpoint->total_bytes_ += tensor.bytes;
  checkpoint->tensors_ = std::move(tensors);
  return checkpoint;
}

const SourceTensor* Checkpoint::Find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

absl::Status Checkpoint::Read(const SourceTensor& tensor, uint64_t offset,
                              std::span<std::byte> out) const {
  const int fd = fds_[tensor.file].get();
  const std::string path = paths_[tensor.file].string();
  if (tensor.interleaved) {
    const SourceTensor::Interleaved& odd = *tensor.interleaved;
    for (uint64_t done = 0; done < out.size();) {
      const uint64_t unit = (offset + done) / odd.unit, in_unit = (offset + done) % odd.unit;
      const uint64_t n = std::min<uint64_t>(odd.unit - in_unit, out.size() - done);
      const uint64_t at = unit / 2 * odd.unit + in_unit;
      const bool even = unit % 2 == 0;
      WARP_RETURN_IF_ERROR(PreadFull(fds_[even ? tensor.file : odd.file].get(),
                                     out.subspan(done, n), (even ? tensor.offset : odd.offset) + at,
                                     paths_[even ? tensor.file : odd.file].string()));
      done += n;
    }
    return absl::OkStatus();
  }
  if (tensor.llama_rope_heads == 0) return PreadFull(fd, out, tensor.offset + offset, path);
  const uint64_t rows = tensor.shape.front();
  const uint64_t row_bytes = tensor.bytes / rows;
  const uint64_t half = rows / tensor.llama_rope_heads / 2;  // head_dim / 2
  for (uint64_t done = 0; done < out.size();) {
    const uint64_t row = (offset + done) / row_bytes, in_row = (offset + done) % row_bytes;
    const uint64_t head = row / (2 * half), j = row % (2 * half) / half, i = row % half;
    const uint64_t stored = head * 2 * half + 2 * i + j;
    const uint64_t n = std::min<uint64_t>(row_bytes - in_row, out.size() - done);
    WARP_RETURN_IF_ERROR(
        PreadFull(fd, out.subspan(done, n), tensor.offset + stored * row_bytes + in_row, path));
    done += n;
  }
  return absl::OkStatus();
}

absl::Status Checkpoint::ReadScales(const SourceTensor& scale, std::span<float> out) const {
  if (scale.dtype == SourceDtype::kF32) return Read(scale, 0, std::as_writable_bytes(out));
  std::vector<uint8_t> codes(out.size());
  WARP_RETURN_IF_ERROR(Read(scale, 0, std::as_writable_bytes(std::span(codes))));
  for (size_t i = 0; i < codes.size(); ++i) {
    out[i] = codes[i] == 255 ? std::numeric_limits<float>::quiet_NaN()
                             : std::ldexp(1.0f, static_cast<int>(codes[i]) - 127);
  }
  return absl::OkStatus();
}

namespace {

// `num_rows` rows of a ggml block tensor from `row_begin`, dequantized.
absl::Status ReadGgmlRowsAsFloat(const Checkpoint& checkpoint, const SourceTensor& tensor,
                                 TensorFormat format, uint64_t row_begin, uint64_t num_rows,
                                 std::span<float> out) {
  const uint64_t cols = tensor.shape.back();
  const uint64_t row_bytes = DataBytes(format, {1, cols});
  std::vector<std::byte> raw(num_rows * row_bytes);
  WARP_RETURN_IF_ERROR(checkpoint.Read(tensor, row_begin * row_bytes, raw));
  const kernels::MatrixView view{
      .format = format, .rows = num_rows, .cols = cols, .data = raw.data()};
  for (uint64_t r = 0; r < num_rows; ++r) {
    kernels::DequantizeRow(view, r, out.subspan(r * cols, cols));
  }
  return absl::OkStatus();
}

// An F8_E4M3 tensor's inverse scales, one per `tile` x `tile` block, row-major.
struct BlockScales {
  std::vector<float> values;
  uint64_t cols = 0;  // blocks per row of blocks
  uint64_t tile = 1;

  float At(uint64_t row, uint64_t col) const { return values[(row / tile) * cols + col / tile]; }
};

// The block scales an F8_E4M3 `tensor` needs, in either tile, read from
// `scale_inv` once its dtype and shape are checked; none for other dtypes.
absl::StatusOr<BlockScales> ReadBlockScales(const Checkpoint& checkpoint,
                                            const SourceTensor& tensor,
                                            const SourceTensor* scale_inv) {
  BlockScales scales;
  if (tensor.dtype != SourceDtype::kF8E4M3) return scales;
  if (scale_inv == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        "tensor ", tensor.name, ": F8_E4M3 needs F32 or F8_E8M0 block scales (", tensor.name,
        "_scale_inv, or .scale)"));
  }
  // Where both tiles fit (one scale), either gives the same values.
  const std::vector<TensorFormat> formats = Fp8FormatsOfScales(tensor, *scale_inv);
  if (formats.empty()) return Fp8FormatOf(tensor, *scale_inv, std::nullopt).status();
  scales.tile = TraitsOf(formats.front()).scale.rows;
  scales.cols = scale_inv->shape[1];
  scales.values.resize(scale_inv->shape[0] * scale_inv->shape[1]);
  WARP_RETURN_IF_ERROR(checkpoint.ReadScales(*scale_inv, scales.values));
  return scales;
}

template <typename T>
T Load(const std::byte* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// `raw`, rows [row_begin, ...) of `cols` elements of `dtype`, as floats.
void DecodeElements(SourceDtype dtype, std::span<const std::byte> raw, uint64_t row_begin,
                    uint64_t cols, const BlockScales& scales, std::span<float> out) {
  const uint64_t elem = SourceDtypeBytes(dtype);
  for (uint64_t i = 0; i < out.size(); ++i) {
    const std::byte* p = raw.data() + i * elem;
    switch (dtype) {
      case SourceDtype::kF32:
        std::memcpy(&out[i], p, 4);
        break;
      case SourceDtype::kF16:
        out[i] = HalfToFloat(Load<uint16_t>(p));
        break;
      case SourceDtype::kBF16:
        out[i] = Bf16ToFloat(Load<uint16_t>(p));
        break;
      case SourceDtype::kF8E4M3:
        out[i] = kernels::E4M3ToFloat(static_cast<uint8_t>(*p)) *
                 scales.At(row_begin + i / cols, i % cols);
        break;
      case SourceDtype::kI32:
        out[i] = static_cast<float>(Load<int32_t>(p));
        break;
      case SourceDtype::kI64:
        out[i] = static_cast<float>(Load<int64_t>(p));
        break;
      case SourceDtype::kU8:
      case SourceDtype::kI8:
      case SourceDtype::kF8E8M0:
      case SourceDtype::kGgmlBlocks:
        break;  // refused or decoded by the caller
    }
  }
}

}  // namespace

absl::Status Checkpoint::ReadRowsAsFloat(const SourceTensor& tensor, const SourceTensor* scale_inv,
                                         uint64_t row_begin, uint64_t num_rows,
                                         std::span<float> out) const {
  if (IsCodeDtype(tensor.dtype)) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", tensor.name, " is ",
                                                   std::string(SourceDtypeName(tensor.dtype)),
                                                   " codes, not values"));
  }
  if (std::optional<TensorFormat> format = GgmlBlockFormat(tensor)) {
    return ReadGgmlRowsAsFloat(*this, tensor, *format, row_begin, num_rows, out);
  }
  const uint64_t cols = tensor.shape.size() >= 2 ? tensor.shape.back()
                                                 : tensor.bytes / SourceDtypeBytes(tensor.dtype);
  const uint64_t elem = SourceDtypeBytes(tensor.dtype);
  std::vector<std::byte> raw(num_rows * cols * elem);
  WARP_RETURN_IF_ERROR(Read(tensor, row_begin * cols * elem, raw));
  WARP_ASSIGN_OR_RETURN(const BlockScales scales, ReadBlockScales(*this, tensor, scale_inv));
  DecodeElements(tensor.dtype, raw, row_begin, cols, scales, out.first(num_rows * cols));
  return absl::OkStatus();
}

}  // namespace warp::computed
