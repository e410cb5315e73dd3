#pragma once

// The OpenAI API's replies (ReplyEncoder): chat.completion and its
// chat.completion.chunk stream, text_completion and its stream, errors as
// {"error": {...}}, SSE comments as keep-alives.

#include <memory>

#include "computed/serve/completion_request.h"
#include "computed/serve/openai_json.h"
#include "computed/serve/reply_encoder.h"

namespace warp::computed::serve {

// `endpoint` kChat or kText; `include_usage`: stream_options.include_usage.
std::unique_ptr<ReplyEncoder> MakeOpenAiEncoder(Endpoint endpoint, ResponseHeader header,
                                                bool stream, bool include_usage);

}  // namespace warp::computed::serve
