#pragma once

// A Jinja template as chat templates use the language, rendered byte for byte
// like Python Jinja2 with transformers' apply_chat_template settings (issue
// 16): trim_blocks and lstrip_blocks on, Python printing rules (true ->
// "True", none -> "None", 1.0 -> "1.0", lists and dicts as repr), its tojson
// (json.dumps, ensure_ascii off). The interpreter began as a port of
// @huggingface/jinja 0.5.11, which the tests still run; where the two differ
// it follows Python (docs/ENGINE.md lists the corners it does not yet).
// parser.h lists what is supported; anything else fails at Parse (or, for
// type errors, at Render) with "<origin> line L, column C: <what>".
//
// Known differences from the reference (each an error, or a last digit):
//   - `[] | first` / `[] | last` fail (the reference yields a JavaScript
//     undefined that crashes most uses of it);
//   - `**` uses the C library's correctly rounded pow; V8's may differ in the
//     last digit of inexact results;
//   - upper/lower map case one-to-one (plus ß -> SS), without JavaScript's
//     context-dependent special casing; sorting compares code points;
//   - break/continue inside a macro body fails instead of ending the loop
//     that called the macro.
//
// Immutable after Parse; Render is safe from any number of threads. Copies
// share the parsed program.

#include <memory>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace warp::chat {

class JinjaTemplate {
 public:
  // origin names the source in errors, e.g. "tokenizer_config.json chat_template".
  static absl::StatusOr<JinjaTemplate> Parse(std::string_view source, std::string origin);

  // `context` must be an object; its keys become the template's variables.
  // Keys may not be Jinja globals (true, none, range, namespace, ...).
  // nlohmann::json orders object keys alphabetically, and so then do tojson
  // and dict iteration; RenderOrdered keeps the caller's key order.
  absl::StatusOr<std::string> Render(const nlohmann::json& context) const;
  absl::StatusOr<std::string> RenderOrdered(const nlohmann::ordered_json& context) const;

  const std::string& source() const;
  const std::string& origin() const;

 private:
  struct Program;
  explicit JinjaTemplate(std::shared_ptr<const Program> program) : program_(std::move(program)) {}
  template <typename Json>
  absl::StatusOr<std::string> RenderJson(const Json& context) const;

  std::shared_ptr<const Program> program_;
};

}  // namespace warp::chat
