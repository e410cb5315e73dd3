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
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/compute/expert_math_spec.h"
#include "computed/model/kinds/compressed_mqa.h"
#include "computed/model/kinds/engram.h"
#include "computed/model/kinds/gated_mlp.h"
#include "computed/model/kinds/gqa.h"
#include "computed/model/kinds/kda.h"
#include "computed/model/kinds/mla.h"
#include "computed/model/kinds/shared_compressed_mqa.h"
#include "computed/model/model_config.h"

namespace warp::computed {

// Rotary position embedding of one mixer.
struct RopePlan {
  uint32_t dim = 0;          // rotated width per head (even); 0: no rope (NoPE)
  bool interleaved = false;  // pairs (2i, 2i+1) (DeepSeek); else (i, i + dim/2) (NeoX)
  double theta = 10000.0;
  YarnScaling yarn;
};

// The token mixer kinds: one alternative each, a module in model/kinds/
// (its plan parameters, tensors and state) and its math in engine/mixers/.
// A new kind is a new alternative here and its module; std::visit finds the
// rest (there is no switch on the kind).
using MixerParams = std::variant<GqaParams, MlaParams, KdaParams, CompressedMqaParams,
                                 SharedCompressedMqaParams>;

struct MixerPlan {
  std::string prefix;  // "model.layers.N.self_attn."
  RopePlan rope;
  float softmax_scale = 1.0f;  // applied to q.k
  MixerParams params;
};

// Whether the mixer ends in one output projection, out = W a + b (EarlyRoute).
bool EndsInOutputProjection(const MixerPlan& mixer);
// The mixer's trunk tensors in file order (its kind's Tensors::ForEach).
void ForEachMixerTensor(const ModelConfig& config, const MixerPlan& mixer, TensorVisitor visit);
// The output projection W of out = W a + b, where EndsInOutputProjection.
std::optional<TensorRef> OutputProjectionTensor(const ModelConfig& config, const MixerPlan& mixer);

enum class FfnKind {
  kDenseMlp,  // down(silu(gate x) * up x)
  kMoe,       // routed experts read through the ExpertSource (+ shared experts)
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

  // What the routed experts compute (ExpertMath), here and on a daemon.
  ExpertMathSpec expert_math() const {
    return {.activation = activation, .glu = glu, .swiglu_limit = swiglu_limit};
  }
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
  EngramPlan engram;               // DeepSeek V4.1: gated into the streams before the mixer
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
  // kHyperConnections, DeepSeek V4.1: a site's `pre` collapses the streams for
  // the next sublayer (the first reads stream 0, the head the last site's).
  bool hc_single_pass = false;
};

// Positions a sliding layer keeps beyond its window, so that chat can rewind
// a re-rendered turn's last tokens without prefilling the history again.
inline constexpr uint32_t kSlidingRewindSlack = 16;

// Positions a mixer's cache holds for a context of `context`: all of them, or
// the window plus the rewind slack.
uint64_t HeldPositions(uint64_t context, uint32_t window);

// Bytes of mixer state a context of `context` tokens holds in layer `plan`,
// as the engine keeps it (float32): what `computed plan` reports and what the
// engine's LayerState objects report once they are full.
uint64_t MixerStateBytes(const ModelConfig& config, const MixerPlan& plan, uint64_t context);

}  // namespace warp::computed
