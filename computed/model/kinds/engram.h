#pragma once

// DeepSeek V4.1's engram memory at one layer: the rows its hash picks (from
// the engram bank on disk, not the trunk) go through `wkv` to one key per
// hyper-connection stream and a shared value; each stream adds the value
// gated by how well it matches its key, before the layer's attention. Its
// plan entry and the trunk tensors it binds under the release's names. The
// math is engine/engram_memory.h; docs/ENGINE.md#deepseek-v41.
//
// Thread-compatible value types.

#include <cstdint>
#include <string>

#include "computed/model/model_config.h"
#include "computed/model/tensor_ref.h"

namespace warp::computed {

struct EngramPlan {
  std::string prefix;  // "" (no engram at this layer) or "layers.N.engram."
  uint32_t table = 0;  // which of engram_layer_ids: its table and its hash multipliers

  bool present() const { return !prefix.empty(); }
};

// Under the plan's prefix. The table itself (embed.weight E4M3 rows and
// embed.scale) is the engram bank's.
struct EngramTensors {
  TensorRef kv;                  // wkv [(hc_mult + 1) hidden, rows per token x head_dim]
  TensorRef q_weight, k_weight;  // [hc_mult, hidden], used only as their product

  static EngramTensors Of(const ModelConfig& c, const EngramPlan& plan);
  void ForEach(TensorVisitor visit) const;
};

// The table names of engram table `table` in the release's checkpoint.
std::string EngramTableCodes(const EngramPlan& plan);   // embed.weight [rows, head_dim] E4M3
std::string EngramTableScales(const EngramPlan& plan);  // embed.scale [rows, head_dim / 32] E8M0

}  // namespace warp::computed
