#include "computed/convert/converter.h"

#include <algorithm>
#include <cstring>
#include <span>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/byte_size.h"
#include "common/format/container_writer.h"
#include "common/hash.h"
#include "common/io/file.h"
#include "common/json_depth.h"
#include "common/kernels/matrix_view.h"
#include "common/logging.h"
#include "common/progress.h"
#include "common/status.h"
#include "computed/convert/early_route_folds.h"
#include "computed/convert/encode.h"
#include "computed/convert/engram_tables.h"
#include "computed/convert/gguf_import.h"
#include "computed/convert/kept_tensors.h"
#include "computed/convert/safetensors.h"
#include "computed/convert/vq3r_encoder.h"
#include "computed/model/engram/engram_addressing.h"
#include "computed/model/family.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/release_formats.h"
#include "computed/model/tensor_specs.h"
#include "computed/model/trunk_choice.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;

// Tokenizer and chat-template files copied into the container when present.
constexpr const char* kTokenizerFiles[] = {"tokenizer.json",          "tokenizer_config.json",
                                           "tokenizer.model",         "tiktoken.model",
                                           "special_tokens_map.json", "generation_config.json"};
constexpr const char* kChatTemplateFile = "chat_template.jinja";

std::string ShapeString(const std::vector<uint64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

// The format a tensor of `tensor`'s dtype is kept in as it is; an F8_E4M3
// tensor's also depends on its scales (Converter::NativeFormat).
absl::StatusOr<TensorFormat> DtypeFormat(const SourceTensor& tensor) {
  switch (tensor.dtype) {
    case SourceDtype::kF32:
      return TensorFormat::kF32;
    case SourceDtype::kF16:
      return TensorFormat::kF16;
    case SourceDtype::kBF16:
      return TensorFormat::kBF16;
    case SourceDtype::kF8E4M3:  // by its scales' tile: Fp8FormatOf
    case SourceDtype::kU8:
    case SourceDtype::kI8:
    case SourceDtype::kF8E8M0:
      break;
    case SourceDtype::kI32:
    case SourceDtype::kI64:
      return TensorFormat::kF32;  // integers (expert ids) kept as exact float values
    case SourceDtype::kGgmlBlocks:
      return tensor.ggml_format;  // the file's blocks, kept as they are
  }
  return absl::InvalidArgumentError(absl::StrCat("tensor ", tensor.name, " is ",
                                                 SourceTypeName(tensor),
                                                 ", which no storage format reads as values"));
}

// One tensor of the checkpoint as the container will store it.
struct SourcedTensor {
  TensorSpec spec;
  const SourceTensor* source = nullptr;
  const SourceTensor* scale_inv = nullptr;  // FP8 only
  bool padded = false;  // the source is a longer vector, zero past spec.shape
};

// Whether `source` is a vector longer than the 1-D `shape` (TensorRef::zero_padded).
bool PadsVector(const SourceTensor& source, const std::vector<uint64_t>& shape) {
  return shape.size() == 1 && source.shape.size() == 1 && source.shape[0] > shape[0];
}

// A checkpoint tensor whose shape is not the one the config implies; a GGUF
// tensor is named as the file names it, and its config is the file's metadata.
absl::Status ShapeMismatch(const SourceTensor& source, const std::vector<uint64_t>& want) {
  if (source.gguf_name.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("tensor ", source.name, " has shape ",
                                                   ShapeString(source.shape), "; config.json implies ",
                                                   ShapeString(want)));
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "tensor ", source.gguf_name, " (as ", source.name, ") has shape ", ShapeString(source.shape),
      "; the GGUF metadata's sizes imply ", ShapeString(want)));
}

class Converter {
 public:
  // `declared`: the formats the release's config.json declares
  // (ReleaseFormats): its experts', which --experts native holds the tensors
  // to, and its FP8 tile (weight_block_size), which the scales are held to.
  struct Declared {
    std::optional<TensorFormat> experts, fp8;
  };
  Converter(const Checkpoint& checkpoint, const ModelConfig& model, const ConvertOptions& options,
            const TrunkChoice& trunk, Declared declared, ProgressBar& progress)
      : checkpoint_(checkpoint),
        model_(model),
        family_(FamilyOf(model.arch)),
        options_(options),
        trunk_(trunk),
        declared_(declared),
        progress_(progress) {
    for (const TrunkTensor& tensor : TrunkTensors(model_, TensorFormat::kF32)) {
      trunk_tensors_[tensor.spec.name] = tensor;
    }
  }

  // The block scales of F8_E4M3 tensor `name`: DeepSeek V3's NAME_scale_inv
  // (F32), V4's X.scale (E8M0) beside X.weight.
  absl::StatusOr<const SourceTensor*> Fp8Scales(const std::string& name) const {
    const SourceTensor* scales = checkpoint_.Find(name + "_scale_inv");
    const std::string sibling =
        absl::EndsWith(name, ".weight") ? name.substr(0, name.size() - 7) + ".scale" : "";
    if (scales == nullptr && !sibling.empty()) scales = checkpoint_.Find(sibling);
    if (scales == nullptr) {
      return absl::NotFoundError(absl::StrCat("tensor ", name, " is F8_E4M3 but ", name,
                                              "_scale_inv", sibling.empty() ? "" : " or ", sibling,
                                              " is missing"));
    }
    return scales;
  }

