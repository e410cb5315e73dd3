#pragma once

// The hyper-parameters of one supported architecture, read from the
// Hugging Face config.json that a container's manifest carries. Validated
// once here so that planning, synthesis and kernels can trust the shapes.
//
// Thread-compatible value type.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/compute/glu.h"
#include "nlohmann/json.hpp"

namespace warp::computed {

enum class Architecture {
  kDeepseekV3,  // DeepSeek V3 / Kimi K2: MLA, sigmoid group routing, shared experts
  kQwen3Moe,    // Qwen3-MoE: GQA with q/k norm, softmax top-k
  kGlm4Moe,     // GLM-4.5: GQA with biases and q/k norm, partial rope, sigmoid group routing
  kMixtral,     // Mixtral: GQA, softmax top-2
  kGptOss,      // gpt-oss: GQA with sinks, sliding/full layers, clamped SwiGLU experts
  kKimiLinear,  // Kimi-Linear: KDA linear attention with NoPE MLA every few layers
  kKimiK3,      // Kimi K3: Kimi-Linear + gated MLA, SiTU, LatentMoE, AttnRes (under text_config)
  kDeepseekV4,  // DeepSeek V4: mHC, sliding + compressed MQA with an indexer, hash routing
  kGlm5Next,    // GLM-5.3-Flash: KDA + DSA (NoPE MLA with a pooled indexer), mHC
  kDeepseekV41, // DeepSeek V4.1: V4's attention with caches and indices shared across
                // layers (CSA2), single-pass mHC, an engram memory (under text_config)
};
// A new family goes at the end of the enum, here, and in family.cc's registry.
inline constexpr size_t kNumArchitectures = static_cast<size_t>(Architecture::kDeepseekV41) + 1;

enum class RouterKind {
  kSoftmaxTopK,       // softmax over all experts, top-k (qwen3_moe, mixtral)
  kSigmoidGroupTopK,  // sigmoid + selection bias, group-limited top-k (deepseek_v3, glm4_moe)
  kTopKSoftmax,       // top-k of the raw logits, softmax over those k (gpt_oss)
  kSqrtSoftplusTopK,  // sqrt(softplus) scores + selection bias, top-k; hash layers by token (V4)
};

// YaRN rope scaling (rope_scaling.type == "yarn"), as DeepSeek V3 / Kimi K2 and gpt-oss ship it.
struct YarnScaling {
  bool enabled = false;
  double factor = 1.0;
  double original_max_position = 4096;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  double mscale = 1.0;
  double mscale_all_dim = 0.0;
  // Round the correction range to whole dims (transformers' default); gpt-oss
  // releases set "truncate": false, which keeps the fractional range.
  bool truncate = true;
  // > 0: the cos/sin factor as given (rope_scaling.attention_factor; DeepSeek V4's
  // compressed layers use 1); 0: derived from mscale.
  double attention_factor = 0.0;
};

// Kimi Delta Attention's shape (linear_attn_config): per head a [head_dim,
// head_dim] recurrent state and causal convolutions of conv_kernel taps.
struct LinearAttention {
  uint32_t num_heads = 0;
  uint32_t head_dim = 0;
  uint32_t conv_kernel = 0;
  // Kimi K3: the decay is gate_lower_bound * sigmoid(...) instead of
  // -softplus (0: Kimi-Linear's), and the output gate one full-rank matrix.
  float gate_lower_bound = 0.0f;
  bool full_rank_gate = false;
};

// DeepSeek V4's attention: a single K = V head over the last sliding_window
// positions plus, per layer, compressed entries — CSA (pools of csa_rate with
// overlap, chosen per query by a lightning indexer) or HCA (closed windows of
// hca_rate) — and a grouped low-rank output projection.
enum class CompressionKind { kNone, kCsa, kHca };

struct CompressedAttention {
  std::vector<CompressionKind> layer_kind;  // [num_layers]
  std::vector<uint32_t> layer_rate;         // [num_layers]: positions per compressed entry
  uint32_t csa_rate = 4, hca_rate = 128;    // layer_types' rates (compress_rates)
  double compress_rope_theta = 160000.0;    // rope of compressed layers (with YaRN)
  uint32_t o_groups = 0, o_lora_rank = 0;
  uint32_t index_heads = 0, index_head_dim = 0, index_topk = 0;
};

// DeepSeek V4.1's CSA2: a layer with a compression ratio reads the compressed
// cache of its KV source (the nearest kv_source_layer_ids entry at or before
// it) and attends to the entries its index source (the nearest
// index_source_layer_ids entry) picked. The candidate source's top blocks
// bound every later index source's choice.
struct SharedCompression {
  static constexpr int32_t kNone = -1;
  std::vector<int32_t> kv_source;     // [num_layers]: a layer, or kNone (window only)
  std::vector<int32_t> index_source;  // [num_layers]: a layer, or kNone
  int32_t candidate_source = kNone;
  uint32_t candidate_topk_blocks = 0, candidate_block_size = 0;
};

// DeepSeek V4.1's engram memory: at each of `layers`, (max_ngram - 1) x heads
// rows of head_dim, hashed from the last max_ngram token ids, gated into the
// hyper-connection streams before the layer's attention.
struct EngramConfig {
  std::vector<uint32_t> layers;          // engram_layer_ids
  std::vector<uint64_t> table_rows;      // engram_num_embeddings, per engram layer
  uint64_t bucket_base = 0;              // engram_vocab_size: primes are drawn above it
  uint32_t max_ngram = 0, heads = 0, head_dim = 0;
  uint32_t pad_token = 0;                // engram_pad_token_id (transformers: engram_pad_id)
  uint32_t compressed_vocab = 0;         // engram_compressed_vocab_size

