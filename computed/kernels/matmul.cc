#include "computed/kernels/matmul.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "common/check.h"
#include "common/numeric/half.h"

namespace warp::computed::kernels {
namespace {

constexpr uint64_t kLanes = 16;    // accumulator lanes of the summation contract
constexpr size_t kTileTokens = 8;  // tokens sharing one dequantized chunk in the reference

constexpr float E4M3Value(uint8_t code) {
  const uint32_t sign = uint32_t{code & 0x80u} << 24;
  const uint32_t exp = (code >> 3) & 0xfu;
  const uint32_t mant = code & 0x7u;
  if (exp == 0xf && mant == 0x7) return std::bit_cast<float>(sign | 0x7fc00000u);
  if (exp == 0) {  // subnormal: mant * 2^-9
    const float magnitude = static_cast<float>(mant) * 0x1p-9f;
    return sign ? -magnitude : magnitude;
  }
  return std::bit_cast<float>(sign | ((exp + 120) << 23) | (mant << 20));
}

constexpr std::array<float, 256> MakeE4M3Table() {
  std::array<float, 256> table{};
  for (int code = 0; code < 256; ++code) table[code] = E4M3Value(static_cast<uint8_t>(code));
  return table;
}

constexpr std::array<float, 256> kE4M3 = MakeE4M3Table();
static_assert(kE4M3[0x38] == 1.0f && kE4M3[0x7e] == 448.0f && kE4M3[0x01] == 0x1p-9f);

uint16_t Load16(const std::byte* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

float LoadF32(const std::byte* p) {
  float v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// Element `index` of a 4-bit data sub-tensor: low nibble first.
int Nibble(const std::byte* data, uint64_t index) {
  const auto byte = static_cast<uint8_t>(data[index / 2]);
  return index % 2 == 0 ? byte & 0xf : byte >> 4;
}

// ggml_q4_0 / ggml_mxfp4: element j of a 32-block is the low nibble of byte j
// for j < 16, the high nibble of byte j - 16 after.
int SplitNibble(const std::byte* codes, uint64_t j) {
  const auto byte = static_cast<uint8_t>(codes[j % 16]);
  return j < 16 ? byte & 0xf : byte >> 4;
}

uint8_t Byte(const std::byte* p, uint64_t i) { return static_cast<uint8_t>(p[i]); }

// ggml_q5_0 / ggml_q5_1: element j's 5-bit code, bit 4 from bit j of qh.
int Q5Code(const std::byte* qh, const std::byte* qs, uint64_t j) {
  uint32_t bits;
  std::memcpy(&bits, qh, sizeof(bits));
  return SplitNibble(qs, j) | static_cast<int>((bits >> j) & 1) << 4;
}

// ggml_q4_0's relatives: columns [j0, j0 + n) of one 32-element block, as
// ggml-quants.c dequantize_row_q4_1 / _q5_0 / _q5_1 compute them (code * d,
// then + m: two roundings, never an fma; this file is built -ffp-contract=off).
void DequantizeGgml32(TensorFormat format, const std::byte* b, uint64_t j0, uint64_t n,
                      float* out) {
  const float d = HalfToFloat(Load16(b));
  for (uint64_t i = 0; i < n; ++i) {
    const uint64_t j = j0 + i;
    switch (format) {
      case TensorFormat::kGgmlQ4_1:
        out[i] = static_cast<float>(SplitNibble(b + 4, j)) * d + HalfToFloat(Load16(b + 2));
        break;
      case TensorFormat::kGgmlQ5_0:
        out[i] = static_cast<float>(Q5Code(b + 2, b + 6, j) - 16) * d;
        break;
      default:  // kGgmlQ5_1
        out[i] = static_cast<float>(Q5Code(b + 4, b + 8, j)) * d + HalfToFloat(Load16(b + 2));
        break;
    }
  }
}

// ggml_q4_k / ggml_q5_k: the 6-bit scale and min of sub-block `sub` (0-7) from
// the 12 bytes `q`, as ggml-quants.c get_scale_min_k4 unpacks them.
void Q4KScaleMin(const std::byte* q, uint64_t sub, int& scale, int& min) {
  if (sub < 4) {
    scale = Byte(q, sub) & 63;
    min = Byte(q, sub + 4) & 63;
  } else {
    scale = (Byte(q, sub + 4) & 0xf) | (Byte(q, sub - 4) >> 6) << 4;
    min = (Byte(q, sub + 4) >> 4) | (Byte(q, sub) >> 6) << 4;
  }
}

// ggml_q3_k: the scale of sub-block `sub` (0-15) from the 12 bytes `q`: low 4
// bits from byte sub % 8 (its low nibble for sub < 8), high 2 bits from byte
// 8 + sub % 4 (bits 2 * (sub / 4)), less 32 (dequantize_row_q3_K's aux words).
int Q3KScale(const std::byte* q, uint64_t sub) {
  const int low = (Byte(q, sub % 8) >> (4 * (sub / 8))) & 0xf;
  const int high = (Byte(q, 8 + sub % 4) >> (2 * (sub / 4))) & 3;
  return (low | high << 4) - 32;
}

// The k-quants: columns [j0, j0 + n) of one 256-element super-block, all in one
// 16-element sub-block, as ggml-quants.c dequantize_row_q*_K compute them. For
// element j: h = j / 128 and r = j % 128 (q2_K, q3_K, q6_K: halves of 128
// elements), t = j % 32, and its sub-block's scale is that of j / 16 (or j / 32).
void DequantizeGgmlK(TensorFormat format, const std::byte* b, uint64_t j0, uint64_t n, float* out) {
  WARP_DCHECK(j0 % 16 + n <= 16);
  switch (format) {
    case TensorFormat::kGgmlQ2_K: {  // scales[16], qs[64], d, dmin
      const float d = HalfToFloat(Load16(b + 80)), dmin = HalfToFloat(Load16(b + 82));
      const uint8_t sc = Byte(b, j0 / 16);
      const float dl = d * static_cast<float>(sc & 0xf), ml = dmin * static_cast<float>(sc >> 4);
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t j = j0 + i, h = j / 128, shift = 2 * (j % 128 / 32);
        const int q = (Byte(b + 16, 32 * h + j % 32) >> shift) & 3;
        out[i] = dl * static_cast<float>(q) - ml;
      }
      return;
    }
    case TensorFormat::kGgmlQ3_K: {  // hmask[32], qs[64], scales[12], d
      const float dl = HalfToFloat(Load16(b + 108)) * static_cast<float>(Q3KScale(b + 96, j0 / 16));
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t j = j0 + i, h = j / 128, k = j % 128 / 32;
        const int low = (Byte(b + 32, 32 * h + j % 32) >> (2 * k)) & 3;
        const bool high = (Byte(b, j % 32) >> (4 * h + k)) & 1;
        out[i] = dl * static_cast<float>(low - (high ? 0 : 4));
      }
      return;
    }
    case TensorFormat::kGgmlQ4_K:
    case TensorFormat::kGgmlQ5_K: {  // d, dmin, scales[12], (q5_K: qh[32],) qs[128]
      const bool q5 = format == TensorFormat::kGgmlQ5_K;
      const float d = HalfToFloat(Load16(b)), dmin = HalfToFloat(Load16(b + 2));
      const uint64_t sub = j0 / 32;
      int sc, m;
      Q4KScaleMin(b + 4, sub, sc, m);
      const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(m);
      const std::byte* qs = b + (q5 ? 48 : 16) + 32 * (sub / 2);
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t t = (j0 + i) % 32;
        int q = (Byte(qs, t) >> (4 * (sub % 2))) & 0xf;  // even sub-blocks low nibbles
        if (q5 && (Byte(b + 16, t) >> sub) & 1) q += 16;
        out[i] = d1 * static_cast<float>(q) - m1;
      }
      return;
    }
    default: {  // kGgmlQ6_K: ql[128], qh[64], int8 scales[16], d
      const float d = HalfToFloat(Load16(b + 208));
      const float scale = d * static_cast<float>(static_cast<int8_t>(b[192 + j0 / 16]));
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t j = j0 + i, h = j / 128, k = j % 128 / 32, t = j % 32;
        const int low = (Byte(b, 64 * h + 32 * (k % 2) + t) >> (4 * (k / 2))) & 0xf;
        const int high = (Byte(b + 128, 32 * h + t) >> (2 * k)) & 3;
        out[i] = scale * static_cast<float>((low | high << 4) - 32);
      }
      return;
    }
  }
}

