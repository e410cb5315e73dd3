#include "computed/synth/presets.h"

#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/check.h"
#include "common/format/bank_format.h"
#include "common/status.h"
#include "common/format/engram_table.h"
#include "computed/model/engram/engram_hash.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "computed/model/tensor_specs.h"

namespace warp::computed {
namespace {

using json = nlohmann::ordered_json;

json DeepseekTiny() {
  return json{{"model_type", "deepseek_v3"},
              {"architectures", {"DeepseekV3ForCausalLM"}},
              {"vocab_size", 256},
              {"hidden_size", 64},
              {"intermediate_size", 128},
              {"moe_intermediate_size", 32},
              {"num_hidden_layers", 4},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 4},
              {"n_shared_experts", 1},
              {"n_routed_experts", 16},
              {"num_experts_per_tok", 4},
              {"n_group", 4},
              {"topk_group", 2},
              {"routed_scaling_factor", 2.5},
              {"scoring_func", "sigmoid"},
              {"topk_method", "noaux_tc"},
              {"norm_topk_prob", true},
              {"first_k_dense_replace", 1},
              {"moe_layer_freq", 1},
              {"q_lora_rank", 32},
              {"kv_lora_rank", 32},
              {"qk_nope_head_dim", 16},
              {"qk_rope_head_dim", 8},
              {"v_head_dim", 16},
              {"max_position_embeddings", 4096},
              {"rope_theta", 10000.0},
              {"rope_scaling", nullptr},
              {"rms_norm_eps", 1e-6},
              {"hidden_act", "silu"},
              {"attention_bias", false},
              {"tie_word_embeddings", false}};
}

// Kimi K2's expert and attention shapes (hidden 7168, moe_intermediate 2048,
// 384 experts, top-8, MLA 1536/512/128/64/128, YaRN x32). Fewer layers, all
// MoE, and a 32768-token vocabulary instead of 163840 so the trunk stays near
// 1 GiB and a benchmark's budget goes to experts.
json K2Slice() {
  json config = DeepseekTiny();
  config.update(json{{"vocab_size", 32768},
                     {"hidden_size", 7168},
                     {"intermediate_size", 18432},
                     {"moe_intermediate_size", 2048},
                     {"num_hidden_layers", 2},
                     {"num_attention_heads", 64},
                     {"num_key_value_heads", 64},
                     {"n_routed_experts", 384},
                     {"num_experts_per_tok", 8},
                     {"n_group", 1},
                     {"topk_group", 1},
                     {"routed_scaling_factor", 2.827},
                     {"first_k_dense_replace", 0},
                     {"q_lora_rank", 1536},
                     {"kv_lora_rank", 512},
                     {"qk_nope_head_dim", 128},
                     {"qk_rope_head_dim", 64},
                     {"v_head_dim", 128},
                     {"max_position_embeddings", 131072},
                     {"rope_theta", 50000.0},
                     {"rope_scaling",
                      {{"type", "yarn"},
                       {"factor", 32.0},
                       {"original_max_position_embeddings", 4096},
                       {"beta_fast", 1.0},
                       {"beta_slow", 1.0},
                       {"mscale", 1.0},
                       {"mscale_all_dim", 1.0}}}});
  return config;
}

json Qwen3Tiny() {
  return json{{"model_type", "qwen3_moe"}, {"architectures", {"Qwen3MoeForCausalLM"}},
              {"vocab_size", 256},         {"hidden_size", 64},
              {"intermediate_size", 128},  {"moe_intermediate_size", 32},
              {"num_hidden_layers", 4},    {"num_attention_heads", 4},
              {"num_key_value_heads", 2},  {"head_dim", 16},
              {"num_experts", 16},         {"num_experts_per_tok", 4},
              {"decoder_sparse_step", 1},  {"mlp_only_layers", json::array()},
              {"norm_topk_prob", true},    {"max_position_embeddings", 4096},
              {"rope_theta", 1000000.0},   {"rope_scaling", nullptr},
              {"rms_norm_eps", 1e-6},      {"hidden_act", "silu"},
              {"attention_bias", false},   {"tie_word_embeddings", false}};
}

// Qwen3-30B-A3B shapes (hidden 2048, 128 experts of 768, top-8, GQA 32/4 x
// 128), 4 of its 48 layers, vocabulary cut from 151936 to 32768.
json Qwen3A3bSlice() {
  json config = Qwen3Tiny();
  config.update(json{{"vocab_size", 32768},
                     {"hidden_size", 2048},
                     {"intermediate_size", 6144},
                     {"moe_intermediate_size", 768},
                     {"num_hidden_layers", 4},
                     {"num_attention_heads", 32},
                     {"num_key_value_heads", 4},
                     {"head_dim", 128},
                     {"num_experts", 128},
                     {"num_experts_per_tok", 8},
                     {"max_position_embeddings", 40960}});
  return config;
}

// gpt-oss in miniature: sliding/full layers (window 16), sinks, YaRN, 8
// experts of 64x64 top-2 with clamped SwiGLU.
json GptOssTiny() {
  return json{{"model_type", "gpt_oss"},
              {"architectures", {"GptOssForCausalLM"}},
              {"vocab_size", 256},
              {"hidden_size", 64},
              {"intermediate_size", 64},
              {"num_hidden_layers", 4},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 2},
              {"head_dim", 16},
              {"num_local_experts", 8},
              {"num_experts_per_tok", 2},
              {"experts_per_token", 2},
              {"layer_types",
               {"sliding_attention", "full_attention", "sliding_attention", "full_attention"}},
              {"sliding_window", 16},
              {"attention_bias", true},
              {"swiglu_limit", 7.0},
              {"max_position_embeddings", 4096},
              {"rope_theta", 150000.0},
              {"rope_scaling",
               {{"rope_type", "yarn"},
                {"factor", 4.0},
                {"original_max_position_embeddings", 1024},
                {"beta_fast", 32.0},
                {"beta_slow", 1.0},
                {"truncate", false}}},
              {"rms_norm_eps", 1e-5},
              {"hidden_act", "silu"},
              {"tie_word_embeddings", false}};
}