  uint32_t RowsPerToken() const { return max_ngram > 1 ? (max_ngram - 1) * heads : 0; }
};

// GLM-5.3's DSA indexer: pools of `kpool` positions, the best
// index_topk / kpool of them (and the query's incomplete pool) attended.
struct DsaIndexer {
  uint32_t index_heads = 0, index_head_dim = 0, index_topk = 0, kpool = 0;
  bool select_tail = true;  // index_kpool_always_select_tail
};

// DeepSeek V4's manifold-constrained hyper-connections: hc_mult residual
// streams mixed at every sublayer (Sinkhorn-normalized comb).
struct HyperConnections {
  uint32_t mult = 0;
  uint32_t sinkhorn_iters = 0;
  float eps = 1e-6f;
};

// transformers' YaRN get_mscale: 1 for scale <= 1, else 0.1 * mscale * ln(scale) + 1.
double YarnMscale(double scale, double mscale);

struct ModelConfig {
  Architecture arch = Architecture::kDeepseekV3;
  uint32_t hidden_size = 0;
  uint32_t num_layers = 0;
  uint32_t vocab_size = 0;
  uint32_t max_position_embeddings = 0;  // 0: the config does not say
  uint32_t num_heads = 0;
  uint32_t num_kv_heads = 0;
  uint32_t head_dim = 0;               // GQA families
  uint32_t intermediate_size = 0;      // dense MLP layers
  uint32_t moe_intermediate_size = 0;  // one routed expert
  uint32_t num_experts = 0;            // routed experts per MoE layer
  uint32_t experts_per_token = 0;      // top-k
  uint32_t num_shared_experts = 0;
  bool tie_word_embeddings = false;
  // MLA (deepseek_v3). q_lora_rank 0 means q_proj without LoRA.
  uint32_t q_lora_rank = 0;
  uint32_t kv_lora_rank = 0;
  uint32_t qk_nope_head_dim = 0;
  uint32_t qk_rope_head_dim = 0;
  uint32_t v_head_dim = 0;
  // kv_b_proj as llama.cpp's GGUF files hold it (config.json "kv_b_split",
  // written by the GGUF importer): k_b_proj [heads * kv_lora_rank, qk_nope]
  // (each head's key part transposed) and v_b_proj [heads * v_head_dim, kv_lora_rank].
  bool kv_b_split = false;
  std::vector<bool> moe_layer;  // [num_layers]: true where the MLP is routed experts
  // Numerics and routing.
  float rms_norm_eps = 1e-6f;
  double rope_theta = 10000.0;
  float partial_rotary_factor = 1.0f;  // glm4_moe: rope on the first head_dim x factor dims
  YarnScaling yarn;
  bool attention_bias = false;  // q/k/v projections carry biases (glm4_moe)
  bool qk_norm = false;         // RMSNorm of q and k per head before rope
  RouterKind router = RouterKind::kSoftmaxTopK;
  bool norm_topk_prob = false;
  float routed_scaling_factor = 1.0f;
  uint32_t n_group = 1;
  uint32_t topk_group = 1;
  // Sliding-window attention (gpt_oss): the window, and which layers use it.
  uint32_t sliding_window = 0;
  std::vector<bool> sliding_layer;  // [num_layers]
  float swiglu_limit = 0.0f;        // gpt_oss expert clamp
  // Kimi Delta Attention (kimi_linear's linear_attn_config), and which layers use it.
  LinearAttention linear_attention;
  std::vector<bool> kda_layer;  // [num_layers]
  bool mla_rope = true;         // false: MLA without rope (kimi_linear's mla_use_nope)
  // Kimi K3.
  bool mla_output_gate = false;  // MLA output * sigmoid(g_proj x) before o_proj
  GluActivation glu;             // hidden_act of every gated MLP
  uint32_t latent_moe_dim = 0;   // routed_expert_hidden_size: experts run in this width
  bool latent_moe_norm = false;  // latent_moe_use_norm
  uint32_t attn_res_block = 0;   // attn_res_block_size: AttnRes instead of the residual stream
  // DeepSeek V4.
  CompressedAttention compressed;
  HyperConnections hyper;
  std::vector<bool> hash_layer;  // [num_layers]: routed by token id through tid2eid
  // GLM-5.3.
  DsaIndexer dsa;
  // DeepSeek V4.1.
  SharedCompression shared_compression;
  EngramConfig engram;
  float router_temperature = 1.0f;  // gate_temp: the router's logits are divided by it

  bool IsMoeLayer(uint32_t layer) const { return layer < moe_layer.size() && moe_layer[layer]; }
  bool IsKdaLayer(uint32_t layer) const { return layer < kda_layer.size() && kda_layer[layer]; }
  bool IsSlidingLayer(uint32_t layer) const {
    return layer < sliding_layer.size() && sliding_layer[layer];
  }
  uint32_t NumMoeLayers() const;
};

// Decoder layers WARP accepts: far above every release (61 for Kimi K2), so
// that a corrupt count fails at once instead of sizing per-layer tables.
inline constexpr uint32_t kMaxLayers = 1024;
// Every width (hidden size, heads, head and LoRA dims, windows) and the
// vocabulary: far above every release, low enough that a layer's state for
// kMaxContextTokens (planner.h) fits 64 bits.
inline constexpr uint32_t kMaxDimension = uint32_t{1} << 20;
inline constexpr uint32_t kMaxVocabulary = uint32_t{1} << 24;


}  // namespace warp::computed