  // The format `source` is kept in as it is: its dtype's, and an F8_E4M3
  // tensor's by the tile of its scales (Fp8FormatOf).
  absl::StatusOr<TensorFormat> NativeFormat(const SourceTensor& source) const {
    if (source.dtype != SourceDtype::kF8E4M3) return DtypeFormat(source);
    WARP_ASSIGN_OR_RETURN(const SourceTensor* scales, Fp8Scales(source.name));
    return Fp8FormatOf(source, *scales, declared_.fp8);
  }

  // Whether `tensor` is stored as `format` by copying its bytes (and scales).
  bool IsPassthrough(TensorFormat format, const SourceTensor& tensor) const {
    if (tensor.dtype == SourceDtype::kI32 || tensor.dtype == SourceDtype::kI64) return false;
    absl::StatusOr<TensorFormat> native = NativeFormat(tensor);
    return native.ok() && *native == format;
  }

  // `zero_padded`: the source may be a longer vector whose tail is zero.
  absl::StatusOr<SourcedTensor> Source(const std::string& name, const std::vector<uint64_t>& shape,
                                       TensorFormat format, bool zero_padded = false) const {
    const SourceTensor* source = checkpoint_.Find(name);
    if (source == nullptr) {
      return absl::NotFoundError(absl::StrCat("tensor ", name, " is missing from the checkpoint"));
    }
    const bool padded = zero_padded && PadsVector(*source, shape);
    if (source->shape != shape && !padded) return ShapeMismatch(*source, shape);
    SourcedTensor out{
        .spec = {.name = name, .format = format, .shape = shape}, .source = source, .padded = padded};
    if (padded) WARP_RETURN_IF_ERROR(CheckZeroTail(*source, shape[0]));
    if (source->dtype == SourceDtype::kF8E4M3) {
      WARP_ASSIGN_OR_RETURN(out.scale_inv, Fp8Scales(name));
    }
    if (std::string problem = ShapeProblem(format, shape); !problem.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("tensor ", name, ": ", problem));
    }
    return out;
  }

  // A padded vector's entries past `used` must be zero: else they are data
  // the config's sizes would drop.
  absl::Status CheckZeroTail(const SourceTensor& source, uint64_t used) const {
    std::vector<float> values(source.shape[0]);
    WARP_RETURN_IF_ERROR(checkpoint_.ReadRowsAsFloat(source, nullptr, 0, 1, values));
    for (uint64_t i = used; i < values.size(); ++i) {
      if (values[i] != 0.0f) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor ", source.name, " has shape ", ShapeString(source.shape), "; config.json implies [",
            used, "], and entry ", i, " past them is ", values[i], ", not the zero padding"));
      }
    }
    return absl::OkStatus();
  }

  // The trunk format of one tensor for the --trunk choice.
  absl::StatusOr<TensorFormat> TrunkFormat(const TensorSpec& spec,
                                           const SourceTensor& source) const {
    const auto tensor = trunk_tensors_.find(spec.name);
    if (spec.shape.size() != 2 || (tensor != trunk_tensors_.end() && tensor->second.f32)) {
      return TensorFormat::kF32;
    }
    // A dtype that stores no values (U8 codes) matters only where it is kept;
    // FP8 scales of no tile, or not the config's, are refused whatever the choice.
    const absl::StatusOr<TensorFormat> native = NativeFormat(source);
    if (!native.ok() && (trunk_.native() || source.dtype == SourceDtype::kF8E4M3)) {
      return native.status();
    }
    return trunk_.FormatOf(tensor == trunk_tensors_.end() ? TrunkKind::kOther : tensor->second.kind,
                           native.value_or(TensorFormat::kBF16), spec.shape);
  }

  // Fills bytes [offset, offset + out.size()) of the data (or scale) sub-tensor.
  absl::Status Fill(const SourcedTensor& t, bool scale, uint64_t offset,
                    std::span<std::byte> out) const {
    if (IsPassthrough(t.spec.format, *t.source)) {
      if (!scale) return checkpoint_.Read(*t.source, offset, out);
      // The container's FP8 scales are f32; E8M0 ones convert exactly.
      const SourceTensor& s = *t.scale_inv;
      std::vector<float> scales(s.shape.size() == 2 ? s.shape[0] * s.shape[1] : 0);
      WARP_RETURN_IF_ERROR(checkpoint_.ReadScales(s, scales));
      std::memcpy(out.data(), reinterpret_cast<const std::byte*>(scales.data()) + offset,
                  out.size());
      return absl::OkStatus();
    }
    // Rows of the innermost dimension, as the checkpoint reader counts them.
    const uint64_t cols = t.spec.shape.back();
    const uint64_t rows = NumElements(t.spec.shape) / cols;
    const uint64_t row_bytes =
        scale ? ScaleBytes(t.spec.format, {1, cols}) : DataBytes(t.spec.format, {1, cols});
    const uint64_t first = offset / row_bytes;
    const uint64_t last = std::min(rows, (offset + out.size() + row_bytes - 1) / row_bytes);
    // A padded vector is one row read whole; its zero tail is dropped.
    std::vector<float> values((last - first) * (t.padded ? t.source->shape[0] : cols));
    WARP_RETURN_IF_ERROR(
        checkpoint_.ReadRowsAsFloat(*t.source, t.scale_inv, first, last - first, values));
    values.resize((last - first) * cols);
    std::vector<std::byte> data(DataBytes(t.spec.format, {last - first, cols}));
    std::vector<std::byte> scales(ScaleBytes(t.spec.format, {last - first, cols}));
    EncodeRows(t.spec.format, values, cols, data, scales);
    const std::vector<std::byte>& encoded = scale ? scales : data;
    std::memcpy(out.data(), encoded.data() + (offset - first * row_bytes), out.size());
    return absl::OkStatus();
  }

  // A trunk tensor (`spec` f32 as TrunkTensorSpecs lists it) in the format
  // the --trunk choice gives it, with its checkpoint source.
  absl::StatusOr<SourcedTensor> TrunkSource(const TensorSpec& spec) const {
    const SourceTensor* source = checkpoint_.Find(spec.name);
    if (source == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("tensor ", spec.name, " is missing from the checkpoint"));
    }
    WARP_ASSIGN_OR_RETURN(TensorFormat format, TrunkFormat(spec, *source));
    const auto trunk = trunk_tensors_.find(spec.name);
    return Source(spec.name, spec.shape, format,
                  trunk != trunk_tensors_.end() && trunk->second.zero_padded);
  }

  // A trunk tensor's bytes as WriteTrunk stores them, filled a few MiB at a time
  // (read from the checkpoint again: WriteTrunk streams and keeps nothing).
  absl::StatusOr<StoredTensor> Stored(const TensorSpec& spec) const {
    WARP_ASSIGN_OR_RETURN(SourcedTensor t, TrunkSource(spec));
    const TensorFormat format = t.spec.format;
    StoredTensor stored{.spec = t.spec};
    stored.data.resize(DataBytes(format, spec.shape));
    stored.scale.resize(ScaleBytes(format, spec.shape));
    constexpr uint64_t kChunk = uint64_t{8} << 20;
    for (const bool scale : {false, true}) {
      std::vector<std::byte>& bytes = scale ? stored.scale : stored.data;
      for (uint64_t offset = 0; offset < bytes.size(); offset += kChunk) {
        const uint64_t size = std::min<uint64_t>(kChunk, bytes.size() - offset);
        WARP_RETURN_IF_ERROR(Fill(t, scale, offset, std::span(bytes).subspan(offset, size)));
      }
    }
    return stored;
  }

  absl::Status WriteTrunk(ContainerWriter& writer) const {
    for (const TensorSpec& spec : TrunkTensorSpecs(model_, TensorFormat::kF32)) {
      WARP_ASSIGN_OR_RETURN(SourcedTensor t, TrunkSource(spec));
      absl::Status status;
      auto filler = [&](bool scale) {
        return [&, scale](uint64_t offset, std::span<std::byte> out) {
          if (status.ok()) status = Fill(t, scale, offset, out);
        };
      };
      WARP_RETURN_IF_ERROR(writer.AddTrunkTensor(t.spec, filler(false), filler(true)));
      WARP_RETURN_IF_ERROR(status);
      progress_.Advance(t.source->bytes + (t.scale_inv ? t.scale_inv->bytes : 0));
    }
    return absl::OkStatus();
  }

  // The checkpoint tensor of one record matrix, its shape checked against the record's.
  absl::StatusOr<const SourceTensor*> SliceSource(const CheckpointSlice& slice,
                                                  const TensorSpec& matrix) const {
    const SourceTensor* source = checkpoint_.Find(slice.tensor);
    if (source == nullptr) {
      return absl::NotFoundError(
          absl::StrCat("tensor ", slice.tensor, " is missing from the checkpoint"));
    }
    std::vector<uint64_t> want = matrix.shape;
    if (slice.transposed) std::reverse(want.begin(), want.end());
    if (slice.index) want.insert(want.begin(), model_.num_experts);
    if (source->shape != want) return ShapeMismatch(*source, want);
    return source;
  }

  // The MXFP4 blocks and scales of a record matrix, checked against each
  // other and the record's shape; nullopt when the release ships the matrix
  // as values instead.
  struct Mxfp4Source {
    const SourceTensor* blocks;
    const SourceTensor* scales;
    uint32_t index = 0;  // the expert's slice of fused tensors; 0 for one tensor per expert
  };
  absl::StatusOr<std::optional<Mxfp4Source>> Mxfp4SliceSource(const CheckpointSlice& slice,
                                                              const TensorSpec& matrix) const {
    if (slice.mxfp4_blocks.empty()) return std::nullopt;
    const SourceTensor* blocks = checkpoint_.Find(slice.mxfp4_blocks);
    if (blocks == nullptr) return std::nullopt;
    // DeepSeek V4 names its FP4 codes as the weight itself: values are not codes.
    if (slice.mxfp4_blocks == slice.tensor && !IsCodeDtype(blocks->dtype)) return std::nullopt;
    const SourceTensor* scales = checkpoint_.Find(slice.mxfp4_scales);
    if (scales == nullptr) {
      return absl::NotFoundError(absl::StrCat("tensor ", slice.mxfp4_blocks, " is MXFP4 but ",
                                              slice.mxfp4_scales, " is missing"));
    }
    for (const SourceTensor* t : {blocks, scales}) {
      if (!IsCodeDtype(t->dtype)) {
        return absl::InvalidArgumentError(absl::StrCat(
            "tensor ", t->name, " is ", SourceTypeName(*t), "; MXFP4 ",
            t == blocks ? "blocks" : "scales (E8M0)", " must be U8, I8 or F8_E8M0 codes"));
      }
    }
    // Fused [experts, rows, cols/32, 16] blocks (gpt-oss), or one expert's
    // compressed-tensors weight_packed [rows, cols/2] (Kimi K3): the same bytes.
    const uint64_t rows = matrix.shape[0], cols = matrix.shape[1];
    std::vector<uint64_t> want_blocks = {rows, cols / 2};
    std::vector<uint64_t> want_scales = {rows, cols / 32};
    if (slice.index) {
      want_blocks = {model_.num_experts, rows, cols / 32, 16};
      want_scales.insert(want_scales.begin(), model_.num_experts);
    }
    if (blocks->shape != want_blocks) {
      return absl::InvalidArgumentError(
          absl::StrCat("tensor ", blocks->name, " has shape ", ShapeString(blocks->shape),
                       "; config.json implies ", ShapeString(want_blocks)));
    }
    if (scales->shape != want_scales) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor ", scales->name, " has shape ", ShapeString(scales->shape),
          ", which disagrees with its blocks ", blocks->name, " ", ShapeString(blocks->shape),
          " (one scale per 32 values: ", ShapeString(want_scales), ")"));
    }
    return Mxfp4Source{blocks, scales, slice.index.value_or(0)};
  }

  // One expert's MXFP4 matrix: its bytes as they are into an mxfp4_b32 record
  // matrix, else decoded and re-encoded (--experts q8|q4).
  absl::Status FillFromMxfp4(const Mxfp4Source& source, const TensorEntry& matrix,
                             std::span<std::byte> record) const {
    const uint64_t index = source.index;
    const uint64_t rows = matrix.shape[0], cols = matrix.shape[1];
    const uint64_t data_bytes = rows * cols / 2, scale_bytes = rows * cols / 32;
    std::vector<std::byte> data(data_bytes), scales(scale_bytes);
    WARP_RETURN_IF_ERROR(checkpoint_.Read(*source.blocks, index * data_bytes, data));
    WARP_RETURN_IF_ERROR(checkpoint_.Read(*source.scales, index * scale_bytes, scales));
    progress_.Advance(data_bytes + scale_bytes);
    std::span<std::byte> out = record.subspan(matrix.data.offset, matrix.data.bytes);
    if (matrix.format == TensorFormat::kMxfp4B32) {
      std::copy(data.begin(), data.end(), out.begin());
      std::copy(scales.begin(), scales.end(), record.begin() + matrix.scale->offset);
      return absl::OkStatus();
    }
    const kernels::MatrixView view{.format = TensorFormat::kMxfp4B32,
                                   .rows = rows,
                                   .cols = cols,
                                   .data = data.data(),
                                   .scale = scales.data()};
    std::vector<float> values(rows * cols);
    for (uint64_t r = 0; r < rows; ++r) {
      kernels::DequantizeRow(view, r, std::span(values).subspan(r * cols, cols));
    }
    std::vector<std::byte> encoded_scales(ScaleBytes(matrix.format, {rows, cols}));
    EncodeRows(matrix.format, values, cols, out, encoded_scales);
    if (matrix.scale) {
      std::copy(encoded_scales.begin(), encoded_scales.end(),
                record.begin() + matrix.scale->offset);
    }
    return absl::OkStatus();
  }

  // Where the family says one expert matrix lives, narrowed to the checkpoint's
  // own tensor of that expert when it has one (GGUF).
  CheckpointSlice ExpertSlice(uint32_t layer, uint32_t expert, std::string_view matrix) const {
    CheckpointSlice slice = family_.ExpertSlice(model_, layer, expert, matrix);
    if (!slice.expert_tensor.empty() && checkpoint_.Find(slice.expert_tensor) != nullptr) {
      return CheckpointSlice{.tensor = slice.expert_tensor};
    }
    return slice;
  }

  // The native format of one record matrix: its expert 0's in the checkpoint.
  absl::StatusOr<TensorFormat> NativeMatrixFormat(uint32_t layer, const TensorSpec& matrix) const {
    const CheckpointSlice slice = ExpertSlice(layer, 0, matrix.name);
    WARP_ASSIGN_OR_RETURN(std::optional<Mxfp4Source> mxfp4, Mxfp4SliceSource(slice, matrix));
    if (mxfp4) return TensorFormat::kMxfp4B32;  // the release's blocks, kept as they are
    WARP_ASSIGN_OR_RETURN(const SourceTensor* source, SliceSource(slice, matrix));
    return NativeFormat(*source);
  }

  // The record matrices of a layer's bank. --experts native keeps each
  // matrix's own format: llama.cpp's Q4_K_M stores a layer's down matrices
  // as Q6_K beside Q4_K gate and up.
  absl::StatusOr<std::vector<TensorSpec>> ExpertSpecs(uint32_t layer) const {
    if (options_.experts == "q8") return ExpertMatrixSpecs(model_, TensorFormat::kQ8B32);
    if (options_.experts == "q4") return ExpertMatrixSpecs(model_, TensorFormat::kQ4B32);
    if (options_.experts == "vq3r") return ExpertMatrixSpecs(model_, TensorFormat::kVq3rB32);
    const TensorSpec first = ExpertMatrixSpecs(model_, TensorFormat::kF32).front();
    WARP_ASSIGN_OR_RETURN(TensorFormat layer_format, NativeMatrixFormat(layer, first));
    if (declared_.experts && layer_format != *declared_.experts) {
      const CheckpointSlice slice = ExpertSlice(layer, 0, first.name);
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor ", slice.mxfp4_blocks.empty() ? slice.tensor : slice.mxfp4_blocks, " holds ",
          std::string(TensorFormatName(layer_format)), " experts, but config.json declares ",
          std::string(TensorFormatName(*declared_.experts)),
          " (quantization_config / expert_dtype): the config and the tensors disagree"));
    }
    std::vector<TensorSpec> specs = ExpertMatrixSpecs(model_, layer_format);
    for (TensorSpec& spec : specs) {
      if (spec.format != layer_format || spec.shape.size() != 2) continue;  // vectors stay f32
      WARP_ASSIGN_OR_RETURN(TensorFormat own, NativeMatrixFormat(layer, spec));
      if (std::string problem = ShapeProblem(own, spec.shape); !problem.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("layer ", layer, " expert matrix ", spec.name, ": ", problem));
      }
      spec.format = own;
    }
    return specs;
  }

  // Fills one record matrix from its slice of the checkpoint: the bytes as
  // they are when the format is the source's and the layout matches, else
  // the values re-encoded (transposed first where the release stores [in, out]).
  absl::Status FillExpertMatrix(uint32_t layer, uint32_t expert, const TensorEntry& matrix,
                                std::span<std::byte> record) const {
    if (NeedsCodebook(matrix.format)) {
      const Vq3rCodebook* codebook = codebooks_.Find(layer, matrix.name);
      WARP_CHECK(codebook != nullptr);  // TrainCodebooks ran for the bank
      WARP_ASSIGN_OR_RETURN(std::vector<float> values, ExpertMatrixValues(layer, expert, matrix));
      EncodeVq3rRows(*codebook, values, matrix.shape[1],
                     record.subspan(matrix.data.offset, matrix.data.bytes),
                     record.subspan(matrix.scale->offset, matrix.scale->bytes));
      return absl::OkStatus();
    }
    const CheckpointSlice slice = ExpertSlice(layer, expert, matrix.name);
    const TensorSpec spec{.name = slice.tensor, .format = matrix.format, .shape = matrix.shape};
    WARP_ASSIGN_OR_RETURN(std::optional<Mxfp4Source> mxfp4, Mxfp4SliceSource(slice, spec));
    if (mxfp4) return FillFromMxfp4(*mxfp4, matrix, record);
    WARP_ASSIGN_OR_RETURN(const SourceTensor* source, SliceSource(slice, spec));
    std::span<std::byte> data = record.subspan(matrix.data.offset, matrix.data.bytes);
    if (!slice.index && !slice.transposed) {  // one tensor per expert: the trunk's path
      WARP_ASSIGN_OR_RETURN(SourcedTensor t, Source(slice.tensor, matrix.shape, matrix.format));
      if (options_.experts == "native" && !IsPassthrough(matrix.format, *t.source)) {
        return absl::InvalidArgumentError(
            absl::StrCat("tensor ", slice.tensor, " is ", SourceTypeName(*t.source),
                         " but expert 0's is ", std::string(TensorFormatName(matrix.format)),
                         "; --experts native needs one dtype per matrix across a layer's experts"));
      }
      WARP_RETURN_IF_ERROR(Fill(t, false, 0, data));
      if (matrix.scale) {
        WARP_RETURN_IF_ERROR(
            Fill(t, true, 0, record.subspan(matrix.scale->offset, matrix.scale->bytes)));
      }
      progress_.Advance(t.source->bytes + (t.scale_inv ? t.scale_inv->bytes : 0));
      return absl::OkStatus();
    }
    // A slice of a fused [experts, ...] tensor.
    const uint64_t elements = NumElements(matrix.shape);
    const uint64_t rows = matrix.shape.size() == 2 ? matrix.shape[0] : 1;
    const uint64_t cols = matrix.shape.back();
    const uint64_t slice_rows = slice.transposed ? cols : rows;  // rows as stored
    std::vector<float> values(elements);
    WARP_RETURN_IF_ERROR(checkpoint_.ReadRowsAsFloat(
        *source, nullptr, uint64_t{expert} * slice_rows, slice_rows, values));
    if (slice.transposed) {
      std::vector<float> stored = std::move(values);
      values.assign(elements, 0.0f);
      for (uint64_t r = 0; r < rows; ++r) {
        for (uint64_t c = 0; c < cols; ++c) values[r * cols + c] = stored[c * rows + r];
      }
    }
    std::vector<std::byte> scales(ScaleBytes(matrix.format, {rows, cols}));
    EncodeRows(matrix.format, values, cols, data, scales);
    if (matrix.scale) {
      std::copy(scales.begin(), scales.end(), record.begin() + matrix.scale->offset);
    }
    progress_.Advance(source->bytes / model_.num_experts);
    return absl::OkStatus();
  }

  // One expert matrix as float32 values, row-major, as the release holds it
  // (decoded from its format, transposed where it is stored [in, out]). The
  // bytes read count in this converter's progress.
  absl::StatusOr<std::vector<float>> ExpertMatrixValues(uint32_t layer, uint32_t expert,
                                                        const TensorEntry& matrix) const {
    const uint64_t elements = NumElements(matrix.shape);
    const TensorEntry as_f32{.name = matrix.name,
                             .format = TensorFormat::kF32,
                             .shape = matrix.shape,
                             .data = {.offset = 0, .bytes = elements * sizeof(float)}};
    std::vector<float> values(elements);
    WARP_RETURN_IF_ERROR(
        FillExpertMatrix(layer, expert, as_f32, std::as_writable_bytes(std::span<float>(values))));
    return values;
  }

  // Fits the codebook of each vector-quantized matrix of `bank` to a sample
  // of its vectors from up to kCodebookExperts experts, evenly spaced.
  absl::Status TrainCodebooks(const BankEntry& bank) {
    constexpr uint32_t kCodebookExperts = 8;
    constexpr uint64_t kSampleVectors = uint64_t{1} << 17;  // 2 MiB of floats
    ProgressBar uncounted("", 0, /*enabled=*/false);        // the encoding pass counts the bytes
    const Converter sampler(checkpoint_, model_, options_, trunk_, declared_, uncounted);
    for (const TensorEntry& matrix : bank.matrices) {
      if (!NeedsCodebook(matrix.format)) continue;
      Vq3rSample sample(kSampleVectors, Fnv1a64(absl::StrCat(bank.layer, ".", matrix.name)));
      const uint32_t experts = std::min(kCodebookExperts, bank.num_experts);
      for (uint32_t n = 0; n < experts; ++n) {
        const uint32_t expert = static_cast<uint32_t>(uint64_t{n} * bank.num_experts / experts);
        WARP_ASSIGN_OR_RETURN(std::vector<float> values,
                              sampler.ExpertMatrixValues(bank.layer, expert, matrix));
        sample.AddRows(values, matrix.shape[1]);
      }
      if (sample.seen() == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("layer ", bank.layer, " ", matrix.name,
                         ": every sampled expert's matrix is zero or not finite; "
                         "no codebook can be trained"));
      }
      codebooks_.Add(bank.layer, matrix.name, sample.Train());
    }
    return absl::OkStatus();
  }

  const Codebooks& codebooks() const { return codebooks_; }

  absl::Status WriteBanks(ContainerWriter& writer) {
    for (uint32_t layer = 0; layer < model_.num_layers; ++layer) {
      if (!model_.IsMoeLayer(layer)) continue;
      WARP_ASSIGN_OR_RETURN(std::vector<TensorSpec> specs, ExpertSpecs(layer));
      const BankEntry bank = LayoutBank(layer, model_.num_experts, specs);
      WARP_RETURN_IF_ERROR(TrainCodebooks(bank));
      WARP_RETURN_IF_ERROR(writer.BeginBank(bank));
      for (uint32_t expert = 0; expert < bank.num_experts; ++expert) {
        std::span<std::byte> record = writer.NextRecord();
        for (const TensorEntry& matrix : bank.matrices) {
          WARP_RETURN_IF_ERROR(FillExpertMatrix(layer, expert, matrix, record));
        }
        writer.CommitRecord();
      }
      WARP_RETURN_IF_ERROR(writer.EndBank());
    }
    return absl::OkStatus();
  }

 private:
  const Checkpoint& checkpoint_;
  const ModelConfig& model_;
  const ModelFamily& family_;
  const ConvertOptions& options_;
  const TrunkChoice& trunk_;
  absl::flat_hash_map<std::string, TrunkTensor> trunk_tensors_;  // by name
  const Declared declared_;
  ProgressBar& progress_;
  Codebooks codebooks_;  // of the vq3r_b32 matrices, filled bank by bank
};

