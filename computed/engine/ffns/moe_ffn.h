#pragma once

// MoeFfn: one layer of routed experts, read through the ExpertSource, in the
// steps of DESIGN.md#the-engine-per-decode-step-and-layer:
//   route -> the chunk's union of experts -> demand reads issued at once ->
//   shared experts while they fly -> each expert computed as
//   its record arrives (a miss row block by row block as its pieces land,
//   while nothing else has arrived) -> outputs combined in routing-rank order.
// With prefetch off, the reads are waited for first (the synchronous path).
// With a remote computer (MoeOptions::remote), the experts are computed where
// their records live instead: the pass's rows go out, each expert's output
// rows come back, and the shared experts compute meanwhile. The sums are the
// same on every path.
//
// Thread-compatible: one Forward at a time.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/compute/expert_computer.h"
#include "common/compute/expert_math.h"
#include "common/format/manifest.h"
#include "common/store/expert_source.h"
#include "computed/engine/early_route.h"
#include "computed/engine/ffn.h"
#include "computed/engine/ffns/dense_mlp.h"
#include "computed/engine/forward_stats.h"
#include "computed/engine/lookahead.h"
#include "computed/engine/router.h"

namespace warp::computed {

// Called with each token's routed experts (rank order), for --trace and --learn.
using OnRoute =
    std::function<void(uint32_t position, uint32_t layer, const std::vector<uint32_t>& experts)>;

// LatentMoE (Kimi K3): the routed experts run on down x, their weighted sum
// is RMS-normalized (when `norm` is set) and taken back by `up`.
struct LatentMoe {
  kernels::MatrixView down, up;
  std::span<const float> norm;
  float eps = 1e-6f;
};

struct MoeOptions {
  uint32_t experts_per_token = 0;  // top-k
  bool prefetch = true;            // false: read everything, then compute
  // Records a layer may hold at once: its cache's slots. A pass whose union
  // is larger (a prefill chunk, a batched step) reads it in waves
  // (read_window.h), the next wave's reads flying while one computes; 0: one wave.
  uint64_t cache_records = 0;
  OnRoute on_route;
  // Computes the routed experts where they live (the daemons' Compute RPC)
  // instead of reading their records; null: records.
  ExpertComputer* remote = nullptr;
};

class MoeFfn : public Ffn {
 public:
  MoeFfn(uint32_t layer, uint64_t hidden, const Router& router, std::unique_ptr<ExpertMath> math,
         const BankEntry& bank, std::optional<DenseMlp> shared, std::optional<LatentMoe> latent,
         ExpertSource& experts, Lookahead& lookahead, EarlyRoute* early, ComputeContext& compute,
         const MoeOptions& options, ForwardStats& stats);

  absl::Status Forward(std::span<const float> x, const PassTokens& tokens,
                       std::span<float> out) override;

 private:
  // The union of a pass's experts (over every sequence of a batch), each
  // read once, and which tokens use each.
  struct ChunkExperts {
    std::vector<ExpertKey> keys;
    std::vector<int32_t> key_of_expert;         // [num_experts] -> index in keys, or -1
    std::vector<std::vector<uint32_t>> tokens;  // [key] -> tokens in order
  };
  ChunkExperts Union(const std::vector<Routing>& routings, const PassTokens& tokens);
  // The chunk's keys [begin, end): one wave of reads.
  struct Wave {
    size_t begin = 0, end = 0;
  };
  std::vector<Wave> Waves(size_t keys) const;
  // Runs the expert of keys[u] over its tokens' rows of `in` into outputs[u].
  void RunExpert(const ExpertRecord& record, std::span<const float> in,
                 const std::vector<uint32_t>& tokens, std::vector<float>& output);
  // The same on a record still landing, rows as they land; false if its read
  // ended first. `output` counts only once the verified record has come.
  bool RunLandingExpert(const LandingRecord& landing, std::span<const float> in,
                        const std::vector<uint32_t>& tokens, std::vector<float>& output);
  // The rows of `in` the expert runs on: its tokens', in order.
  std::vector<float> TokenRows(std::span<const float> in, const std::vector<uint32_t>& tokens);
  void CountUse(const ExpertRecord& record, size_t tokens);
  // x: the layer input (router, shared experts); in: the experts'.
  // Each wave's reads are issued while the wave before it computes; the
  // shared experts compute while the first flies.
  absl::Status ComputeAsReadsArrive(std::span<const float> x, std::span<const float> in,
                                    std::span<const int32_t> tokens, const ChunkExperts& chunk,
                                    std::vector<std::vector<float>>& outputs,
                                    std::vector<float>& shared);
  // Computes the experts of `wave` from `batch` (its reads) as they arrive.
  absl::Status ComputeWave(ReadBatch& batch, Wave wave, std::span<const float> in,
                           const ChunkExperts& chunk, std::vector<std::vector<float>>& outputs);
  // The synchronous path: each wave read whole, then computed.
  absl::Status ComputeAfterReads(std::span<const float> x, std::span<const float> in,
                                 std::span<const int32_t> tokens, const ChunkExperts& chunk,
                                 std::vector<std::vector<float>>& outputs,
                                 std::vector<float>& shared);
  // The experts computed by options_.remote, the shared experts meanwhile.
  absl::Status ComputeRemotely(std::span<const float> x, std::span<const float> in,
                               std::span<const int32_t> tokens, const ChunkExperts& chunk,
                               std::vector<std::vector<float>>& outputs,
                               std::vector<float>& shared);
  void RunShared(std::span<const float> x, std::span<const int32_t> tokens,
                 std::vector<float>& shared);

  const uint32_t layer_;
  const Router& router_;
  std::unique_ptr<ExpertMath> math_;
  const BankEntry& bank_;
  std::optional<DenseMlp> shared_;
  std::optional<LatentMoe> latent_;
  ExpertSource& experts_;
  Lookahead& lookahead_;
  EarlyRoute* early_;  // the layer's, told what it routed; or nullptr
  ComputeContext& compute_;
  const MoeOptions& options_;
  ForwardStats& stats_;
  const uint64_t hidden_;
  const uint64_t width_;  // of the experts' input and output: hidden, or the latent
};

}  // namespace warp::computed