// gpt-oss-120b's expert and attention shapes (hidden 2880, 128 experts of
// 2880, top-4, GQA 64/8 x 64, window 128, YaRN x32 over 4096), 2 of its 36
// layers, vocabulary cut from 201088 to 32768.
json GptOss120bSlice() {
  json config = GptOssTiny();
  config.update(json{{"vocab_size", 32768},
                     {"hidden_size", 2880},
                     {"intermediate_size", 2880},
                     {"num_hidden_layers", 2},
                     {"num_attention_heads", 64},
                     {"num_key_value_heads", 8},
                     {"head_dim", 64},
                     {"num_local_experts", 128},
                     {"num_experts_per_tok", 4},
                     {"experts_per_token", 4},
                     {"layer_types", {"sliding_attention", "full_attention"}},
                     {"sliding_window", 128},
                     {"max_position_embeddings", 131072},
                     {"rope_scaling",
                      {{"rope_type", "yarn"},
                       {"factor", 32.0},
                       {"original_max_position_embeddings", 4096},
                       {"beta_fast", 32.0},
                       {"beta_slow", 1.0},
                       {"truncate", false}}}});
  return config;
}

// Kimi's hybrid layout as released: every fourth layer MLA and the last one
// too, the others KDA (1-based lists).
json KimiLayerLists(uint32_t layers) {
  json kda = json::array(), full = json::array();
  for (uint32_t layer = 1; layer <= layers; ++layer) {
    (layer % 4 == 0 || layer == layers ? full : kda).push_back(layer);
  }
  return json{{"kda_layers", kda}, {"full_attn_layers", full}};
}

json KimiLinearTiny() {
  json config{{"model_type", "kimi_linear"},
              {"architectures", {"KimiLinearForCausalLM"}},
              {"vocab_size", 256},
              {"hidden_size", 64},
              {"intermediate_size", 128},
              {"moe_intermediate_size", 32},
              {"num_hidden_layers", 4},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 4},
              {"num_experts", 16},
              {"num_experts_per_token", 4},
              {"num_shared_experts", 1},
              {"num_expert_group", 1},
              {"topk_group", 1},
              {"moe_renormalize", true},
              {"moe_router_activation_func", "sigmoid"},
              {"routed_scaling_factor", 2.446},
              {"first_k_dense_replace", 1},
              {"moe_layer_freq", 1},
              {"q_lora_rank", nullptr},
              {"kv_lora_rank", 32},
              {"qk_nope_head_dim", 16},
              {"qk_rope_head_dim", 8},
              {"v_head_dim", 16},
              {"mla_use_nope", true},
              {"linear_attn_config",
               {{"head_dim", 16}, {"num_heads", 4}, {"short_conv_kernel_size", 4}}},
              {"rope_theta", 10000.0},
              {"rope_scaling", nullptr},
              {"rms_norm_eps", 1e-5},
              {"hidden_act", "silu"},
              {"tie_word_embeddings", false}};
  config["linear_attn_config"].update(KimiLayerLists(4));
  return config;
}

// Kimi-Linear-48B-A3B's shapes (hidden 2304, 256 experts of 1024, top-8 + 1
// shared, KDA 32 x 128, NoPE MLA 32 heads 512/128/64/128), 4 of its 27 layers
// (KDA, KDA, KDA, MLA), vocabulary cut from 163840 to 32768.
json KimiLinearSlice() {
  json config = KimiLinearTiny();
  config.update(json{{"vocab_size", 32768},
                     {"hidden_size", 2304},
                     {"intermediate_size", 9216},
                     {"moe_intermediate_size", 1024},
                     {"num_attention_heads", 32},
                     {"num_key_value_heads", 32},
                     {"num_experts", 256},
                     {"num_experts_per_token", 8},
                     {"kv_lora_rank", 512},
                     {"qk_nope_head_dim", 128},
                     {"qk_rope_head_dim", 64},
                     {"v_head_dim", 128}});
  config["linear_attn_config"].update(json{{"head_dim", 128}, {"num_heads", 32}});
  return config;
}

