#pragma once

// Parser for the Jinja subset of chat templates: a port of @huggingface/jinja's
// recursive-descent parser (same precedence, same quirks: `not` binds looser
// than comparisons, filters and tests tighter than `*`).
//
// Supported statements: if/elif/else, for (with `if` filter, else, loop.*),
// set (incl. tuples, namespace members, {% set %} blocks), macro, call,
// filter blocks, break, continue, comments, {% generation %} (removed).
// Everything else fails here with its position, e.g.
//   line 3, column 5: unsupported Jinja feature: {% include %}
// as do filters and tests the renderer does not have (checked by name here,
// so a template fails at load time rather than on some later conversation).
//
// Thread-safe: pure function.

#include <string_view>

#include "absl/status/statusor.h"
#include "computed/chat/ast.h"

namespace warp::chat {

absl::StatusOr<NodeList> ParseTemplate(std::string_view source);

}  // namespace warp::chat