absl::Status CheckOptions(const ConvertOptions& options) {
  if (options.experts != "native" && options.experts != "q8" && options.experts != "q4" &&
      options.experts != "vq3r") {
    return absl::InvalidArgumentError(
        absl::StrCat("--experts ", options.experts, ": expected native, q8, q4 or vq3r"));
  }
  return TrunkChoice::Parse(options.trunk).status();
}

// Writes the chat template embedded in tokenizer_config.json ("chat_template": a string, or a
// list of {name, template} whose "default" applies) to its own file, so that every container
// names its template the same way. Returns false when the config has none.
absl::StatusOr<bool> ExtractChatTemplate(const fs::path& tokenizer_config, const fs::path& to) {
  if (!fs::exists(tokenizer_config)) return false;
  WARP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(tokenizer_config));
  WARP_RETURN_IF_ERROR(CheckJsonDepth(text, tokenizer_config.string()));
  const json config = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(tokenizer_config.string(), ": not a JSON object"));
  }
  const json* source = nullptr;
  if (auto it = config.find("chat_template"); it != config.end()) {
    if (it->is_string()) source = &*it;
    if (it->is_array()) {
      for (const json& named : *it) {
        if (named.is_object() && named.value("name", "") == "default" &&
            named.contains("template") && named["template"].is_string()) {
          source = &named["template"];
        }
      }
    }
    if (source == nullptr && !it->is_null()) {
      return absl::InvalidArgumentError(absl::StrCat(
          tokenizer_config.string(),
          ": chat_template: expected a string or a list with a \"default\" {name, template}"));
    }
  }
  if (source == nullptr) return false;
  WARP_RETURN_IF_ERROR(WriteFileAtomically(to, source->get<std::string>()));
  return true;
}

