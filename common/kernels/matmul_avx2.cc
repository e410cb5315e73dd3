// The AVX2 kernels of MatMulRows (matmul.h): the vector ops that
// matmul_driver-inl.h's loop nest runs on. This file alone is compiled with
// -mavx2 -mfma -mf16c; matmul.cc calls it only when DetectIsa() says the CPU
// has all three.
//
// A pair of ymm registers (V16) holds the 16 accumulator lanes of one
// (row, token) output: lanes 0-7 in `lo`, 8-15 in `hi`, so lane L is acc[L] of
// the summation order in matmul.h. Tiles have R*T <= 4 (8 ymm accumulators),
// half of what the AVX-512 kernels keep.

#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/kernels/matmul.h"
#include "common/kernels/matmul_driver-inl.h"

namespace warp::kernels::internal {
namespace {

struct V16 {
  __m256 lo, hi;
};

inline V16 Mul(V16 a, __m256 s) { return {_mm256_mul_ps(a.lo, s), _mm256_mul_ps(a.hi, s)}; }

inline __m256 Int8ToFloat(__m128i codes) {  // the low 8 bytes
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(codes));
}

// kLaneMask[16 - n .. 32 - n) is -1 for the first n of 16 lanes, 0 after.
alignas(64) constexpr std::array<int32_t, 32> kLaneMask = {
    -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1,
    0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0,  0};

// The 32 nibbles of a 4-bit block's 16 bytes as bytes in column order (element
// 2i is the low nibble of byte i): columns 0..15 in `first`, 16..31 in `second`.
struct NibbleBytes {
  __m128i first, second;
  explicit NibbleBytes(const std::byte* p) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i low4 = _mm_set1_epi8(0x0f);
    const __m128i lo = _mm_and_si128(packed, low4);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low4);
    first = _mm_unpacklo_epi8(lo, hi);
    second = _mm_unpackhi_epi8(lo, hi);
  }
};

struct Avx2Ops {
  using Vec = V16;
  struct Mask {
    __m256i lo, hi;
  };

  // 8 of the 16 ymm registers hold accumulators.
  static constexpr int RowsPerTile(int tokens) { return tokens == 1 ? 4 : tokens == 2 ? 2 : 1; }
  static constexpr uint64_t kScaleGroup = 8;

