#include "computed/model/kinds/kda.h"

#include "absl/strings/str_cat.h"

namespace warp::computed {

KdaTensors KdaTensors::Of(const ModelConfig& c, const std::string& p, const KdaParams& params) {
  const LinearAttention& kda = c.linear_attention;
  const uint64_t hidden = c.hidden_size, dim = kda.head_dim, width = uint64_t{kda.num_heads} * dim;
  KdaTensors t;
  const char* names[3] = {"q", "k", "v"};
  for (int i = 0; i < 3; ++i) {
    t.proj[i] = {absl::StrCat(p, names[i], "_proj.weight"), {width, hidden}};
    t.conv[i] = {absl::StrCat(p, names[i], "_conv1d.weight"), {width, 1, kda.conv_kernel}};
  }
  t.a_log = {
      .name = p + "A_log", .shape = params.a_log_shape, .zero_padded = params.a_log_zero_padded};
  t.dt_bias = {p + "dt_bias", {width}};
  t.f_a = {p + "f_a_proj.weight", {dim, hidden}};
  t.f_b = {p + "f_b_proj.weight", {width, dim}};
  t.b = {p + "b_proj.weight", {kda.num_heads, hidden}};
  if (kda.full_rank_gate) {
    t.g_full = {p + "g_proj.weight", {width, hidden}};
  } else {
    t.g_a = {p + "g_a_proj.weight", {dim, hidden}};
    t.g_b = {p + "g_b_proj.weight", {width, dim}};
  }
  t.o_norm = {p + "o_norm.weight", {dim}};
  t.o = {p + "o_proj.weight", {hidden, width}};
  return t;
}

void KdaTensors::ForEach(TensorVisitor visit) const {
  for (int i = 0; i < 3; ++i) {
    visit(proj[i], KdaParams::kTrunkKind);
    visit(conv[i], KdaParams::kTrunkKind);
  }
  for (const TensorRef* t : {&a_log, &dt_bias, &f_a, &f_b, &b, &g_full, &g_a, &g_b, &o_norm, &o}) {
    if (t->present()) visit(*t, KdaParams::kTrunkKind);
  }
}

namespace {

// Floats of one layer's state: per head the [head_dim, head_dim] matrix S,
// and the last conv_kernel - 1 inputs of the q, k and v convolutions.
uint64_t StateFloats(const LinearAttention& kda) {
  const uint64_t width = uint64_t{kda.num_heads} * kda.head_dim;
  return width * kda.head_dim + (kda.conv_kernel - 1) * 3 * width;
}

}  // namespace

uint64_t StateBytes(const ModelConfig& c, const KdaParams&, uint64_t) {
  return 2 * StateFloats(c.linear_attention) * sizeof(float);
}

}  // namespace warp::computed
