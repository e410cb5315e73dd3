#pragma once

// GET /dashboard: a page that plots the engine from /metrics — tokens per
// second (decode, prefill), expert hits against misses, bytes read per token
// by class (demand, certain, lookahead, and lookahead bytes never used), disk
// read throughput, the expert cache's fill against its budget (and the
// memory governor's resizes among the figures) — over the
// last five minutes, the current figures, and a heat map of the experts'
// routes by layer from /metrics/heat (serve --learn). Plain HTML and JavaScript in
// the binary, no outside fetches; the API key, if any, as the chat page asks.
//
// Thread-safe: a constant.

#include <string_view>

namespace warp::computed::serve {

std::string_view DashboardHtml();

}  // namespace warp::computed::serve
