#pragma once

// MatrixView: a read-only view of one stored matrix in any TensorFormat, and the
// scalar dequantization that defines what its bytes mean. Owns no bytes: they
// belong to the caller (a trunk mapping or an expert record). Byte layouts:
// docs/FORMAT.md#tensor-formats.
//
// Thread-safe: plain values over immutable bytes; the functions are pure.

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>

#include "common/format/codebooks.h"
#include "common/format/tensor_format.h"

namespace warp::kernels {

// [rows, cols], row-major. For kQ8B32 / kQ4B32 / kMxfp4B32 cols is a multiple of 32,
// for the ggml formats of their block's elements (ShapeProblem).
struct MatrixView {
  TensorFormat format = TensorFormat::kF32;
  uint64_t rows = 0, cols = 0;
  const std::byte* data = nullptr;         // DataBytes(format, {rows, cols}) bytes
  const std::byte* scale = nullptr;        // ScaleBytes(...) bytes, or nullptr for f32/f16/bf16
  const Vq3rCodebook* codebook = nullptr;  // vq3r_b32 only: its layer's codebook
};

// Row `row` of `w` as float32, `w.cols` values, exactly:
//   f32: as stored;  f16, bf16: exact widening;
//   f8_e4m3_b128, f8_e4m3_b32: E4M3ToFloat(code) * f32 scale of its 128x128 (32x32)
//     tile (one multiply);
//   q8_b32: float(int8 code) * float(f16 scale of its 32-block) (one multiply);
//   q4_b32: float(nibble - 8) * float(f16 scale of its 32-block) (one multiply);
//   mxfp4_b32: kFp4Value[nibble] * kE8M0Scale[E8M0 byte of its 32-block] (one
//     multiply, exact but for overflow to +-inf at s = 254; NaN at s = 255).
//   ggml_q8_0: float(int8 code) * float(f16 d of its block) (one multiply);
//   ggml_q4_0: float(nibble - 8) * float(f16 d of its block) (one multiply);
//   ggml_mxfp4: kGgmlMxfp4Value[nibble] * kE8M0HalfScale[e] (one multiply), as
//     ggml's dequantize_row_mxfp4: e = 255 is 2^127, not NaN.
//   vq3r_b32: element 4v + k of a row is (C0[i][k] + C1[j][k]) * float(f16 scale of
//     its 32-block) (one add, one multiply), where code v of the row (12 bits,
//     Vq3rCode) is i | j << 6 and C0, C1 are the two stages of w.codebook.
// The other ggml formats as ggml-quants.c's dequantize_row_* compute them, each
// operation rounded on its own (never an fma; d, m, dmin are the block's f16
// values as floats, codes and 6-bit scales exact small integers as floats):
//   ggml_q4_1: float(nibble) * d + m, nibbles ordered as ggml_q4_0;
//   ggml_q5_0: float(q - 16) * d, q = nibble | (bit j of qh) << 4 for element j;
//   ggml_q5_1: float(q) * d + m, q as ggml_q5_0.
//   The k-quants, per 256-element super-block; element j, h = j / 128 its half,
//   k = j % 128 / 32 its quarter of the half, t = j % 32:
//   ggml_q4_k: (d * float(sc)) * float(q) - dmin * float(m), sub-block s = j / 32
//     with its 6-bit sc and m from scales[12] as get_scale_min_k4 (s < 4: sc =
//     scales[s] & 63, m = scales[s + 4] & 63; else the low and high nibbles of
//     scales[s + 4] under the top 2 bits of scales[s - 4] and of scales[s]);
//     q = nibble s % 2 (0 low, 1 high) of qs[32 * (s / 2) + t];
//   ggml_q5_k: as ggml_q4_k, q + 16 if bit s of qh[t];
//   ggml_q6_k: (d * float(int8 scales[j / 16])) * float(q - 32), q = nibble k / 2
//     of ql[64h + 32 * (k % 2) + t] | (bits 2k, 2k+1 of qh[32h + t]) << 4;
//   ggml_q3_k: (d * float(sc - 32)) * float(q), sc the 6-bit scale j / 16 (low 4
//     bits: nibble (j / 16) / 8 of scales[j / 16 % 8], high 2: bits 2 * (j / 64)
//     of scales[8 + j / 16 % 4]), q = (bits 2k of qs[32h + t] & 3), less 4 if
//     bit 4h + k of hmask[t] is clear;
//   ggml_q2_k: (d * float(sc & 15)) * float(q) - dmin * float(sc >> 4), sc =
//     scales[j / 16], q = bits 2k of qs[32h + t] & 3.
// The SIMD kernels dequantize to these same bits. REQUIRES: row < w.rows,
// out.size() >= w.cols.
void DequantizeRow(const MatrixView& w, uint64_t row, std::span<float> out);

// Code `index` of a vq3r_b32 row whose codes start at `row`: two codes per 3
// bytes, little-endian, the even code in the low 12 bits.
inline uint32_t Vq3rCode(const std::byte* row, uint64_t index) {
  const auto* b = reinterpret_cast<const uint8_t*>(row) + index / 2 * 3;
  return index % 2 == 0 ? (b[0] | (b[1] & 0xfu) << 8) : (b[1] >> 4 | uint32_t{b[2]} << 4);
}

// The OCP MX FP4 (E2M1) value of a nibble: bit 3 the sign, then 2 exponent bits
// (bias 1) and 1 mantissa bit; nibble 8 is -0.
inline constexpr std::array<float, 16> kFp4Value = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,
                                                    4.0f,  6.0f,  -0.0f, -0.5f, -1.0f, -1.5f,
                                                    -2.0f, -3.0f, -4.0f, -6.0f};

