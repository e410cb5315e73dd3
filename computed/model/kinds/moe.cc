#include "computed/model/kinds/moe.h"

namespace warp::computed {
namespace {

// The plan's name, or absent.
TensorRef Named(const std::string& name, std::vector<uint64_t> shape, bool f32 = false) {
  return name.empty() ? TensorRef{} : TensorRef{name, std::move(shape), f32};
}

}  // namespace

MoeTensors MoeTensors::Of(const ModelConfig& c, const FfnPlan& f) {
  const uint64_t hidden = c.hidden_size;
  MoeTensors t{.router = {f.router_weight, {c.num_experts, hidden}, /*f32=*/true},
               .router_bias = Named(f.router_bias, {c.num_experts}),
               .selection_bias = Named(f.selection_bias, {c.num_experts}),
               .hash_table = Named(f.hash_table, {c.vocab_size, c.experts_per_token}, true)};
  if (!f.shared_prefix.empty()) {
    t.shared = MlpTensors::Of(f.shared_prefix, f.mlp, hidden, f.shared_intermediate);
  }
  if (f.latent_dim > 0) {
    t.latent_down = {f.latent_down, {f.latent_dim, hidden}};
    t.latent_norm = Named(f.latent_norm, {f.latent_dim});
    t.latent_up = {f.latent_up, {hidden, f.latent_dim}};
  }
  return t;
}

void MoeTensors::ForEach(TensorVisitor visit) const {
  for (const TensorRef* t : {&router, &router_bias, &selection_bias}) {
    if (t->present()) visit(*t, TrunkKind::kOther);
  }
  if (shared) shared->ForEach(TrunkKind::kSharedExperts, visit);
  if (hash_table.present()) visit(hash_table, TrunkKind::kOther);
  for (const TensorRef* t : {&latent_down, &latent_norm, &latent_up}) {
    if (t->present()) visit(*t, TrunkKind::kLatentProjection);
  }
}

}  // namespace warp::computed
