#include "computed/convert/gguf_architectures.h"

#include "absl/strings/str_join.h"
#include "common/status.h"

namespace warp::computed {
namespace {

using Json = nlohmann::ordered_json;

// qwen3moe (Qwen3-30B-A3B, Qwen3-235B-A22B): llama.cpp's llama_model_qwen3moe
// routes every layer through softmax top-k with the top-k renormalized.
constexpr GgufTensorRule kQwen3MoeGlobal[] = {
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

constexpr GgufArchitecture kArchitectures[] = {
    {"qwen3moe", "qwen3_moe", kQwen3MoeGlobal, kQwen3MoeLayer, Qwen3MoeConfig},
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