// Kimi K3's shapes under text_config: hidden 7168, KDA 96 x 128 with the
// lower-bounded gate and full-rank output gate, gated q-LoRA MLA 96 heads,
// SiTU, LatentMoE of 896 experts of 3072 in a 3584 latent, top-16 + 2
// shared, AttnRes every 12 layers (from the release's config.json).
json KimiK3Text() {
  json text = KimiLinearTiny();
  text.erase("architectures");
  text.update(json{{"vocab_size", 163840},
                   {"hidden_size", 7168},
                   {"intermediate_size", 33792},
                   {"moe_intermediate_size", 3072},
                   {"num_hidden_layers", 93},
                   {"num_attention_heads", 96},
                   {"num_key_value_heads", 96},
                   {"num_experts", 896},
                   {"num_experts_per_token", 16},
                   {"num_shared_experts", 2},
                   {"routed_scaling_factor", 1.0},
                   {"q_lora_rank", 1536},
                   {"kv_lora_rank", 512},
                   {"qk_nope_head_dim", 128},
                   {"qk_rope_head_dim", 64},
                   {"v_head_dim", 128},
                   {"mla_use_output_gate", true},
                   {"hidden_act", "situ"},
                   {"activation_situ_beta", 4.0},
                   {"activation_situ_linear_beta", 25.0},
                   {"routed_expert_hidden_size", 3584},
                   {"latent_moe_use_norm", true},
                   {"attn_res_block_size", 12},
                   {"max_position_embeddings", 1048576}});
  text["linear_attn_config"] = json{{"head_dim", 128},
                                    {"num_heads", 96},
                                    {"short_conv_kernel_size", 4},
                                    {"gate_lower_bound", -5.0},
                                    {"use_full_rank_gate", true}};
  text["linear_attn_config"].update(KimiLayerLists(93));
  return text;
}

json KimiK3Wrapper(json text) {
  return json{{"architectures", {"KimiK3ForConditionalGeneration"}},
              {"model_type", "kimi_k3"},
              {"tie_word_embeddings", false},
              {"text_config", std::move(text)}};
}

// K3's shapes in 4 layers (as KimiK3Text, AttnRes every 2), about 1 MiB.
json KimiK3Tiny() {
  json text = KimiLinearTiny();
  text.erase("architectures");
  text.update(json{{"q_lora_rank", 32},
                   {"num_shared_experts", 2},
                   {"routed_scaling_factor", 1.0},
                   {"mla_use_output_gate", true},
                   {"hidden_act", "situ"},
                   {"activation_situ_beta", 4.0},
                   {"activation_situ_linear_beta", 25.0},
                   {"routed_expert_hidden_size", 32},
                   {"moe_intermediate_size", 64},
                   {"latent_moe_use_norm", true},
                   {"attn_res_block_size", 2}});
  text["linear_attn_config"].update(json{{"gate_lower_bound", -5.0}, {"use_full_rank_gate", true}});
  return KimiK3Wrapper(std::move(text));
}

// K3's expert shapes and top-16 (896 MXFP4 experts of 3072 in the 3584
// latent: 17.55 MB records), hidden 7168, 3 layers: dense KDA, KDA, MLA;
// vocabulary cut to 32768 and the dense MLP to 3 x 3072 so the trunk stays
// near 1 GiB and a benchmark's budget goes to experts.
json KimiK3Slice() {
  json text = KimiK3Text();
  text.update(json{{"vocab_size", 32768}, {"num_hidden_layers", 3}, {"intermediate_size", 9216}});
  text["linear_attn_config"].update(KimiLayerLists(3));
  return KimiK3Wrapper(std::move(text));
}

// DeepSeek V4 in 4 layers: sliding, CSA (rate 4, indexer top-2), HCA
// (rate 8), CSA; two hash layers; 4 hyper-connection streams; ~1 MiB.
json DeepseekV4Tiny() {
  return json{{"model_type", "deepseek_v4"},
              {"architectures", {"DeepseekV4ForCausalLM"}},
              {"vocab_size", 256},
              {"hidden_size", 64},
              {"num_hidden_layers", 4},
              {"num_attention_heads", 4},
              {"num_key_value_heads", 1},
              {"head_dim", 64},
              {"qk_rope_head_dim", 16},
              {"q_lora_rank", 32},
              {"o_groups", 2},
              {"o_lora_rank", 32},
              {"n_routed_experts", 8},
              {"n_shared_experts", 1},
              {"num_experts_per_tok", 2},
              {"moe_intermediate_size", 32},
              {"scoring_func", "sqrtsoftplus"},
              {"norm_topk_prob", true},
              {"routed_scaling_factor", 1.5},
              {"num_hash_layers", 2},
              {"swiglu_limit", 10.0},
              {"sliding_window", 8},
              {"compress_ratios", {0, 4, 8, 4, 0}},
              {"compress_rope_theta", 160000.0},
              {"index_n_heads", 4},
              {"index_head_dim", 32},
              {"index_topk", 2},
              {"hc_mult", 4},
              {"hc_sinkhorn_iters", 20},
              {"hc_eps", 1e-6},
              {"rope_theta", 10000.0},
              {"rope_scaling",
               {{"type", "yarn"}, {"factor", 16}, {"original_max_position_embeddings", 32},
                {"beta_fast", 32}, {"beta_slow", 1}}},
              {"max_position_embeddings", 4096},
              {"rms_norm_eps", 1e-6},
              {"tie_word_embeddings", false}};
}

