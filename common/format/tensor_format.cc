#include "common/format/tensor_format.h"

#include "absl/strings/str_cat.h"

namespace warp {
namespace {

constexpr uint64_t kMaxElements = uint64_t{1} << 56;

uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

}  // namespace

std::string_view TensorFormatName(TensorFormat format) {
  const auto index = static_cast<size_t>(format);
  return index < kNumTensorFormats ? kFormatTraits[index].name : "unknown";
}

std::optional<TensorFormat> ParseTensorFormat(std::string_view name) {
  for (const FormatTraits& traits : kFormatTraits) {
    if (traits.name == name) return traits.format;
  }
  return std::nullopt;
}

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
  const FormatTraits& traits = TraitsOf(format);
  const bool two_d = traits.ggml_block || traits.scale.type != ScaleType::kNone;
  if (two_d && shape.size() != 2) {
    return absl::StrCat(std::string(traits.name), " needs a 2-D shape");
  }
  if (traits.block_elements > 1 && shape.back() % traits.block_elements != 0) {
    return absl::StrCat(std::string(traits.name), " needs columns divisible by ",
                        traits.block_elements, ", has ", shape.back());
  }
  return "";
}

uint64_t DataBytes(TensorFormat format, const std::vector<uint64_t>& shape) {
  const FormatTraits& traits = TraitsOf(format);
  return NumElements(shape) / traits.block_elements * traits.block_bytes;
}

uint64_t ScaleBytes(TensorFormat format, const std::vector<uint64_t>& shape) {
  const ScaleBlock& scale = TraitsOf(format).scale;
  if (scale.type == ScaleType::kNone) return 0;
  return CeilDiv(shape[0], scale.rows) * CeilDiv(shape[1], scale.cols) * ScaleTypeBytes(scale.type);
}

}  // namespace warp