  static Vec Zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  static Vec Fma(Vec w, Vec x, Vec acc) {
    return {_mm256_fmadd_ps(w.lo, x.lo, acc.lo), _mm256_fmadd_ps(w.hi, x.hi, acc.hi)};
  }
  static Vec LoadX(const float* x) { return {_mm256_loadu_ps(x), _mm256_loadu_ps(x + 8)}; }
  static Mask TailMask(uint64_t n) {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(&kLaneMask[16 - n])),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(&kLaneMask[24 - n]))};
  }
  static Vec LoadXTail(const float* x, Mask mask) {
    return {_mm256_maskload_ps(x, mask.lo), _mm256_maskload_ps(x + 8, mask.hi)};
  }
  static Vec FmaTail(Vec w, Vec x, Vec acc, Mask mask) {
    const Vec sum = Fma(w, x, acc);
    return {_mm256_blendv_ps(acc.lo, sum.lo, _mm256_castsi256_ps(mask.lo)),
            _mm256_blendv_ps(acc.hi, sum.hi, _mm256_castsi256_ps(mask.hi))};
  }

  // Step 3 of the summation order: the same tree as ReduceLanes in matmul.cc.
  static float Reduce(Vec acc) {
    const __m256 s8 = _mm256_add_ps(acc.lo, acc.hi);
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));  // lanes 0, 1: s4[i] + s4[i + 2]
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
  }

  static void HalfScales(const uint16_t* f16, uint64_t count, float* f32) {  // count 1..8
    __m128i halves;
    if (count == 8) {
      halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(f16));
    } else {
      uint16_t padded[8] = {};
      std::memcpy(padded, f16, count * sizeof(uint16_t));
      halves = _mm_loadu_si128(reinterpret_cast<const __m128i*>(padded));
    }
    _mm256_store_ps(f32, _mm256_cvtph_ps(halves));
  }

  struct F32 {
    static Vec Decode(const float* p) { return {_mm256_loadu_ps(p), _mm256_loadu_ps(p + 8)}; }
  };
  struct F16 {
    static Vec Decode(const uint16_t* p) {
      return {_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
              _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8)))};
    }
  };
  static __m256 WidenBf16(const uint16_t* p) {
    const __m128i bf16 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(bf16), 16));
  }
  struct Bf16 {
    static Vec Decode(const uint16_t* p) { return {WidenBf16(p), WidenBf16(p + 8)}; }
  };

  // E4M3 by moving bits and multiplying by 2^120; see F8 in matmul_avx512.cc.
  static __m256 F8Half(__m128i codes, bool has_nan) {  // the low 8 bytes of `codes`
    const __m256i wide = _mm256_cvtepi8_epi32(codes);  // sign-extended: bits 31..7 = sign
    const __m256i bits =
        _mm256_and_si256(_mm256_slli_epi32(wide, 20), _mm256_set1_epi32(int32_t(0x87f00000)));
    const __m256 value = _mm256_mul_ps(_mm256_castsi256_ps(bits), _mm256_set1_ps(0x1p120f));
    if (!has_nan) [[likely]] {
      return value;
    }
    const __m256i magnitude_7f = _mm256_set1_epi32(0x7f);
    const __m256i nan = _mm256_cmpeq_epi32(_mm256_and_si256(wide, magnitude_7f), magnitude_7f);
    const __m256i nan_bits =
        _mm256_or_si256(_mm256_and_si256(wide, _mm256_set1_epi32(int32_t(0x80000000))),
                        _mm256_set1_epi32(0x7fc00000));
    return _mm256_blendv_ps(value, _mm256_castsi256_ps(nan_bits), _mm256_castsi256_ps(nan));
  }
  static Vec F8(const uint8_t* p, float scale) {
    const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m128i magnitude_7f = _mm_set1_epi8(0x7f);
    const bool has_nan =
        _mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(codes, magnitude_7f), magnitude_7f)) != 0;
    const V16 value = {F8Half(codes, has_nan), F8Half(_mm_unpackhi_epi64(codes, codes), has_nan)};
    return Mul(value, _mm256_set1_ps(scale));
  }

  struct Q8 {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      const __m256 s = _mm256_set1_ps(scale);
      for (int v = 0; v < 2; ++v) {
        const std::byte* q = p + 16 * v;
        const V16 codes = {Int8ToFloat(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))),
                           Int8ToFloat(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8)))};
        out[v] = Mul(codes, s);
      }
    }
  };

  // q4: the nibbles made signed (nibble - 8), then widened and converted like q8.
  struct Q4 {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      const __m256 s = _mm256_set1_ps(scale);
      const NibbleBytes nibbles(p);
      const __m128i eight = _mm_set1_epi8(8);
      const __m128i first = _mm_sub_epi8(nibbles.first, eight);
      const __m128i second = _mm_sub_epi8(nibbles.second, eight);
      out[0] = Mul({Int8ToFloat(first), Int8ToFloat(_mm_unpackhi_epi64(first, first))}, s);
      out[1] = Mul({Int8ToFloat(second), Int8ToFloat(_mm_unpackhi_epi64(second, second))}, s);
    }
  };

  // vq3r_b32: a code's four values are sums[4 * code .. 4 * code + 3], then times the scale.
  [[gnu::always_inline]] static void Vq3r(const uint32_t* codes, float scale, const float* sums,
                                          Vec* out) {
    const __m256 s = _mm256_set1_ps(scale);
    const auto pair = [&](int v) {
      return _mm256_mul_ps(_mm256_loadu2_m128(sums + 4 * codes[v + 1], sums + 4 * codes[v]), s);
    };
    out[0] = {pair(0), pair(2)};
    out[1] = {pair(4), pair(6)};
  }

  // ggml_q4_0: NibbleBytes' low nibbles are elements 0-15, its high nibbles 16-31.
  struct Q4Split {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      const __m256 s = _mm256_set1_ps(scale);
      const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      const __m128i low4 = _mm_set1_epi8(0x0f);
      const __m128i eight = _mm_set1_epi8(8);
      const __m128i lo = _mm_sub_epi8(_mm_and_si128(packed, low4), eight);
      const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(packed, 4), low4), eight);
      out[0] = Mul({Int8ToFloat(lo), Int8ToFloat(_mm_unpackhi_epi64(lo, lo))}, s);
      out[1] = Mul({Int8ToFloat(hi), Int8ToFloat(_mm_unpackhi_epi64(hi, hi))}, s);
    }
  };

  // ggml_mxfp4, per 8 columns: their bytes widened to lanes, the nibble (low
  // for elements 0-15, high for 16-31) looks up both halves of the table of
  // value(nibble) * scale (vpermps reads the low 3 bits), and bit 3 picks one.
  static __m256 SplitMxfp4Eighth(__m256i nibble, __m256 low, __m256 high) {
    const __m256 pick = _mm256_castsi256_ps(_mm256_slli_epi32(nibble, 28));  // bit 3 -> sign
    return _mm256_blendv_ps(_mm256_permutevar8x32_ps(low, nibble),
                            _mm256_permutevar8x32_ps(high, nibble), pick);
  }
  struct Mxfp4Split {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      const __m256 s = _mm256_set1_ps(scale);
      const __m256 low = _mm256_mul_ps(_mm256_loadu_ps(kGgmlMxfp4Value.data()), s);
      const __m256 high = _mm256_mul_ps(_mm256_loadu_ps(kGgmlMxfp4Value.data() + 8), s);
      const __m256i mask = _mm256_set1_epi32(0x0f);
      __m256 eighths[4];
      for (int k = 0; k < 2; ++k) {
        const __m256i bytes =
            _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 8 * k)));
        eighths[k] = SplitMxfp4Eighth(_mm256_and_si256(bytes, mask), low, high);
        eighths[k + 2] = SplitMxfp4Eighth(_mm256_srli_epi32(bytes, 4), low, high);
      }
      out[0] = {eighths[0], eighths[1]};
      out[1] = {eighths[2], eighths[3]};
    }
  };

  // The other ggml formats: 32 int8 codes in column order (GgmlCodeRow), each
  // 16 times its scale s and less its min m if kMinus, one rounding each.
  template <bool kMinus>
  static void GgmlCodes(__m256i codes, float s0, float s1, float m0, float m1, Vec* out) {
    const __m128i halves[2] = {_mm256_castsi256_si128(codes), _mm256_extracti128_si256(codes, 1)};
    const float scales[2] = {s0, s1}, mins[2] = {m0, m1};
    for (int v = 0; v < 2; ++v) {
      const __m128i h = halves[v];
      V16 value =
          Mul({Int8ToFloat(h), Int8ToFloat(_mm_unpackhi_epi64(h, h))}, _mm256_set1_ps(scales[v]));
      if constexpr (kMinus) {
        const __m256 m = _mm256_set1_ps(mins[v]);
        value = {_mm256_sub_ps(value.lo, m), _mm256_sub_ps(value.hi, m)};
      }
      out[v] = value;
    }
  }
  // Codes 0-15 under one scale: a 16-entry table would take two vpermps and a
  // blend per 8 columns, no fewer ops than converting.
  template <bool kMinus>
  static void GgmlNibbles(__m256i codes, float s, float m, Vec* out) {
    GgmlCodes<kMinus>(codes, s, s, m, m, out);
  }

  // mxfp4, per 8 columns: their 4 bytes broadcast, vpsrlvd moves column c's
  // nibble to the bottom of lane c, vpermps looks up its magnitude (it reads
  // only the low 3 bits), bit 3 shifted to bit 31 is the sign, and one multiply
  // by the scale gives kFp4Value[nibble] * scale exactly as the scalar code (-0
  // and a NaN scale included). A 16-entry table of products picked per lane
  // from two vpermps with vblendvps decoded a block no faster and needs two
  // more registers per row.
  struct Mxfp4 {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      const __m256 s = _mm256_set1_ps(scale);
      const __m256 magnitude = _mm256_loadu_ps(kFp4Value.data());
      const __m256i shift = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
      const __m256i sign = _mm256_set1_epi32(int32_t(0x80000000));
      __m256 eighths[4];
      for (int k = 0; k < 4; ++k) {
        uint32_t bytes;
        std::memcpy(&bytes, p + 4 * k, sizeof(bytes));
        const __m256i nibble = _mm256_srlv_epi32(_mm256_set1_epi32(int32_t(bytes)), shift);
        const __m256i sign_bit = _mm256_and_si256(_mm256_slli_epi32(nibble, 28), sign);
        const __m256 value = _mm256_or_ps(_mm256_permutevar8x32_ps(magnitude, nibble),
                                          _mm256_castsi256_ps(sign_bit));
        eighths[k] = _mm256_mul_ps(value, s);
      }
      out[0] = {eighths[0], eighths[1]};
      out[1] = {eighths[2], eighths[3]};
    }
  };
};

}  // namespace

void MatMulRowsAvx2(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                    size_t row_end, float* y, size_t y_stride) {
  MatMulRowsWith<Avx2Ops>(w, x, num_tokens, row_begin, row_end, y, y_stride);
}

}  // namespace warp::kernels::internal
