#include "common/kernels/matmul.h"

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
#include "common/kernels/format_kernels.h"

namespace warp::kernels {
namespace {

constexpr uint64_t kLanes = 16;    // accumulator lanes of the summation contract
constexpr size_t kTileTokens = 8;  // tokens sharing one dequantized chunk in the reference

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

void DequantizeRow(const MatrixView& w, uint64_t row, std::span<float> out) {
  WARP_DCHECK(row < w.rows && out.size() >= w.cols);
  const ChunkDecoder decode = KernelsOf(w.format).decode_chunk;
  for (uint64_t col = 0; col < w.cols; col += kLanes) {
    decode(w, row, col, std::min(kLanes, w.cols - col), out.data() + col);
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
  const ChunkDecoder decode = KernelsOf(w.format).decode_chunk;
  for (size_t row = row_begin; row < row_end; ++row) {
    for (size_t t0 = 0; t0 < num_tokens; t0 += kTileTokens) {
      const size_t tokens = std::min(kTileTokens, num_tokens - t0);
      float acc[kTileTokens][kLanes] = {};
      for (uint64_t col = 0; col < cols; col += kLanes) {
        const uint64_t n = std::min(kLanes, cols - col);
        float chunk[kLanes];
        decode(w, row, col, n, chunk);
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

}  // namespace warp::kernels
