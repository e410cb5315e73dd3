#pragma once

// A bound on JSON nesting, checked before a document is parsed: nlohmann's
// DOM recurses on nesting (building, walking, destroying), and a file nested
// a million levels deep overflowed the stack. No file WARP reads (manifests,
// configs, tokenizers, safetensors headers, chat messages) comes near 64.
//
// Thread-safe: a pure function.

#include <string_view>

#include "absl/status/status.h"

namespace warp {

inline constexpr int kMaxJsonDepth = 512;

// InvalidArgument naming `source` and the byte offset if `text` opens more
// than `max_depth` arrays and objects at once (brackets inside strings do
// not count). Says nothing else about the text's validity.
absl::Status CheckJsonDepth(std::string_view text, std::string_view source,
                            int max_depth = kMaxJsonDepth);

}  // namespace warp
