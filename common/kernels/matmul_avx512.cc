// The AVX-512 kernels of MatMulRows (matmul.h): the vector ops that
// matmul_driver-inl.h's loop nest runs on. This file alone is compiled with
// -mavx512f -mavx512bw -mavx512vl -mavx512dq -mfma -mf16c; matmul.cc calls it
// only when DetectIsa() says the CPU has all of them.
//
// One zmm register holds the 16 accumulator lanes of one (row, token) output,
// so the summation order of matmul.h maps onto it directly: zmm lane L is acc[L].

// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() (`__m512 __Y = __Y;`),
// which -W(maybe-)uninitialized reports at every inlined use.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <immintrin.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "common/kernels/matmul.h"
#include "common/kernels/matmul_driver-inl.h"

namespace warp::kernels::internal {
namespace {

inline uint64_t Load64(const std::byte* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

constexpr std::array<uint8_t, 64> MakeNibbleSpread() {
  std::array<uint8_t, 64> control{};
  for (int column = 0; column < 16; ++column) {
    control[4 * column] = static_cast<uint8_t>(column / 2);      // byte c/2 of the lane's 8
    for (int k = 1; k < 4; ++k) control[4 * column + k] = 0x80;  // zero
  }
  return control;
}
alignas(64) constexpr std::array<uint8_t, 64> kNibbleSpread = MakeNibbleSpread();
alignas(64) constexpr std::array<int32_t, 16> kNibbleShift = {0, 4, 0, 4, 0, 4, 0, 4,
                                                              0, 4, 0, 4, 0, 4, 0, 4};
alignas(64) constexpr std::array<float, 16> kNibbleValues = {0, 1, 2,  3,  4,  5,  6,  7,
                                                             8, 9, 10, 11, 12, 13, 14, 15};
alignas(64) constexpr std::array<float, 16> kQ4Codes = {-8, -7, -6, -5, -4, -3, -2, -1,
                                                        0,  1,  2,  3,  4,  5,  6,  7};

struct Avx512Ops {
  using Vec = __m512;
  using Mask = __mmask16;

  // Tiles of 4 rows x up to 4 tokens: 16 accumulators, the inputs and the decode
  // temporaries fit in the 32 zmm registers.
  static constexpr int RowsPerTile(int) { return 4; }
  static constexpr uint64_t kScaleGroup = 16;

  static Vec Zero() { return _mm512_setzero_ps(); }
  static Vec Fma(Vec w, Vec x, Vec acc) { return _mm512_fmadd_ps(w, x, acc); }
  static Vec LoadX(const float* x) { return _mm512_loadu_ps(x); }
  static Mask TailMask(uint64_t n) { return static_cast<Mask>((uint32_t{1} << n) - 1); }
  static Vec LoadXTail(const float* x, Mask mask) { return _mm512_maskz_loadu_ps(mask, x); }
  static Vec FmaTail(Vec w, Vec x, Vec acc, Mask mask) {
    return _mm512_mask3_fmadd_ps(w, x, acc, mask);
  }

  // Step 3 of the summation order: the same tree as ReduceLanes in matmul.cc.
  static float Reduce(Vec acc) {
    const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(acc), _mm512_extractf32x8_ps(acc, 1));
    const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
    const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));  // lanes 0, 1: s4[i] + s4[i + 2]
    return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
  }

