#include "computed/engine/ffns/moe_ffn.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <future>

#include "common/compute/compute_arrivals.h"
#include "common/compute/linear.h"
#include "common/status.h"
#include "common/store/read_window.h"
#include "computed/engine/ops.h"
#include "computed/engine/stage_timer.h"

namespace warp::computed {

MoeFfn::MoeFfn(uint32_t layer, uint64_t hidden, const Router& router,
               std::unique_ptr<ExpertMath> math, const BankEntry& bank,
               std::optional<DenseMlp> shared, std::optional<LatentMoe> latent,
               ExpertSource& experts, Lookahead& lookahead, EarlyRoute* early, ComputeContext& compute,
               const MoeOptions& options, ForwardStats& stats)
    : layer_(layer),
      router_(router),
      math_(std::move(math)),
      bank_(bank),
      shared_(std::move(shared)),
      latent_(std::move(latent)),
      experts_(experts),
      lookahead_(lookahead),
      early_(early),
      compute_(compute),
      options_(options),
      stats_(stats),
      hidden_(hidden),
      width_(latent_ ? latent_->down.rows : hidden) {}

MoeFfn::ChunkExperts MoeFfn::Union(const std::vector<Routing>& routings, const PassTokens& tokens) {
  ChunkExperts chunk;
  chunk.key_of_expert.assign(router_.num_experts(), -1);
  // The run of tokens (one sequence's) in which each expert was last seen:
  // the experts each sequence would have read alone, the batch dedup baseline.
  std::vector<uint32_t> seen_in_run(router_.num_experts(), UINT32_MAX);
  uint32_t run = 0;
  for (uint32_t t = 0; t < routings.size(); ++t) {
    if (t > 0 && tokens.sequences[t] != tokens.sequences[t - 1]) ++run;
    for (uint32_t expert : routings[t].experts) {
      if (chunk.key_of_expert[expert] < 0) {
        chunk.key_of_expert[expert] = static_cast<int32_t>(chunk.keys.size());
        chunk.keys.push_back({layer_, expert});
        chunk.tokens.emplace_back();
      }
      chunk.tokens[chunk.key_of_expert[expert]].push_back(t);
      if (seen_in_run[expert] != run) stats_.sequence_union_bytes += bank_.record_bytes;
      seen_in_run[expert] = run;
    }
    stats_.token_by_token_bytes += routings[t].experts.size() * bank_.record_bytes;
    if (options_.on_route) options_.on_route(tokens.positions[t], layer_, routings[t].experts);
  }
  ++stats_.moe_passes;
  stats_.expert_reads += chunk.keys.size();
  stats_.expert_read_bytes += chunk.keys.size() * bank_.record_bytes;
  return chunk;
}

std::vector<float> MoeFfn::TokenRows(std::span<const float> in,
                                     const std::vector<uint32_t>& tokens) {
  std::vector<float> xs(tokens.size() * width_);
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::copy_n(&in[tokens[i] * width_], width_, &xs[i * width_]);
  }
  return xs;
}

void MoeFfn::CountUse(const ExpertRecord& record, size_t tokens) {
  stats_.expert_uses += tokens;
  stats_.served[static_cast<size_t>(record.served)] += 1;
  stats_.served_bytes[static_cast<size_t>(record.served)] += record.record_bytes;
}

void MoeFfn::RunExpert(const ExpertRecord& record, std::span<const float> in,
                       const std::vector<uint32_t>& tokens, std::vector<float>& output) {
  StageTimer timer(stats_.seconds_expert);
  const uint32_t m = static_cast<uint32_t>(tokens.size());
  output.resize(m * width_);
  math_->Run(record, TokenRows(in, tokens), m, output);
  CountUse(record, m);
}

bool MoeFfn::RunLandingExpert(const LandingRecord& landing, std::span<const float> in,
                              const std::vector<uint32_t>& tokens, std::vector<float>& output) {
  const auto start = std::chrono::steady_clock::now();
  double waited = 0;  // the waits are the disk's time, not the expert's
  const uint32_t m = static_cast<uint32_t>(tokens.size());
  output.resize(m * width_);
  const bool whole =
      math_->RunLanding(landing, TokenRows(in, tokens), m, output, [&](uint64_t bytes) {
        StageTimer timer(waited);
        return landing.WaitFor(bytes);
      });
  stats_.seconds_fetch_wait += waited;
  stats_.seconds_expert +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() - waited;
  return whole;
}

