#pragma once

// The matrices of one routed expert's record, by the activation that reads
// them (ExpertActivation): their names, shapes and formats, in record order.
// Families choose the shape's numbers (Kimi K3's experts run in a latent
// width); ExpertMath (engine/ffns/expert_math.h) resolves the same names.
//
// Thread-safe: constants and pure functions.

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/format/container_writer.h"

namespace warp::computed {

struct RecordMatrix {
  static constexpr std::string_view kGate = "gate_proj";  // [intermediate, width]
  static constexpr std::string_view kUp = "up_proj";      // [intermediate, width]
  static constexpr std::string_view kDown = "down_proj";  // [width, intermediate]
  // gpt-oss: gate and up in one matrix, rows interleaved (gate j = row 2j,
  // up j = row 2j + 1), and f32 biases.
  static constexpr std::string_view kGateUp = "gate_up_proj";           // [2 intermediate, width]
  static constexpr std::string_view kGateUpBias = "gate_up_proj_bias";  // [2 intermediate]
  static constexpr std::string_view kDownBias = "down_proj_bias";       // [width]
};

// kSwiGlu: gate, up, down in `format`.
std::vector<TensorSpec> SwiGluRecord(uint64_t intermediate, uint64_t width, TensorFormat format);
// kClampedSwiGlu: gate_up and down in `format`, their biases f32.
std::vector<TensorSpec> ClampedSwiGluRecord(uint64_t intermediate, uint64_t width,
                                            TensorFormat format);

}  // namespace warp::computed