// DeepSeek V4 Flash's shapes (hidden 4096, 64 heads of 512 on one K = V
// head, q-LoRA 1024, 8 output groups of 1024, 256 FP4 experts of 2048, top-6
// + 1 shared, indexer 64 x 128 top-512, window 128, CSA 4 / HCA 128), 4
// layers — the first three hash-routed, as released — and the vocabulary
// cut from 129280 to 32768.
json DeepseekV4FlashSlice() {
  json config = DeepseekV4Tiny();
  config.update(json{{"vocab_size", 32768},
                     {"hidden_size", 4096},
                     {"num_attention_heads", 64},
                     {"head_dim", 512},
                     {"qk_rope_head_dim", 64},
                     {"q_lora_rank", 1024},
                     {"o_groups", 8},
                     {"o_lora_rank", 1024},
                     {"n_routed_experts", 256},
                     {"num_experts_per_tok", 6},
                     {"moe_intermediate_size", 2048},
                     {"num_hash_layers", 3},
                     {"sliding_window", 128},
                     {"compress_ratios", {4, 128, 4, 128, 0}},
                     {"index_n_heads", 64},
                     {"index_head_dim", 128},
                     {"index_topk", 512},
                     {"rope_scaling",
                      {{"type", "yarn"}, {"factor", 16}, {"original_max_position_embeddings", 65536},
                       {"beta_fast", 32}, {"beta_slow", 1}}},
                     {"max_position_embeddings", 1048576}});
  return config;
}

// engram_num_embeddings from the other engram keys: each table's rows are
// the sum of its layer's primes (EngramHash), which the engine checks.
absl::Status SetEngramRows(json& text) {
  EngramHashOptions options{.vocab_size = text["engram_vocab_size"].get<int64_t>(),
                            .max_ngram_size = text["engram_max_ngram_size"].get<int32_t>(),
                            .num_heads = text["engram_n_heads"].get<int32_t>(),
                            .compressed_vocab_size =
                                text["engram_compressed_vocab_size"].get<int32_t>()};
  for (const json& layer : text["engram_layer_ids"]) options.layer_ids.push_back(layer.get<int32_t>());
  WARP_ASSIGN_OR_RETURN(EngramHash hash, EngramHash::Create(options));
  text["engram_num_embeddings"] = json::array();
  for (size_t i = 0; i < hash.num_layers(); ++i) {
    text["engram_num_embeddings"].push_back(hash.num_rows(i));
  }
  return absl::OkStatus();
}

json WithEngramRows(json config) {
  WARP_CHECK(SetEngramRows(config["text_config"]).ok());  // the presets' own keys
  return config;
}

// DeepSeek V4.1 in 9 layers (window, engram, CSA ratio 2 and ratio 1 groups
// with their KV and index sources, the fixture's layout), 8 FP4 experts of
// 32, top-2, engram tables of 40 buckets x 6 columns on layers 1 and 4, a
// 512-token vocabulary that compresses to 400 ids.
json DeepseekV41Tiny() {
  json text{{"model_type", "deepseek_v41_text"},
            {"vocab_size", 512},
            {"hidden_size", 64},
            {"num_hidden_layers", 9},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 1},
            {"head_dim", 64},
            {"qk_rope_head_dim", 16},
            {"q_lora_rank", 32},
            {"o_lora_rank", 32},
            {"o_groups", 2},
            {"hidden_act", "silu"},
            {"swiglu_limit", 10.0},
            {"rms_norm_eps", 1e-20},
            {"tie_word_embeddings", false},
            {"max_position_embeddings", 4096},
            {"rope_theta", 10000},
            {"rope_scaling",
             {{"rope_type", "yarn"}, {"factor", 16}, {"beta_fast", 32}, {"beta_slow", 1},
              {"original_max_position_embeddings", 32}}},
            {"n_routed_experts", 8},
            {"n_shared_experts", 1},
            {"num_experts_per_tok", 2},
            {"moe_intermediate_size", 32},
            {"scoring_func", "sqrtsoftplus"},
            {"topk_method", "noaux_tc"},
            {"norm_topk_prob", true},
            {"routed_scaling_factor", 1.5},
            {"sliding_window", 8},
            {"compress_ratios", {0, 0, 2, 2, 2, 2, 1, 1, 1, 0}},
            {"compress_rope_theta", 160000},
            {"kv_source_layer_ids", {2, 4, 6}},
            {"index_source_layer_ids", {2, 4, 6, 8}},
            {"index_n_heads", 8},
            {"index_head_dim", 32},
            {"index_topk", 8},
            {"candidate_source_layer_id", 6},
            {"candidate_topk_blocks", 3},
            {"candidate_block_size", 4},
            {"hc_mult", 4},
            {"hc_sinkhorn_iters", 20},
            {"hc_eps", 1e-6},
            {"engram_layer_ids", {1, 4}},
            {"engram_max_ngram_size", 4},
            {"engram_vocab_size", 40},
            {"engram_n_heads", 2},
            {"engram_head_dim", 32},
            {"engram_pad_token_id", 2},
            {"engram_compressed_vocab_size", 400},
            {"num_nextn_predict_layers", 1},
            {"dspark_block_size", 5},
            {"dspark_noise_token_id", 511},
            {"dspark_target_layer_ids", {5, 7, 8}},
            {"dspark_markov_rank", 16},
            {"dspark_n_routed_experts", 4},
            {"dspark_num_experts_per_tok", 2},
            {"bos_token_id", 0},
            {"eos_token_id", 1}};
  return WithEngramRows(json{{"architectures", {"DeepseekV41ForCausalLM"}},
                             {"model_type", "deepseek_v41"},
                             {"image_token_id", 500},
                             {"tie_word_embeddings", false},
                             {"text_config", std::move(text)}});
}