  static void HalfScales(const uint16_t* f16, uint64_t count, float* f32) {  // count 1..16
    const __mmask16 mask = static_cast<__mmask16>((uint32_t{1} << count) - 1);
    _mm512_store_ps(f32, _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, f16)));
  }

  struct F32 {
    static Vec Decode(const float* p) { return _mm512_loadu_ps(p); }
  };
  struct F16 {
    static Vec Decode(const uint16_t* p) {
      return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    }
  };
  struct Bf16 {
    static Vec Decode(const uint16_t* p) {
      const __m256i bf16 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
      return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(bf16), 16));
    }
  };

  // E4M3 without a table: the code's sign, exponent and mantissa moved to the
  // binary32 positions (sign | code[6:0] << 20) read as a float, times 2^120 to
  // rebias the exponent from 7 to 127, is exact for normal and subnormal codes
  // (a subnormal code becomes an f32 subnormal first, so this assumes the default
  // MXCSR: DAZ off). NaN codes (|code| == 0x7f) are patched to the table's NaN.
  static Vec F8(const uint8_t* p, float scale) {
    const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    const __m512i wide = _mm512_cvtepi8_epi32(codes);  // sign-extended: bits 31..7 = sign
    const __m512i bits =
        _mm512_and_si512(_mm512_slli_epi32(wide, 20), _mm512_set1_epi32(int32_t(0x87f00000)));
    __m512 value = _mm512_mul_ps(_mm512_castsi512_ps(bits), _mm512_set1_ps(0x1p120f));
    const __m128i magnitude_7f = _mm_set1_epi8(0x7f);
    const __mmask16 nan = _mm_cmpeq_epi8_mask(_mm_and_si128(codes, magnitude_7f), magnitude_7f);
    if (nan != 0) [[unlikely]] {
      const __m512i nan_bits =
          _mm512_or_si512(_mm512_and_si512(wide, _mm512_set1_epi32(int32_t(0x80000000))),
                          _mm512_set1_epi32(0x7fc00000));
      value = _mm512_mask_mov_ps(value, nan, _mm512_castsi512_ps(nan_bits));
    }
    return _mm512_mul_ps(value, _mm512_set1_ps(scale));
  }

  struct Q8 {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      const __m512 s = _mm512_set1_ps(scale);
      for (int v = 0; v < 2; ++v) {
        const __m128i codes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * v));
        out[v] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(codes)), s);
      }
    }
  };

  // q4 and mxfp4: per block, a 16-entry table value(nibble) * scale (one multiply
  // per entry, so each entry is bit-equal to the scalar dequantization), then
  // per 16 columns: broadcast their 8 bytes, vpshufb puts byte c/2 under column
  // c, vpsrlvd moves the high nibble down in odd columns, and vpermps looks the
  // nibble up (it reads only the low 4 bits of each index, so no mask is needed).
  // This decode is what limits q4 at 1 token: ~1.7 cycles per 16 columns of a row
  // with the weights in cache (13 GB/s of q4 on one core), against ~0.8 for q8.
  // Tried and slower: splitting nibbles per block with vpsrlw + vpunpck{l,h}bw and
  // widening with vpmovzxbd (2.2 cycles); int -> float conversion plus a multiply
  // instead of the table (one more op per 16 columns).
  static void Nibbles(const std::byte* p, __m512 table, Vec* out) {
    const __m512i spread = _mm512_load_si512(kNibbleSpread.data());
    const __m512i shift = _mm512_load_si512(kNibbleShift.data());
    for (int v = 0; v < 2; ++v) {
      const __m512i bytes = _mm512_set1_epi64(static_cast<int64_t>(Load64(p + 8 * v)));
      const __m512i nibbles = _mm512_srlv_epi32(_mm512_shuffle_epi8(bytes, spread), shift);
      out[v] = _mm512_permutexvar_ps(nibbles, table);
    }
  }
  struct Q4 {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      Nibbles(p, _mm512_mul_ps(_mm512_load_ps(kQ4Codes.data()), _mm512_set1_ps(scale)), out);
    }
  };
  struct Mxfp4 {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      Nibbles(p, _mm512_mul_ps(_mm512_loadu_ps(kFp4Value.data()), _mm512_set1_ps(scale)), out);
    }
  };

  // vq3r_b32: a code's four values are sums[4 * code .. 4 * code + 3], then times the scale.
  [[gnu::always_inline]] static void Vq3r(const uint32_t* codes, float scale, const float* sums,
                                          Vec* out) {
    const __m512 s = _mm512_set1_ps(scale);
    for (int half = 0; half < 2; ++half) {
      const uint32_t* c = codes + 4 * half;
      const __m256 lo = _mm256_loadu2_m128(sums + 4 * c[1], sums + 4 * c[0]);
      const __m256 hi = _mm256_loadu2_m128(sums + 4 * c[3], sums + 4 * c[2]);
      out[half] = _mm512_mul_ps(_mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1), s);
    }
  }

  // ggml's order: the 16 bytes widened to 16 lanes are elements 0-15 in their
  // low nibbles (vpermps reads only the low 4 bits of an index) and 16-31 in
  // their high nibbles once shifted down; the table is value(nibble) * scale.
  static void SplitNibbles(const std::byte* p, __m512 table, Vec* out) {
    const __m512i bytes =
        _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    out[0] = _mm512_permutexvar_ps(bytes, table);
    out[1] = _mm512_permutexvar_ps(_mm512_srli_epi32(bytes, 4), table);
  }
  struct Q4Split {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      SplitNibbles(p, _mm512_mul_ps(_mm512_load_ps(kQ4Codes.data()), _mm512_set1_ps(scale)), out);
    }
  };
  struct Mxfp4Split {
    static void Decode(const std::byte* p, float scale, Vec* out) {
      SplitNibbles(p, _mm512_mul_ps(_mm512_loadu_ps(kGgmlMxfp4Value.data()), _mm512_set1_ps(scale)),
                   out);
    }
  };

  // The other ggml formats: 32 int8 codes in column order (GgmlCodeRow), each
  // 16 times its scale s and less its min m if kMinus, one rounding each.
  template <bool kMinus>
  static void GgmlCodes(__m256i codes, float s0, float s1, float m0, float m1, Vec* out) {
    const __m128i halves[2] = {_mm256_castsi256_si128(codes), _mm256_extracti128_si256(codes, 1)};
    const float scales[2] = {s0, s1}, mins[2] = {m0, m1};
    for (int v = 0; v < 2; ++v) {
      out[v] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(halves[v])),
                             _mm512_set1_ps(scales[v]));
      if constexpr (kMinus) out[v] = _mm512_sub_ps(out[v], _mm512_set1_ps(mins[v]));
    }
  }
  // Codes 0-15 with one scale (and min) for all 32 columns: the 16 values
  // float(q) * s - m once, then vpermps looks each column's up (bit-equal, one
  // rounding each as above): 2 conversions and 2 lookups instead of 2
  // conversions, 2 int -> float, 2 multiplies and 2 subtractions.
  template <bool kMinus>
  static void GgmlNibbles(__m256i codes, float s, float m, Vec* out) {
    __m512 table = _mm512_mul_ps(_mm512_load_ps(kNibbleValues.data()), _mm512_set1_ps(s));
    if constexpr (kMinus) table = _mm512_sub_ps(table, _mm512_set1_ps(m));
    out[0] = _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm256_castsi256_si128(codes)), table);
    out[1] = _mm512_permutexvar_ps(_mm512_cvtepu8_epi32(_mm256_extracti128_si256(codes, 1)), table);
  }
};

}  // namespace

void MatMulRowsAvx512(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                      size_t row_end, float* y, size_t y_stride) {
  // vq3r's decode is 16-byte loads put together, which the 512-bit registers do
  // not speed up: at one token the AVX2 kernel ran 1.65x faster (1715 against
  // 2829 us a 2048 x 7168 matrix), at 8 tokens 0.7x. Both give the same bits.
  if (w.format == TensorFormat::kVq3rB32 && num_tokens < 4) {
    return MatMulRowsAvx2(w, x, num_tokens, row_begin, row_end, y, y_stride);
  }
  MatMulRowsWith<Avx512Ops>(w, x, num_tokens, row_begin, row_end, y, y_stride);
}

}  // namespace warp::kernels::internal
