#include "computed/convert/gguf_architectures.h"

#include "absl/strings/str_join.h"
#include "common/status.h"

namespace warp::computed {
namespace {

using Json = nlohmann::ordered_json;

// qwen3moe (Qwen3-30B-A3B, Qwen3-235B-A22B): llama.cpp's llama_model_qwen3moe
// routes every layer through softmax top-k with the top-k renormalized.
// Outside the layers, every architecture here names its tensors the same way.
constexpr GgufTensorRule kGlobal[] = {
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
};
constexpr GgufTensorRule kQwen3MoeLayer[] = {
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate_inp", "mlp.gate"},
    {"ffn_gate_exps", "mlp.experts.{}.gate_proj", true},
    {"ffn_up_exps", "mlp.experts.{}.up_proj", true},
    {"ffn_down_exps", "mlp.experts.{}.down_proj", true},
};

absl::Status Qwen3MoeConfig(const GgufHparams& h, Json& config) {
  WARP_ASSIGN_OR_RETURN(config["num_experts"], h.Uint("expert_count"));
  WARP_ASSIGN_OR_RETURN(config["moe_intermediate_size"], h.Uint("expert_feed_forward_length"));
  config["norm_topk_prob"] = true;
  config["decoder_sparse_step"] = 1;
  WARP_ASSIGN_OR_RETURN(double scale, h.FloatOr("expert_weights_scale", 1.0));
  if (scale != 1.0 && scale != 0.0) {  // llama.cpp reads 0 as "no scale"
    return absl::InvalidArgumentError(
        absl::StrCat(h.Key("expert_weights_scale"), ": ", scale, " is not supported (1)"));
  }
  return absl::OkStatus();
}

// llama with experts (Mixtral): softmax top-k renormalized, as Mixtral.
constexpr GgufTensorRule kLlamaLayer[] = {
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj", false, GgufRopeRows::kQueryHeads},
    {"attn_k", "self_attn.k_proj", false, GgufRopeRows::kKeyHeads},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate_inp", "block_sparse_moe.gate"},
    {"ffn_gate_exps", "block_sparse_moe.experts.{}.w1", true},
    {"ffn_up_exps", "block_sparse_moe.experts.{}.w3", true},
    {"ffn_down_exps", "block_sparse_moe.experts.{}.w2", true},
};

absl::Status LlamaConfig(const GgufHparams& h, Json& config) {
  WARP_ASSIGN_OR_RETURN(uint64_t experts, h.UintOr("expert_count", 0));
  if (experts == 0) {
    return absl::UnimplementedError(
        absl::StrCat(h.Key("expert_count"), ": a llama without experts is not a MoE (Mixtral)"));
  }
  config["num_local_experts"] = experts;
  WARP_ASSIGN_OR_RETURN(config["intermediate_size"], h.Uint("feed_forward_length"));
  const uint64_t head_dim = config.contains("head_dim")
                                ? config["head_dim"].get<uint64_t>()
                                : config["hidden_size"].get<uint64_t>() /
                                      config["num_attention_heads"].get<uint64_t>();
  WARP_ASSIGN_OR_RETURN(uint64_t rope_dim, h.UintOr("rope.dimension_count", head_dim));
  if (rope_dim != head_dim) {
    return absl::UnimplementedError(absl::StrCat(h.Key("rope.dimension_count"), ": ", rope_dim,
                                                 " (partial rope) is not supported: ", head_dim));
  }
  return absl::OkStatus();
}

// glm4moe (GLM-4.5, GLM-4.5-Air): sigmoid routing with a selection bias,
// shared experts, leading dense layers, partial NeoX rope.
constexpr GgufTensorRule kGlm4MoeLayer[] = {
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"attn_q_norm", "self_attn.q_norm"},
    {"attn_k_norm", "self_attn.k_norm"},
    {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    {"ffn_gate_inp", "mlp.gate"},
    {"exp_probs_b", "mlp.gate", false, GgufRopeRows::kAsStored, "e_score_correction_bias"},
    {"ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
    {"ffn_up_shexp", "mlp.shared_experts.up_proj"},
    {"ffn_down_shexp", "mlp.shared_experts.down_proj"},
    {"ffn_gate_exps", "mlp.experts.{}.gate_proj", true},
    {"ffn_up_exps", "mlp.experts.{}.up_proj", true},
    {"ffn_down_exps", "mlp.experts.{}.down_proj", true},
};

// llama.cpp's LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID.
constexpr uint64_t kGatingSigmoid = 2;

absl::Status Glm4MoeConfig(const GgufHparams& h, Json& config) {
  WARP_ASSIGN_OR_RETURN(config["n_routed_experts"], h.Uint("expert_count"));
  WARP_ASSIGN_OR_RETURN(config["moe_intermediate_size"], h.Uint("expert_feed_forward_length"));
  WARP_ASSIGN_OR_RETURN(config["n_shared_experts"], h.UintOr("expert_shared_count", 0));
  WARP_ASSIGN_OR_RETURN(config["first_k_dense_replace"], h.UintOr("leading_dense_block_count", 0));
  WARP_ASSIGN_OR_RETURN(config["routed_scaling_factor"], h.FloatOr("expert_weights_scale", 1.0));
  WARP_ASSIGN_OR_RETURN(config["norm_topk_prob"], h.BoolOr("expert_weights_norm", false));
  WARP_ASSIGN_OR_RETURN(config["n_group"], h.UintOr("expert_group_count", 1));
  WARP_ASSIGN_OR_RETURN(config["topk_group"], h.UintOr("expert_group_used_count", 1));
  WARP_ASSIGN_OR_RETURN(uint64_t gating, h.UintOr("expert_gating_func", kGatingSigmoid));
  if (gating != kGatingSigmoid) {
    return absl::UnimplementedError(absl::StrCat(h.Key("expert_gating_func"), ": ", gating,
                                                 " is not supported (2, sigmoid)"));
  }
  if (h.Has("rope.dimension_sections")) {
    return absl::UnimplementedError(
        absl::StrCat(h.Key("rope.dimension_sections"), ": multi-section rope is not supported"));
  }
  const uint64_t head_dim = config.contains("head_dim")
                                ? config["head_dim"].get<uint64_t>()
                                : config["hidden_size"].get<uint64_t>() /
                                      config["num_attention_heads"].get<uint64_t>();
  WARP_ASSIGN_OR_RETURN(uint64_t rope_dim, h.Uint("rope.dimension_count"));
  config["partial_rotary_factor"] = static_cast<double>(rope_dim) / static_cast<double>(head_dim);
  // Biases and q/k norms are there or not: the file's first layer says which.
  config["attention_bias"] = h.file().Find("blk.0.attn_q.bias") != nullptr;
  config["use_qk_norm"] = h.file().Find("blk.0.attn_q_norm.weight") != nullptr;
  return absl::OkStatus();
}

constexpr GgufArchitecture kArchitectures[] = {
    {"qwen3moe", "qwen3_moe", kGlobal, kQwen3MoeLayer, Qwen3MoeConfig},
    {"llama", "mixtral", kGlobal, kLlamaLayer, LlamaConfig},
    {"glm4moe", "glm4_moe", kGlobal, kGlm4MoeLayer, Glm4MoeConfig},
};

const GgufValue* FindValue(const GgufFile& file, const std::string& key) {
  auto it = file.metadata().find(key);
  return it == file.metadata().end() ? nullptr : &it->second;
}

}  // namespace

bool GgufHparams::Has(std::string_view key) const { return FindValue(file_, Key(key)) != nullptr; }

absl::StatusOr<uint64_t> GgufHparams::Uint(std::string_view key) const {
  return file_.Uint(Key(key));
}

absl::StatusOr<uint64_t> GgufHparams::UintOr(std::string_view key, uint64_t fallback) const {
  return Has(key) ? Uint(key) : fallback;
}

absl::StatusOr<double> GgufHparams::FloatOr(std::string_view key, double fallback) const {
  return Has(key) ? file_.Float(Key(key)) : fallback;
}

absl::StatusOr<bool> GgufHparams::BoolOr(std::string_view key, bool fallback) const {
  const GgufValue* value = FindValue(file_, Key(key));
  if (value == nullptr) return fallback;
  if (const auto* b = std::get_if<bool>(&value->value)) return *b;
  return absl::InvalidArgumentError(
      absl::StrCat(file_.path().string(), ": ", Key(key), ": must be a bool"));
}

absl::StatusOr<const GgufArchitecture*> FindGgufArchitecture(std::string_view name) {
  std::vector<std::string> known;
  for (const GgufArchitecture& arch : kArchitectures) {
    if (arch.name == name) return &arch;
    known.emplace_back(arch.name);
  }
  return absl::NotFoundError(absl::StrCat("general.architecture \"", std::string(name),
                                          "\" is not supported (", absl::StrJoin(known, ", "),
                                          ")"));
}

}  // namespace warp::computed