// Copies the tokenizer files the release ships; returns the manifest reference.
absl::StatusOr<std::optional<TokenizerRef>> CopyTokenizer(const fs::path& from,
                                                          const fs::path& to) {
  TokenizerRef ref;
  // Read and written whole rather than fs::copy_file, whose sendfile path
  // reported a full disk as "Input/output error".
  auto copy = [&](const char* name) -> absl::Status {
    WARP_ASSIGN_OR_RETURN(std::string contents, ReadFileToString(from / name));
    return WriteFileAtomically(to / name, contents);
  };
  for (const char* name : kTokenizerFiles) {
    if (!fs::exists(from / name)) continue;
    WARP_RETURN_IF_ERROR(copy(name));
    ref.files.push_back(name);
  }
  if (fs::exists(from / kChatTemplateFile)) {
    WARP_RETURN_IF_ERROR(copy(kChatTemplateFile));
    ref.chat_template = kChatTemplateFile;
  } else {
    WARP_ASSIGN_OR_RETURN(bool extracted, ExtractChatTemplate(from / "tokenizer_config.json",
                                                              to / kChatTemplateFile));
    if (extracted) ref.chat_template = kChatTemplateFile;
  }
  if (ref.files.empty() && ref.chat_template.empty()) return std::nullopt;
  return ref;
}

