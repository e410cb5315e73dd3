#include "computed/model/kinds/shared_compressed_mqa.h"

#include "computed/model/layer_plan.h"

namespace warp::computed {

SharedCompressedMqaTensors SharedCompressedMqaTensors::Of(const ModelConfig& c,
                                                          const std::string& p,
                                                          const SharedCompressedMqaParams& params) {
  const uint64_t hidden = c.hidden_size, dim = c.head_dim;
  const CompressedAttention& ca = c.compressed;
  SharedCompressedMqaTensors t{.attention = CompressedMqaTensors::Of(c, p, CompressedMqaParams{})};
  if (params.owns_compressor()) {
    t.compressor = Compressor{.kv = {p + "compressor.wkv.weight", {dim, hidden}},
                              .norm = {p + "compressor.norm.weight", {dim}}};
    if (params.compress_rate > 1) t.compressor->gate = {p + "compressor.wgate.weight", {dim, hidden}};
  }
  if (params.runs_indexer()) {
    const std::string i = p + "indexer.";
    t.indexer = Indexer{
        .q_b = {i + "wq_b.weight", {uint64_t{ca.index_heads} * ca.index_head_dim, c.q_lora_rank}},
        .weights_proj = {i + "weights_proj.weight", {ca.index_heads, hidden}}};
    if (params.owns_compressor()) {
      t.indexer->k = {i + "wk.weight", {ca.index_head_dim, dim}};
      t.indexer->k_norm = {i + "k_norm.weight", {ca.index_head_dim}};
    }
  }
  return t;
}

void SharedCompressedMqaTensors::ForEach(TensorVisitor visit) const {
  attention.ForEach(visit);
  if (compressor) {
    for (const TensorRef* t : {&compressor->kv, &compressor->gate, &compressor->norm}) {
      if (t->present()) visit(*t, TrunkKind::kIndexer);
    }
  }
  if (indexer) {
    for (const TensorRef* t : {&indexer->q_b, &indexer->weights_proj, &indexer->k, &indexer->k_norm}) {
      if (t->present()) visit(*t, TrunkKind::kIndexer);
    }
  }
}

uint64_t StateBytes(const ModelConfig& c, const SharedCompressedMqaParams& params,
                    uint64_t context) {
  uint64_t floats = HeldPositions(context, params.sliding_window) * c.head_dim;
  if (params.owns_compressor()) {
    const uint32_t rate = params.compress_rate;
    const uint64_t entries = context / rate;
    floats += entries * c.head_dim;
    if (params.runs_indexer()) floats += entries * c.compressed.index_head_dim;
    // The open group's kv (and, above ratio 1, gate) rows, and their chat checkpoint.
    floats += 2 * (uint64_t{rate} * c.head_dim * (rate > 1 ? 2 : 1));
  }
  return floats * sizeof(float);
}

}  // namespace warp::computed
