#pragma once

// TrunkChoice: the --trunk of `computed convert`, `synth` and `plan`, how the
// trunk's matrices are stored, parsed in one place:
//   native      as the release ships each (FP8 stays FP8, bf16 stays bf16)
//   bf16|q8|q4  every matrix so (rows that are not whole 32-blocks stay bf16)
//   mixed       the kinds kMixedEightBitKinds names at 8 bits (the release's
//               FP8 kept, else q8), every other matrix at q4: the seeds'
//               4-8 bit trunk, the rule measured in EFFICIENCY.md ("A trunk
//               that fits")
//   mixed:KIND,..  the named kinds at 8 bits, every other matrix q4: the
//               diagnostic that compares candidate rules
//   q4:KIND,..  the named kinds (TrunkKindName) at q4, the rest native: the
//               diagnostic that measures each kind's sensitivity
// Norms, routers, biases and mixes stay f32 whatever the choice
// (TrunkTensor::f32).
//
// Thread-compatible value type.

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/tensor_format.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {

// The kinds --trunk mixed keeps at 8 bits: on the trained demo model they
// take the trunk's mean KL from 1.2e-2 (all q4) to 2.9e-4 for 9% more trunk
// on Kimi K3 (35.7 GiB against 32.8 with the embedding and head alone at 8
// bits); the big recurrent (KDA) projections, the shared experts and K3's
// latent projections stay q4 (EFFICIENCY.md, "A trunk that fits").
inline constexpr TrunkKind kMixedEightBitKinds[] = {TrunkKind::kEmbedding, TrunkKind::kHead,
                                                    TrunkKind::kDenseMlp, TrunkKind::kIndexer,
                                                    TrunkKind::kAttention};

inline constexpr std::string_view kTrunkChoices =
    "native, bf16, q8, q4, mixed, mixed:KIND[,KIND] or q4:KIND[,KIND]";

class TrunkChoice {
 public:
  // Errors name the flag and the choices.
  static absl::StatusOr<TrunkChoice> Parse(std::string_view text);

  // The format of a trunk matrix of `kind` and `shape` whose own (native)
  // format is `native`.
  TensorFormat FormatOf(TrunkKind kind, TensorFormat native,
                        const std::vector<uint64_t>& shape) const;

  const std::string& text() const { return text_; }
  bool native() const { return mode_ == Mode::kNative; }

 private:
  enum class Mode { kNative, kUniform, kMixed, kQ4Kinds };
  std::string text_;
  Mode mode_ = Mode::kNative;
  TensorFormat uniform_ = TensorFormat::kBF16;
  std::vector<TrunkKind> kinds_;  // kMixed: those at 8 bits; kQ4Kinds: those at q4
};

}  // namespace warp::computed
