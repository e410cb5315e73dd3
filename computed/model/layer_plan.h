#pragma once

// The per-layer structure of a model, as its family describes it: for every
// decoder layer which token mixer and which FFN it runs, with the trunk
// tensor names they bind; and the residual scheme that joins them. The
// engine builds one mixer and one FFN object per layer from this plan and
// walks it; it never asks which family it runs. A new family produces a new
// plan (computed/model/families/), adding a mixer or FFN kind only when it
// brings new math. docs/ENGINE.md#the-layer-plan describes each kind.
//
// Thread-compatible value types.

#include <cstdint>
#include <string>
#include <vector>

#include "computed/model/model_config.h"

namespace warp::computed {

// Rotary position embedding of one mixer.
struct RopePlan {
  uint32_t dim = 0;          // rotated width per head (even); 0: no rope (NoPE)
  bool interleaved = false;  // pairs (2i, 2i+1) (DeepSeek); else (i, i + dim/2) (NeoX)
  double theta = 10000.0;
  YarnScaling yarn;
};

enum class MixerKind {
  kGqa,  // grouped-query softmax attention with a K/V cache (optionally sliding, with sinks)
  kMla,  // multi-head latent attention with the absorbed latent cache (DeepSeek V3);
         // with rope.dim 0 the shared rope key is not rotated (Kimi-Linear's NoPE MLA)
  kKda,  // Kimi Delta Attention: gated delta-rule linear attention, fixed-size state
  kCompressedMqa,  // DeepSeek V4: one K = V head, sliding window + compressed entries, sinks
};

struct MixerPlan {
  MixerKind kind = MixerKind::kGqa;
  std::string prefix;  // "model.layers.N.self_attn."
  RopePlan rope;
  // GQA
  uint32_t sliding_window = 0;  // 0: full attention; else keys of the last W positions
  bool qkv_bias = false;        // q/k/v_proj.bias
  bool o_bias = false;          // o_proj.bias
  bool qk_norm = false;         // q_norm / k_norm per head before rope
  bool sinks = false;           // `sinks` [heads]: a logit per head that joins the softmax
  float softmax_scale = 1.0f;   // applied to q.k
  // MLA
  bool output_gate = false;  // `g_proj`: the heads' output * sigmoid(g_proj x) (Kimi K3)
  // q_a_layernorm / kv_a_layernorm: DeepSeek V3 and Kimi build them with the
  // default 1e-6, GLM-5.3 with rms_norm_eps.
  float latent_norm_eps = 1e-6f;
  bool dsa_indexer = false;  // GLM-5.3's DSA: `indexer.` picks the positions attended
  // kCompressedMqa: which compressor (none, CSA + indexer, HCA) and its rate.
  CompressionKind compression = CompressionKind::kNone;
  uint32_t compress_rate = 0;
  // KDA: A_log as the release stores it (Kimi-Linear [1, 1, H, 1]; Kimi K3 a
  // zero-padded vector of at least H); the first H values are the heads'.
  std::vector<uint64_t> a_log_shape;
};

enum class FfnKind {
  kDenseMlp,  // down(silu(gate x) * up x)
  kMoe,       // routed experts read through the ExpertSource (+ shared experts)
};

enum class ExpertActivation {
  kSwiGlu,         // records gate_proj, up_proj, down_proj: down(act(gate) * up), act
                   // per FfnPlan::glu (SiLU or SiTU)
  kClampedSwiGlu,  // gpt-oss: records gate_up (rows interleaved), down, with biases;
                   // gate <= limit, |up| <= limit, down((up + 1) * gate * sigmoid(1.702 gate))
};

// The matrix names of a gated MLP under its prefix (PREFIX.NAME.weight).
struct MlpNames {
  std::string gate = "gate_proj", up = "up_proj", down = "down_proj";
};

struct FfnPlan {
  FfnKind kind = FfnKind::kDenseMlp;
  std::string prefix;         // "model.layers.N.mlp"
  uint64_t intermediate = 0;  // dense MLP width
  GluActivation glu;          // of the dense MLP, the shared and the routed experts
  MlpNames mlp;               // of the dense MLP and the shared experts (V4: w1, w3, w2)
  // MoE
  RouterKind router = RouterKind::kSoftmaxTopK;
  std::string router_weight;  // [experts, hidden]
  std::string router_bias;    // "" or [experts]: added to the logits (gpt-oss)
  std::string selection_bias; // "" or [experts]: e_score_correction_bias, selection only
  std::string hash_table;     // "" or [vocab, top-k] expert ids: routed by token (V4's tid2eid)
  ExpertActivation activation = ExpertActivation::kSwiGlu;
  float swiglu_limit = 0.0f;          // kClampedSwiGlu
  std::string shared_prefix;          // "" or the shared experts' MLP prefix
  uint64_t shared_intermediate = 0;
  // LatentMoE (Kimi K3): the routed experts run in a narrower latent,
  // up(norm(sum_k w_k E_k(down x))); the router and shared experts see x.
  uint64_t latent_dim = 0;   // 0: experts in the hidden width
  std::string latent_down;   // [latent, hidden]
  std::string latent_norm;   // "" or [latent]
  std::string latent_up;     // [hidden, latent]
};

// The pseudo-query of one AttnRes mix: proj [1, hidden] dotted with the
// RMS-normalized (weight `norm`) candidates scores them.
struct ResidualMix {
  std::string norm, proj;
};

// One hyper-connection site's weights: fn [(2 + mult) mult, mult hidden],
// base [(2 + mult) mult], scale [3] (the model's head: fn [mult, mult hidden],
// base [mult], scale [1]).
struct HyperSite {
  std::string fn, base, scale;
};

struct LayerPlan {
  std::string input_norm;  // before the mixer
  std::string post_norm;   // before the FFN
  MixerPlan mixer;
  FfnPlan ffn;
  ResidualMix mixer_mix, ffn_mix;  // kAttnRes: the mixes before the mixer and the FFN
  HyperSite mixer_hc, ffn_hc;      // kHyperConnections: the sites before the mixer and the FFN
};

enum class ResidualKind {
  kPreNorm,  // h += mixer(norm(h)); h += ffn(norm(h)); logits = head(norm(h))
  kAttnRes,  // Kimi K3: each sublayer reads a softmax mix of banked layer inputs and the
             // running block sum (docs/ENGINE.md#attnres)
  kHyperConnections,  // DeepSeek V4's mHC: hc_mult streams, Sinkhorn-mixed at each sublayer
};

struct ModelPlan {
  ResidualKind residual = ResidualKind::kPreNorm;
  std::string embed = "model.embed_tokens.weight";
  std::string final_norm = "model.norm.weight";
  std::string head;  // lm_head.weight, or the embedding when tied
  std::vector<LayerPlan> layers;
  // kAttnRes: every `attn_res_block` layers the layer input is banked; the
  // final mix comes before final_norm.
  uint32_t attn_res_block = 0;
  ResidualMix final_mix;
  HyperSite hc_head;  // kHyperConnections: reduces the streams before final_norm; no fn: their mean
};

// Positions a sliding layer keeps beyond its window, so that chat can rewind
// a re-rendered turn's last tokens without prefilling the history again.
inline constexpr uint32_t kSlidingRewindSlack = 16;

// Positions a mixer's cache holds for a context of `context`: all of them, or
// the window plus the rewind slack.
uint64_t HeldPositions(uint64_t context, uint32_t window);

// Floats of one KDA layer's state: per head the [head_dim, head_dim] matrix
// S, and the last conv_kernel - 1 inputs of the q, k and v convolutions.
uint64_t KdaStateFloats(const LinearAttention& kda);

// Bytes of mixer state a context of `context` tokens holds in layer `plan`,
// as the engine keeps it (float32): what `computed plan` reports and what the
// engine's LayerState objects report once they are full.
uint64_t MixerStateBytes(const ModelConfig& config, const MixerPlan& plan, uint64_t context);

}  // namespace warp::computed
