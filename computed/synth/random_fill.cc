#include "computed/synth/random_fill.h"

#include <algorithm>
#include <array>
#include <bit>
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
constexpr float kQ4CodeStd = 4.1833f;    // sqrt(2 * (1+4+...+49) / 16)
constexpr float kQ8CodeStd = 73.323f;    // ~127 / sqrt(3)
constexpr float kUniformStd = 0.57735f;  // std of U(-1, 1)
// mxfp4: every byte is two uniform E2M1 nibbles, already symmetric (each value
// and its negation, +0 and -0, equally likely), with this RMS.
constexpr float kFp4CodeStd = 2.9262f;  // sqrt((0.25+1+2.25+4+9+16+36) / 8)

// The formats synth writes, one row each: the spread of one code, which turns
// an amplitude into a block scale (0: no scale). DataWord has each one's codes.
struct FillRow {
  TensorFormat format;
  float code_std;
};
constexpr FillRow kFills[] = {
    {TensorFormat::kF32, 0.0f},         {TensorFormat::kF16, 0.0f},
    {TensorFormat::kBF16, 0.0f},        {TensorFormat::kQ8B32, kQ8CodeStd},
    {TensorFormat::kQ4B32, kQ4CodeStd}, {TensorFormat::kMxfp4B32, kFp4CodeStd},
};

constexpr bool Fills(TensorFormat format) {
  for (const FillRow& row : kFills) {
    if (row.format == format) return true;
  }
  return false;
}

constexpr const FillRow& FillOf(TensorFormat format) {
  for (const FillRow& row : kFills) {
    if (row.format == format) return row;
  }
  return kFills[0];  // REQUIRES: CanFill(format)
}

// The low `kWidth` bits of `bits` as a uniform value in [-1, 1). Builds the
// float from its bit pattern (1.mantissa in [1, 2)) instead of an int-to-float
// conversion: the fill loops run at several GB/s.
template <int kWidth>
inline float Uniform(uint64_t bits) {
  constexpr int kMantissaBits = kWidth < 23 ? kWidth : 23;
  const uint32_t mantissa = static_cast<uint32_t>(bits & ((uint64_t{1} << kMantissaBits) - 1))
                            << (23 - kMantissaBits);
  return std::bit_cast<float>(0x3f800000u | mantissa) * 2.0f - 3.0f;
}

// One 8-byte word of the data sub-tensor (little-endian), specialized per
// format so the fill loop has no per-word dispatch.
template <TensorFormat kFormat>
inline uint64_t DataWord(float center, float amplitude, uint64_t hash) {
  uint64_t word = 0;
  if constexpr (kFormat == TensorFormat::kF32) {
#pragma GCC unroll 2
    for (int k = 0; k < 2; ++k) {
      const float v = center + amplitude * Uniform<32>(hash >> (32 * k));
      word |= uint64_t{std::bit_cast<uint32_t>(v)} << (32 * k);
    }
  } else if constexpr (kFormat == TensorFormat::kF16 || kFormat == TensorFormat::kBF16) {
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const float v = center + amplitude * Uniform<16>(hash >> (16 * k));
      // bf16 truncates instead of rounding: any pattern is as good a random value.
      const uint16_t h = kFormat == TensorFormat::kF16
                             ? FloatToHalf(v)
                             : static_cast<uint16_t>(std::bit_cast<uint32_t>(v) >> 16);
      word |= uint64_t{h} << (16 * k);
    }
  } else if constexpr (kFormat == TensorFormat::kQ8B32) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      const uint8_t b = static_cast<uint8_t>(hash >> (8 * k));
      const uint8_t code = static_cast<uint8_t>(b == 255 ? 0 : static_cast<int>(b) - 127);
      word |= uint64_t{code} << (8 * k);
    }
  } else if constexpr (kFormat == TensorFormat::kQ4B32) {
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      word |= uint64_t{kQ4Table[static_cast<uint8_t>(hash >> (8 * k))]} << (8 * k);
    }
  } else if constexpr (kFormat == TensorFormat::kMxfp4B32) {
    word = hash;
  }
  return word;
}

// One 8-byte word (four f16 scales) of the scale sub-tensor: `base` (the
// scale that gives codes the spread of U(-amplitude, amplitude)) times
// 0.75..1.25 per block.
inline uint64_t ScaleWord(float base, uint64_t hash) {
  uint64_t word = 0;
#pragma GCC unroll 4
  for (int k = 0; k < 4; ++k) {
    const uint16_t h = FloatToHalf(base * (1.0f + 0.25f * Uniform<16>(hash >> (16 * k))));
    word |= uint64_t{h} << (16 * k);
  }
  return word;
}

// Eight E8M0 scales: a power of two can only bracket `base` = 2^(k + f), so
// each block takes 2^k with probability (4 - 4^f) / 3 and 2^(k+1) otherwise,
// which keeps the mean square of the scales, and so the spread of the
// weights, that of `base`.
struct E8M0Choice {
  uint64_t lower;        // the E8M0 byte of 2^k
  uint64_t lower_below;  // 256 x the probability of taking it
  explicit E8M0Choice(float base) {
    const float exponent = std::floor(std::log2(base));
    const float p_lower = (4.0f - std::exp2(2.0f * (std::log2(base) - exponent))) / 3.0f;
    lower = static_cast<uint64_t>(std::clamp(static_cast<int>(exponent) + 127, 1, 253));
    lower_below = static_cast<uint64_t>(std::lround(p_lower * 256.0f));
  }
  uint64_t Word(uint64_t hash) const {
    uint64_t word = 0;
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) {
      word |= (lower + (((hash >> (8 * k)) & 0xff) < lower_below ? 0 : 1)) << (8 * k);
    }
    return word;
  }
};

