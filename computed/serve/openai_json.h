#pragma once

// The response bodies of the OpenAI API, built from what the engine
// produced: chat.completion and its chat.completion.chunk stream events,
// text_completion, usage. Each carries WARP's own figures for the reply under
// "warp" (tok/s, expert hits and misses, bytes read), which clients ignore.

#include <cstdint>
#include <string>

#include "computed/serve/engine_worker.h"
#include "computed/serve/reply_parser.h"
#include "computed/serve/sse.h"
#include "nlohmann/json.hpp"

namespace warp::computed::serve {

// What every object of one response shares.
struct ResponseHeader {
  std::string id;  // "chatcmpl-…" or "cmpl-…"
  int64_t created = 0;
  std::string model;
};

std::string FinishReasonName(FinishReason reason, bool tool_calls);
nlohmann::json UsageJson(const GenerationFigures& figures);
nlohmann::json WarpFiguresJson(const GenerationFigures& figures);

nlohmann::json ChatCompletionJson(const ResponseHeader& header, const Reply& reply,
                                  const std::string& finish_reason,
                                  const GenerationFigures& figures);
// One stream event: `delta` ({"role"}, {"content"}, {"reasoning_content"},
// {"tool_calls": [...]}) and the finish reason (null until the last).
nlohmann::json ChatChunkJson(const ResponseHeader& header, nlohmann::json delta,
                             const nlohmann::json& finish_reason);
// A delta's tool calls as stream events carry them: each whole, with its index.
nlohmann::json ToolCallsDeltaJson(const std::vector<ToolCall>& calls, int first_index);

nlohmann::json TextCompletionJson(const ResponseHeader& header, const std::string& text,
                                  const std::string& finish_reason,
                                  const GenerationFigures& figures);
nlohmann::json TextChunkJson(const ResponseHeader& header, const std::string& text,
                             const nlohmann::json& finish_reason);


}  // namespace warp::computed::serve
