#pragma once

// The JSON a C caller passes to warp_apply_chat_template, checked before it
// reaches the template: the messages, the tools and the template kwargs, each
// refused with the name of its argument and the element at fault. The same
// rules as `computed template` (cli/template_flags.cc), which api/ may not
// include.

#include <string_view>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace warp::api {

// [{"role": ..., "content": ...}, ...] or {"messages": [...]}; every message
// an object with a string "role". Key order is kept, as transformers renders.
absl::StatusOr<nlohmann::ordered_json> ParseMessages(std::string_view text);

// The extra render context: {"tools": [...]} and the kwargs' variables.
// Either text may be null (absent). Kwargs may not set messages, tools,
// documents or add_generation_prompt (transformers refuses them too).
absl::StatusOr<nlohmann::ordered_json> ParseTemplateContext(const char* tools_json,
                                                            const char* template_kwargs_json);

}  // namespace warp::api
