#include "computed/model/kinds/gqa.h"

#include "computed/model/layer_plan.h"

namespace warp::computed {

GqaTensors GqaTensors::Of(const ModelConfig& c, const std::string& p, const GqaParams& params) {
  const uint64_t q_dim = uint64_t{c.num_heads} * c.head_dim;
  const uint64_t kv_dim = uint64_t{c.num_kv_heads} * c.head_dim;
  GqaTensors t{.q = {p + "q_proj.weight", {q_dim, c.hidden_size}},
               .k = {p + "k_proj.weight", {kv_dim, c.hidden_size}},
               .v = {p + "v_proj.weight", {kv_dim, c.hidden_size}},
               .o = {p + "o_proj.weight", {c.hidden_size, q_dim}}};
  if (params.qkv_bias) {
    t.q_bias = {p + "q_proj.bias", {q_dim}};
    t.k_bias = {p + "k_proj.bias", {kv_dim}};
    t.v_bias = {p + "v_proj.bias", {kv_dim}};
  }
  if (params.o_bias) t.o_bias = {p + "o_proj.bias", {c.hidden_size}};
  if (params.qk_norm) {
    t.q_norm = {p + "q_norm.weight", {c.head_dim}};
    t.k_norm = {p + "k_norm.weight", {c.head_dim}};
  }
  if (params.sinks) t.sinks = {p + "sinks", {c.num_heads}};
  return t;
}

void GqaTensors::ForEach(TensorVisitor visit) const {
  for (const TensorRef* t : {&q, &k, &v, &q_bias, &k_bias, &v_bias, &o, &o_bias, &q_norm, &k_norm,
                             &sinks}) {
    if (t->present()) visit(*t, GqaParams::kTrunkKind);
  }
}

uint64_t StateBytes(const ModelConfig& c, const GqaParams& params, uint64_t context) {
  return HeldPositions(context, params.sliding_window) * 2 * uint64_t{c.num_kv_heads} *
         c.head_dim * sizeof(float);
}

}  // namespace warp::computed
