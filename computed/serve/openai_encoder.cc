#include "computed/serve/openai_encoder.h"

#include <utility>

#include "computed/serve/sse.h"

namespace warp::computed::serve {
namespace {

using Json = nlohmann::json;

class OpenAiEncoder final : public ReplyEncoder {
 public:
  OpenAiEncoder(Endpoint endpoint, ResponseHeader header, bool stream, bool include_usage)
      : chat_(endpoint == Endpoint::kChat),
        header_(std::move(header)),
        stream_(stream),
        include_usage_(include_usage) {}

  std::string Prefilled(const GenerationFigures&) override {
    if (!stream_ || !chat_) return "";
    return SseEvent(ChatChunkJson(header_, {{"role", "assistant"}, {"content", ""}}, nullptr));
  }

  std::string Delta(const ReplyDelta& delta, int first_call) override {
    if (!stream_) return "";
    if (!chat_)
      return delta.content.empty() ? "" : SseEvent(TextChunkJson(header_, delta.content, nullptr));
    std::string events;
    if (!delta.reasoning.empty()) {
      events += SseEvent(ChatChunkJson(header_, {{"reasoning_content", delta.reasoning}}, nullptr));
    }
    if (!delta.content.empty()) {
      events += SseEvent(ChatChunkJson(header_, {{"content", delta.content}}, nullptr));
    }
    if (!delta.tool_calls.empty()) {
      events += SseEvent(ChatChunkJson(
          header_, {{"tool_calls", ToolCallsDeltaJson(delta.tool_calls, first_call)}}, nullptr));
    }
    return events;
  }

  std::string Finish(const Reply& reply, const ReplyEnd& end,
                     const GenerationFigures& figures) override {
    const std::string finish = FinishReasonName(end.reason, !reply.tool_calls.empty());
    if (!stream_) {
      return Dump(chat_ ? ChatCompletionJson(header_, reply, finish, figures)
                        : TextCompletionJson(header_, reply.content, finish, figures));
    }
    Json last =
        chat_ ? ChatChunkJson(header_, Json::object(), finish) : TextChunkJson(header_, "", finish);
    last["warp"] = WarpFiguresJson(figures);
    std::string events = SseEvent(last);
    if (include_usage_) {
      Json usage =
          chat_ ? ChatChunkJson(header_, {}, nullptr) : TextChunkJson(header_, "", nullptr);
      usage["choices"] = Json::array();
      usage["usage"] = UsageJson(figures);
      events += SseEvent(usage);
    }
    return events + "data: [DONE]\n\n";
  }

  std::string Error(const ApiError& error) override {
    return stream_ ? SseEvent(error.ToJson()) : Dump(error.ToJson());
  }

  std::string_view KeepAlive() const override { return ": keep-alive\n\n"; }
  bool streamed() const override { return stream_; }

 private:
  const bool chat_;
  const ResponseHeader header_;
  const bool stream_, include_usage_;
};

}  // namespace

std::unique_ptr<ReplyEncoder> MakeOpenAiEncoder(Endpoint endpoint, ResponseHeader header,
                                                bool stream, bool include_usage) {
  return std::make_unique<OpenAiEncoder>(endpoint, std::move(header), stream, include_usage);
}

}  // namespace warp::computed::serve