// Whether `ref` names a file text::Tokenizer::Load reads (tokenizer.model, SentencePiece's own
// format, is copied but not read).
bool HasTokenizerFile(const std::optional<TokenizerRef>& ref) {
  if (!ref) return false;
  for (const std::string& name : ref->files) {
    if (name == "tokenizer.json" || name == "tiktoken.model") return true;
  }
  return false;
}

// Identifies the checkpoint: its config and every tensor's name, dtype, shape and size.
uint64_t CheckpointFingerprint(const json& config, const Checkpoint& checkpoint,
                               const ConvertOptions& options) {
  uint64_t hash = Fnv1a64(config.dump());
  hash = Fnv1a64(absl::StrCat("experts=", options.experts, " trunk=", options.trunk), hash);
  for (const auto& [name, tensor] : checkpoint.tensors()) {
    hash = Fnv1a64(absl::StrCat(name, ":", SourceTypeName(tensor), ShapeString(tensor.shape), ":",
                                tensor.bytes, ";"),
                   hash);
  }
  return hash;
}

// What a conversion reads: the config.json (a release's, or one a GGUF file's
// hyper-parameters stand for) and the tensors.
struct ConvertInput {
  json config;
  std::unique_ptr<Checkpoint> checkpoint;
  std::optional<std::string> gguf_chat_template;  // GGUF only
  std::optional<GgufTokenizerFiles> gguf_tokenizer;
  bool from_gguf = false;
};

