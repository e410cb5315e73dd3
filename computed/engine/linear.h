#pragma once

// y[t][r] = W[r] . x[t] for a batch of tokens, rows split over the pool.
// Each output is one kernels::MatMulRows dot product, so the result does not
// depend on the thread count or the batch size.

#include <cstddef>

#include "computed/engine/thread_pool.h"
#include "computed/kernels/matmul.h"

namespace warp::computed {

// x: [num_tokens][w.cols]; y: [num_tokens][w.rows].
inline void Linear(ThreadPool& pool, const kernels::MatrixView& w, const float* x,
                   size_t num_tokens, float* y) {
  // 16 rows a grain: enough work per thread to cover the dispatch.
  pool.ParallelFor(w.rows, 16, [&](size_t begin, size_t end) {
    kernels::MatMulRows(w, {x, num_tokens * w.cols}, num_tokens, begin, end,
                        {y, num_tokens * w.rows}, w.rows);
  });
}

}  // namespace warp::computed
