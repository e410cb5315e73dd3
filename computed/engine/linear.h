#pragma once

// y[t][r] = W[r] . x[t] for a batch of tokens, rows split over the pool.
// Each output is one kernels::MatMulRows dot product (or, with
// pool.q8_activations() and 4-bit weights, one MatMulRowsQ8 dot product), so
// the result does not depend on the thread count or the batch size.

#include <cstddef>

#include "computed/engine/thread_pool.h"
#include "computed/kernels/matmul.h"
#include "computed/kernels/q8_activations.h"

namespace warp::computed {

// x: [num_tokens][w.cols]; y: [num_tokens][w.rows].
inline void Linear(ThreadPool& pool, const kernels::MatrixView& w, const float* x,
                   size_t num_tokens, float* y) {
  if (pool.q8_activations() && kernels::HasQ8Path(w.format)) {
    // Quantized once on the calling thread (cols values a token, against rows x
    // cols weights), kept per thread so that it allocates once.
    thread_local kernels::Q8Activations kept;
    // A lambda names a thread_local without capturing it (each worker would see
    // its own): the workers read the caller's through this reference.
    const kernels::Q8Activations& quantized = kept;
    kernels::QuantizeActivations(w.format, x, num_tokens, w.cols, &kept);
    pool.ParallelFor(w.rows, 16, [&](size_t begin, size_t end) {
      kernels::MatMulRowsQ8(w, quantized, begin, end, y, w.rows);
    });
    return;
  }
  // 16 rows a grain: enough work per thread to cover the dispatch.
  pool.ParallelFor(w.rows, 16, [&](size_t begin, size_t end) {
    kernels::MatMulRows(w, {x, num_tokens * w.cols}, num_tokens, begin, end,
                        {y, num_tokens * w.rows}, w.rows);
  });
}

}  // namespace warp::computed