// DeepSeek V4.1 Flash's shapes (tests/configs/deepseek_v41_flash.config.json:
// hidden 5120, 64 heads of 512 on one K = V head, q-LoRA 1280, 8 output
// groups of 1024, 384 FP4 experts of 2304, top-6 + 1 shared, indexer 32 x 128
// top-512; engram of 8 heads x n-grams 2..4 = 24 rows of 256 E4M3 + 8 UE8M0
// scales a layer, the release's 264-byte rows) in 4 layers: window, window +
// engram (as the release's layer 1), a ratio 2 and a ratio 1 group source
// (the release's 2 and 20), the second engram table on the last. Two things
// cut to fit a 72 GB disk and a 24 GiB machine: the vocabulary (129280 to
// 32768, compressed 99092 to 25117, the release's ratio) and engram_vocab_size
// (16,000,000 to 2,000,000: tables of 48 M rows, 12.2 GiB each, against the
// release's 384 M rows, 97.7 GiB).
json DeepseekV41FlashSlice() {
  json config = DeepseekV41Tiny();
  config["image_token_id"] = 32752;
  config["text_config"].update(json{{"vocab_size", 32768},
                                    {"hidden_size", 5120},
                                    {"num_hidden_layers", 4},
                                    {"num_attention_heads", 64},
                                    {"head_dim", 512},
                                    {"qk_rope_head_dim", 64},
                                    {"q_lora_rank", 1280},
                                    {"o_lora_rank", 1024},
                                    {"o_groups", 8},
                                    {"max_position_embeddings", 1048576},
                                    {"rope_scaling",
                                     {{"rope_type", "yarn"}, {"factor", 16}, {"beta_fast", 32},
                                      {"beta_slow", 1}, {"original_max_position_embeddings", 65536}}},
                                    {"n_routed_experts", 384},
                                    {"num_experts_per_tok", 6},
                                    {"moe_intermediate_size", 2304},
                                    {"sliding_window", 128},
                                    {"compress_ratios", {0, 0, 2, 1, 0}},
                                    {"kv_source_layer_ids", {2, 3}},
                                    {"index_source_layer_ids", {2, 3}},
                                    {"index_n_heads", 32},
                                    {"index_head_dim", 128},
                                    {"index_topk", 512},
                                    {"candidate_source_layer_id", 3},
                                    {"candidate_topk_blocks", 2048},
                                    {"candidate_block_size", 8},
                                    {"engram_layer_ids", {1, 3}},
                                    {"engram_vocab_size", 2000000},
                                    {"engram_n_heads", 8},
                                    {"engram_head_dim", 256},
                                    {"engram_compressed_vocab_size", 25117},
                                    {"dspark_noise_token_id", 32767},
                                    {"dspark_target_layer_ids", {1, 2, 3}},
                                    {"dspark_markov_rank", 256},
                                    {"dspark_n_routed_experts", 128},
                                    {"dspark_num_experts_per_tok", 3}});
  return WithEngramRows(std::move(config));
}

// GLM-5.3-Flash in 5 layers (KDA, KDA, DSA, KDA, DSA; the first dense),
// pools of 4 with 4 kept, 4 hyper-connection streams; about 1 MiB.
json Glm5NextTiny() {
  json text{{"model_type", "glm5_next_text"},
            {"vocab_size", 256},
            {"hidden_size", 64},
            {"intermediate_size", 128},
            {"moe_intermediate_size", 32},
            {"num_hidden_layers", 5},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 4},
            {"n_routed_experts", 16},
            {"n_shared_experts", 1},
            {"num_experts_per_tok", 4},
            {"n_group", 1},
            {"topk_group", 1},
            {"norm_topk_prob", true},
            {"routed_scaling_factor", 2.5},
            {"first_k_dense_replace", 1},
            {"mlp_layer_types", {"dense", "sparse", "sparse", "sparse", "sparse"}},
            {"layer_types",
             {"linear_attention", "linear_attention", "deepseek_sparse_attention",
              "linear_attention", "deepseek_sparse_attention"}},
            {"linear_attn_config",
             {{"head_dim", 16}, {"num_heads", 4}, {"short_conv_kernel_size", 4},
              {"gate_lower_bound", -5.0}}},
            {"q_lora_rank", 32},
            {"kv_lora_rank", 32},
            {"qk_nope_head_dim", 16},
            {"qk_rope_head_dim", 0},
            {"v_head_dim", 32},
            {"index_n_heads", 8},
            {"index_head_dim", 32},
            {"index_topk", 16},
            {"index_kpool", 4},
            {"hc_mult", 4},
            {"hc_sinkhorn_iters", 20},
            {"hc_eps", 1e-6},
            {"swiglu_limit", 10.0},
            {"rms_norm_eps", 1e-5},
            {"tie_word_embeddings", false}};
  return json{{"architectures", {"Glm5NextForConditionalGeneration"}},
              {"model_type", "glm5_next"},
              {"tie_word_embeddings", false},
              {"text_config", std::move(text)}};
}

