#pragma once

// MatMulRows: y = W x for a range of rows of one stored matrix and a batch of
// tokens, on the CPU, in any TensorFormat. This file is the non-SIMD part:
// the API, the scalar reference and the choice of instruction set. The SIMD
// kernels are one loop nest, matmul_driver-inl.h, instantiated with the vector
// ops of matmul_avx2.cc and of matmul_avx512.cc, each the only file built with
// its ISA's flags. Which rows go to which thread is the engine's decision,
// never the kernel's.
//
// Thread-safe: MatMulRows is pure. SetIsaForTesting (tests and benchmarks)
// is an atomic store; a call running across it uses either ISA, and by the
// contract below gets the same bits.
//
// Summation order (the contract that makes results reproducible). Every
// output y[t][r] is one dot product evaluated in one order that depends only
// on `cols`, whatever the ISA, the row range, the split of rows across calls
// or threads, and num_tokens:
//   1. 16 float32 accumulators acc[0..15], all +0.0f.
//   2. For c = 0, 1, ..., cols - 1 in increasing order, with L = c % 16:
//        acc[L] = fma(w[r][c], x[t][c], acc[L])      (one rounding, IEEE fma)
//      where w[r][c] is the float32 weight DequantizeRow produces. A partial
//      last group of 16 columns leaves the lanes it lacks untouched.
//   3. A fixed tree: s[i] = acc[i] + acc[i + 8] (i < 8); s[i] += s[i + 4] (i < 4);
//      s[i] += s[i + 2] (i < 2); y = s[0] + s[1].
// So scalar, AVX2 and AVX-512 outputs are equal bit for bit (tests compare
// them with memcmp), and a batch of n tokens equals n single-token calls.
// NaN inputs give NaN outputs, but which NaN payload is unspecified. All of
// this assumes the default floating-point environment (round to nearest even,
// no flush-to-zero or denormals-are-zero), which WARP never changes.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "common/kernels/matrix_view.h"

namespace warp::kernels {

// y[t * y_stride + r] = sum_c W[r][c] * x[t * cols + c], for tokens t in
// [0, num_tokens) and rows r in [row_begin, row_end), in the order above. Writes
// nothing else of y. Pure: no allocation beyond the stack, no threads, no logging.
// REQUIRES (checked by the caller at plan time; DCHECKed here):
//   row_begin <= row_end <= w.rows; x.size() >= num_tokens * w.cols;
//   y.size() >= (num_tokens - 1) * y_stride + row_end when num_tokens > 0.
void MatMulRows(const MatrixView& w, std::span<const float> x, size_t num_tokens, size_t row_begin,
                size_t row_end, std::span<float> y, size_t y_stride);

// Instruction sets, each a superset of the one before it.
enum class Isa {
  kScalar,  // portable C++ (the reference)
  kAvx2,    // AVX2 + FMA + F16C
  kAvx512,  // the above + AVX-512 F, BW, VL, DQ
};

Isa DetectIsa();                    // the best this CPU supports
bool IsaSupported(Isa isa);         // isa <= DetectIsa()
Isa ActiveIsa();                    // what MatMulRows uses: DetectIsa() unless overridden
void SetIsaForTesting(Isa isa);     // REQUIRES: IsaSupported(isa)
std::string_view IsaName(Isa isa);  // "scalar", "avx2", "avx512"

// The per-ISA implementations behind MatMulRows, with its contract (arguments
// already checked), exposed for tests and the benchmark.
namespace internal {
// Step 3 of the summation order: the fixed tree over 16 lanes.
float ReduceLanes(const float* acc);
void MatMulRowsScalar(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                      size_t row_end, float* y, size_t y_stride);
// REQUIRES: IsaSupported(Isa::kAvx2). Defined in matmul_avx2.cc.
void MatMulRowsAvx2(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                    size_t row_end, float* y, size_t y_stride);
// REQUIRES: IsaSupported(Isa::kAvx512). Defined in matmul_avx512.cc.
void MatMulRowsAvx512(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                      size_t row_end, float* y, size_t y_stride);
}  // namespace internal

}  // namespace warp::kernels
