#include "computed/model/tensor_specs.h"

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace warp::computed {
namespace {

using Shape = std::vector<uint64_t>;

// Appends trunk tensors, choosing f32 for the precision-critical ones.
class SpecList {
 public:
  explicit SpecList(TensorFormat matrix_format) : matrix_format_(matrix_format) {}

  void Add(std::string name, Shape shape) {
    TensorSpec spec{.name = std::move(name), .format = matrix_format_, .shape = std::move(shape)};
    if (IsPrecisionCritical(spec) || !ShapeProblem(spec.format, spec.shape).empty()) {
      spec.format = TensorFormat::kF32;
    }
    specs_.push_back(std::move(spec));
  }

  void AddMlp(const std::string& prefix, uint64_t hidden, uint64_t intermediate) {
    Add(prefix + ".gate_proj.weight", {intermediate, hidden});
    Add(prefix + ".up_proj.weight", {intermediate, hidden});
    Add(prefix + ".down_proj.weight", {hidden, intermediate});
  }

  std::vector<TensorSpec> Take() { return std::move(specs_); }

 private:
  TensorFormat matrix_format_;
  std::vector<TensorSpec> specs_;
};

void AddMlaAttention(const ModelConfig& c, const std::string& p, SpecList& specs) {
  const uint64_t q_head = uint64_t{c.qk_nope_head_dim} + c.qk_rope_head_dim;
  if (c.q_lora_rank > 0) {
    specs.Add(p + "q_a_proj.weight", {c.q_lora_rank, c.hidden_size});
    specs.Add(p + "q_a_layernorm.weight", {c.q_lora_rank});
    specs.Add(p + "q_b_proj.weight", {c.num_heads * q_head, c.q_lora_rank});
  } else {
    specs.Add(p + "q_proj.weight", {c.num_heads * q_head, c.hidden_size});
  }
  specs.Add(p + "kv_a_proj_with_mqa.weight",
            {uint64_t{c.kv_lora_rank} + c.qk_rope_head_dim, c.hidden_size});
  specs.Add(p + "kv_a_layernorm.weight", {c.kv_lora_rank});
  specs.Add(p + "kv_b_proj.weight",
            {uint64_t{c.num_heads} * (c.qk_nope_head_dim + c.v_head_dim), c.kv_lora_rank});
  specs.Add(p + "o_proj.weight", {c.hidden_size, uint64_t{c.num_heads} * c.v_head_dim});
}

void AddGqaAttention(const ModelConfig& c, const std::string& p, SpecList& specs) {
  const uint64_t q_dim = uint64_t{c.num_heads} * c.head_dim;
  const uint64_t kv_dim = uint64_t{c.num_kv_heads} * c.head_dim;
  specs.Add(p + "q_proj.weight", {q_dim, c.hidden_size});
  specs.Add(p + "k_proj.weight", {kv_dim, c.hidden_size});
  specs.Add(p + "v_proj.weight", {kv_dim, c.hidden_size});
  if (c.attention_bias) {
    specs.Add(p + "q_proj.bias", {q_dim});
    specs.Add(p + "k_proj.bias", {kv_dim});
    specs.Add(p + "v_proj.bias", {kv_dim});
  }
  specs.Add(p + "o_proj.weight", {c.hidden_size, q_dim});
  if (c.qk_norm) {
    specs.Add(p + "q_norm.weight", {c.head_dim});
    specs.Add(p + "k_norm.weight", {c.head_dim});
  }
}

}  // namespace

bool IsPrecisionCritical(const TensorSpec& spec) {
  return spec.shape.size() == 1 || absl::EndsWith(spec.name, ".gate.weight");
}

std::string RouterName(const ModelConfig& c, uint32_t layer) {
  return absl::StrCat("model.layers.", layer,
                      c.arch == Architecture::kMixtral ? ".block_sparse_moe" : ".mlp",
                      ".gate.weight");
}

std::string ExpertTensorName(const ModelConfig& c, uint32_t layer, uint32_t expert,
                             std::string_view matrix) {
  if (c.arch == Architecture::kMixtral) {
    const char* w = matrix == "gate_proj" ? "w1" : matrix == "up_proj" ? "w3" : "w2";
    return absl::StrCat("model.layers.", layer, ".block_sparse_moe.experts.", expert, ".", w,
                        ".weight");
  }
  return absl::StrCat("model.layers.", layer, ".mlp.experts.", expert, ".", std::string(matrix),
                      ".weight");
}

std::vector<TensorSpec> TrunkTensorSpecs(const ModelConfig& c, TensorFormat matrix_format) {
  SpecList specs(matrix_format);
  const uint64_t hidden = c.hidden_size;
  specs.Add("model.embed_tokens.weight", {c.vocab_size, hidden});
  for (uint32_t layer = 0; layer < c.num_layers; ++layer) {
    const std::string p = absl::StrCat("model.layers.", layer, ".");
    specs.Add(p + "input_layernorm.weight", {hidden});
    if (c.arch == Architecture::kDeepseekV3) {
      AddMlaAttention(c, p + "self_attn.", specs);
    } else {
      AddGqaAttention(c, p + "self_attn.", specs);
    }
    specs.Add(p + "post_attention_layernorm.weight", {hidden});
    if (!c.IsMoeLayer(layer)) {
      specs.AddMlp(p + "mlp", hidden, c.intermediate_size);
      continue;
    }
    specs.Add(RouterName(c, layer), {c.num_experts, hidden});
    if (c.router == RouterKind::kSigmoidGroupTopK) {
      specs.Add(p + "mlp.gate.e_score_correction_bias", {c.num_experts});
    }
    if (c.num_shared_experts > 0) {
      specs.AddMlp(p + "mlp.shared_experts", hidden,
                   uint64_t{c.moe_intermediate_size} * c.num_shared_experts);
    }
  }
  specs.Add("model.norm.weight", {hidden});
  if (!c.tie_word_embeddings) specs.Add("lm_head.weight", {c.vocab_size, hidden});
  return specs.Take();
}

std::vector<TensorSpec> ExpertMatrixSpecs(const ModelConfig& c, TensorFormat format) {
  const uint64_t hidden = c.hidden_size;
  const uint64_t inter = c.moe_intermediate_size;
  return {
      {.name = "gate_proj", .format = format, .shape = {inter, hidden}},
      {.name = "up_proj", .format = format, .shape = {inter, hidden}},
      {.name = "down_proj", .format = format, .shape = {hidden, inter}},
  };
}

}  // namespace warp::computed