// GLM-5.3-Flash's layers from `first_moe` on: KDA but every fourth (DSA),
// dense MLPs before.
void Glm5NextLayerTypes(json& text, uint32_t layers, uint32_t first_moe) {
  text["layer_types"] = json::array();
  text["mlp_layer_types"] = json::array();
  for (uint32_t layer = 0; layer < layers; ++layer) {
    text["layer_types"].push_back(layer % 4 == 3 ? "deepseek_sparse_attention"
                                                 : "linear_attention");
    text["mlp_layer_types"].push_back(layer < first_moe ? "dense" : "sparse");
  }
}

// GLM-5.3-Flash's shapes (tests/configs/glm5_next_flash_fp8.config.json) in 4
// layers, a 32768-token vocabulary. Its experts are FP8 as released; synth
// writes q8_b32 (1.0625 bytes a weight against FP8's 1.0002: records 6% larger).
json Glm53FlashSlice() {
  json config = Glm5NextTiny();
  json& text = config["text_config"];
  text.update(json{{"vocab_size", 32768},
                   {"hidden_size", 4096},
                   {"intermediate_size", 12288},
                   {"moe_intermediate_size", 2048},
                   {"num_attention_heads", 64},
                   {"num_key_value_heads", 64},
                   {"n_routed_experts", 288},
                   {"num_experts_per_tok", 8},
                   {"q_lora_rank", 1536},
                   {"kv_lora_rank", 512},
                   {"qk_nope_head_dim", 256},
                   {"v_head_dim", 256},
                   {"index_n_heads", 32},
                   {"index_head_dim", 128},
                   {"index_topk", 2048},
                   {"max_position_embeddings", 1048576}});
  text["linear_attn_config"].update(json{{"head_dim", 128}, {"num_heads", 64}});
  text["num_hidden_layers"] = 4;
  Glm5NextLayerTypes(text, 4, 1);
  return config;
}

// The trunk's tensors and the early routes' folds that convert and synth
// write after them.
uint64_t TrunkBytes(const ModelConfig& config, const TrunkFormatOf& format_of) {
  uint64_t bytes = 0;
  std::vector<TensorSpec> specs = TrunkSpecsOf(config, format_of);
  for (TensorSpec& fold : EarlyRouteFoldSpecs(config)) specs.push_back(std::move(fold));
  for (const TensorSpec& spec : specs) {
    bytes += AlignUp(DataBytes(spec.format, spec.shape), kBankAlignment);
    bytes += AlignUp(ScaleBytes(spec.format, spec.shape), kBankAlignment);
  }
  return bytes;
}

}  // namespace

std::vector<EngramTableEntry> EngramTablesOf(const ModelConfig& config) {
  std::vector<EngramTableEntry> tables;
  const EngramConfig& e = config.engram;
  for (size_t i = 0; i < e.layers.size(); ++i) {
    tables.push_back({.layer = e.layers[i],
                      .file = absl::StrCat("engram-L", e.layers[i], ".bin"),
                      .rows = e.table_rows[i],
                      .row_bytes = e.head_dim + e.head_dim / 32});
  }
  return tables;
}

uint64_t EngramTablesBytes(const ModelConfig& config) {
  uint64_t bytes = 0;
  for (const EngramTableEntry& table : EngramTablesOf(config)) {
    bytes += EngramRecords(table) * kEngramRecordBytes;
  }
  return bytes;
}

namespace {

const char* ExpertCountKey(std::string_view arch) {
  if (arch == "gpt_oss" || arch == "mixtral") return "num_local_experts";
  return arch == "qwen3_moe" || arch == "kimi_linear" || arch == "kimi_k3" ? "num_experts"
                                                                           : "n_routed_experts";
}

}  // namespace

