#include "computed/serve/messages_encoder.h"

#include <utility>

#include "computed/serve/sse.h"

namespace warp::computed::serve {
namespace {

using Json = nlohmann::json;

// A tool call's arguments as the input object Anthropic's clients expect;
// arguments that are not a JSON object (the parser lets only valid JSON
// through) go under "arguments".
Json InputOf(const ToolCall& call) {
  Json input = Json::parse(call.arguments, nullptr, /*allow_exceptions=*/false);
  if (input.is_object()) return input;
  return {{"arguments", call.arguments}};
}

Json ToolUseBlock(const ToolCall& call, Json input) {
  return {{"type", "tool_use"}, {"id", call.id}, {"name", call.name}, {"input", std::move(input)}};
}

class MessagesEncoder final : public ReplyEncoder {
 public:
  MessagesEncoder(ResponseHeader header, bool stream)
      : header_(std::move(header)), stream_(stream) {}

  std::string Prefilled(const GenerationFigures& figures) override {
    if (!stream_) return "";
    Json message = MessageHead();
    message["content"] = Json::array();
    message["stop_reason"] = nullptr;
    message["stop_sequence"] = nullptr;
    message["usage"] = MessagesUsageJson(figures);
    return NamedSseEvent({{"type", "message_start"}, {"message", std::move(message)}}) +
           NamedSseEvent({{"type", "ping"}});
  }

  std::string Delta(const ReplyDelta& delta, int) override {
    if (!stream_) return "";
    std::string events;
    if (!delta.reasoning.empty()) {
      events += Open("thinking", {{"type", "thinking"}, {"thinking", ""}, {"signature", ""}});
      events += BlockDelta({{"type", "thinking_delta"}, {"thinking", delta.reasoning}});
    }
    if (!delta.content.empty()) {
      events += Open("text", {{"type", "text"}, {"text", ""}});
      events += BlockDelta({{"type", "text_delta"}, {"text", delta.content}});
    }
    for (const ToolCall& call : delta.tool_calls) {
      events += Close();
      events += Open("tool_use", ToolUseBlock(call, Json::object()));
      events += BlockDelta({{"type", "input_json_delta"}, {"partial_json", InputOf(call).dump()}});
      events += Close();
    }
    return events;
  }

  std::string Finish(const Reply& reply, const ReplyEnd& end,
                     const GenerationFigures& figures) override {
    const std::string stop_reason = StopReasonName(end, !reply.tool_calls.empty());
    const Json stop_sequence = end.stop_sequence.empty() ? Json(nullptr) : Json(end.stop_sequence);
    if (stream_) {
      Json usage = {{"output_tokens", figures.completion_tokens}};
      return Close() +
             NamedSseEvent(
                 {{"type", "message_delta"},
                  {"delta", {{"stop_reason", stop_reason}, {"stop_sequence", stop_sequence}}},
                  {"usage", std::move(usage)},
                  {"warp", WarpFiguresJson(figures)}}) +
             NamedSseEvent({{"type", "message_stop"}});
    }
    Json content = Json::array();
    if (!reply.reasoning_content.empty()) {
      content.push_back(
          {{"type", "thinking"}, {"thinking", reply.reasoning_content}, {"signature", ""}});
    }
    // A reply of reasoning or tool calls alone has no text block; an empty reply an empty one.
    if (!reply.content.empty() || (content.empty() && reply.tool_calls.empty())) {
      content.push_back({{"type", "text"}, {"text", reply.content}});
    }
    for (const ToolCall& call : reply.tool_calls)
      content.push_back(ToolUseBlock(call, InputOf(call)));
    Json message = MessageHead();
    message["content"] = std::move(content);
    message["stop_reason"] = stop_reason;
    message["stop_sequence"] = stop_sequence;
    message["usage"] = MessagesUsageJson(figures);
    message["warp"] = WarpFiguresJson(figures);
    return Dump(message);
  }

  std::string Error(const ApiError& error) override {
    return stream_ ? NamedSseEvent(error.ToAnthropicJson()) : Dump(error.ToAnthropicJson());
  }

  std::string_view KeepAlive() const override {
    return "event: ping\ndata: {\"type\":\"ping\"}\n\n";
  }
  bool streamed() const override { return stream_; }

 private:
  Json MessageHead() const {
    return {
        {"id", header_.id}, {"type", "message"}, {"role", "assistant"}, {"model", header_.model}};
  }

  // Opens a block of `type` unless one is open: closes another first.
  std::string Open(const std::string& type, Json block) {
    if (open_ == type) return "";
    std::string events = Close();
    open_ = type;
    return events + NamedSseEvent({{"type", "content_block_start"},
                                   {"index", index_},
                                   {"content_block", std::move(block)}});
  }
  std::string BlockDelta(Json delta) {
    return NamedSseEvent(
        {{"type", "content_block_delta"}, {"index", index_}, {"delta", std::move(delta)}});
  }
  std::string Close() {
    if (open_.empty()) return "";
    open_.clear();
    return NamedSseEvent({{"type", "content_block_stop"}, {"index", index_++}});
  }

  const ResponseHeader header_;
  const bool stream_;
  std::string open_;  // the open block's type; empty: none
  int index_ = 0;     // of the open block, or of the next
};

}  // namespace

std::unique_ptr<ReplyEncoder> MakeMessagesEncoder(ResponseHeader header, bool stream) {
  return std::make_unique<MessagesEncoder>(std::move(header), stream);
}

std::string StopReasonName(const ReplyEnd& end, bool tool_calls) {
  if (end.reason == FinishReason::kLength) return "max_tokens";
  if (tool_calls) return "tool_use";
  if (!end.stop_sequence.empty()) return "stop_sequence";
  return "end_turn";
}

Json MessagesUsageJson(const GenerationFigures& figures) {
  return {{"input_tokens", figures.prompt_tokens - figures.reused_tokens},
          {"cache_creation_input_tokens", 0},
          {"cache_read_input_tokens", figures.reused_tokens},
          {"output_tokens", figures.completion_tokens}};
}

}  // namespace warp::computed::serve
