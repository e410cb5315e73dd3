#include "computed/convert/encode.h"

#include <algorithm>
#include <cmath>
#include <cstring>

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

}  // namespace

void EncodeRows(TensorFormat format, std::span<const float> rows, uint64_t cols,
                std::span<std::byte> data, std::span<std::byte> scale) {
  const uint64_t n = rows.size();
  switch (format) {
    case TensorFormat::kF32:
      std::memcpy(data.data(), rows.data(), n * 4);
      return;
    case TensorFormat::kF16:
      for (uint64_t i = 0; i < n; ++i) Store16(data.data() + 2 * i, FloatToHalf(rows[i]));
      return;
    case TensorFormat::kBF16:
      for (uint64_t i = 0; i < n; ++i) Store16(data.data() + 2 * i, FloatToBf16(rows[i]));
      return;
    case TensorFormat::kQ8B32:
    case TensorFormat::kQ4B32: {
      WARP_CHECK(cols % kRowBlock == 0);
      int8_t codes[kRowBlock];
      for (uint64_t block = 0; block < n / kRowBlock; ++block) {
        const float* x = rows.data() + block * kRowBlock;
        if (format == TensorFormat::kQ8B32) {
          Store16(scale.data() + 2 * block, QuantizeBlock<127>(x, codes));
          std::memcpy(data.data() + block * kRowBlock, codes, kRowBlock);
        } else {
          Store16(scale.data() + 2 * block, QuantizeBlock<7>(x, codes));
          for (uint64_t i = 0; i < kRowBlock; i += 2) {
            const uint8_t lo = static_cast<uint8_t>(codes[i] + 8);
            const uint8_t hi = static_cast<uint8_t>(codes[i + 1] + 8);
            data[(block * kRowBlock + i) / 2] = static_cast<std::byte>(lo | (hi << 4));
          }
        }
      }
      return;
    }
    case TensorFormat::kF8E4M3B128:
      WARP_CHECK(false && "FP8 is only copied from releases, never encoded");
    case TensorFormat::kMxfp4B32:
      WARP_CHECK(false && "MXFP4 is only copied from releases, never encoded");
    case TensorFormat::kVq3rB32:
      WARP_CHECK(false && "vq3r_b32 needs its codebook: EncodeVq3rRows (vq3r_encoder.h)");
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
    case TensorFormat::kGgmlQ6_K:
      WARP_CHECK(false && "ggml blocks are only copied from GGUF files, never encoded");
  }
}

}  // namespace warp::computed
