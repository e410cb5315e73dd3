#pragma once

// Seeded random tensor bytes for synthetic models. Counter-based: every
// 8-byte word of a tensor (every row of expert ids) is a pure function of
// (stream, word or row index), so a tensor can be generated chunk by chunk, in
// any order, in bounded memory, and the same seed always gives the same bytes.
//
// Values are zero-centred and symmetric (DESIGN.md#testing: biased codes make
// every token route to the same experts and flatter caches): a code of 0 is
// as likely as its mirror, q4 never uses the asymmetric code -8, and mxfp4's
// E2M1 codes are symmetric as they come.

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "common/format/tensor_format.h"

namespace warp::computed {

struct FillSpec {
  TensorFormat format = TensorFormat::kF32;
  std::vector<uint64_t> shape;
  float center = 0.0f;     // mean of the real values
  float amplitude = 1.0f;  // real values span about center +- amplitude
  uint32_t integers = 0;   // > 0 (f32 only): whole numbers 0 .. integers - 1 (expert ids),
                           // distinct within each row of shape.back()
};

// Whether FillData writes `format`: f32, f16, bf16, q8_b32, q4_b32 and
// mxfp4_b32, the rows of random_fill.cc's fill table.
bool CanFill(TensorFormat format);

// Where a format synth cannot write comes from, for an error; "" if CanFill.
std::string_view WhySynthCannotFill(TensorFormat format);

// Stream key of one tensor: mixes the seed with a name that identifies it
// (e.g. "model.layers.3.mlp.gate.weight" or "L3/E17/gate_proj").
uint64_t StreamKey(uint64_t seed, std::string_view name);

// Bytes [offset, offset + out.size()) of the data sub-tensor.
void FillData(const FillSpec& spec, uint64_t stream, uint64_t offset, std::span<std::byte> out);

// Bytes [offset, offset + out.size()) of the scale sub-tensor (block formats).
void FillScale(const FillSpec& spec, uint64_t stream, uint64_t offset, std::span<std::byte> out);

}  // namespace warp::computed
