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

constexpr GgufArchitecture kArchitectures[] = {
    {"qwen3moe", "qwen3_moe", kGlobal, kQwen3MoeLayer, Qwen3MoeConfig},
    {"llama", "mixtral", kGlobal, kLlamaLayer, LlamaConfig},
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
