#pragma once

// Renders templates with @huggingface/jinja through node
// (tests/chat/reference_render.mjs --batch): one node start per call, for any
// number of cases. Fails when node or tests/npm/node_modules is missing,
// saying to run tests/npm/install.sh.
//
// Thread-compatible.

#include <string>
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

absl::StatusOr<std::vector<ReferenceResult>> RenderWithReference(const std::vector<ReferenceCase>& cases);

// Shows invisible differences: "\n" and non-ASCII escaped, for failure messages.
std::string Visible(const std::string& text);

}  // namespace warp::chat::testing
