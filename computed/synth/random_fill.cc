#include "computed/synth/random_fill.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "common/check.h"
#include "common/hash.h"
#include "common/numeric/half.h"

namespace warp::computed {
namespace {

// q4: a random byte -> two codes from {-7..-1, 0, 0, 1..7} (stored as code + 8),
// so the distribution is symmetric with mean exactly zero.
constexpr std::array<uint8_t, 256> MakeQ4Table() {
  constexpr int8_t kNibbleValue[16] = {-7, -6, -5, -4, -3, -2, -1, 0, 0, 1, 2, 3, 4, 5, 6, 7};
  std::array<uint8_t, 256> table{};
  for (int b = 0; b < 256; ++b) {
    const int lo = kNibbleValue[b & 15] + 8;
    const int hi = kNibbleValue[b >> 4] + 8;
    table[b] = static_cast<uint8_t>(lo | (hi << 4));
  }
  return table;
}
constexpr std::array<uint8_t, 256> kQ4Table = MakeQ4Table();

// Standard deviation of one code, to turn an amplitude into a block scale.
constexpr float kQ4CodeStd = 4.1833f;   // sqrt(2 * (1+4+...+49) / 16)
constexpr float kQ8CodeStd = 73.323f;   // ~127 / sqrt(3)
constexpr float kUniformStd = 0.57735f;  // std of U(-1, 1)

float Uniform(uint64_t bits, int width) {  // in [-1, 1)
  return static_cast<float>(bits & ((uint64_t{1} << width) - 1)) * std::ldexp(2.0f, -width) - 1.0f;
}

// One 8-byte word of the data sub-tensor.
void DataWord(const FillSpec& spec, uint64_t hash, uint8_t out[8]) {
  switch (spec.format) {
    case TensorFormat::kF32:
      for (int k = 0; k < 2; ++k) {
        const float v = spec.center + spec.amplitude * Uniform(hash >> (32 * k), 32);
        std::memcpy(out + 4 * k, &v, 4);
      }
      return;
    case TensorFormat::kF16:
    case TensorFormat::kBF16:
      for (int k = 0; k < 4; ++k) {
        const float v = spec.center + spec.amplitude * Uniform(hash >> (16 * k), 16);
        const uint16_t h = spec.format == TensorFormat::kF16 ? FloatToHalf(v) : FloatToBf16(v);
        std::memcpy(out + 2 * k, &h, 2);
      }
      return;
    case TensorFormat::kQ8B32:
      for (int k = 0; k < 8; ++k) {
        const uint8_t b = static_cast<uint8_t>(hash >> (8 * k));
        out[k] = static_cast<uint8_t>(b == 255 ? 0 : static_cast<int>(b) - 127);
      }
      return;
    case TensorFormat::kQ4B32:
      for (int k = 0; k < 8; ++k) out[k] = kQ4Table[static_cast<uint8_t>(hash >> (8 * k))];
      return;
    case TensorFormat::kF8E4M3B128:
      WARP_CHECK(false && "synthetic FP8 is not supported");
  }
}

// One 8-byte word (four f16 scales) of the scale sub-tensor: the scale that
// gives codes the spread of U(-amplitude, amplitude), times 0.75..1.25 per block.
void ScaleWord(const FillSpec& spec, uint64_t hash, uint8_t out[8]) {
  WARP_CHECK(spec.format == TensorFormat::kQ8B32 || spec.format == TensorFormat::kQ4B32);
  const float code_std = spec.format == TensorFormat::kQ4B32 ? kQ4CodeStd : kQ8CodeStd;
  const float base = spec.amplitude * kUniformStd / code_std;
  for (int k = 0; k < 4; ++k) {
    const uint16_t h = FloatToHalf(base * (1.0f + 0.25f * Uniform(hash >> (16 * k), 16)));
    std::memcpy(out + 2 * k, &h, 2);
  }
}

template <typename WordFn>
void FillWords(uint64_t stream, uint64_t offset, std::span<std::byte> out, WordFn word_fn) {
  uint64_t pos = offset;
  const uint64_t end = offset + out.size();
  while (pos < end) {
    const uint64_t word = pos / 8;
    uint8_t bytes[8];
    word_fn(SplitMix64(stream ^ SplitMix64(word)), bytes);
    const uint64_t skip = pos - word * 8;
    const uint64_t n = std::min<uint64_t>(8 - skip, end - pos);
    std::memcpy(out.data() + (pos - offset), bytes + skip, n);
    pos += n;
  }
}

}  // namespace

uint64_t StreamKey(uint64_t seed, std::string_view name) {
  return SplitMix64(Fnv1a64(name) ^ SplitMix64(seed));
}

void FillData(const FillSpec& spec, uint64_t stream, uint64_t offset, std::span<std::byte> out) {
  FillWords(stream, offset, out,
            [&](uint64_t hash, uint8_t bytes[8]) { DataWord(spec, hash, bytes); });
}

void FillScale(const FillSpec& spec, uint64_t stream, uint64_t offset, std::span<std::byte> out) {
  const uint64_t scale_stream = SplitMix64(stream ^ 0x5ca1e5ca1e5ca1e5ull);
  FillWords(scale_stream, offset, out,
            [&](uint64_t hash, uint8_t bytes[8]) { ScaleWord(spec, hash, bytes); });
}

}  // namespace warp::computed
