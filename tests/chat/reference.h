#pragma once

// Renders templates with the reference renderers, one process start per call
// for any number of cases:
//   RenderWithJs: @huggingface/jinja through node
//     (tests/chat/reference_render.mjs --batch); fails when node or
//     tests/npm/node_modules is missing, saying to run tests/npm/install.sh.
//   RenderWithReference: both; @huggingface/jinja's result where Python
//     agrees with it, Python's (js_differs set) where they differ, except
//     where Python prints an object address ("<generator object ... at
//     0x...>", which WARP does not reproduce: it keeps the JS list).
//   RenderWithPython: Python Jinja2 with transformers' apply_chat_template
//     settings, through /usr/bin/python3 (tests/chat/reference_render.py
//     --batch); fails when python3-jinja2 is missing, saying to run
//     deploy/install-deps.sh. Where the two differ, WARP follows Python
//     (issue 16).
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
  bool js_differs = false;  // RenderWithReference: @huggingface/jinja disagrees with Python here
};

absl::StatusOr<std::vector<ReferenceResult>> RenderWithJs(const std::vector<ReferenceCase>& cases);
absl::StatusOr<std::vector<ReferenceResult>> RenderWithReference(const std::vector<ReferenceCase>& cases);
absl::StatusOr<std::vector<ReferenceResult>> RenderWithPython(const std::vector<ReferenceCase>& cases);

// Shows invisible differences: "\n" and non-ASCII escaped, for failure messages.
std::string Visible(const std::string& text);

}  // namespace warp::chat::testing