const std::vector<Preset>& AllPresets() {
  static const std::vector<Preset> presets = {
      {"deepseek_v3", "tiny", "4 layers, 16 experts of 64x32, top-4, MLA; about 1 MiB",
       DeepseekTiny(), TensorFormat::kBF16, TensorFormat::kF32},
      {"deepseek_v3", "k2-slice", "Kimi K2 shapes: hidden 7168, 384 experts of 2048, top-8, q4",
       K2Slice(), TensorFormat::kQ4B32, TensorFormat::kBF16},
      {"qwen3_moe", "tiny", "4 layers, 16 experts of 64x32, top-4, GQA; about 1 MiB", Qwen3Tiny(),
       TensorFormat::kBF16, TensorFormat::kF32},
      {"qwen3_moe", "a3b-slice", "Qwen3-30B-A3B shapes: hidden 2048, 128 experts of 768, top-8",
       Qwen3A3bSlice(), TensorFormat::kBF16, TensorFormat::kBF16},
      {"gpt_oss", "tiny", "4 layers (sliding/full), 8 experts of 64x64, top-2, sinks; about 1 MiB",
       GptOssTiny(), TensorFormat::kMxfp4B32, TensorFormat::kF32},
      {"gpt_oss", "120b-slice",
       "gpt-oss-120b shapes: hidden 2880, 128 experts of 2880, top-4, GQA 64/8, window 128",
       GptOss120bSlice(), TensorFormat::kMxfp4B32, TensorFormat::kBF16},
      {"kimi_linear", "tiny", "4 layers (KDA x3, NoPE MLA), 16 experts of 64x32, top-4; about 1 MiB",
       KimiLinearTiny(), TensorFormat::kBF16, TensorFormat::kF32},
      {"kimi_linear", "kimi-linear-slice",
       "Kimi-Linear-48B shapes: hidden 2304, 256 experts of 1024, top-8, KDA 32x128, MLA",
       KimiLinearSlice(), TensorFormat::kBF16, TensorFormat::kBF16},
      {"deepseek_v4", "tiny", "4 layers (sliding, CSA, HCA, CSA), mHC, 2 hash layers, 8 FP4 experts",
       DeepseekV4Tiny(), TensorFormat::kMxfp4B32, TensorFormat::kF32},
      {"deepseek_v4", "v4-flash-slice",
       "DeepSeek V4 Flash shapes: 256 FP4 experts of 2048, top-6, 3 hash layers, CSA/HCA",
       DeepseekV4FlashSlice(), TensorFormat::kMxfp4B32, TensorFormat::kBF16},
      {"deepseek_v41", "tiny",
       "9 layers (window, CSA 2/1 groups), mHC, engram on 2 layers, 8 FP4 experts; ~1 MiB",
       DeepseekV41Tiny(), TensorFormat::kMxfp4B32, TensorFormat::kF32},
      {"deepseek_v41", "v41-flash-slice",
       "DeepSeek V4.1 Flash shapes: 384 FP4 experts of 2304, top-6, 2 engram tables of 12.2 GiB",
       DeepseekV41FlashSlice(), TensorFormat::kMxfp4B32, TensorFormat::kBF16},
      {"glm5_next", "tiny", "5 layers (KDA x3, DSA x2), mHC, 16 experts of 64x32, top-4; ~1 MiB",
       Glm5NextTiny(), TensorFormat::kBF16, TensorFormat::kF32},
      {"glm5_next", "glm53-flash-slice",
       "GLM-5.3-Flash shapes: hidden 4096, 288 experts of 2048 (q8 for the release's FP8), top-8",
       Glm53FlashSlice(), TensorFormat::kQ8B32, TensorFormat::kBF16},
      {"kimi_k3", "tiny", "4 layers (KDA x3, gated MLA), AttnRes, 16 MXFP4 latent experts; ~1 MiB",
       KimiK3Tiny(), TensorFormat::kMxfp4B32, TensorFormat::kF32},
      {"kimi_k3", "k3-slice",
       "Kimi K3 expert shapes: 896 MXFP4 experts of 3072 in a 3584 latent, top-16, hidden 7168",
       KimiK3Slice(), TensorFormat::kMxfp4B32, TensorFormat::kBF16},
  };
  return presets;
}

absl::StatusOr<Preset> FindPreset(std::string_view arch, std::string_view name) {
  std::string known;
  for (const Preset& preset : AllPresets()) {
    if (preset.arch == arch && preset.name == name) return preset;
    absl::StrAppend(&known, known.empty() ? "" : ", ", preset.arch, "/", preset.name);
  }
  return absl::NotFoundError(absl::StrCat("no preset \"", std::string(name),
                                          "\" for architecture \"", std::string(arch),
                                          "\" (known: ", known, ")"));
}

TrunkFormatOf UniformTrunk(TensorFormat format) {
  return [format](const TrunkTensor&) { return format; };
}

std::vector<TensorSpec> TrunkSpecsOf(const ModelConfig& config, const TrunkFormatOf& format_of) {
  std::vector<TensorSpec> specs;
  for (TrunkTensor& tensor : TrunkTensors(config, TensorFormat::kF32)) {
    if (!tensor.f32) {
      const TensorFormat format = format_of(tensor);
      if (ShapeProblem(format, tensor.spec.shape).empty()) tensor.spec.format = format;
    }
    specs.push_back(std::move(tensor.spec));
  }
  return specs;
}

absl::StatusOr<uint64_t> ContainerBytes(std::string_view arch, const json& config,
                                        TensorFormat expert_format, TensorFormat trunk_format) {
  return ContainerBytes(arch, config, expert_format, UniformTrunk(trunk_format));
}

absl::StatusOr<uint64_t> ContainerBytes(std::string_view arch, const json& config,
                                        TensorFormat expert_format,
                                        const TrunkFormatOf& trunk_format_of) {
  WARP_ASSIGN_OR_RETURN(ModelConfig model, ParseModelConfig(arch, config));
  const uint64_t record_bytes =
      LayoutBank(0, model.num_experts, ExpertMatrixSpecs(model, expert_format)).record_bytes;
  return TrunkBytes(model, trunk_format_of) +
         uint64_t{model.NumMoeLayers()} * model.num_experts * record_bytes +
         EngramTablesBytes(model);
}

