#pragma once

// y[t][r] = W[r] . x[t] for a batch of tokens, rows split over the pool.
// Each output is one kernels::MatMulRows dot product (or, with
// compute.q8_activations() and 4-bit weights, one MatMulRowsQ8 dot product), so
// the result does not depend on the thread count or the batch size.

#include <cstddef>

#include "common/compute/compute_context.h"
#include "common/kernels/matmul.h"
#include "common/kernels/q8_activations.h"

namespace warp {

namespace internal {

// y's rows [begin, end) split over the pool: with `quantized` (x's q8
// activations), the q8 dot products, else the f32 ones. 16 rows a grain:
// enough work per thread to cover the dispatch.
inline void ParallelRows(ComputeContext& compute, const kernels::MatrixView& w, const float* x,
                         const kernels::Q8Activations* quantized, size_t num_tokens, size_t begin,
                         size_t end, float* y) {
  if (end <= begin) return;
  compute.ParallelFor(end - begin, 16, [&](size_t from, size_t to) {
    if (quantized != nullptr) {
      kernels::MatMulRowsQ8(w, *quantized, begin + from, begin + to, y, w.rows);
    } else {
      kernels::MatMulRows(w, {x, num_tokens * w.cols}, num_tokens, begin + from, begin + to,
                          {y, num_tokens * w.rows}, w.rows);
    }
  });
}

}  // namespace internal

// x: [num_tokens][w.cols]; y: [num_tokens][w.rows].
inline void Linear(ComputeContext& compute, const kernels::MatrixView& w, const float* x,
                   size_t num_tokens, float* y) {
  const kernels::Q8Activations* quantized = nullptr;
  if (compute.q8_activations() && kernels::HasQ8Path(w.format)) {
    // Quantized once on the calling thread (cols values a token, against rows x
    // cols weights), kept per thread so that it allocates once. The workers
    // read the caller's through `quantized` (each has a thread_local of its own).
    thread_local kernels::Q8Activations kept;
    kernels::QuantizeActivations(w.format, x, num_tokens, w.cols, &kept);
    quantized = &kept;
  }
  internal::ParallelRows(compute, w, x, quantized, num_tokens, 0, w.rows, y);
}

// Linear a block of rows at a time, e.g. as a record's rows land: each row
// is the same dot product as Linear's, so the bits are the same whatever the
// blocks. The activations are quantized once, at construction.
//
// Thread-compatible: one thread calls Rows at a time; x and y outlive it.
class RowLinear {
 public:
  RowLinear(ComputeContext& compute, const kernels::MatrixView& w, const float* x, size_t num_tokens,
            float* y)
      : compute_(compute),
        w_(w),
        x_(x),
        num_tokens_(num_tokens),
        y_(y),
        q8_(compute.q8_activations() && kernels::HasQ8Path(w.format)) {
    if (q8_) kernels::QuantizeActivations(w.format, x, num_tokens, w.cols, &quantized_);
  }

  // y's rows [begin, end).
  void Rows(size_t begin, size_t end) {
    internal::ParallelRows(compute_, w_, x_, q8_ ? &quantized_ : nullptr, num_tokens_, begin, end, y_);
  }

 private:
  ComputeContext& compute_;
  const kernels::MatrixView w_;
  const float* const x_;
  const size_t num_tokens_;
  float* const y_;
  const bool q8_;
  kernels::Q8Activations quantized_;
};

}  // namespace warp
