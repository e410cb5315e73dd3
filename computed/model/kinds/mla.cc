#include "computed/model/kinds/mla.h"

namespace warp::computed {

PooledIndexerTensors PooledIndexerTensors::Of(const ModelConfig& c, const std::string& p) {
  const DsaIndexer& d = c.dsa;
  return {.q_b = {p + "wq_b.weight", {uint64_t{d.index_heads} * d.index_head_dim, c.q_lora_rank}},
          .wk = {p + "wk.weight", {d.index_head_dim, c.hidden_size}},
          .k_norm_weight = {p + "k_norm.weight", {d.index_head_dim}},
          .k_norm_bias = {p + "k_norm.bias", {d.index_head_dim}},
          .weights_proj = {p + "weights_proj.weight", {d.index_heads, c.hidden_size}},
          .kpool_ape = {p + "index_kpool_compress_ape", {d.kpool, d.index_head_dim}, /*f32=*/true},
          .kpool_gate = {p + "index_kpool_compress_gate", {d.index_head_dim, c.hidden_size}}};
}

void PooledIndexerTensors::ForEach(TensorVisitor visit) const {
  for (const TensorRef* t :
       {&q_b, &wk, &k_norm_weight, &k_norm_bias, &weights_proj, &kpool_ape, &kpool_gate}) {
    visit(*t, TrunkKind::kIndexer);
  }
}

MlaTensors MlaTensors::Of(const ModelConfig& c, const std::string& p, const MlaParams& params) {
  const uint64_t heads = c.num_heads, q_head = uint64_t{c.qk_nope_head_dim} + c.qk_rope_head_dim;
  MlaTensors t;
  if (c.q_lora_rank > 0) {
    t.q_a = {p + "q_a_proj.weight", {c.q_lora_rank, c.hidden_size}};
    t.q_a_norm = {p + "q_a_layernorm.weight", {c.q_lora_rank}};
    t.q_b = {p + "q_b_proj.weight", {heads * q_head, c.q_lora_rank}};
  } else {
    t.q_b = {p + "q_proj.weight", {heads * q_head, c.hidden_size}};
  }
  t.kv_a = {p + "kv_a_proj_with_mqa.weight",
            {uint64_t{c.kv_lora_rank} + c.qk_rope_head_dim, c.hidden_size}};
  t.kv_a_norm = {p + "kv_a_layernorm.weight", {c.kv_lora_rank}};
  if (c.kv_b_split) {
    t.k_b = {p + "k_b_proj.weight", {heads * c.kv_lora_rank, c.qk_nope_head_dim}};
    t.v_b = {p + "v_b_proj.weight", {heads * c.v_head_dim, c.kv_lora_rank}};
  } else {
    t.kv_b = {p + "kv_b_proj.weight",
              {heads * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank}};
  }
  if (params.output_gate) t.gate = {p + "g_proj.weight", {heads * c.v_head_dim, c.hidden_size}};
  t.o = {p + "o_proj.weight", {c.hidden_size, heads * c.v_head_dim}};
  if (params.dsa_indexer) t.indexer = PooledIndexerTensors::Of(c, p + "indexer.");
  return t;
}

void MlaTensors::ForEach(TensorVisitor visit) const {
  for (const TensorRef* t : {&q_a, &q_a_norm, &q_b, &kv_a, &kv_a_norm, &k_b, &v_b, &kv_b, &gate}) {
    if (t->present()) visit(*t, MlaParams::kTrunkKind);
  }
  if (indexer) indexer->ForEach(visit);
  visit(o, MlaParams::kTrunkKind);
}

uint64_t StateBytes(const ModelConfig& c, const MlaParams& params, uint64_t context) {
  const uint64_t index = params.dsa_indexer ? 2 * uint64_t{c.dsa.index_head_dim} : 0;
  return context * (uint64_t{c.kv_lora_rank} + c.qk_rope_head_dim + index) * sizeof(float);
}

}  // namespace warp::computed