void MoeFfn::RunShared(std::span<const float> x, std::span<const int32_t> tokens,
                       std::vector<float>& shared) {
  if (!shared_) return;
  shared.resize(tokens.size() * hidden_);
  shared_->Run(x, static_cast<uint32_t>(tokens.size()), shared);
}

std::vector<MoeFfn::Wave> MoeFfn::Waves(size_t keys) const {
  const uint64_t limit = options_.cache_records;
  if (limit == 0 || keys <= limit) return {Wave{0, keys}};
  const uint64_t size = WaveRecords(limit);
  std::vector<Wave> waves;
  for (size_t begin = 0; begin < keys; begin += size) {
    waves.push_back({begin, std::min(keys, begin + size)});
  }
  return waves;
}

absl::Status MoeFfn::ComputeWave(ReadBatch& batch, Wave wave, std::span<const float> in,
                                 const ChunkExperts& chunk,
                                 std::vector<std::vector<float>>& outputs) {
  return ComputeArrivals(
      [&] {
        StageTimer timer(stats_.seconds_fetch_wait);
        return batch.NextArrival();
      },
      [&](size_t i, const LandingRecord& landing) {
        const size_t u = wave.begin + i;
        return RunLandingExpert(landing, in, chunk.tokens[u], outputs[u]);
      },
      [&](size_t i, const ExpertRecord& record, bool computed_as_landed) {
        const size_t u = wave.begin + i;
        if (computed_as_landed) {
          CountUse(record, chunk.tokens[u].size());
          ++stats_.computed_as_landed;
        } else {
          RunExpert(record, in, chunk.tokens[u], outputs[u]);
        }
        return absl::OkStatus();
      });
}

absl::Status MoeFfn::ComputeAsReadsArrive(std::span<const float> x, std::span<const float> in,
                                          std::span<const int32_t> tokens,
                                          const ChunkExperts& chunk,
                                          std::vector<std::vector<float>>& outputs,
                                          std::vector<float>& shared) {
  const std::vector<Wave> waves = Waves(chunk.keys.size());
  stats_.expert_waves += waves.size();
  auto read = [&](Wave wave) {
    return experts_.Read(std::span(chunk.keys).subspan(wave.begin, wave.end - wave.begin),
                         Priority::kDemand);
  };
  std::shared_ptr<ReadBatch> batch = read(waves.front());
  RunShared(x, tokens, shared);
  for (size_t w = 0; w < waves.size(); ++w) {
    std::shared_ptr<ReadBatch> next = w + 1 < waves.size() ? read(waves[w + 1]) : nullptr;
    WARP_RETURN_IF_ERROR(ComputeWave(*batch, waves[w], in, chunk, outputs));
    batch = std::move(next);
  }
  return absl::OkStatus();
}

absl::Status MoeFfn::ComputeAfterReads(std::span<const float> x, std::span<const float> in,
                                       std::span<const int32_t> tokens, const ChunkExperts& chunk,
                                       std::vector<std::vector<float>>& outputs,
                                       std::vector<float>& shared) {
  const std::vector<Wave> waves = Waves(chunk.keys.size());
  stats_.expert_waves += waves.size();
  for (const Wave wave : waves) {
    std::vector<absl::StatusOr<ExpertRecord>> records;
    {
      StageTimer timer(stats_.seconds_fetch_wait);
      records = experts_.ReadAll(std::span(chunk.keys).subspan(wave.begin, wave.end - wave.begin));
    }
    for (size_t u = wave.begin; u < wave.end; ++u) {
      const absl::StatusOr<ExpertRecord>& record = records[u - wave.begin];
      if (!record.ok()) return record.status();
      RunExpert(*record, in, chunk.tokens[u], outputs[u]);
    }
  }
  RunShared(x, tokens, shared);
  return absl::OkStatus();
}

