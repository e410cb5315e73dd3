#include "computed/kernels/matmul.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstring>

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
  }
}

// Step 3 of the summation order in matmul.h.
float ReduceLanes(const float* acc) {
  float s[8];
  for (int i = 0; i < 8; ++i) s[i] = acc[i] + acc[i + 8];
  for (int i = 0; i < 4; ++i) s[i] = s[i] + s[i + 4];
  for (int i = 0; i < 2; ++i) s[i] = s[i] + s[i + 2];
  return s[0] + s[1];
}

#if defined(__x86_64__)
bool CpuHasAvx2() {
  __builtin_cpu_init();  // Idempotent; needed if we run before libgcc's constructor.
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c");
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
