#pragma once

// DeepSeek V4.1's attention (CSA2): V4's single K = V head over a sliding
// window plus compressed entries, but the compressed cache and the choice of
// entries are shared across layers. A KV source layer owns the compressor
// (ratio 2: gated pooling of pairs; ratio 1: every position, no gate) and,
// as an index source, the index keys; the layers up to the next source read
// its cache. An index source scores the keys of its group and picks the
// entries every layer up to the next index source attends to; the candidate
// source's top blocks bound the choice of the index sources after it. Its
// plan parameters, the trunk tensors it binds under the release's names, and
// the state it keeps. The math is engine/mixers/shared_compressed_attention.h;
// docs/ENGINE.md#deepseek-v41.
//
// Thread-compatible value types.

#include <cstdint>
#include <optional>
#include <string>

#include "computed/model/kinds/compressed_mqa.h"
#include "computed/model/model_config.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

struct SharedCompressedMqaTensors;

struct SharedCompressedMqaParams {
  using Tensors = SharedCompressedMqaTensors;  // the tensors it binds
  static constexpr TrunkKind kTrunkKind = TrunkKind::kAttention;
  static constexpr bool kEndsInOutputProjection = false;  // wo_a, wo_b: grouped, low-rank

  static constexpr int32_t kNone = SharedCompression::kNone;

  uint32_t layer = 0;
  uint32_t sliding_window = 0;  // keys of the last W positions
  uint32_t compress_rate = 0;   // positions per compressed entry; 0: the window only
  // Layers (kNone: none): whose compressed cache it reads, whose choice of
  // entries it attends to, whose candidate blocks later index sources keep to.
  int32_t kv_source = kNone, index_source = kNone, candidate_source = kNone;

  // A KV source computes the cache its group reads; an index source picks
  // the entries the layers up to the next one attend to.
  bool owns_compressor() const { return kv_source == static_cast<int32_t>(layer); }
  bool runs_indexer() const { return index_source == static_cast<int32_t>(layer); }
  bool is_candidate_source() const {
    return runs_indexer() && candidate_source == static_cast<int32_t>(layer);
  }
  bool uses_candidates() const {
    return runs_indexer() && candidate_source != kNone &&
           candidate_source < static_cast<int32_t>(layer);
  }
};

// Under the mixer's prefix ("layers.N.attn."): V4's projections, plus the
// compressor on KV sources and the indexer on index sources.
struct SharedCompressedMqaTensors {
  CompressedMqaTensors attention;  // wq_a … attn_sink; no compressor or indexer of V4's kind
  struct Compressor {
    TensorRef kv, gate, norm;  // wkv, wgate [head_dim, hidden] (ratio > 1), norm [head_dim]
  };
  struct Indexer {
    TensorRef q_b, weights_proj;  // wq_b [heads dim, q_lora], weights_proj [heads, hidden]
    TensorRef k, k_norm;          // KV sources: wk [index dim, head_dim], k_norm [index dim]
  };
  std::optional<Compressor> compressor;
  std::optional<Indexer> indexer;

  static SharedCompressedMqaTensors Of(const ModelConfig& c, const std::string& prefix,
                                       const SharedCompressedMqaParams& params);
  void ForEach(TensorVisitor visit) const;
};

// The window ring; a KV source adds its compressed entries, index keys and
// open group (and their chat checkpoint).
uint64_t StateBytes(const ModelConfig& c, const SharedCompressedMqaParams& params,
                    uint64_t context);

}  // namespace warp::computed