template <typename WordFn>
inline void FillWords(uint64_t stream, uint64_t offset, std::span<std::byte> out, WordFn word_fn) {
  uint64_t pos = offset;
  const uint64_t end = offset + out.size();
  std::byte* dst = out.data();
  while (pos < end) {
    const uint64_t index = pos / 8;
    const uint64_t word = word_fn(SplitMix64(stream + index * 0x9e3779b97f4a7c15ull));
    const uint64_t skip = pos - index * 8;
    const uint64_t n = std::min<uint64_t>(8 - skip, end - pos);
    if (n == 8) {
      std::memcpy(dst, &word, 8);  // the common case: a whole aligned word
    } else {
      std::memcpy(dst, reinterpret_cast<const std::byte*>(&word) + skip, n);
    }
    dst += n;
    pos += n;
  }
}

// Rows of shape.back() distinct whole numbers 0 .. integers - 1, each row a
// uniform draw without replacement (the reference fixtures' randperm(E)[:k]):
// a hash layer names an expert at most once a token, as top-k routing does,
// and usage files and traces count a token's experts as a set. Counter-based
// by row: a row is a pure function of (stream, row index).
void FillDistinctRows(const FillSpec& spec, uint64_t stream, uint64_t offset,
                      std::span<std::byte> out) {
  const uint64_t k = spec.shape.back();
  WARP_CHECK(k <= spec.integers);
  std::vector<float> row(k);
  uint64_t row_idx = UINT64_MAX;
  for (uint64_t pos = offset; pos < offset + out.size();) {
    const uint64_t element = pos / sizeof(float);
    if (element / k != row_idx) {
      row_idx = element / k;
      uint64_t hash = stream + row_idx * 0x9e3779b97f4a7c15ull;
      for (uint64_t j = 0; j < k; ++j) {
        do {
          hash = SplitMix64(hash);
          row[j] = static_cast<float>(hash % spec.integers);
        } while (std::find(row.begin(), row.begin() + j, row[j]) != row.begin() + j);
      }
    }
    const uint64_t skip = pos - element * sizeof(float);
    const uint64_t n = std::min<uint64_t>(sizeof(float) - skip, offset + out.size() - pos);
    std::memcpy(out.data() + (pos - offset),
                reinterpret_cast<const std::byte*>(&row[element % k]) + skip, n);
    pos += n;
  }
}

}  // namespace

bool CanFill(TensorFormat format) { return Fills(format); }

std::string_view WhySynthCannotFill(TensorFormat format) {
  if (CanFill(format)) return "";
  const FormatTraits& traits = TraitsOf(format);
  if (traits.needs_codebook) return "its codebooks are trained by computed convert --experts vq3r";
  if (traits.ggml_block) return "ggml blocks come from GGUF files (tests/gguf/make_gguf.py)";
  return "it comes from converted releases";
}

uint64_t StreamKey(uint64_t seed, std::string_view name) {
  return SplitMix64(Fnv1a64(name) ^ SplitMix64(seed));
}

void FillData(const FillSpec& spec, uint64_t stream, uint64_t offset, std::span<std::byte> out) {
  if (spec.integers > 0) {
    WARP_CHECK(spec.format == TensorFormat::kF32);
    return FillDistinctRows(spec, stream, offset, out);
  }
  WARP_CHECK(CanFill(spec.format));
  VisitFormat(spec.format, [&]<TensorFormat kFormat>() {
    if constexpr (Fills(kFormat)) {
      FillWords(stream, offset, out,
                [center = spec.center, amplitude = spec.amplitude](uint64_t hash) {
                  return DataWord<kFormat>(center, amplitude, hash);
                });
    }
  });
}

void FillScale(const FillSpec& spec, uint64_t stream, uint64_t offset, std::span<std::byte> out) {
  const uint64_t scale_stream = SplitMix64(stream ^ 0x5ca1e5ca1e5ca1e5ull);
  WARP_CHECK(CanFill(spec.format));
  // The scale that gives codes the spread of U(-amplitude, amplitude).
  const auto base = [&] { return spec.amplitude * kUniformStd / FillOf(spec.format).code_std; };
  switch (TraitsOf(spec.format).scale.type) {
    case ScaleType::kF16:
      return FillWords(scale_stream, offset, out,
                       [b = base()](uint64_t hash) { return ScaleWord(b, hash); });
    case ScaleType::kE8M0: {
      const E8M0Choice choice(base());
      return FillWords(scale_stream, offset, out, [&](uint64_t hash) { return choice.Word(hash); });
    }
    case ScaleType::kNone:
    case ScaleType::kF32:
      WARP_CHECK(false && "FillScale: not a row-block format");
  }
}

}  // namespace warp::computed
