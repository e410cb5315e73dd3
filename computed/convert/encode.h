#pragma once

// Float32 rows -> the bytes of a storage format (docs/FORMAT.md#tensor-formats).
// The converter's quantizers; the kernels' DequantizeRow is the inverse.

#include <cstddef>
#include <cstdint>
#include <span>

#include "common/format/tensor_format.h"

namespace warp::computed {

// Encodes `num_rows` rows of `cols` floats into `data` (DataBytes of
// [num_rows, cols]) and, for q8_b32/q4_b32, `scale` (ScaleBytes). Symmetric
// block quantization: scale = max|x| / 127 (q8) or / 7 (q4), stored f16, codes
// rounded to nearest with that stored scale. REQUIRES:
// TraitsOf(format).encodable (f32, f16, bf16, q8_b32, q4_b32); cols % 32 == 0
// for the q formats. A block whose
// max|x| / 127 (or / 7) exceeds 65504 stores scale 65504 and saturated codes.
void EncodeRows(TensorFormat format, std::span<const float> rows, uint64_t cols,
                std::span<std::byte> data, std::span<std::byte> scale);

}  // namespace warp::computed
