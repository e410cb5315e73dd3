#pragma once

// Conversions between float32 and the 16-bit float formats stored in WARP
// files. Scalar reference code: kernels use their own SIMD conversions and are
// tested against these.

#include <bit>
#include <cstdint>
#include <cstring>

namespace warp {

inline float Bf16ToFloat(uint16_t bits) { return std::bit_cast<float>(uint32_t{bits} << 16); }

// Round to nearest even, as PyTorch's float -> bfloat16. NaN stays NaN.
inline uint16_t FloatToBf16(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40);
  const uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + rounding) >> 16);
}

// IEEE binary16 -> binary32, exact (subnormals, infinities, NaN included).
inline float HalfToFloat(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  // Zero or subnormal: mant * 2^-24.
  const float magnitude = static_cast<float>(mant) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

// binary32 -> binary16, round to nearest even; overflow gives infinity.
inline uint16_t FloatToHalf(float value) {
  const uint32_t bits = std::bit_cast<uint32_t>(value);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return sign | 0x7e00u;                // NaN
  if (abs >= 0x477ff000u) return sign | 0x7c00u;               // rounds to >= 65520: infinity
  if (abs < 0x38800000u) {                                     // below 2^-14: subnormal half
    const float scaled = std::bit_cast<float>(abs) * 0x1p24f;  // in units of 2^-24
    const float rounded = __builtin_nearbyintf(scaled);        // ties to even (default mode)
    return sign | static_cast<uint16_t>(rounded);
  }
  const uint32_t rounding = 0xfffu + ((abs >> 13) & 1u);
  return sign | static_cast<uint16_t>((abs - 0x38000000u + rounding) >> 13);
}

}  // namespace warp