absl::StatusOr<Manifest> PlannedManifest(std::string_view arch, const json& config,
                                         TensorFormat expert_format, TensorFormat trunk_format) {
  return PlannedManifest(arch, config, expert_format, UniformTrunk(trunk_format));
}

absl::StatusOr<Manifest> PlannedManifest(std::string_view arch, const json& config,
                                         TensorFormat expert_format,
                                         const TrunkFormatOf& trunk_format_of) {
  WARP_ASSIGN_OR_RETURN(ModelConfig model, ParseModelConfig(arch, config));
  Manifest manifest{.architecture = std::string(arch),
                    .config = config,
                    .source = "planned from config.json",
                    .trunk_bytes = TrunkBytes(model, trunk_format_of)};
  const std::vector<TensorSpec> matrices = ExpertMatrixSpecs(model, expert_format);
  for (uint32_t layer = 0; layer < model.num_layers; ++layer) {
    if (model.IsMoeLayer(layer)) manifest.banks.push_back(LayoutBank(layer, model.num_experts, matrices));
  }
  return manifest;
}

absl::StatusOr<json> ScaleToSize(std::string_view arch, const json& config,
                                 TensorFormat expert_format, TensorFormat trunk_format,
                                 uint64_t target_bytes) {
  return ScaleToSize(arch, config, expert_format, UniformTrunk(trunk_format), target_bytes);
}

absl::StatusOr<json> ScaleToSize(std::string_view arch, const json& config,
                                 TensorFormat expert_format, const TrunkFormatOf& trunk_format,
                                 uint64_t target_bytes) {
  if (arch == "deepseek_v41") {
    return absl::InvalidArgumentError(
        "--size: a deepseek_v41 preset is not scaled (its kv, index, candidate and engram layer "
        "lists are fixed to its layers); synth it without --size");
  }
  json scaled = config;
  // The text model's keys: config.json's own, or a multimodal release's text_config (Kimi K3).
  const json& text = config.contains("text_config") ? config["text_config"] : config;
  json& scaled_text = scaled.contains("text_config") ? scaled["text_config"] : scaled;
  const uint32_t first_moe = text.value("first_k_dense_replace", 0u);
  auto bytes_with = [&](uint32_t layers, uint32_t experts) -> absl::StatusOr<uint64_t> {
    scaled_text["num_hidden_layers"] = layers;
    scaled_text[ExpertCountKey(arch)] = experts;
    if (arch == "glm5_next") {
      Glm5NextLayerTypes(scaled_text, layers, first_moe);
    } else if (scaled_text.contains("layer_types")) {  // gpt-oss: sliding and full alternate
      scaled_text["layer_types"] = json::array();
      for (uint32_t layer = 0; layer < layers; ++layer) {
        scaled_text["layer_types"].push_back(layer % 2 == 0 ? "sliding_attention" : "full_attention");
      }
    }
    if (scaled_text.contains("linear_attn_config") && arch != "glm5_next") {  // Kimi's lists
      scaled_text["linear_attn_config"].update(KimiLayerLists(layers));
    }
    if (text.contains("compress_ratios")) {  // DeepSeek V4: the preset's pattern, repeated
      const json& pattern = text["compress_ratios"];
      scaled_text["compress_ratios"] = json::array();
      for (uint32_t layer = 0; layer <= layers; ++layer) {  // + the MTP layer's, as released
        scaled_text["compress_ratios"].push_back(pattern[layer % (pattern.size() - 1)]);
      }
    }
    return ContainerBytes(arch, scaled, expert_format, trunk_format);
  };
  const uint32_t all_experts = text.value(ExpertCountKey(arch), 0u);
  // More layers first: they keep the real expert count and so the real routing.
  uint32_t layers = first_moe + 1;
  WARP_ASSIGN_OR_RETURN(uint64_t bytes, bytes_with(layers, all_experts));
  if (bytes <= target_bytes) {
    while (true) {
      WARP_ASSIGN_OR_RETURN(uint64_t next, bytes_with(layers + 1, all_experts));
      if (next > target_bytes) break;
      ++layers;
    }
    WARP_RETURN_IF_ERROR(bytes_with(layers, all_experts).status());
    return scaled;
  }
  // One MoE layer is already too big: drop experts, keeping whole routing groups.
  const uint32_t group = std::max(1u, text.value("n_group", 1u));
  const uint32_t min_experts =
      (text.value("num_experts_per_tok", text.value("num_experts_per_token", 1u)) + group - 1) /
      group * group;
  for (uint32_t experts = all_experts / group * group; experts >= min_experts; experts -= group) {
    WARP_ASSIGN_OR_RETURN(bytes, bytes_with(layers, experts));
    if (bytes <= target_bytes) return scaled;
    if (experts < group + min_experts) break;
  }
  WARP_ASSIGN_OR_RETURN(bytes, bytes_with(layers, min_experts));
  return absl::InvalidArgumentError(
      absl::StrCat("--size ", FormatBytes(target_bytes), " is below the smallest ",
                   std::string(arch), " model of this preset (", FormatBytes(bytes), ")"));
}

}  // namespace warp::computed