// Columns [col, col + n) of row `row`, dequantized as DequantizeRow defines.
// REQUIRES: n <= kLanes and [col, col + n) inside one scale block.
void DequantizeChunk(const MatrixView& w, uint64_t row, uint64_t col, uint64_t n, float* out) {
  const uint64_t first = row * w.cols + col;  // element index in the data sub-tensor
  switch (w.format) {
    case TensorFormat::kF32:
      for (uint64_t i = 0; i < n; ++i) out[i] = LoadF32(w.data + 4 * (first + i));
      return;
    case TensorFormat::kF16:
      for (uint64_t i = 0; i < n; ++i) out[i] = HalfToFloat(Load16(w.data + 2 * (first + i)));
      return;
    case TensorFormat::kBF16:
      for (uint64_t i = 0; i < n; ++i) out[i] = Bf16ToFloat(Load16(w.data + 2 * (first + i)));
      return;
    case TensorFormat::kF8E4M3B128: {
      const uint64_t blocks_per_row = (w.cols + kFp8Block - 1) / kFp8Block;
      const float scale =
          LoadF32(w.scale + 4 * ((row / kFp8Block) * blocks_per_row + col / kFp8Block));
      for (uint64_t i = 0; i < n; ++i) {
        out[i] = kE4M3[static_cast<uint8_t>(w.data[first + i])] * scale;
      }
      return;
    }
    case TensorFormat::kQ8B32: {
      const float scale = HalfToFloat(Load16(w.scale + 2 * (first / kRowBlock)));
      for (uint64_t i = 0; i < n; ++i) {
        out[i] = static_cast<float>(static_cast<int8_t>(w.data[first + i])) * scale;
      }
      return;
    }
    case TensorFormat::kQ4B32: {
      const float scale = HalfToFloat(Load16(w.scale + 2 * (first / kRowBlock)));
      for (uint64_t i = 0; i < n; ++i) {
        out[i] = static_cast<float>(Nibble(w.data, first + i) - 8) * scale;
      }
      return;
    }
    case TensorFormat::kMxfp4B32: {
      const float scale = kE8M0Scale[static_cast<uint8_t>(w.scale[first / kRowBlock])];
      for (uint64_t i = 0; i < n; ++i) out[i] = kFp4Value[Nibble(w.data, first + i)] * scale;
      return;
    }
    case TensorFormat::kVq3rB32: {
      const float scale = HalfToFloat(Load16(w.scale + 2 * (first / kRowBlock)));
      const std::byte* codes = w.data + row * (w.cols / 8 * 3);
      for (uint64_t i = 0; i < n; ++i) {
        const uint64_t element = col + i;
        const uint32_t code = Vq3rCode(codes, element / kVq3rDim);
        const uint32_t k = element % kVq3rDim;
        out[i] =
            (w.codebook->Centroid(0, code & 63, k) + w.codebook->Centroid(1, code >> 6, k)) * scale;
      }
      return;
    }
    case TensorFormat::kGgmlQ8_0:
    case TensorFormat::kGgmlQ4_0:
    case TensorFormat::kGgmlMxfp4: {
      const GgmlBlockLayout layout = *GgmlBlockLayoutOf(w.format);
      const std::byte* block =
          w.data + (row * (w.cols / layout.elements) + col / layout.elements) * layout.bytes;
      const uint64_t j0 = col % layout.elements;
      if (w.format == TensorFormat::kGgmlMxfp4) {
        const float scale = kE8M0HalfScale[static_cast<uint8_t>(block[0])];
        for (uint64_t i = 0; i < n; ++i) {
          out[i] = kGgmlMxfp4Value[SplitNibble(block + 1, j0 + i)] * scale;
        }
        return;
      }
      const float scale = HalfToFloat(Load16(block));
      for (uint64_t i = 0; i < n; ++i) {
        const int code = w.format == TensorFormat::kGgmlQ8_0
                             ? static_cast<int8_t>(block[2 + j0 + i])
                             : SplitNibble(block + 2, j0 + i) - 8;
        out[i] = static_cast<float>(code) * scale;
      }
      return;
    }
    case TensorFormat::kGgmlQ4_1:
    case TensorFormat::kGgmlQ5_0:
    case TensorFormat::kGgmlQ5_1:
    case TensorFormat::kGgmlQ2_K:
    case TensorFormat::kGgmlQ3_K:
    case TensorFormat::kGgmlQ4_K:
    case TensorFormat::kGgmlQ5_K:
    case TensorFormat::kGgmlQ6_K: {
      const GgmlBlockLayout layout = *GgmlBlockLayoutOf(w.format);
      const std::byte* block =
          w.data + (row * (w.cols / layout.elements) + col / layout.elements) * layout.bytes;
      if (layout.elements == 32) {
        DequantizeGgml32(w.format, block, col % 32, n, out);
      } else {
        DequantizeGgmlK(w.format, block, col % 256, n, out);
      }
      return;
    }
  }
}

