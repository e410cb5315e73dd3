#pragma once

// MatMulRows for vq3r_b32 matrices (each ISA's MatMulRows routes them here): y = W x where
// each 4 elements of a row are one 12-bit code, the sum of a centroid of each
// of the codebook's two stages, times the 32-block's f16 scale. Instead of
// decoding weights, a token's input is first multiplied into every centroid:
// a table of cols / 4 x 128 dot products (kVq3rEntries per stage); each code
// then costs two table lookups, an add and an fma.
//
// Thread-safe: the functions are pure but for one thread_local table per
// thread (cols * 128 bytes, grown once), the one allocation MatMulRows makes.
//
// Summation order of y[t][r] (its own, not the generic order of matmul.h; the
// same bits for every ISA, row split and token count):
//   1. T[p][e] for p < cols / 4, e < 128, with c[k] = codebook entry e (stage
//      e / 64, entry e % 64) element k and x = x[t][4p .. 4p + 3]:
//        T[p][e] = fma(x3, c3, fma(x2, c2, fma(x1, c1, x0 * c0)))
//   2. 16 float32 accumulators acc[0..15], all +0.0f. For each 32-block b of
//      the row in increasing order and v = 0..7, with code i | j << 6 of vector
//      p = 8b + v, d the block's scale as float and L = (b % 2) * 8 + v:
//        acc[L] = fma(d, T[p][i] + T[p][64 + j], acc[L])
//   3. matmul.h's fixed tree over the 16 lanes (internal::ReduceLanes).
// The result is within rounding of the dot product of DequantizeRow's weights,
// not equal to it bit for bit.

#include <cstddef>

#include "computed/kernels/matrix_view.h"

namespace warp::computed::kernels::internal {

// The arguments of MatMulRows, already checked; w.format is kVq3rB32 with a
// codebook. MatMulRowsScalar and MatMulRowsAvx2/Avx512 call these.
void Vq3rMatMulRowsScalar(const MatrixView& w, const float* x, size_t num_tokens,
                          size_t row_begin, size_t row_end, float* y, size_t y_stride);
// REQUIRES: IsaSupported(Isa::kAvx2). Defined in vq3r_matmul_avx2.cc; the
// AVX-512 ISA uses it too (its gathers are no faster per lane).
void Vq3rMatMulRowsAvx2(const MatrixView& w, const float* x, size_t num_tokens, size_t row_begin,
                        size_t row_end, float* y, size_t y_stride);

}  // namespace warp::computed::kernels::internal
