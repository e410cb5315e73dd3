#pragma once

// The reference every chat-template test compares against: Python Jinja2 set
// up as transformers' apply_chat_template sets it up (issue 16), through
// /usr/bin/python3 (tests/chat/reference_render.py --batch), one process
// start for any number of cases. Fails when python3-jinja2 is missing,
// saying to run deploy/install-deps.sh.
//
// Where WARP is known to render differently, a test lists the case in a
// table of KnownDivergence (id and reason); ExpectOnlyKnownDivergences fails
// both on a divergence that is not listed and on a listed one that is gone.
//
// Thread-compatible.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace warp::chat::testing {

struct ReferenceCase {
  std::string template_source;
  nlohmann::ordered_json context;  // a JSON object, passed in its key order
};

struct ReferenceResult {
  bool ok = false;
  std::string output;  // the rendering when ok
  std::string error;   // the reference's error message otherwise
};

absl::StatusOr<std::vector<ReferenceResult>> RenderWithPython(const std::vector<ReferenceCase>& cases);

// How WARP's result differs from Python's: empty when both render the same
// bytes or both fail (the messages are each engine's own), else a readable
// account of both sides.
std::string Difference(const absl::StatusOr<std::string>& ours, const ReferenceResult& python);

// A case where WARP renders differently from Python Jinja2, on purpose or
// not yet.
struct KnownDivergence {
  std::string_view id;      // the case's name
  std::string_view reason;  // what differs and why
};

// One compared case: its id (the name a KnownDivergence uses), the template
// (shown on failure) and Difference() of the two renderings.
struct Comparison {
  std::string id;
  std::string source;
  std::string difference;
};

// Fails the current test for each comparison that differs and is not in
// `known`, for each id in `known` that now agrees ("fixed: remove it from the
// list") and for each id in `known` that names no comparison.
void ExpectOnlyKnownDivergences(const std::vector<Comparison>& comparisons, std::span<const KnownDivergence> known,
                                std::string_view list_name);

// Shows invisible differences, for failure messages: a newline as "\n" and a
// line break, a tab as "\t".
std::string Visible(const std::string& text);

}  // namespace warp::chat::testing
