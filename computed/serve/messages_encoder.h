#pragma once

// Anthropic Messages replies (ReplyEncoder): the message object; its stream
// of message_start, content_block_start / _delta (text_delta, thinking_delta,
// input_json_delta) / _stop, message_delta (stop_reason, usage) and
// message_stop; errors as {"type": "error", "error": {...}}; `ping` events as
// keep-alives. The reply's reasoning is a thinking block, its content a text
// block, each tool call a tool_use block, in that order.

#include <memory>
#include <string>

#include "computed/serve/openai_json.h"
#include "computed/serve/reply_encoder.h"
#include "nlohmann/json.hpp"

namespace warp::computed::serve {

std::unique_ptr<ReplyEncoder> MakeMessagesEncoder(ResponseHeader header, bool stream);

// Anthropic's stop_reason: tool_use, max_tokens, stop_sequence or end_turn.
std::string StopReasonName(const ReplyEnd& end, bool tool_calls);
// usage: input_tokens (those not read from the prompt cache),
// cache_read_input_tokens, cache_creation_input_tokens, output_tokens.
nlohmann::json MessagesUsageJson(const GenerationFigures& figures);

}  // namespace warp::computed::serve
