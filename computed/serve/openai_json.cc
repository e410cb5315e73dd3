#include "computed/serve/openai_json.h"

namespace warp::computed::serve {

using Json = nlohmann::json;

std::string FinishReasonName(FinishReason reason, bool tool_calls) {
  if (tool_calls && reason == FinishReason::kStop) return "tool_calls";
  return reason == FinishReason::kLength ? "length" : "stop";
}

Json UsageJson(const GenerationFigures& figures) {
  return {{"prompt_tokens", figures.prompt_tokens},
          {"completion_tokens", figures.completion_tokens},
          {"total_tokens", figures.prompt_tokens + figures.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", figures.reused_tokens}}}};
}

Json WarpFiguresJson(const GenerationFigures& f) {
  const ForwardStats& st = f.forward;
  const uint64_t new_tokens = f.prompt_tokens - f.reused_tokens;
  // The first token comes from the prefill's logits: decode steps are one fewer.
  const uint32_t steps = f.completion_tokens > 0 ? f.completion_tokens - 1 : 0;
  return {{"queue_seconds", f.queue_seconds},
          {"prefill_seconds", f.prefill_seconds},
          {"decode_seconds", f.decode_seconds},
          {"prefill_tokens_per_second", f.prefill_seconds > 0 ? new_tokens / f.prefill_seconds : 0},
          {"decode_tokens_per_second", f.decode_seconds > 0 ? steps / f.decode_seconds : 0},
          {"expert_hits", st.CountOf(Served::kCache)},
          {"expert_misses", st.CountOf(Served::kDisk)},
          {"expert_lookahead_hits", st.CountOf(Served::kLookahead)},
          {"expert_bytes_read", st.BytesOf(Served::kDisk)},
          // The most requests one of its steps served (serve --parallel); the
          // expert figures count such a step whole.
          {"max_batch", f.most_batched}};
}

Json ChatCompletionJson(const ResponseHeader& header, const Reply& reply,
                        const std::string& finish_reason, const GenerationFigures& figures) {
  return {{"id", header.id},
          {"object", "chat.completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", Json::array({{{"index", 0},
                                    {"message", reply.ToMessageJson()},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish_reason}}})},
          {"usage", UsageJson(figures)},
          {"warp", WarpFiguresJson(figures)}};
}

Json ChatChunkJson(const ResponseHeader& header, Json delta, const Json& finish_reason) {
  return {{"id", header.id},
          {"object", "chat.completion.chunk"},
          {"created", header.created},
          {"model", header.model},
          {"choices", Json::array({{{"index", 0},
                                    {"delta", std::move(delta)},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish_reason}}})}};
}

Json ToolCallsDeltaJson(const std::vector<ToolCall>& calls, int first_index) {
  Json out = Json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    out.push_back({{"index", first_index + static_cast<int>(i)},
                   {"id", calls[i].id},
                   {"type", "function"},
                   {"function", {{"name", calls[i].name}, {"arguments", calls[i].arguments}}}});
  }
  return out;
}

Json TextCompletionJson(const ResponseHeader& header, const std::string& text,
                        const std::string& finish_reason, const GenerationFigures& figures) {
  Json out = TextChunkJson(header, text, finish_reason);
  out["usage"] = UsageJson(figures);
  out["warp"] = WarpFiguresJson(figures);
  return out;
}

Json TextChunkJson(const ResponseHeader& header, const std::string& text,
                   const Json& finish_reason) {
  return {{"id", header.id},
          {"object", "text_completion"},
          {"created", header.created},
          {"model", header.model},
          {"choices", Json::array({{{"index", 0},
                                    {"text", text},
                                    {"logprobs", nullptr},
                                    {"finish_reason", finish_reason}}})}};
}

}  // namespace warp::computed::serve