#if defined(__x86_64__)
// CPUID leaf 1, ECX bit 29: clang 14's __builtin_cpu_supports does not know "f16c"
// (the fuzz build, tests/fuzz, compiles this file with clang).
bool CpuHasF16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
}

bool CpuHasAvx2() {
  __builtin_cpu_init();  // Idempotent; needed if we run before libgcc's constructor.
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && CpuHasF16c();
}

bool CpuHasAvx512() {
  return CpuHasAvx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#endif

std::atomic<Isa>& ActiveIsaSlot() {
  static std::atomic<Isa> active{DetectIsa()};
  return active;
}

}  // namespace

float E4M3ToFloat(uint8_t code) { return kE4M3[code]; }

void DequantizeRow(const MatrixView& w, uint64_t row, std::span<float> out) {
  WARP_DCHECK(row < w.rows && out.size() >= w.cols);
  for (uint64_t col = 0; col < w.cols; col += kLanes) {
    DequantizeChunk(w, row, col, std::min(kLanes, w.cols - col), out.data() + col);
  }
}

namespace internal {

float ReduceLanes(const float* acc) {
  float s[8];
  for (int i = 0; i < 8; ++i) s[i] = acc[i] + acc[i + 8];
  for (int i = 0; i < 4; ++i) s[i] = s[i] + s[i + 4];
  for (int i = 0; i < 2; ++i) s[i] = s[i] + s[i + 2];
  return s[0] + s[1];
}

// The reference: one 16-column chunk of a row is dequantized once, then
// accumulated into each token of a tile. Tokens tile by 8 so that the
// accumulators stay on the stack.
void MatMulRowsScalar(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                      size_t row_end, float* y, size_t y_stride) {
  const uint64_t cols = w.cols;
  for (size_t row = row_begin; row < row_end; ++row) {
    for (size_t t0 = 0; t0 < num_tokens; t0 += kTileTokens) {
      const size_t tokens = std::min(kTileTokens, num_tokens - t0);
      float acc[kTileTokens][kLanes] = {};
      for (uint64_t col = 0; col < cols; col += kLanes) {
        const uint64_t n = std::min(kLanes, cols - col);
        float chunk[kLanes];
        DequantizeChunk(w, row, col, n, chunk);
        for (size_t t = 0; t < tokens; ++t) {
          const float* xt = x + (t0 + t) * cols + col;
          for (uint64_t lane = 0; lane < n; ++lane) {
            acc[t][lane] = std::fma(chunk[lane], xt[lane], acc[t][lane]);
          }
        }
      }
      for (size_t t = 0; t < tokens; ++t) y[(t0 + t) * y_stride + row] = ReduceLanes(acc[t]);
    }
  }
}

}  // namespace internal

