#pragma once

// Stored matrices of every TensorFormat with random contents, and the ISA
// helpers, for the kernel tests (kernels_test, q8_activations_test).

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "common/format/tensor_format.h"
#include "common/kernels/matmul.h"
#include "common/kernels/matrix_view.h"
#include "common/numeric/half.h"

namespace warp::kernels::kernel_test {

// A matrix and its bytes, owned by the test.
struct StoredMatrix {
  TensorFormat format = TensorFormat::kF32;
  uint64_t rows = 0, cols = 0;
  std::vector<std::byte> data, scale;
  Vq3rCodebook codebook;  // vq3r_b32 only

  StoredMatrix(TensorFormat f, uint64_t r, uint64_t c)
      : format(f), rows(r), cols(c), data(DataBytes(f, {r, c})), scale(ScaleBytes(f, {r, c})) {}

  MatrixView View() const {
    return {.format = format,
            .rows = rows,
            .cols = cols,
            .data = data.data(),
            .scale = scale.empty() ? nullptr : scale.data(),
            .codebook = NeedsCodebook(format) ? &codebook : nullptr};
  }
  template <typename T>
  void Set(std::vector<std::byte>& bytes, uint64_t index, T value) {
    std::memcpy(bytes.data() + index * sizeof(T), &value, sizeof(T));
  }
};

// Restores the active ISA at the end of a scope.
class ScopedIsa {
 public:
  explicit ScopedIsa(Isa isa) : saved_(ActiveIsa()) { SetIsaForTesting(isa); }
  ~ScopedIsa() { SetIsaForTesting(saved_); }

 private:
  Isa saved_;
};

inline std::vector<Isa> SupportedIsas() {
  std::vector<Isa> isas;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    if (IsaSupported(isa)) isas.push_back(isa);
  }
  return isas;
}

inline std::vector<Isa> SupportedSimdIsas() {
  std::vector<Isa> isas = SupportedIsas();
  isas.erase(isas.begin());
  return isas;
}

inline float Uniform(std::mt19937_64& rng, float lo, float hi) {
  return std::uniform_real_distribution<float>(lo, hi)(rng);
}

// Where a ggml block keeps its f16 d (and m or dmin), ggml-common.h.
inline std::vector<uint64_t> GgmlHalfOffsets(TensorFormat format) {
  switch (format) {
    case TensorFormat::kGgmlQ8_0:
    case TensorFormat::kGgmlQ4_0:
    case TensorFormat::kGgmlQ5_0:
      return {0};
    case TensorFormat::kGgmlQ2_K:
      return {80, 82};
    case TensorFormat::kGgmlQ3_K:
      return {108};
    case TensorFormat::kGgmlQ6_K:
      return {208};
    default:  // q4_1, q5_1, q4_K, q5_K: d, then m or dmin
      return {0, 2};
  }
}

// Random weights with sane magnitudes; f8 avoids the NaN codes and mxfp4 the
// NaN scale (NaN payloads are not part of the bit-equality contract).
inline StoredMatrix RandomMatrix(TensorFormat format, uint64_t rows, uint64_t cols,
                                 std::mt19937_64& rng) {
  StoredMatrix m(format, rows, cols);
  const uint64_t n = rows * cols;
  switch (format) {
    case TensorFormat::kF32:
      for (uint64_t i = 0; i < n; ++i) m.Set(m.data, i, Uniform(rng, -1, 1));
      break;
    case TensorFormat::kF16:
      for (uint64_t i = 0; i < n; ++i) m.Set(m.data, i, FloatToHalf(Uniform(rng, -2, 2)));
      break;
    case TensorFormat::kBF16:
      for (uint64_t i = 0; i < n; ++i) m.Set(m.data, i, FloatToBf16(Uniform(rng, -2, 2)));
      break;
    case TensorFormat::kF8E4M3B128:
    case TensorFormat::kF8E4M3B32:
      for (std::byte& b : m.data) {
        uint8_t code = static_cast<uint8_t>(rng());
        while ((code & 0x7f) == 0x7f) code = static_cast<uint8_t>(rng());
        b = std::byte{code};
      }
      for (uint64_t i = 0; i < m.scale.size() / 4; ++i) m.Set(m.scale, i, Uniform(rng, 1e-3, 1e-2));
      break;
    case TensorFormat::kVq3rB32:  // any codes; centroids as a trained codebook's
      for (float& c : m.codebook.centroids) c = Uniform(rng, -2, 2);
      m.codebook.ComputeSums();
      [[fallthrough]];
    case TensorFormat::kQ8B32:
    case TensorFormat::kQ4B32:
      for (std::byte& b : m.data) b = std::byte{static_cast<uint8_t>(rng())};
      for (uint64_t i = 0; i < m.scale.size() / 2; ++i) {
        m.Set(m.scale, i, FloatToHalf(Uniform(rng, 1e-3, 5e-2)));
      }
      break;
    case TensorFormat::kMxfp4B32:  // any nibble; scales 2^-7 .. 2^4
      for (std::byte& b : m.data) b = std::byte{static_cast<uint8_t>(rng())};
      for (std::byte& b : m.scale) b = std::byte{static_cast<uint8_t>(120 + rng() % 12)};
      break;
    case TensorFormat::kGgmlQ8_0:
    case TensorFormat::kGgmlQ4_0:
    case TensorFormat::kGgmlMxfp4: {  // any codes; each block's scale first
      const GgmlBlockLayout layout = *GgmlBlockLayoutOf(format);
      for (std::byte& b : m.data) b = std::byte{static_cast<uint8_t>(rng())};
      for (uint64_t block = 0; block < m.data.size() / layout.bytes; ++block) {
        if (format == TensorFormat::kGgmlMxfp4) {
          m.data[block * layout.bytes] = std::byte{static_cast<uint8_t>(120 + rng() % 12)};
        } else {
          const uint16_t d = FloatToHalf(Uniform(rng, -5e-2, 5e-2));
          std::memcpy(m.data.data() + block * layout.bytes, &d, sizeof(d));
        }
      }
      break;
    }
    case TensorFormat::kGgmlQ4_1:
    case TensorFormat::kGgmlQ5_0:
    case TensorFormat::kGgmlQ5_1:
    case TensorFormat::kGgmlQ2_K:
    case TensorFormat::kGgmlQ3_K:
    case TensorFormat::kGgmlQ4_K:
    case TensorFormat::kGgmlQ5_K:
    case TensorFormat::kGgmlQ6_K: {  // any codes and sub-block scales; f16 d (and m, dmin)
      const GgmlBlockLayout layout = *GgmlBlockLayoutOf(format);
      const float range = layout.elements == 32 ? 5e-2f : 2e-3f;
      for (std::byte& b : m.data) b = std::byte{static_cast<uint8_t>(rng())};
      for (uint64_t block = 0; block < m.data.size() / layout.bytes; ++block) {
        for (uint64_t offset : GgmlHalfOffsets(format)) {
          const uint16_t d = FloatToHalf(Uniform(rng, -range, range));
          std::memcpy(m.data.data() + block * layout.bytes + offset, &d, sizeof(d));
        }
      }
      break;
    }
  }
  return m;
}

inline std::vector<float> RandomVector(size_t n, std::mt19937_64& rng) {
  std::vector<float> v(n);
  for (float& f : v) f = Uniform(rng, -1, 1);
  return v;
}

}  // namespace warp::kernels::kernel_test
