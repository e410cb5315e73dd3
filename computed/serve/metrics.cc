#include "computed/serve/metrics.h"

#include <map>
#include <set>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_format.h"

namespace warp::computed::serve {
namespace {

// The store counters that are levels, not running totals.
const std::set<std::string_view> kStoreGauges = {"cache_used_bytes",   "cache_capacity_bytes",
                                                 "cache_pinned_bytes", "cache_slot_bytes",
                                                 "cache_free_slots",   "queue_depth"};

class Writer {
 public:
  // One metric family: its HELP and TYPE lines, then samples.
  void Family(std::string_view name, std::string_view type, std::string_view help) {
    absl::StrAppend(&out_, "# HELP ", std::string(name), " ", std::string(help), "\n# TYPE ",
                    std::string(name), " ", std::string(type), "\n");
  }
  void Sample(std::string_view name, double value, std::string_view labels = "") {
    absl::StrAppend(&out_, std::string(name), labels.empty() ? "" : "{", std::string(labels),
                    labels.empty() ? "" : "}", " ", absl::StrFormat("%.17g", value), "\n");
  }
  // A histogram family: cumulative buckets by `le`, then the sum and count.
  void Histogram(std::string_view name, std::string_view help, const LatencyHistogram& h) {
    Family(name, "histogram", help);
    const std::string bucket = absl::StrCat(std::string(name), "_bucket");
    for (size_t i = 0; i < LatencyHistogram::kBounds.size(); ++i) {
      Sample(bucket, h.CumulativeCount(i),
             absl::StrCat("le=\"", absl::StrFormat("%g", LatencyHistogram::kBounds[i]), "\""));
    }
    Sample(bucket, h.count(), "le=\"+Inf\"");
    Sample(absl::StrCat(std::string(name), "_sum"), h.sum());
    Sample(absl::StrCat(std::string(name), "_count"), h.count());
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

const char* ServedName(size_t kind) {
  switch (static_cast<Served>(kind)) {
    case Served::kCache:
      return "cache";
    case Served::kLookahead:
      return "lookahead";
    case Served::kCertain:
      return "certain";
    case Served::kDisk:
      return "disk";
    default:
      return "unknown";
  }
}

// The expert store's counters ("expertd.store.NAME") as warp_store_NAME
// families: read_bytes_PRIORITY as one family by priority, levels as gauges.
void WriteStoreCounters(const std::map<std::string, uint64_t>& counters, Writer& w) {
  constexpr absl::string_view kPrefix = "expertd.store.";
  constexpr absl::string_view kReadBytes = "read_bytes_";
  bool read_bytes_family = false;
  for (const auto& [key, value] : counters) {
    if (absl::StartsWith(key, "engram.")) {  // DeepSeek V4.1's engram store, in-process
      const std::string metric = absl::StrCat("warp_", absl::StrReplaceAll(key, {{".", "_"}}), "_total");
      w.Family(metric, "counter", absl::StrCat("The engram store's ", key.substr(7), "."));
      w.Sample(metric, value);
      continue;
    }
    if (!absl::StartsWith(key, kPrefix)) continue;
    const absl::string_view name = absl::string_view(key).substr(kPrefix.size());
    if (absl::StartsWith(name, kReadBytes)) {
      if (!read_bytes_family) {
        w.Family("warp_store_read_bytes_total", "counter", "Bytes the store read, by priority.");
        read_bytes_family = true;
      }
      w.Sample("warp_store_read_bytes_total", value,
               absl::StrCat("priority=\"", std::string(name.substr(kReadBytes.size())), "\""));
      continue;
    }
    const bool gauge = kStoreGauges.contains(std::string_view(name.data(), name.size()));
    const std::string metric =
        absl::StrCat("warp_store_", std::string(name), gauge ? "" : "_total");
    w.Family(metric, gauge ? "gauge" : "counter",
             absl::StrCat("The expert store's ", std::string(name), "."));
    w.Sample(metric, value);
  }
}

}  // namespace

std::string PrometheusText(const EngineStats& s) {
  Writer w;
  w.Family("warp_requests_total", "counter", "Completion requests the engine ran, by outcome.");
  w.Sample("warp_requests_total", s.requests - s.failed_requests - s.cancelled_requests,
           "outcome=\"ok\"");
  w.Sample("warp_requests_total", s.failed_requests, "outcome=\"error\"");
  w.Sample("warp_requests_total", s.cancelled_requests, "outcome=\"cancelled\"");
  w.Family("warp_tokens_total", "counter",
           "Tokens: prompt (all), prompt_reused (found in the KV cache), completion.");
  w.Sample("warp_tokens_total", s.prompt_tokens, "kind=\"prompt\"");
  w.Sample("warp_tokens_total", s.reused_prompt_tokens, "kind=\"prompt_reused\"");
  w.Sample("warp_tokens_total", s.completion_tokens, "kind=\"completion\"");
  w.Family("warp_seconds_total", "counter", "Engine time by phase.");
  w.Sample("warp_seconds_total", s.prefill_seconds, "phase=\"prefill\"");
  w.Sample("warp_seconds_total", s.decode_seconds, "phase=\"decode\"");
  w.Histogram("warp_time_to_first_token_seconds",
              "From a request's arrival at the engine to its first token: queue and prefill.",
              s.time_to_first_token);
  w.Histogram("warp_time_per_output_token_seconds",
              "A reply's decode time per token after its first.", s.time_per_output_token);
  w.Histogram("warp_queue_wait_seconds", "How long a request waited for a free sequence.",
              s.queue_wait);
  w.Family("warp_governor_actions_total", "counter",
           "The memory governor's resizes of the expert cache (inside a memory cgroup).");
  w.Sample("warp_governor_actions_total", s.governor_shrinks, "action=\"shrink\"");
  w.Sample("warp_governor_actions_total", s.governor_grows, "action=\"grow\"");
  if (s.prompt_cache) {  // serve --prompt-cache-dir
    const DiskPromptCacheStats& c = *s.prompt_cache;
    w.Family("warp_prompt_cache_lookups_total", "counter",
             "Prompts that looked for a prefix in the prompt cache on disk, by outcome.");
    w.Sample("warp_prompt_cache_lookups_total", c.hits, "outcome=\"hit\"");
    w.Sample("warp_prompt_cache_lookups_total", c.misses, "outcome=\"miss\"");
    w.Family("warp_prompt_cache_hit_tokens_total", "counter",
             "Prompt tokens loaded from the prompt cache on disk instead of prefilled.");
    w.Sample("warp_prompt_cache_hit_tokens_total", c.hit_tokens);
    w.Family("warp_prompt_cache_writes_total", "counter",
             "Entries written to the prompt cache on disk, by outcome.");
    w.Sample("warp_prompt_cache_writes_total", c.writes, "outcome=\"written\"");
    w.Sample("warp_prompt_cache_writes_total", c.write_failures, "outcome=\"failed\"");
    w.Sample("warp_prompt_cache_writes_total", c.dropped, "outcome=\"dropped\"");
    w.Family("warp_prompt_cache_removed_total", "counter",
             "Entries removed: refused (corrupt, truncated) or evicted past the size bound.");
    w.Sample("warp_prompt_cache_removed_total", c.refused, "reason=\"refused\"");
    w.Sample("warp_prompt_cache_removed_total", c.evictions, "reason=\"evicted\"");
    w.Family("warp_prompt_cache_entries", "gauge", "Entries of this model in the prompt cache.");
    w.Sample("warp_prompt_cache_entries", c.entries);
    w.Family("warp_prompt_cache_bytes", "gauge", "Bytes of this model's prompt cache entries.");
    w.Sample("warp_prompt_cache_bytes", c.bytes);
  }
  w.Family("warp_decode_tokens_per_second", "gauge", "Decode speed of the last reply.");
  w.Sample("warp_decode_tokens_per_second", s.last_decode_tokens_per_second);
  w.Family("warp_expert_records_total", "counter",
           "Routed expert records the forward pass used, by how the store served them.");
  for (size_t kind = 0; kind < kServedKinds; ++kind) {
    w.Sample("warp_expert_records_total", s.forward.served[kind],
             absl::StrCat("served=\"", ServedName(kind), "\""));
  }
  w.Family("warp_expert_record_bytes_total", "counter",
           "Bytes of those records, by how the store served them.");
  for (size_t kind = 0; kind < kServedKinds; ++kind) {
    w.Sample("warp_expert_record_bytes_total", s.forward.served_bytes[kind],
             absl::StrCat("served=\"", ServedName(kind), "\""));
  }
  w.Family("warp_lookahead_predicted_total", "counter", "(token, expert) pairs hinted ahead.");
  w.Sample("warp_lookahead_predicted_total", s.lookahead.predicted);
  w.Family("warp_lookahead_hits_total", "counter", "Routed pairs that had been hinted.");
  w.Sample("warp_lookahead_hits_total", s.lookahead.hits);
  w.Family("warp_lookahead_routed_total", "counter", "Routed pairs at layers with a hint.");
  w.Sample("warp_lookahead_routed_total", s.lookahead.routed);
  w.Family("warp_lookahead_wasted_bytes_total", "counter",
           "Bytes of hinted records the layer then did not use.");
  w.Sample("warp_lookahead_wasted_bytes_total", s.lookahead.wasted_bytes);
  w.Family("warp_queue_depth", "gauge", "Requests waiting for the engine.");
  w.Sample("warp_queue_depth", static_cast<double>(s.queued));
  w.Family("warp_busy", "gauge", "1 while a request runs.");
  w.Sample("warp_busy", s.running > 0 ? 1 : 0);
  w.Family("warp_running_requests", "gauge",
           "Requests prefilling or decoding, and how many may (--parallel).");
  w.Sample("warp_running_requests", static_cast<double>(s.running), "kind=\"running\"");
  w.Sample("warp_running_requests", s.sequences, "kind=\"capacity\"");
  w.Family("warp_engine_steps_total", "counter",
           "Batched passes, and the requests they stepped, prefilling or decoding (their ratio: "
           "the mean batch).");
  w.Sample("warp_engine_steps_total", s.steps, "kind=\"steps\"");
  w.Sample("warp_engine_steps_total", s.step_requests, "kind=\"requests\"");
  w.Family("warp_expert_union_bytes_total", "counter",
           "Expert bytes the passes read (each MoE layer the union of a batch's experts once), "
           "and what each request's sequence would have read alone.");
  w.Sample("warp_expert_union_bytes_total", s.forward.expert_read_bytes, "kind=\"batched\"");
  w.Sample("warp_expert_union_bytes_total", s.forward.sequence_union_bytes,
           "kind=\"sequences_alone\"");
  w.Family("warp_kv_positions", "gauge",
           "Positions in the KV caches of every sequence, and their capacity.");
  w.Sample("warp_kv_positions", s.kv_position, "kind=\"used\"");
  w.Sample("warp_kv_positions", s.context, "kind=\"capacity\"");
  WriteStoreCounters(s.source_counters, w);
  return w.Take();
}

nlohmann::json HeatJson(const UsageTable* usage) {
  nlohmann::json layers = nlohmann::json::array();
  if (usage != nullptr) {
    for (const ExpertUsage& entry : usage->entries) {  // sorted by (layer, expert)
      if (layers.empty() || layers.back()["layer"] != entry.layer) {
        layers.push_back({{"layer", entry.layer}, {"experts", nlohmann::json::array()}});
      }
      nlohmann::json& experts = layers.back()["experts"];
      while (experts.size() < entry.expert) experts.push_back(0);
      experts.push_back(entry.count);
    }
  }
  return {{"layers", std::move(layers)}};
}

}  // namespace warp::computed::serve
