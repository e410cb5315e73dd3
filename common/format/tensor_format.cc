#include "common/format/tensor_format.h"

#include "absl/strings/str_cat.h"

namespace warp {
namespace {

struct FormatInfo {
  TensorFormat format;
  std::string_view name;
};

constexpr FormatInfo kFormats[] = {
    {TensorFormat::kF32, "f32"},      {TensorFormat::kF16, "f16"},
    {TensorFormat::kBF16, "bf16"},    {TensorFormat::kF8E4M3B128, "f8_e4m3_b128"},
    {TensorFormat::kQ8B32, "q8_b32"}, {TensorFormat::kQ4B32, "q4_b32"},
    {TensorFormat::kMxfp4B32, "mxfp4_b32"}, {TensorFormat::kGgmlQ8_0, "ggml_q8_0"},
    {TensorFormat::kGgmlQ4_0, "ggml_q4_0"},  {TensorFormat::kGgmlMxfp4, "ggml_mxfp4"},
    {TensorFormat::kGgmlQ4_1, "ggml_q4_1"},  {TensorFormat::kGgmlQ5_0, "ggml_q5_0"},
    {TensorFormat::kGgmlQ5_1, "ggml_q5_1"},  {TensorFormat::kGgmlQ2_K, "ggml_q2_k"},
    {TensorFormat::kGgmlQ3_K, "ggml_q3_k"},  {TensorFormat::kGgmlQ4_K, "ggml_q4_k"},
    {TensorFormat::kGgmlQ5_K, "ggml_q5_k"},  {TensorFormat::kGgmlQ6_K, "ggml_q6_k"},
    {TensorFormat::kVq3rB32, "vq3r_b32"},
};

constexpr uint64_t kMaxElements = uint64_t{1} << 56;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string_view TensorFormatName(TensorFormat format) {
  for (const FormatInfo& info : kFormats) {
    if (info.format == format) return info.name;
  }
  return "unknown";
}

std::optional<TensorFormat> ParseTensorFormat(std::string_view name) {
  for (const FormatInfo& info : kFormats) {
    if (info.name == name) return info.format;
  }
  return std::nullopt;
}

std::optional<GgmlBlockLayout> GgmlBlockLayoutOf(TensorFormat format) {
  switch (format) {
    case TensorFormat::kGgmlQ8_0:
      return GgmlBlockLayout{32, 34};
    case TensorFormat::kGgmlQ4_0:
      return GgmlBlockLayout{32, 18};
    case TensorFormat::kGgmlMxfp4:
      return GgmlBlockLayout{32, 17};
    case TensorFormat::kGgmlQ4_1:
      return GgmlBlockLayout{32, 20};
    case TensorFormat::kGgmlQ5_0:
      return GgmlBlockLayout{32, 22};
    case TensorFormat::kGgmlQ5_1:
      return GgmlBlockLayout{32, 24};
    case TensorFormat::kGgmlQ2_K:
      return GgmlBlockLayout{256, 84};
    case TensorFormat::kGgmlQ3_K:
      return GgmlBlockLayout{256, 110};
    case TensorFormat::kGgmlQ4_K:
      return GgmlBlockLayout{256, 144};
    case TensorFormat::kGgmlQ5_K:
      return GgmlBlockLayout{256, 176};
    case TensorFormat::kGgmlQ6_K:
      return GgmlBlockLayout{256, 210};
    default:
      return std::nullopt;
  }
}

bool HasScale(TensorFormat format) {
  return format == TensorFormat::kF8E4M3B128 || format == TensorFormat::kQ8B32 ||
         format == TensorFormat::kQ4B32 || format == TensorFormat::kMxfp4B32 ||
         format == TensorFormat::kVq3rB32;
}

bool NeedsCodebook(TensorFormat format) { return format == TensorFormat::kVq3rB32; }

uint64_t NumElements(const std::vector<uint64_t>& shape) {
  uint64_t n = 1;
  for (uint64_t dim : shape) n *= dim;
  return n;
}

std::string ShapeProblem(TensorFormat format, const std::vector<uint64_t>& shape) {
  // Matrices and vectors, and the few small N-D trunk tensors releases ship
  // as they are (Kimi's [D, 1, K] conv taps and [1, 1, H, 1] decay rates).
  if (shape.empty() || shape.size() > 4) {
    return absl::StrCat("shape must have 1 to 4 dimensions, has ", shape.size());
  }
  uint64_t elements = 1;
  for (uint64_t dim : shape) {
    if (dim == 0) return "shape has a zero dimension";
    // Bounded so that byte sizes (up to 4 bytes an element) never overflow.
    if (__builtin_mul_overflow(elements, dim, &elements) || elements > kMaxElements) {
      return absl::StrCat("shape has more than 2^56 elements");
    }
  }
  if (std::optional<GgmlBlockLayout> block = GgmlBlockLayoutOf(format)) {
    if (shape.size() != 2) {
      return absl::StrCat(std::string(TensorFormatName(format)), " needs a 2-D shape");
    }
    if (shape[1] % block->elements != 0) {
      return absl::StrCat(std::string(TensorFormatName(format)), " needs columns divisible by ",
                          block->elements, ", has ", shape[1]);
    }
    return "";
  }
  if (!HasScale(format)) return "";
  if (shape.size() != 2) {
    return absl::StrCat(std::string(TensorFormatName(format)), " needs a 2-D shape");
  }
  if (format != TensorFormat::kF8E4M3B128 && shape[1] % kRowBlock != 0) {
    return absl::StrCat(std::string(TensorFormatName(format)), " needs columns divisible by ",
                        kRowBlock, ", has ", shape[1]);
  }
  return "";
}

uint64_t DataBytes(TensorFormat format, const std::vector<uint64_t>& shape) {
  const uint64_t n = NumElements(shape);
  switch (format) {
    case TensorFormat::kF32:
      return n * 4;
    case TensorFormat::kF16:
    case TensorFormat::kBF16:
      return n * 2;
    case TensorFormat::kF8E4M3B128:
    case TensorFormat::kQ8B32:
      return n;
    case TensorFormat::kQ4B32:
    case TensorFormat::kMxfp4B32:
      return n / 2;
    case TensorFormat::kVq3rB32:
      return n / 8 * 3;  // 12 bits per 4 elements
    case TensorFormat::kGgmlQ8_0:
    case TensorFormat::kGgmlQ4_0:
    case TensorFormat::kGgmlMxfp4:
    case TensorFormat::kGgmlQ4_1:
    case TensorFormat::kGgmlQ5_0:
    case TensorFormat::kGgmlQ5_1:
    case TensorFormat::kGgmlQ2_K:
    case TensorFormat::kGgmlQ3_K:
    case TensorFormat::kGgmlQ4_K:
    case TensorFormat::kGgmlQ5_K:
    case TensorFormat::kGgmlQ6_K: {
      const GgmlBlockLayout block = *GgmlBlockLayoutOf(format);
      return n / block.elements * block.bytes;
    }
  }
  return 0;
}

uint64_t ScaleBytes(TensorFormat format, const std::vector<uint64_t>& shape) {
  switch (format) {
    case TensorFormat::kF8E4M3B128:
      return CeilDiv(shape[0], kFp8Block) * CeilDiv(shape[1], kFp8Block) * 4;
    case TensorFormat::kQ8B32:
    case TensorFormat::kQ4B32:
    case TensorFormat::kVq3rB32:
      return shape[0] * (shape[1] / kRowBlock) * 2;
    case TensorFormat::kMxfp4B32:
      return shape[0] * (shape[1] / kRowBlock);
    default:
      return 0;
  }
}

}  // namespace warp
