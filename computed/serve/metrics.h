#pragma once

// GET /metrics: the engine's and the expert store's counters in Prometheus'
// text exposition format (version 0.0.4), written directly — the format is
// a few lines per metric, and the figures already live in EngineStats.
//
//   warp_requests_total, warp_tokens_total{kind="prompt|prompt_reused|completion"},
//   warp_seconds_total{phase="prefill|decode"}, warp_decode_tokens_per_second,
//   histograms warp_time_to_first_token_seconds, warp_time_per_output_token_seconds,
//   warp_queue_wait_seconds (_bucket{le}, _sum, _count),
//   warp_governor_actions_total{action="shrink|grow"},
//   warp_expert_records_total{served="cache|lookahead|certain|disk|unknown"},
//   warp_expert_record_bytes_total{served=...}, warp_lookahead_*_total,
//   warp_queue_depth, warp_busy, warp_kv_positions, and every store counter
//   as warp_store_NAME (read bytes by priority as warp_store_read_bytes_total).
//
// Thread-safe: a pure function.

#include <string>

#include "computed/serve/engine_worker.h"
#include "nlohmann/json.hpp"

namespace warp::computed::serve {

std::string PrometheusText(const EngineStats& stats);

// GET /metrics/heat: the routes counted so far (serve --learn) by layer,
// {"layers": [{"layer": L, "experts": [count of expert 0, ...]}]};
// no layers without --learn. For the dashboard's heat map: one series per
// expert would bloat /metrics.
nlohmann::json HeatJson(const UsageTable* usage);

}  // namespace warp::computed::serve
