#include "computed/engine/mixers/compressed_mqa_attention.h"

#include <cmath>
#include <numeric>

#include "common/compute/linear.h"
#include "common/kernels/matmul.h"
#include "computed/engine/mixers/dot.h"
#include "computed/engine/mixers/grouped_output.h"
#include "computed/engine/mixers/window_attention.h"

namespace warp::computed {

uint64_t CompressedMqaState::bytes() const {
  uint64_t total = window_.bytes();
  for (const KvCompressor* compressor : compressors_) total += compressor->bytes();
  return total;
}

uint32_t CompressedMqaState::Rewind(uint32_t position) {
  for (;;) {  // until every part can continue from the same position
    uint32_t reached = window_.Rewind(position);
    for (KvCompressor* compressor : compressors_)
      reached = std::min(reached, compressor->Rewind(position));
    if (reached == position) return position;
    position = reached;
  }
}

void CompressedMqaState::Checkpoint() {
  for (KvCompressor* compressor : compressors_) compressor->Checkpoint();
}

void CompressedMqaState::Archive(StateArchive& archive) {
  window_.Archive(archive);
  for (KvCompressor* compressor : compressors_) compressor->Archive(archive);
}

CompressedMqaAttention::CompressedMqaAttention(const ModelConfig& c, const MixerPlan& plan,
                                               const CompressedMqaParams& params,
                                               const TrunkWeights& w, uint32_t context,
                                               ComputeContext& compute)
    : c_(c),
      compute_(compute),
      window_(params.sliding_window),
      rope_(plan.rope),
      state_(context, params.sliding_window, c.head_dim) {
  const CompressedMqaTensors t = CompressedMqaTensors::Of(c, plan.prefix, params);
  q_a_ = w.Matrix(t.q_a);
  q_norm_ = w.Vector(t.q_norm);
  q_b_ = w.Matrix(t.q_b);
  kv_ = w.Matrix(t.kv);
  kv_norm_ = w.Vector(t.kv_norm);
  o_a_ = w.Matrix(t.o_a);
  o_b_ = w.Matrix(t.o_b);
  sinks_ = w.Vector(t.sinks);
  if (t.compressor) {
    const bool csa = t.indexer.has_value();  // CSA's compressor overlaps its windows
    compressor_ =
        std::make_unique<KvCompressor>(w, *t.compressor, c.head_dim, params.compress_rate,
                                       /*overlap=*/csa, c.rms_norm_eps, rope_, context);
    state_.Add(compressor_.get());
  }
  if (t.indexer) {
    indexer_ = std::make_unique<LightningIndexer>(c, w, *t.indexer, params.compress_rate, rope_,
                                                  context, compute);
    state_.Add(&indexer_->keys());
  }
}

void CompressedMqaAttention::Attend(const float* q, uint32_t h, uint32_t pos,
                                    const std::vector<uint32_t>& entries, float* o) {
  AttendWindowAndEntries(
      q, c_.head_dim, state_.window(), pos, entries,
      [&](uint32_t entry) { return compressor_->Entry(entry); }, sinks_[h], o);
}

void CompressedMqaAttention::Forward(std::span<const float> x, uint32_t n, uint32_t first_pos,
                                     std::span<float> out) {
  const uint32_t heads = c_.num_heads, dim = c_.head_dim, rope = rope_.dim();
  const uint32_t q_lora = c_.q_lora_rank;
  const float eps = c_.rms_norm_eps;
  QueriesAndKv projected = ProjectQueriesAndKv(compute_, q_a_, q_norm_, q_b_, kv_, x, n, q_lora,
                                               uint64_t{heads} * dim, dim, eps);
  std::vector<float>& q_res = projected.latent;
  std::vector<float>& q = projected.q;
  std::vector<float>& kv = projected.kv;
  std::vector<float> comp_kv, comp_gate;
  if (compressor_) {
    comp_kv.resize(uint64_t{n} * compressor_->width());
    comp_gate.resize(uint64_t{n} * compressor_->width());
    Linear(compute_, compressor_->kv_proj(), x.data(), n, comp_kv.data());
    Linear(compute_, compressor_->gate_proj(), x.data(), n, comp_gate.data());
  }
  if (indexer_) indexer_->Project(x, q_res, n);
  std::vector<float> attn(uint64_t{n} * heads * dim);
  for (uint32_t t = 0; t < n; ++t) {
    const uint32_t pos = first_pos + t;
    float* k = state_.window().Row(0, pos);
    RmsNorm({&kv[uint64_t{t} * dim], dim}, kv_norm_, eps, {k, dim});
    rope_.Apply({k + dim - rope, rope}, pos);
    state_.window().Written(pos);
    std::vector<uint32_t> entries;
    if (compressor_) {
      compressor_->Add(&comp_kv[uint64_t{t} * compressor_->width()],
                       &comp_gate[uint64_t{t} * compressor_->width()]);
      if (indexer_) {
        entries = indexer_->Select(t, pos);
      } else {
        entries.resize(compressor_->VisibleAt(pos));
        std::iota(entries.begin(), entries.end(), 0u);
      }
    }
    compute_.ParallelFor(heads, 1, [&](size_t begin, size_t end) {
      for (size_t h = begin; h < end; ++h) {
        float* qh = &q[(uint64_t{t} * heads + h) * dim];
        RmsNormUnweighted({qh, dim}, eps, {qh, dim});
        rope_.Apply({qh + dim - rope, rope}, pos);
        float* o = &attn[(uint64_t{t} * heads + h) * dim];
        Attend(qh, static_cast<uint32_t>(h), pos, entries, o);
        rope_.Unapply({o + dim - rope, rope}, pos);
      }
    });
  }
  GroupedOutput(compute_, o_a_, o_b_, c_.compressed.o_groups, c_.compressed.o_lora_rank, attn, n,
                out);
}

}  // namespace warp::computed
