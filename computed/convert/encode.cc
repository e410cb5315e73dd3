#include "computed/convert/encode.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <iterator>

#include "common/check.h"
#include "common/numeric/half.h"

namespace warp::computed {
namespace {

void Store16(std::byte* out, uint16_t value) { std::memcpy(out, &value, 2); }

// One block of kRowBlock values: returns the stored f16 scale; writes codes.
template <int kMaxCode>
uint16_t QuantizeBlock(const float* x, int8_t* codes) {
  float amax = 0.0f;
  for (uint64_t i = 0; i < kRowBlock; ++i) amax = std::max(amax, std::fabs(x[i]));
  // Beyond the f16 range the scale saturates at the largest finite half (65504)
  // and so do the codes: an infinite scale would decode the block to 0 x inf = NaN.
  const uint16_t scale_bits = FloatToHalf(std::min(amax / kMaxCode, 65504.0f));
  const float scale = HalfToFloat(scale_bits);
  for (uint64_t i = 0; i < kRowBlock; ++i) {
    const float q = scale == 0.0f ? 0.0f : std::nearbyint(x[i] / scale);
    codes[i] = static_cast<int8_t>(
        std::clamp(q, -static_cast<float>(kMaxCode), static_cast<float>(kMaxCode)));
  }
  return scale_bits;
}

using RowsEncoder = void (*)(std::span<const float> rows, uint64_t cols, std::span<std::byte> data,
                             std::span<std::byte> scale);

void EncodeF32(std::span<const float> rows, uint64_t, std::span<std::byte> data,
               std::span<std::byte>) {
  std::memcpy(data.data(), rows.data(), rows.size() * 4);
}

void EncodeF16(std::span<const float> rows, uint64_t, std::span<std::byte> data,
               std::span<std::byte>) {
  for (uint64_t i = 0; i < rows.size(); ++i) Store16(data.data() + 2 * i, FloatToHalf(rows[i]));
}

void EncodeBf16(std::span<const float> rows, uint64_t, std::span<std::byte> data,
                std::span<std::byte>) {
  for (uint64_t i = 0; i < rows.size(); ++i) Store16(data.data() + 2 * i, FloatToBf16(rows[i]));
}

void EncodeQ8B32(std::span<const float> rows, uint64_t cols, std::span<std::byte> data,
                 std::span<std::byte> scale) {
  WARP_CHECK(cols % kRowBlock == 0);
  int8_t codes[kRowBlock];
  for (uint64_t block = 0; block < rows.size() / kRowBlock; ++block) {
    const float* x = rows.data() + block * kRowBlock;
    Store16(scale.data() + 2 * block, QuantizeBlock<127>(x, codes));
    std::memcpy(data.data() + block * kRowBlock, codes, kRowBlock);
  }
}

void EncodeQ4B32(std::span<const float> rows, uint64_t cols, std::span<std::byte> data,
                 std::span<std::byte> scale) {
  WARP_CHECK(cols % kRowBlock == 0);
  int8_t codes[kRowBlock];
  for (uint64_t block = 0; block < rows.size() / kRowBlock; ++block) {
    const float* x = rows.data() + block * kRowBlock;
    Store16(scale.data() + 2 * block, QuantizeBlock<7>(x, codes));
    for (uint64_t i = 0; i < kRowBlock; i += 2) {
      const uint8_t lo = static_cast<uint8_t>(codes[i] + 8);
      const uint8_t hi = static_cast<uint8_t>(codes[i + 1] + 8);
      data[(block * kRowBlock + i) / 2] = static_cast<std::byte>(lo | (hi << 4));
    }
  }
}

// The encoder of each format whose trait row says `encodable`. The others are
// only copied: FP8 and MXFP4 from releases, the ggml blocks from GGUF files;
// vq3r_b32 needs its codebook (EncodeVq3rRows, vq3r_encoder.h).
struct FormatEncoder {
  TensorFormat format;
  RowsEncoder encode;
};
constexpr FormatEncoder kEncoders[] = {
    {TensorFormat::kF32, EncodeF32},     {TensorFormat::kF16, EncodeF16},
    {TensorFormat::kBF16, EncodeBf16},   {TensorFormat::kQ8B32, EncodeQ8B32},
    {TensorFormat::kQ4B32, EncodeQ4B32},
};

constexpr bool EncodersMatchTraits() {
  size_t encodable = 0;
  for (const FormatTraits& traits : kFormatTraits) encodable += traits.encodable ? 1 : 0;
  if (encodable != std::size(kEncoders)) return false;
  for (const FormatEncoder& encoder : kEncoders) {
    if (!TraitsOf(encoder.format).encodable) return false;
  }
  return true;
}
static_assert(EncodersMatchTraits(), "kEncoders: one row per encodable format (kFormatTraits)");

}  // namespace

void EncodeRows(TensorFormat format, std::span<const float> rows, uint64_t cols,
                std::span<std::byte> data, std::span<std::byte> scale) {
  for (const FormatEncoder& encoder : kEncoders) {
    if (encoder.format == format) return encoder.encode(rows, cols, data, scale);
  }
  WARP_CHECK(false && "EncodeRows: not an encodable format (FormatTraits::encodable)");
}

}  // namespace warp::computed