absl::StatusOr<ConvertInput> OpenInput(const fs::path& from) {
  ConvertInput input;
  if (IsGgufPath(from)) {
    WARP_ASSIGN_OR_RETURN(GgufImport gguf, ImportGguf(from));
    input.config = std::move(gguf.config);
    input.checkpoint = std::move(gguf.checkpoint);
    input.gguf_chat_template = std::move(gguf.chat_template);
    input.gguf_tokenizer = std::move(gguf.tokenizer);
    input.from_gguf = true;
    return input;
  }
  const fs::path config_path = from / "config.json";
  WARP_ASSIGN_OR_RETURN(std::string config_text, ReadFileToString(config_path));
  WARP_RETURN_IF_ERROR(CheckJsonDepth(config_text, config_path.string()));
  input.config = json::parse(config_text, nullptr, /*allow_exceptions=*/false);
  if (!input.config.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(config_path.string(), ": not a JSON object"));
  }
  WARP_ASSIGN_OR_RETURN(input.checkpoint, Checkpoint::Open(from));
  return input;
}

// The tokenizer and chat template of the container: a release's files, or
// what a GGUF file's metadata holds.
absl::StatusOr<std::optional<TokenizerRef>> WriteTokenizer(const ConvertInput& input,
                                                           const fs::path& from,
                                                           const fs::path& out) {
  if (!input.from_gguf) return CopyTokenizer(from, out);
  TokenizerRef ref;
  if (input.gguf_tokenizer) {
    WARP_RETURN_IF_ERROR(
        WriteFileAtomically(out / "tokenizer.json", input.gguf_tokenizer->tokenizer_json));
    WARP_RETURN_IF_ERROR(WriteFileAtomically(out / "tokenizer_config.json",
                                             input.gguf_tokenizer->tokenizer_config_json));
    ref.files = {"tokenizer.json", "tokenizer_config.json"};
  }
  if (input.gguf_chat_template) {
    WARP_RETURN_IF_ERROR(WriteFileAtomically(out / kChatTemplateFile, *input.gguf_chat_template));
    ref.chat_template = kChatTemplateFile;
  }
  if (ref.files.empty() && ref.chat_template.empty()) return std::nullopt;
  return ref;
}

}  // namespace

