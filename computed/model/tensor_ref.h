#pragma once

// TensorRef: one trunk tensor a kind (mixer, FFN, residual scheme) binds, as
// the kind declares it: its Hugging Face name and its shape. Each kind's
// module (computed/model/kinds/) lists its tensors once; the trunk's file
// order, Create's check, the converter, synth and the engine's bindings all
// read that one list.
//
// Thread-compatible value types.

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"

namespace warp::computed {

// What a trunk tensor does: the unit --trunk mixed stores at 8 or 4 bits
// (trunk_choice.h). A tied head is the embedding.
enum class TrunkKind {
  kEmbedding,
  kHead,
  kAttention,         // MLA, GQA and compressed MQA projections
  kIndexer,           // sparse attention's indexers and KV compressors
  kLinearAttention,   // KDA projections
  kDenseMlp,          // the dense layers' MLPs
  kSharedExperts,
  kLatentProjection,  // LatentMoE's down and up projections (Kimi K3)
  kOther,             // norms, routers, mixes: f32 whatever the choice
};

struct TensorRef {
  std::string name;  // "": the kind's plan leaves this tensor out
  std::vector<uint64_t> shape;
  // Stored f32 whatever the trunk's format: a matrix whose precision steers
  // what comes after it (routers, position biases, expert ids). Tensors that
  // are not matrices (norms, biases, taps) are f32 anyway.
  bool f32 = false;
  // The checkpoint may hold this vector zero-padded to a longer one (Kimi
  // K3's A_log: the release pads its heads to the head dimension, llama.cpp's
  // converter writes [heads]). The container holds `shape`.
  bool zero_padded = false;

  bool present() const { return !name.empty(); }
};

// Called once per present tensor, in trunk file order, with what it does.
using TensorVisitor = absl::FunctionRef<void(const TensorRef&, TrunkKind)>;

}  // namespace warp::computed
