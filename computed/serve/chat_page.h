#pragma once

// GET /: one self-contained HTML page (no external scripts or styles) that
// talks to /v1/chat/completions with streaming — the conversation, each
// reply as it streams, its figures (tok/s, expert hits and misses, bytes
// read) and a Stop button.
//
// Thread-safe: a constant.

#include <string_view>

namespace warp::computed::serve {

std::string_view ChatPageHtml();

}  // namespace warp::computed::serve