absl::StatusOr<ConvertResult> ConvertCheckpoint(const fs::path& from, const fs::path& out,
                                                const ConvertOptions& options) {
  WARP_RETURN_IF_ERROR(CheckOptions(options));
  WARP_ASSIGN_OR_RETURN(ConvertInput input, OpenInput(from));
  const json& config = input.config;
  const Checkpoint& checkpoint = *input.checkpoint;
  const std::string config_source =
      input.from_gguf ? from.string() : (from / "config.json").string();
  const std::string model_type = config.value("model_type", std::string());
  absl::StatusOr<ModelConfig> model = ParseModelConfig(model_type, config);
  if (!model.ok()) return Annotate(model.status(), config_source);
  // A release's own word on its formats: a quantization_config WARP does not
  // convert is refused before anything is written.
  Converter::Declared declared;
  if (!input.from_gguf) {
    WARP_ASSIGN_OR_RETURN(const ReleaseFormats release, ReadReleaseFormats(config, config_source));
    if (release.declares_experts) declared.experts = release.experts;
    if (release.block_fp8) declared.fp8 = release.fp8;
  }

  // DeepSeek V4.1: the engram's token map comes from the release's tokenizer,
  // and its tables' sizes from its hash; either wrong is refused before writing.
  if (!model->engram.layers.empty()) {
    const fs::path tokenizer = from / "tokenizer.json";
    if (!fs::exists(tokenizer)) {
      return absl::FailedPreconditionError(absl::StrCat(
          tokenizer.string(), ": missing; the engram's token map (engram_layer_ids) is built "
                              "from the release's tokenizer"));
    }
    absl::StatusOr<EngramAddressing> addressing = LoadEngramAddressing(*model, tokenizer);
    if (!addressing.ok()) return Annotate(addressing.status(), from.string());
  }

  Manifest header;
  header.architecture = std::string(ArchitectureName(model->arch));
  header.config = config;
  header.source = absl::StrCat("computed convert ", from.string(), " --experts ", options.experts,
                               " --trunk ", options.trunk);
  header.fingerprint = CheckpointFingerprint(config, checkpoint, options);
  WARP_ASSIGN_OR_RETURN(auto writer, ContainerWriter::Create(out, std::move(header),
                                                             {.direct_io = options.direct_io}));
  Logger("computed")
      .info("converting {} ({}, {} layers, {} experts/layer, {}) to {}", from.string(), model_type,
            model->num_layers, model->num_experts, FormatBytes(checkpoint.total_bytes()),
            out.string());
  ProgressBar progress("convert", checkpoint.total_bytes(), options.show_progress);
  const TrunkChoice trunk = *TrunkChoice::Parse(options.trunk);  // CheckOptions parsed it
  Converter converter(checkpoint, *model, options, trunk, declared, progress);
  absl::Status status = converter.WriteTrunk(*writer);
  if (status.ok() && options.early_route_folds) {
    status = WriteEarlyRouteFolds(*writer, *model, TensorFormat::kF32,
                                  [&](const TensorSpec& spec) { return converter.Stored(spec); });
  }
  if (status.ok()) status = converter.WriteBanks(*writer);
  if (status.ok()) {
    status = WriteEngramTables(checkpoint, *model, *writer,
                               [&](uint64_t bytes) { progress.Advance(bytes); });
  }
  if (status.ok() && !converter.codebooks().empty()) {
    status = writer->SetCodebooks(converter.codebooks());
  }
  if (!status.ok()) return Annotate(status, from.string());
  // Tensors kept verbatim for a later use (DeepSeek V4.1's DSpark).
  const std::optional<KeptTensorsRule> keep = FamilyOf(model->arch).KeptTensors();
  if (keep && !input.from_gguf) {
    WARP_ASSIGN_OR_RETURN(
        std::optional<KeptTensorsEntry> kept,
        WriteKeptTensors(checkpoint, *keep, out, [&](uint64_t bytes) { progress.Advance(bytes); }));
    if (kept) {
      Logger("computed").info("kept the {} tensors of the {} in {} ({}): not used to decode yet",
                              kept->tensors, kept->about, kept->file, FormatBytes(kept->bytes));
      writer->AddKeptTensors(*std::move(kept));
    }
  }
  // DeepSeek V4 (mtp.*) and GLM-5.3 (layers.<num_hidden_layers>.*) ship a
  // multi-token-prediction layer; WARP decodes one token a step.
  const std::string next_layer = absl::StrCat("layers.", model->num_layers, ".");
  size_t mtp = 0;
  for (const auto& entry : checkpoint.tensors()) {
    const std::string& name = entry.first;  // a named reference: clang 15 captures no binding
    if (keep && std::any_of(keep->prefixes.begin(), keep->prefixes.end(),
                            [&](const std::string& p) { return absl::StartsWith(name, p); })) {
      continue;
    }
    mtp += absl::StartsWith(name, "mtp.") || absl::StartsWith(name, "model.mtp.") ||
           absl::StartsWith(name, next_layer) || absl::StrContains(name, "." + next_layer);
  }
  if (mtp > 0) {
    Logger("computed").info("skipped the {} tensors of the MTP layer: not used to decode", mtp);
  }
  // DeepSeek V4.1's vision tower and aligner, and its routers' image bias:
  // WARP reads text.
  size_t vision = 0, image_bias = 0;
  for (const auto& [name, tensor] : checkpoint.tensors()) {
    vision += absl::StartsWith(name, "vision.") || absl::StartsWith(name, "aligner.");
    image_bias += absl::EndsWith(name, ".ffn.gate.bias_vl");
  }
  if (vision > 0) {
    Logger("computed").info("skipped the {} tensors of the vision tower: WARP reads text", vision);
  }
  if (image_bias > 0) {
    Logger("computed").info("skipped the {} routers' bias_vl: used for image tokens only",
                            image_bias);
  }
  WARP_ASSIGN_OR_RETURN(std::optional<TokenizerRef> tokenizer, WriteTokenizer(input, from, out));
  if (!HasTokenizerFile(tokenizer)) {
    Logger("computed")
        .warn("{}: no tokenizer.json or tiktoken.model; the container takes and prints token ids",
              from.string());
  }
  writer->SetTokenizer(tokenizer);
  WARP_RETURN_IF_ERROR(writer->Finish());
  progress.Finish();
  return ConvertResult{.manifest = writer->manifest(),
                       .bytes_read = progress.done_bytes(),
                       .seconds = progress.elapsed_seconds()};
}

}  // namespace warp::computed