absl::Status MoeFfn::ComputeRemotely(std::span<const float> x, std::span<const float> in,
                                     std::span<const int32_t> tokens, const ChunkExperts& chunk,
                                     std::vector<std::vector<float>>& outputs,
                                     std::vector<float>& shared) {
  std::vector<ExpertRowsTask> tasks;
  tasks.reserve(chunk.keys.size());
  for (size_t u = 0; u < chunk.keys.size(); ++u) {
    tasks.push_back({.expert = chunk.keys[u].expert, .rows = chunk.tokens[u]});
  }
  std::future<absl::StatusOr<ComputedExperts>> remote =
      options_.remote->Compute({.layer = layer_,
                                .width = width_,
                                .rows = in.first(tokens.size() * width_),
                                .experts = tasks,
                                .math = math_->spec(),
                                .q8_activations = compute_.q8_activations()});
  RunShared(x, tokens, shared);
  absl::StatusOr<ComputedExperts> computed;
  {
    StageTimer timer(stats_.seconds_fetch_wait);
    computed = remote.get();
  }
  if (!computed.ok()) return computed.status();
  outputs = std::move(computed->outputs);
  for (size_t u = 0; u < chunk.keys.size(); ++u) {
    CountUse(ExpertRecord{.key = chunk.keys[u],
                          .record_bytes = bank_.record_bytes,
                          .served = computed->served[u]},
             chunk.tokens[u].size());
  }
  return absl::OkStatus();
}

absl::Status MoeFfn::Forward(std::span<const float> x, const PassTokens& pass,
                             std::span<float> out) {
  const uint32_t n = pass.size();
  const std::span<const int32_t> tokens = pass.ids;
  const uint64_t used_before = stats_.demand_records(),
                 hits_before = stats_.CountOf(Served::kCache);
  std::vector<Routing> routings;
  ChunkExperts chunk;
  {
    StageTimer timer(stats_.seconds_route);
    routings = router_.Route(x, tokens, options_.experts_per_token);
    chunk = Union(routings, pass);
    lookahead_.Score(layer_, routings, bank_.record_bytes);
  }
  std::vector<float> latent;  // LatentMoE: the experts' input, down x
  if (latent_) {
    latent.resize(n * width_);
    Linear(compute_, latent_->down, x.data(), n, latent.data());
  }
  const std::span<const float> in = latent_ ? std::span<const float>(latent) : x;
  std::vector<std::vector<float>> outputs(chunk.keys.size());
  std::vector<float> shared;
  WARP_RETURN_IF_ERROR(
      options_.remote != nullptr ? ComputeRemotely(x, in, tokens, chunk, outputs, shared)
      : options_.prefetch        ? ComputeAsReadsArrive(x, in, tokens, chunk, outputs, shared)
                                 : ComputeAfterReads(x, in, tokens, chunk, outputs, shared));
  // The layer has passed: speculative reads still queued for it are stale.
  experts_.CancelSpeculative(layer_);
  if (early_ != nullptr) {
    const uint64_t used = stats_.demand_records() - used_before;
    early_->Score(chunk.keys, used - (stats_.CountOf(Served::kCache) - hits_before), stats_);
  }
  // Combine in routing-rank order, whatever order the records arrived in,
  // then add the shared experts: the same sums on every path.
  std::vector<float> sum_in_latent;
  std::span<float> sum = out.first(n * hidden_);
  if (latent_) {
    sum_in_latent.resize(n * width_);
    sum = sum_in_latent;
  }
  std::fill(sum.begin(), sum.end(), 0.0f);
  std::vector<uint32_t> next_row(chunk.keys.size(), 0);
  for (uint32_t t = 0; t < n; ++t) {
    for (size_t k = 0; k < routings[t].experts.size(); ++k) {
      const int32_t u = chunk.key_of_expert[routings[t].experts[k]];
      const float* y = &outputs[u][next_row[u]++ * width_];
      const float w = routings[t].weights[k];
      for (uint64_t i = 0; i < width_; ++i) sum[t * width_ + i] += w * y[i];
    }
  }
  if (latent_) {
    if (!latent_->norm.empty()) {
      for (uint32_t t = 0; t < n; ++t) {
        std::span<float> row = sum.subspan(t * width_, width_);
        RmsNorm(row, latent_->norm, latent_->eps, row);
      }
    }
    Linear(compute_, latent_->up, sum.data(), n, out.data());
  }
  for (uint64_t i = 0; i < shared.size(); ++i) out[i] += shared[i];
  return absl::OkStatus();
}

}  // namespace warp::computed
