#include "computed/convert/gguf_architectures.h"

#include <algorithm>
#include <variant>

#include "absl/strings/str_join.h"
#include "common/status.h"

namespace warp::computed {
namespace {

using Json = nlohmann::ordered_json;

// Outside the layers, every architecture here names its tensors the same way.
constexpr GgufTensorRule kGlobal[] = {
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
};

// llama.cpp's llama_expert_gating_func_type.
constexpr uint64_t kGatingSoftmax = 1, kGatingSigmoid = 2;

// head_dim of a GQA architecture: attention.key_length (= value_length), else
// hidden / heads.
absl::Status GqaHeadDim(const GgufHparams& h, Json& config) {
  const uint64_t heads = config["num_attention_heads"].get<uint64_t>();
  WARP_ASSIGN_OR_RETURN(uint64_t key_length,
                        h.UintOr("attention.key_length",
                                 config["hidden_size"].get<uint64_t>() / std::max<uint64_t>(1, heads)));
  WARP_ASSIGN_OR_RETURN(uint64_t value_length, h.UintOr("attention.value_length", key_length));
  if (value_length != key_length) {
    return absl::InvalidArgumentError(absl::StrCat(h.Key("attention.value_length"), ": ",
                                                   value_length, " differs from key_length ",
                                                   key_length));
  }
  config["head_dim"] = key_length;
  h.Source("head_dim", h.Key("attention.key_length"));
  return absl::OkStatus();
}

// Rope over every dim of the head: rope.dimension_count (llama.cpp's default:
// head_dim) must be head_dim; partial rope is refused, not run as full.
absl::Status FullRope(const GgufHparams& h, const Json& config) {
  const uint64_t head_dim = config["head_dim"].get<uint64_t>();
  WARP_ASSIGN_OR_RETURN(uint64_t rope_dim, h.UintOr("rope.dimension_count", head_dim));
  if (rope_dim != head_dim) {
    return absl::UnimplementedError(absl::StrCat(h.Key("rope.dimension_count"), ": ", rope_dim,
                                                 " (partial rope) is not supported: ", head_dim));
  }
  return absl::OkStatus();
}

// Sigmoid routing over expert groups with a selection bias (glm4moe, deepseek2),
// under the Hugging Face keys both releases use.
// Without expert_gating_func llama.cpp takes `absent_gating`.
absl::Status SigmoidGroupRouting(const GgufHparams& h, uint64_t absent_gating, Json& config) {
  WARP_RETURN_IF_ERROR(h.PutUint(config, "n_routed_experts", "expert_count"));
  WARP_RETURN_IF_ERROR(h.PutUint(config, "moe_intermediate_size", "expert_feed_forward_length"));
  WARP_RETURN_IF_ERROR(h.PutUintOr(config, "n_shared_experts", "expert_shared_count", 0));
  WARP_RETURN_IF_ERROR(h.PutUintOr(config, "first_k_dense_replace", "leading_dense_block_count", 0));
  WARP_ASSIGN_OR_RETURN(double scale, h.FloatOr("expert_weights_scale", 1.0));
  config["routed_scaling_factor"] = scale == 0.0 ? 1.0 : scale;  // llama.cpp reads 0 as "no scale"
  h.Source("routed_scaling_factor", h.Key("expert_weights_scale"));
  WARP_RETURN_IF_ERROR(h.PutBoolOr(config, "norm_topk_prob", "expert_weights_norm", false));
  WARP_RETURN_IF_ERROR(h.PutUintOr(config, "n_group", "expert_group_count", 1));
  WARP_RETURN_IF_ERROR(h.PutUintOr(config, "topk_group", "expert_group_used_count", 1));
  WARP_ASSIGN_OR_RETURN(uint64_t gating, h.UintOr("expert_gating_func", absent_gating));
  if (gating != kGatingSigmoid) {
    return absl::UnimplementedError(
        absl::StrCat(h.Key("expert_gating_func"), ": ", gating,
                     gating == kGatingSoftmax ? " (softmax, DeepSeek V2)" : "",
                     " is not supported (2, sigmoid: DeepSeek V3, Kimi K2, GLM-4.5)"));
  }
  return absl::OkStatus();
}

// qwen3moe (Qwen3-30B-A3B, Qwen3-235B-A22B): llama.cpp's llama_model_qwen3moe
// routes every layer through softmax top-k with the top-k renormalized.
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
  WARP_RETURN_IF_ERROR(GqaHeadDim(h, config));
  WARP_RETURN_IF_ERROR(FullRope(h, config));
  WARP_RETURN_IF_ERROR(h.PutUint(config, "num_experts", "expert_count"));
  WARP_RETURN_IF_ERROR(h.PutUint(config, "moe_intermediate_size", "expert_feed_forward_length"));
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
  WARP_RETURN_IF_ERROR(GqaHeadDim(h, config));
  WARP_ASSIGN_OR_RETURN(uint64_t experts, h.UintOr("expert_count", 0));
  if (experts == 0) {
    return absl::UnimplementedError(
        absl::StrCat(h.Key("expert_count"), ": a llama without experts is not a MoE (Mixtral)"));
  }
  config["num_local_experts"] = experts;
  h.Source("num_local_experts", h.Key("expert_count"));
  WARP_RETURN_IF_ERROR(h.PutUint(config, "intermediate_size", "feed_forward_length"));
  return FullRope(h, config);
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
    {.gguf = "exp_probs_b", .hf = "mlp.gate", .hf_suffix = "e_score_correction_bias"},
    {"ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
    {"ffn_up_shexp", "mlp.shared_experts.up_proj"},
    {"ffn_down_shexp", "mlp.shared_experts.down_proj"},
    {"ffn_gate_exps", "mlp.experts.{}.gate_proj", true},
    {"ffn_up_exps", "mlp.experts.{}.up_proj", true},
    {"ffn_down_exps", "mlp.experts.{}.down_proj", true},
};

absl::Status Glm4MoeConfig(const GgufHparams& h, Json& config) {
  WARP_RETURN_IF_ERROR(GqaHeadDim(h, config));
  WARP_RETURN_IF_ERROR(SigmoidGroupRouting(h, kGatingSigmoid, config));
  if (h.Has("rope.dimension_sections")) {
    return absl::UnimplementedError(
        absl::StrCat(h.Key("rope.dimension_sections"), ": multi-section rope is not supported"));
  }
  const uint64_t head_dim = config["head_dim"].get<uint64_t>();
  WARP_ASSIGN_OR_RETURN(uint64_t rope_dim, h.Uint("rope.dimension_count"));
  config["partial_rotary_factor"] = static_cast<double>(rope_dim) / static_cast<double>(head_dim);
  h.Source("partial_rotary_factor", h.Key("rope.dimension_count"));
  // Biases and q/k norms are there or not: the file's first layer says which.
  config["attention_bias"] = h.file().Find("blk.0.attn_q.bias") != nullptr;
  config["use_qk_norm"] = h.file().Find("blk.0.attn_q_norm.weight") != nullptr;
  return absl::OkStatus();
}

// deepseek2 (DeepSeek V3, Kimi K2; V2's softmax routing is refused): MLA,
// sigmoid group routing with a selection bias, shared experts, leading dense
// layers, interleaved rope on the rope dims. Files since llama.cpp's MLA
// support hold kv_b_proj split per head (attn_k_b transposed, attn_v_b);
// older ones hold attn_kv_b.
constexpr GgufTensorRule kDeepseek2Layer[] = {
    {"attn_norm", "input_layernorm"},
    {"attn_q_a", "self_attn.q_a_proj"},
    {"attn_q_a_norm", "self_attn.q_a_layernorm"},
    {"attn_q_b", "self_attn.q_b_proj"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_kv_a_mqa", "self_attn.kv_a_proj_with_mqa"},
    {"attn_kv_a_norm", "self_attn.kv_a_layernorm"},
    {"attn_kv_b", "self_attn.kv_b_proj"},
    {.gguf = "attn_k_b", .hf = "self_attn.k_b_proj", .merge_rows = true},
    {.gguf = "attn_v_b", .hf = "self_attn.v_b_proj", .merge_rows = true},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_norm", "post_attention_layernorm"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    {"ffn_gate_inp", "mlp.gate"},
    {.gguf = "exp_probs_b", .hf = "mlp.gate", .hf_suffix = "e_score_correction_bias"},
    {"ffn_gate_shexp", "mlp.shared_experts.gate_proj"},
    {"ffn_up_shexp", "mlp.shared_experts.up_proj"},
    {"ffn_down_shexp", "mlp.shared_experts.down_proj"},
    {"ffn_gate_exps", "mlp.experts.{}.gate_proj", true},
    {"ffn_up_exps", "mlp.experts.{}.up_proj", true},
    {"ffn_down_exps", "mlp.experts.{}.down_proj", true},
};

absl::Status Deepseek2Config(const GgufHparams& h, Json& config) {
  // GGUF's key_length/value_length are the absorbed form's (kv_lora + rope,
  // kv_lora); the heads' own are the *_mla keys, absent from older files,
  // whose key_length/value_length are the heads'.
  const bool split_kv_b = h.Has("attention.key_length_mla");
  WARP_ASSIGN_OR_RETURN(uint64_t key, h.Uint(split_kv_b ? "attention.key_length_mla"
                                                         : "attention.key_length"));
  WARP_ASSIGN_OR_RETURN(uint64_t value, h.Uint(split_kv_b ? "attention.value_length_mla"
                                                           : "attention.value_length"));
  WARP_ASSIGN_OR_RETURN(uint64_t rope, h.Uint("rope.dimension_count"));
  if (rope >= key) {
    return absl::InvalidArgumentError(absl::StrCat(h.Key("rope.dimension_count"), ": ", rope,
                                                   " leaves no non-rope dims of the key's ", key));
  }
  WARP_RETURN_IF_ERROR(h.PutUintOr(config, "q_lora_rank", "attention.q_lora_rank", 0));
  WARP_RETURN_IF_ERROR(h.PutUint(config, "kv_lora_rank", "attention.kv_lora_rank"));
  config["qk_nope_head_dim"] = key - rope;
  config["qk_rope_head_dim"] = rope;
  config["v_head_dim"] = value;
  const std::string key_name =
      h.Key(split_kv_b ? "attention.key_length_mla" : "attention.key_length");
  h.Source("qk_nope_head_dim", absl::StrCat(key_name, " - ", h.Key("rope.dimension_count")));
  h.Source("qk_rope_head_dim", h.Key("rope.dimension_count"));
  h.Source("v_head_dim",
           h.Key(split_kv_b ? "attention.value_length_mla" : "attention.value_length"));
  // The absorbed form's lengths, which the heads' own (*_mla) supersede.
  if (split_kv_b) {
    h.Has("attention.key_length");
    h.Has("attention.value_length");
  }
  config["kv_b_split"] = split_kv_b;
  // llama.cpp writes MLA as MQA (head_count_kv 1); every head has its own keys.
  config["num_key_value_heads"] = config["num_attention_heads"];
  h.Source("num_key_value_heads", h.Key("attention.head_count"));
  // Without the key llama.cpp takes softmax: DeepSeek V2's files.
  WARP_RETURN_IF_ERROR(SigmoidGroupRouting(h, kGatingSoftmax, config));
  if (config.contains("rope_scaling")) {
    // llama.cpp keeps 0.1 * mscale_all_dim here and takes mscale equal to it.
    if (!h.Has("rope.scaling.yarn_log_multiplier")) {
      return absl::UnimplementedError(absl::StrCat(
          h.Key("rope.scaling.yarn_log_multiplier"),
          ": missing; without it llama.cpp squares YaRN's attention factor into the softmax "
          "scale and transformers does not"));
    }
    WARP_ASSIGN_OR_RETURN(double log_mul, h.FloatOr("rope.scaling.yarn_log_multiplier", 0.0));
    config["rope_scaling"]["mscale_all_dim"] = log_mul / 0.1;
    config["rope_scaling"]["mscale"] = log_mul / 0.1;
  }
  return absl::OkStatus();
}

// gpt-oss: GQA with biases and per-head sinks, sliding and full layers, every
// MLP routed experts (router bias, softmax over the top-k logits, clamped
// SwiGLU with biases). llama.cpp fixes SwiGLU's limit at 7 and alpha at 1.702.
constexpr GgufTensorRule kGptOssLayer[] = {
    {"attn_norm", "input_layernorm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {.gguf = "attn_sinks", .hf = "self_attn.sinks", .hf_suffix = kNoSuffix},
    {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_gate_inp", "mlp.router"},
    {.gguf = "ffn_gate_exps", .hf = "mlp.experts.{}.gate_up_proj", .per_expert = true,
     .interleave_with = "ffn_up_exps"},
    {.gguf = "ffn_up_exps", .hf = {}},
    {"ffn_down_exps", "mlp.experts.{}.down_proj", true},
};

absl::Status GptOssConfig(const GgufHparams& h, Json& config) {
  WARP_RETURN_IF_ERROR(GqaHeadDim(h, config));
  WARP_RETURN_IF_ERROR(FullRope(h, config));
  WARP_RETURN_IF_ERROR(h.PutUint(config, "num_local_experts", "expert_count"));
  WARP_RETURN_IF_ERROR(h.PutUint(config, "intermediate_size", "expert_feed_forward_length"));
  WARP_ASSIGN_OR_RETURN(const uint64_t window, h.Uint("attention.sliding_window"));
  config["sliding_window"] = window;
  h.Source("sliding_window", h.Key("attention.sliding_window"));
  config["attention_bias"] = true;
  config["swiglu_limit"] = 7.0;
  // attention.sliding_window_pattern: one bool a layer, or every n-th layer
  // full (llama.cpp's default 2: sliding first, then alternating).
  const uint64_t layers = config["num_hidden_layers"].get<uint64_t>();
  std::vector<bool> sliding(layers);
  const GgufValue* pattern = h.Find("attention.sliding_window_pattern");
  if (pattern != nullptr && std::holds_alternative<GgufArray>(pattern->value)) {
    const auto& flags = std::get<GgufArray>(pattern->value);
    for (uint64_t layer = 0; layer < layers; ++layer) {
      const bool* flag = layer < flags.size() ? std::get_if<bool>(&flags[layer].value) : nullptr;
      if (flag == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat(h.Key("attention.sliding_window_pattern"), ": must be ", layers,
                         " bools, one a layer"));
      }
      sliding[layer] = *flag;
    }
  } else {
    WARP_ASSIGN_OR_RETURN(uint64_t every, h.UintOr("attention.sliding_window_pattern", 2));
    for (uint64_t layer = 0; layer < layers; ++layer) {
      sliding[layer] = every == 0 || layer % every < every - 1;
    }
  }
  Json& types = config["layer_types"] = Json::array();
  for (bool s : sliding) types.push_back(s ? "sliding_attention" : "full_attention");
  WARP_ASSIGN_OR_RETURN(double base, h.FloatOr("rope.freq_base", 10000.0));
  WARP_ASSIGN_OR_RETURN(double base_swa, h.FloatOr("rope.freq_base_swa", base));
  if (base_swa != base) {
    return absl::UnimplementedError(absl::StrCat(h.Key("rope.freq_base_swa"), ": ", base_swa,
                                                 " differs from rope.freq_base ", base));
  }
  return absl::OkStatus();
}

constexpr GgufArchitecture kArchitectures[] = {
    {"qwen3moe", "qwen3_moe", kGlobal, kQwen3MoeLayer, Qwen3MoeConfig},
    {"llama", "mixtral", kGlobal, kLlamaLayer, LlamaConfig},
    {"glm4moe", "glm4_moe", kGlobal, kGlm4MoeLayer, Glm4MoeConfig},
    {"deepseek2", "deepseek_v3", kGlobal, kDeepseek2Layer, Deepseek2Config},
    {"gpt-oss", "gpt_oss", kGlobal, kGptOssLayer, GptOssConfig},
};

const GgufValue* FindValue(const GgufFile& file, const std::string& key) {
  auto it = file.metadata().find(key);
  return it == file.metadata().end() ? nullptr : &it->second;
}

}  // namespace

const GgufValue* GgufHparams::Find(std::string_view key) const {
  std::string full = Key(key);
  const GgufValue* value = FindValue(file_, full);
  read_.insert(std::move(full));
  return value;
}

bool GgufHparams::Has(std::string_view key) const { return Find(key) != nullptr; }

void GgufHparams::Defaulted(std::string_view key, const std::string& value) const {
  std::string taken = absl::StrCat(Key(key), " = ", value);
  if (std::find(defaults_.begin(), defaults_.end(), taken) == defaults_.end()) {
    defaults_.push_back(std::move(taken));
  }
}

absl::StatusOr<uint64_t> GgufHparams::Uint(std::string_view key) const {
  read_.insert(Key(key));
  return file_.Uint(Key(key));
}

absl::StatusOr<uint64_t> GgufHparams::UintOr(std::string_view key, uint64_t fallback) const {
  if (Has(key)) return Uint(key);
  Defaulted(key, absl::StrCat(fallback));
  return fallback;
}

absl::StatusOr<double> GgufHparams::FloatOr(std::string_view key, double fallback) const {
  if (Has(key)) return file_.Float(Key(key));
  Defaulted(key, absl::StrCat(fallback));
  return fallback;
}

absl::StatusOr<bool> GgufHparams::BoolOr(std::string_view key, bool fallback) const {
  const GgufValue* value = Find(key);
  if (value == nullptr) {
    Defaulted(key, fallback ? "true" : "false");
    return fallback;
  }
  if (const auto* b = std::get_if<bool>(&value->value)) return *b;
  return absl::InvalidArgumentError(
      absl::StrCat(file_.path().string(), ": ", Key(key), ": must be a bool"));
}

absl::StatusOr<std::string> GgufHparams::StringOr(std::string_view key,
                                                   std::string fallback) const {
  if (Has(key)) return file_.String(Key(key));
  Defaulted(key, absl::StrCat("\"", fallback, "\""));
  return fallback;
}

absl::Status GgufHparams::PutUint(Json& config, const char* config_key,
                                  std::string_view key) const {
  WARP_ASSIGN_OR_RETURN(config[config_key], Uint(key));
  Source(config_key, Key(key));
  return absl::OkStatus();
}

absl::Status GgufHparams::PutUintOr(Json& config, const char* config_key, std::string_view key,
                                    uint64_t fallback) const {
  WARP_ASSIGN_OR_RETURN(config[config_key], UintOr(key, fallback));
  Source(config_key, Key(key));
  return absl::OkStatus();
}

absl::Status GgufHparams::PutFloatOr(Json& config, const char* config_key, std::string_view key,
                                     double fallback) const {
  WARP_ASSIGN_OR_RETURN(config[config_key], FloatOr(key, fallback));
  Source(config_key, Key(key));
  return absl::OkStatus();
}

absl::Status GgufHparams::PutBoolOr(Json& config, const char* config_key, std::string_view key,
                                    bool fallback) const {
  WARP_ASSIGN_OR_RETURN(config[config_key], BoolOr(key, fallback));
  Source(config_key, Key(key));
  return absl::OkStatus();
}

std::vector<std::string> GgufHparams::UnreadKeys() const {
  const std::string prefix = arch_ + ".";
  std::vector<std::string> unread;
  for (const auto& [key, value] : file_.metadata()) {
    if (key.starts_with(prefix) && !read_.contains(key)) unread.push_back(key);
  }
  return unread;
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
