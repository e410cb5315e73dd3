#include "computed/model/kinds/compressed_mqa.h"

#include "computed/model/layer_plan.h"

namespace warp::computed {

KvCompressorTensors KvCompressorTensors::Of(const ModelConfig& c, const std::string& p,
                                            uint64_t width, uint64_t dim, uint32_t rate) {
  return {.kv = {p + "wkv.weight", {width, c.hidden_size}},
          .gate = {p + "wgate.weight", {width, c.hidden_size}},
          .ape = {p + "ape", {rate, width}, /*f32=*/true},
          .norm = {p + "norm.weight", {dim}}};
}

void KvCompressorTensors::ForEach(TensorVisitor visit) const {
  for (const TensorRef* t : {&kv, &gate, &ape, &norm}) visit(*t, TrunkKind::kIndexer);
}

LightningIndexerTensors LightningIndexerTensors::Of(const ModelConfig& c, const std::string& p,
                                                    uint32_t rate) {
  const CompressedAttention& ca = c.compressed;
  return {.q_b = {p + "wq_b.weight", {uint64_t{ca.index_heads} * ca.index_head_dim, c.q_lora_rank}},
          .weights_proj = {p + "weights_proj.weight", {ca.index_heads, c.hidden_size}},
          .keys = KvCompressorTensors::Of(c, p + "compressor.", 2 * uint64_t{ca.index_head_dim},
                                          ca.index_head_dim, rate)};
}

void LightningIndexerTensors::ForEach(TensorVisitor visit) const {
  visit(q_b, TrunkKind::kIndexer);
  visit(weights_proj, TrunkKind::kIndexer);
  keys.ForEach(visit);
}

CompressedMqaTensors CompressedMqaTensors::Of(const ModelConfig& c, const std::string& p,
                                              const CompressedMqaParams& params) {
  const CompressedAttention& ca = c.compressed;
  const uint64_t hidden = c.hidden_size, dim = c.head_dim, heads = c.num_heads;
  CompressedMqaTensors t{
      .q_a = {p + "wq_a.weight", {c.q_lora_rank, hidden}},
      .q_norm = {p + "q_norm.weight", {c.q_lora_rank}},
      .q_b = {p + "wq_b.weight", {heads * dim, c.q_lora_rank}},
      .kv = {p + "wkv.weight", {dim, hidden}},
      .kv_norm = {p + "kv_norm.weight", {dim}},
      .o_a = {p + "wo_a.weight", {uint64_t{ca.o_groups} * ca.o_lora_rank, heads * dim / ca.o_groups}},
      .o_b = {p + "wo_b.weight", {hidden, uint64_t{ca.o_groups} * ca.o_lora_rank}},
      .sinks = {p + "attn_sink", {heads}}};
  const bool csa = params.compression == CompressionKind::kCsa;
  if (params.compression != CompressionKind::kNone) {
    // CSA's compressor overlaps its windows: twice the rows.
    t.compressor = KvCompressorTensors::Of(c, p + "compressor.", csa ? 2 * dim : dim, dim,
                                           params.compress_rate);
  }
  if (csa) t.indexer = LightningIndexerTensors::Of(c, p + "indexer.", params.compress_rate);
  return t;
}

void CompressedMqaTensors::ForEach(TensorVisitor visit) const {
  for (const TensorRef* t : {&q_a, &q_norm, &q_b, &kv, &kv_norm, &o_a, &o_b, &sinks}) {
    visit(*t, CompressedMqaParams::kTrunkKind);
  }
  if (compressor) compressor->ForEach(visit);
  if (indexer) indexer->ForEach(visit);
}

namespace {

// A KvCompressor's entries for `context` positions, and its open window
// (kv and gate rows, with overlap the last window's first halves) twice:
// the window and its chat checkpoint.
uint64_t CompressorFloats(uint64_t context, uint32_t dim, uint32_t rate, bool overlap) {
  const uint64_t width = overlap ? 2 * uint64_t{dim} : dim;
  const uint64_t open = 2 * uint64_t{rate} * width + (overlap ? 2 * uint64_t{rate} * dim : 0);
  return context / rate * dim + 2 * open;
}

}  // namespace

uint64_t StateBytes(const ModelConfig& c, const CompressedMqaParams& params, uint64_t context) {
  uint64_t floats = HeldPositions(context, params.sliding_window) * c.head_dim;
  if (params.compression != CompressionKind::kNone) {
    const bool csa = params.compression == CompressionKind::kCsa;
    floats += CompressorFloats(context, c.head_dim, params.compress_rate, csa);
    if (csa) floats += CompressorFloats(context, c.compressed.index_head_dim, params.compress_rate, true);
  }
  return floats * sizeof(float);
}

}  // namespace warp::computed
