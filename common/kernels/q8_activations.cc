#include "common/kernels/q8_activations.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "common/check.h"
#include "common/kernels/matmul.h"
#include "common/numeric/half.h"

namespace warp::kernels {
namespace {

constexpr uint64_t kBlock = 32;

// nearbyint(v) in the default rounding mode, for |v| <= 2^22, without a libm
// call per column (nearbyintf is one on the baseline ISA): the sum has no
// fraction bits left, so the addition rounds v to an integer, ties to even.
inline float RoundToNearestEven(float v) {
  constexpr float kShift = 0x1.8p23f;
  return (v + kShift) - kShift;
}

// One block of one token: its 32 codes into the group's low and high halves
// (byte j of block `slot` at 16 slot + j), the weights' offset times each
// lane's code sum into `bias`, and d into its 4 lanes. kGgmlOrder: columns j
// and 16 + j under byte j (ggml's blocks), else 2j and 2j + 1.
template <bool kGgmlOrder>
void QuantizeBlock(const float* xb, int32_t offset, uint64_t slot, int8_t* codes, int32_t* bias,
                   float* lane_scale) {
  float amax = 0.0f;
  bool nan = false;  // std::max passes over a NaN; an infinity makes amax one
  for (uint64_t e = 0; e < kBlock; ++e) {
    const float a = std::fabs(xb[e]);
    nan |= a != a;
    amax = std::max(amax, a);
  }
  const bool finite = !nan && std::isfinite(amax);
  const float d = finite ? amax / 127.0f : std::numeric_limits<float>::quiet_NaN();
  for (uint64_t l = 0; l < 4; ++l) lane_scale[slot * 4 + l] = d;
  // Codes only where 127 / amax is finite: a non-finite block, an all-zero
  // one and one below 127 / FLT_MAX (whose products with any weight round
  // to nothing anyway) keep codes 0, so no cast sees a value out of range.
  if (!finite || amax < 127.0f / std::numeric_limits<float>::max()) return;
  const float inverse = 127.0f / amax;
  int8_t* low = codes + slot * 16;
  int8_t* high = codes + 64 + slot * 16;
  int32_t q[kBlock];  // first in column order: a loop the compiler vectorizes
  for (uint64_t e = 0; e < kBlock; ++e) {
    q[e] = static_cast<int32_t>(RoundToNearestEven(xb[e] * inverse));
  }
  for (uint64_t j = 0; j < 16; ++j) {
    low[j] = static_cast<int8_t>(q[kGgmlOrder ? j : 2 * j]);
    high[j] = static_cast<int8_t>(q[kGgmlOrder ? 16 + j : 2 * j + 1]);
  }
  for (uint64_t k = 0; k < 4; ++k) {
    int32_t sum = 0;
    for (uint64_t j = 4 * k; j < 4 * k + 4; ++j) sum += low[j] + high[j];
    bias[slot * 4 + k] = -offset * sum;
  }
}

enum class Q8Kernel { kScalar, kAvx2, kAvx512Vnni };

Q8Kernel ActiveQ8Kernel() {
  const Isa isa = ActiveIsa();
  if (isa == Isa::kAvx512 && internal::CpuHasAvx512Vnni()) return Q8Kernel::kAvx512Vnni;
  if (isa != Isa::kScalar) return Q8Kernel::kAvx2;
  return Q8Kernel::kScalar;
}

}  // namespace

void QuantizeActivations(TensorFormat format, const float* x, size_t num_tokens, uint64_t cols,
                         Q8Activations* out) {
  WARP_DCHECK(HasQ8Path(format) && cols % kBlock == 0);
  const size_t values = num_tokens * cols;
  if (out->format == format && out->cols == cols && out->num_tokens == num_tokens &&
      out->source.size() == values &&
      std::memcmp(out->source.data(), x, values * sizeof(float)) == 0) {
    return;  // the same bytes give the same codes
  }
  out->source.assign(x, x + values);
  const uint64_t blocks = cols / kBlock;
  const uint64_t groups = (cols + kQ8GroupCols - 1) / kQ8GroupCols;
  out->format = format;
  out->cols = cols;
  out->groups = groups;
  out->num_tokens = num_tokens;
  // resize() keeps the capacity, so a kept Q8Activations allocates once; every
  // element is written below, padding included.
  out->codes.resize(num_tokens * groups * 2 * 64);
  out->bias.resize(num_tokens * groups * kQ8GroupLanes);
  out->lane_scale.resize(num_tokens * groups * kQ8GroupLanes);
  std::fill(out->codes.begin(), out->codes.end(), int8_t{0});
  std::fill(out->bias.begin(), out->bias.end(), 0);
  std::fill(out->lane_scale.begin(), out->lane_scale.end(), 0.0f);
  const int32_t offset = CodeOffset(format);
  const bool ggml_order = internal::ScaleInBlock(format);
  for (size_t t = 0; t < num_tokens; ++t) {
    for (uint64_t b = 0; b < blocks; ++b) {
      const uint64_t g = b / 4, slot = b % 4;
      const float* xb = x + t * cols + b * kBlock;
      int8_t* codes = out->codes.data() + (t * groups + g) * 2 * 64;
      int32_t* bias = out->bias.data() + (t * groups + g) * kQ8GroupLanes;
      float* lane_scale = out->lane_scale.data() + (t * groups + g) * kQ8GroupLanes;
      if (ggml_order) {
        QuantizeBlock<true>(xb, offset, slot, codes, bias, lane_scale);
      } else {
        QuantizeBlock<false>(xb, offset, slot, codes, bias, lane_scale);
      }
    }
  }
}

void MatMulRowsQ8(const MatrixView& w, const Q8Activations& x, size_t row_begin, size_t row_end,
                  float* y, size_t y_stride) {
  WARP_DCHECK(HasQ8Path(w.format) && x.format == w.format && x.cols == w.cols &&
              row_begin <= row_end && row_end <= w.rows);
  switch (ActiveQ8Kernel()) {
    case Q8Kernel::kAvx512Vnni:
      return internal::MatMulRowsQ8Avx512Vnni(w, x, row_begin, row_end, y, y_stride);
    case Q8Kernel::kAvx2:
      return internal::MatMulRowsQ8Avx2(w, x, row_begin, row_end, y, y_stride);
    case Q8Kernel::kScalar:
      return internal::MatMulRowsQ8Scalar(w, x, row_begin, row_end, y, y_stride);
  }
}

const char* Q8KernelName() {
  switch (ActiveQ8Kernel()) {
    case Q8Kernel::kAvx512Vnni:
      return "avx512_vnni";
    case Q8Kernel::kAvx2:
      return "avx2";
    case Q8Kernel::kScalar:
      return "scalar";
  }
  return "scalar";
}

namespace internal {

float BlockScale(TensorFormat format, const std::byte* scale) {
  const auto e = static_cast<uint8_t>(scale[0]);
  if (IsFp4(format)) {  // ggml_mxfp4's table, or mxfp4_b32's halved: exact, a power of two or NaN
    return ScaleInBlock(format) ? kE8M0HalfScale[e] : kE8M0Scale[e] * 0.5f;
  }
  uint16_t h;
  std::memcpy(&h, scale, sizeof(h));
  return HalfToFloat(h);
}

bool CpuHasAvx512Vnni() {
#if defined(__x86_64__)
  static const bool has = IsaSupported(Isa::kAvx512) && __builtin_cpu_supports("avx512vnni");
  return has;
#else
  return false;
#endif
}

// The reference: each lane's integer dot taken column by column from the
// nibbles, in the order of the header.
void MatMulRowsQ8Scalar(const MatrixView& w, const Q8Activations& x, size_t row_begin,
                        size_t row_end, float* y, size_t y_stride) {
  const uint64_t blocks = w.cols / kBlock;
  for (size_t row = row_begin; row < row_end; ++row) {
    for (size_t t = 0; t < x.num_tokens; ++t) {
      float acc[kQ8GroupLanes] = {};
      for (uint64_t g = 0; g < x.groups; ++g) {
        const int8_t* codes = x.Codes(t, g);
        const float* lane_scale = x.LaneScale(t, g);
        for (uint64_t l = 0; l < kQ8GroupLanes; ++l) {
          const uint64_t b = 4 * g + l / 4;
          if (b >= blocks) continue;
          const std::byte* nibbles = BlockNibbles(w, row, b);
          int32_t p = 0;
          for (uint64_t i = 4 * l; i < 4 * l + 4; ++i) {
            const auto byte = static_cast<uint8_t>(nibbles[i % 16]);
            p += NibbleCode(w.format, byte & 0xf) * codes[i] +
                 NibbleCode(w.format, byte >> 4) * codes[64 + i];
          }
          const float scale = BlockScale(w.format, BlockScaleBytes(w, row, b)) * lane_scale[l];
          acc[l] = std::fma(scale, static_cast<float>(p), acc[l]);
        }
      }
      y[t * y_stride + row] = ReduceLanes(acc);
    }
  }
}

}  // namespace internal
}  // namespace warp::kernels
