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

// Linear a block of rows at a time, e.g. as a record's rows land: each row
// is the same dot product as Linear's, so the bits are the same whatever the
// blocks. The activations are quantized once, at construction.
//
// Thread-compatible: one thread calls Rows at a time; x and y outlive it.
class RowLinear {
 public:
  RowLinear(ThreadPool& pool, const kernels::MatrixView& w, const float* x, size_t num_tokens,
            float* y)
      : pool_(pool),
        w_(w),
        x_(x),
        num_tokens_(num_tokens),
        y_(y),
        q8_(pool.q8_activations() && kernels::HasQ8Path(w.format)) {
    if (q8_) kernels::QuantizeActivations(w.format, x, num_tokens, w.cols, &quantized_);
  }

  // y's rows [begin, end).
  void Rows(size_t begin, size_t end) {
    if (end <= begin) return;
    pool_.ParallelFor(end - begin, 16, [&](size_t from, size_t to) {
      if (q8_) {
        kernels::MatMulRowsQ8(w_, quantized_, begin + from, begin + to, y_, w_.rows);
      } else {
        kernels::MatMulRows(w_, {x_, num_tokens_ * w_.cols}, num_tokens_, begin + from, begin + to,
                            {y_, num_tokens_ * w_.rows}, w_.rows);
      }
    });
  }

 private:
  ThreadPool& pool_;
  const kernels::MatrixView w_;
  const float* const x_;
  const size_t num_tokens_;
  float* const y_;
  const bool q8_;
  kernels::Q8Activations quantized_;
};

}  // namespace warp::computed