// The OCP MX E8M0 scale of a byte s: 2^(s - 127), built from its bits so that
// 2^-127 (s = 0), a float subnormal, is exact; s = 255 is a quiet NaN (0x7fc00000).
// consteval and a table: no code of it is compiled into the per-ISA files.
consteval std::array<float, 256> MakeE8M0Scales() {
  std::array<float, 256> table{};
  for (uint32_t s = 0; s < 256; ++s) {
    const uint32_t bits = s == 0 ? 0x00400000u : s == 255 ? 0x7fc00000u : s << 23;
    table[s] = std::bit_cast<float>(bits);
  }
  return table;
}
inline constexpr std::array<float, 256> kE8M0Scale = MakeE8M0Scales();
static_assert(kE8M0Scale[0] == 0x1p-127f && kE8M0Scale[127] == 1.0f && kE8M0Scale[254] == 0x1p127f);

// ggml's MXFP4 tables (ggml-common.h kvalues_mxfp4, GGML_E8M0_TO_FP32_HALF):
// twice the E2M1 value (nibble 8 is +0), and half the E8M0 scale, 2^(e - 128),
// with e = 0 and 1 the subnormals 2^-128 and 2^-127 and e = 255 2^127.
inline constexpr std::array<float, 16> kGgmlMxfp4Value = {0, 1,  2,  3,  4,  6,  8,  12,
                                                          0, -1, -2, -3, -4, -6, -8, -12};
consteval std::array<float, 256> MakeE8M0HalfScales() {
  std::array<float, 256> table{};
  for (uint32_t e = 0; e < 256; ++e) {
    const uint32_t bits = e < 2 ? uint32_t{0x00200000} << e : (e - 1) << 23;
    table[e] = std::bit_cast<float>(bits);
  }
  return table;
}
inline constexpr std::array<float, 256> kE8M0HalfScale = MakeE8M0HalfScales();
static_assert(kE8M0HalfScale[0] == 0x1p-128f && kE8M0HalfScale[128] == 1.0f &&
              kE8M0HalfScale[255] == 0x1p127f);

// The exact value of an OCP FP8 E4M3 code: bias 7, subnormals, no infinities;
// 0x7f and 0xff are NaN (returned as a quiet NaN with the code's sign, 0x7fc00000).
float E4M3ToFloat(uint8_t code);

}  // namespace warp::kernels