void MatMulRows(const MatrixView& w, std::span<const float> x, size_t num_tokens, size_t row_begin,
                size_t row_end, std::span<float> y, size_t y_stride) {
  WARP_DCHECK(row_begin <= row_end && row_end <= w.rows);
  WARP_DCHECK(x.size() >= num_tokens * w.cols);
  WARP_DCHECK(num_tokens == 0 || y.size() >= (num_tokens - 1) * y_stride + row_end);
  if (num_tokens == 0 || row_begin == row_end) return;
  switch (ActiveIsa()) {
    case Isa::kAvx512:
      return internal::MatMulRowsAvx512(w, x.data(), num_tokens, row_begin, row_end, y.data(),
                                        y_stride);
    case Isa::kAvx2:
      return internal::MatMulRowsAvx2(w, x.data(), num_tokens, row_begin, row_end, y.data(),
                                      y_stride);
    case Isa::kScalar:
      return internal::MatMulRowsScalar(w, x.data(), num_tokens, row_begin, row_end, y.data(),
                                        y_stride);
  }
}

Isa DetectIsa() {
  static const Isa best = [] {
#if defined(__x86_64__)
    if (CpuHasAvx512()) return Isa::kAvx512;
    if (CpuHasAvx2()) return Isa::kAvx2;
#endif
    return Isa::kScalar;
  }();
  return best;
}

bool IsaSupported(Isa isa) { return static_cast<int>(isa) <= static_cast<int>(DetectIsa()); }

Isa ActiveIsa() { return ActiveIsaSlot().load(std::memory_order_relaxed); }

void SetIsaForTesting(Isa isa) {
  WARP_CHECK(IsaSupported(isa));
  ActiveIsaSlot().store(isa, std::memory_order_relaxed);
}

std::string_view IsaName(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

}  // namespace warp::computed::kernels
