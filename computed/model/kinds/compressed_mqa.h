#pragma once

// DeepSeek V4's attention: one K = V head over a sliding window plus
// compressed entries, with sinks; a layer compresses with HCA, or with CSA and
// its lightning indexer, or not at all. Its plan parameters, the trunk tensors
// it binds, under the release's names, and the state it keeps. The math is
// engine/mixers/compressed_mqa_attention.h, kv_compressor.h and
// lightning_indexer.h; docs/ENGINE.md#deepseek-v4.
//
// Thread-compatible value types.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "computed/model/model_config.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

struct CompressedMqaTensors;

struct CompressedMqaParams {
  using Tensors = CompressedMqaTensors;  // the tensors it binds
  static constexpr TrunkKind kTrunkKind = TrunkKind::kAttention;
  static constexpr bool kEndsInOutputProjection = false;  // wo_a, wo_b: grouped, low-rank

  uint32_t sliding_window = 0;  // keys of the last W positions
  CompressionKind compression = CompressionKind::kNone;
  uint32_t compress_rate = 0;
};

// A KV compressor under its prefix ("….compressor."): `width` rows of kv and
// gate (2 dim with overlap), pooled `rate` positions at a time to `dim`.
struct KvCompressorTensors {
  TensorRef kv, gate, ape, norm;  // wkv, wgate [width, hidden], ape [rate, width], norm [dim]

  static KvCompressorTensors Of(const ModelConfig& c, const std::string& prefix, uint64_t width,
                                uint64_t dim, uint32_t rate);
  void ForEach(TensorVisitor visit) const;  // as TrunkKind::kIndexer
};

// CSA's lightning indexer under "PREFIX.indexer.": its queries, head weights
// and its own compressed keys.
struct LightningIndexerTensors {
  TensorRef q_b, weights_proj;
  KvCompressorTensors keys;

  static LightningIndexerTensors Of(const ModelConfig& c, const std::string& prefix, uint32_t rate);
  void ForEach(TensorVisitor visit) const;  // as TrunkKind::kIndexer
};

// Under the mixer's prefix ("layers.N.attn.").
struct CompressedMqaTensors {
  TensorRef q_a, q_norm, q_b;  // wq_a, q_norm, wq_b
  TensorRef kv, kv_norm;       // wkv, kv_norm
  TensorRef o_a, o_b;          // wo_a [groups rank, heads dim / groups], wo_b
  TensorRef sinks;             // attn_sink [heads]
  std::optional<KvCompressorTensors> compressor;    // HCA and CSA
  std::optional<LightningIndexerTensors> indexer;   // CSA

  static CompressedMqaTensors Of(const ModelConfig& c, const std::string& prefix,
                                 const CompressedMqaParams& params);
  void ForEach(TensorVisitor visit) const;
};

// The K = V ring, the compressed entries and the compressors' open windows.
uint64_t StateBytes(const ModelConfig& c, const CompressedMqaParams& params, uint64_t context);

}  // namespace warp::computed
