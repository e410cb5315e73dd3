#pragma once

// The names of the matrices in one routed expert's record, by the activation
// that reads them (ExpertActivation): the one source of truth for the
// families that write records (computed/model/kinds/expert_record.h) and the
// ExpertMath that reads them, in computed and in expertd.
//
// Thread-safe: constants.

#include <string_view>

namespace warp {

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

}  // namespace warp
