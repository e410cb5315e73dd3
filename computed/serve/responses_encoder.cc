#include "computed/serve/responses_encoder.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "computed/serve/sse.h"

namespace warp::computed::serve {
namespace {

using Json = nlohmann::ordered_json;

// `value`, or `otherwise` when the request did not send it.
Json Or(const Json& value, Json otherwise) { return value.is_null() ? otherwise : value; }

class ResponsesEncoder final : public ReplyEncoder {
 public:
  ResponsesEncoder(ResponseHeader header, const ResponsesRequest& request, ResponseStore& store)
      : header_(std::move(header)),
        suffix_(header_.id.substr(header_.id.find('_') + 1)),
        echo_(request.echo),
        conversation_(request.conversation),
        keep_(request.store),
        stream_(request.chat.stream),
        store_(store) {}

  std::string Prefilled(const GenerationFigures&) override {
    if (!stream_) return "";
    const Json response = Object("in_progress", nullptr, nullptr);
    std::string events = Event({{"type", "response.created"}, {"response", response}});
    return events + Event({{"type", "response.in_progress"}, {"response", response}});
  }

  std::string Delta(const ReplyDelta& delta, int first_call) override {
    std::string events;
    if (!delta.reasoning.empty()) {
      events += Open("reasoning",
                     {{"id", "rs_" + suffix_},
                      {"type", "reasoning"},
                      {"summary", Json::array()},
                      {"content", Json::array()}},
                     Json{{"type", "reasoning_text"}, {"text", ""}});
      text_ += delta.reasoning;
      events += Event({{"type", "response.reasoning_text.delta"},
                       {"item_id", open_["id"]},
                       {"output_index", output_.size()},
                       {"content_index", 0},
                       {"delta", delta.reasoning}});
    }
    if (!delta.content.empty()) {
      events += Open("message",
                     {{"id", "msg_" + suffix_},
                      {"type", "message"},
                      {"status", "in_progress"},
                      {"role", "assistant"},
                      {"content", Json::array()}},
                     Json{{"type", "output_text"}, {"text", ""}, {"annotations", Json::array()}});
      text_ += delta.content;
      events += Event({{"type", "response.output_text.delta"},
                       {"item_id", open_["id"]},
                       {"output_index", output_.size()},
                       {"content_index", 0},
                       {"delta", delta.content},
                       {"logprobs", Json::array()}});
    }
    for (size_t i = 0; i < delta.tool_calls.size(); ++i) {
      const ToolCall& call = delta.tool_calls[i];
      events += Close();
      Json item = {{"id", absl::StrCat("fc_", suffix_, "_", first_call + i)},
                   {"type", "function_call"},
                   {"status", "in_progress"},
                   {"arguments", ""},
                   {"call_id", call.id},
                   {"name", call.name}};
      const size_t index = output_.size();
      events +=
          Event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}});
      events += Event({{"type", "response.function_call_arguments.delta"},
                       {"item_id", item["id"]},
                       {"output_index", index},
                       {"delta", call.arguments}});
      events += Event({{"type", "response.function_call_arguments.done"},
                       {"item_id", item["id"]},
                       {"output_index", index},
                       {"arguments", call.arguments}});
      item["arguments"] = call.arguments;
      item["status"] = "completed";
      events +=
          Event({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
      output_.push_back(std::move(item));
    }
    return stream_ ? events : "";
  }

  std::string Finish(const Reply&, const ReplyEnd& end, const GenerationFigures& figures) override {
    std::string events = Close();
    const bool complete = end.reason != FinishReason::kLength;
    const Json incomplete = complete ? Json(nullptr) : Json{{"reason", "max_output_tokens"}};
    Json usage = {{"input_tokens", figures.prompt_tokens},
                  {"input_tokens_details", {{"cached_tokens", figures.reused_tokens}}},
                  {"output_tokens", figures.completion_tokens},
                  {"output_tokens_details", {{"reasoning_tokens", 0}}},
                  {"total_tokens", figures.prompt_tokens + figures.completion_tokens}};
    Json response = Object(complete ? "completed" : "incomplete", incomplete, std::move(usage));
    response["warp"] = WarpFiguresJson(figures);
    if (keep_) {
      Json conversation = conversation_;
      for (const Json& item : output_) conversation.push_back(item);
      store_.Put(header_.id, std::move(conversation));
    }
    if (!stream_) return Dump(response);
    return events + Event({{"type", complete ? "response.completed" : "response.incomplete"},
                           {"response", std::move(response)}});
  }

  std::string Error(const ApiError& error) override {
    if (!stream_) return Dump(error.ToJson());
    return Event({{"type", "error"},
                  {"code", error.code.empty() ? Json(nullptr) : Json(error.code)},
                  {"message", error.message},
                  {"param", error.param.empty() ? Json(nullptr) : Json(error.param)}});
  }

  std::string_view KeepAlive() const override { return ": keep-alive\n\n"; }
  bool streamed() const override { return stream_; }

 private:
  // The response object: the request's settings, the output so far.
  Json Object(const std::string& status, Json incomplete_details, Json usage) const {
    Json reasoning = Or(echo_.value("reasoning", Json()), Json::object());
    if (!reasoning.contains("effort")) reasoning["effort"] = nullptr;
    reasoning["summary"] = nullptr;
    return {{"id", header_.id},
            {"object", "response"},
            {"created_at", header_.created},
            {"status", status},
            {"error", nullptr},
            {"incomplete_details", std::move(incomplete_details)},
            {"instructions", echo_.value("instructions", Json())},
            {"max_output_tokens", echo_.value("max_output_tokens", Json())},
            {"model", header_.model},
            {"output", output_},
            {"parallel_tool_calls", Or(echo_.value("parallel_tool_calls", Json()), true)},
            {"previous_response_id", echo_.value("previous_response_id", Json())},
            {"reasoning", std::move(reasoning)},
            {"store", keep_},
            {"temperature", Or(echo_.value("temperature", Json()), 1.0)},
            {"text", echo_.value("text", Json()).is_object() ? echo_["text"]
                                                              : Json{{"format", {{"type", "text"}}}}},
            {"tool_choice", Or(echo_.value("tool_choice", Json()), "auto")},
            {"tools", Or(echo_.value("tools", Json()), Json::array())},
            {"top_p", Or(echo_.value("top_p", Json()), 1.0)},
            {"metadata", Or(echo_.value("metadata", Json()), Json::object())},
            {"usage", std::move(usage)}};
  }

  // Opens an item of `kind` with its one content part unless it is open:
  // closes another first.
  std::string Open(const std::string& kind, Json item, Json part) {
    if (!open_.is_null() && open_["type"] == kind) return "";
    std::string events = Close();
    const size_t index = output_.size();
    events +=
        Event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}});
    events += Event({{"type", "response.content_part.added"},
                     {"item_id", item["id"]},
                     {"output_index", index},
                     {"content_index", 0},
                     {"part", part}});
    open_ = std::move(item);
    part_ = std::move(part);
    text_.clear();
    return events;
  }

  std::string Close() {
    if (open_.is_null()) return "";
    const size_t index = output_.size();
    const bool message = open_["type"] == "message";
    part_["text"] = text_;
    std::string events =
        Event({{"type", message ? "response.output_text.done" : "response.reasoning_text.done"},
               {"item_id", open_["id"]},
               {"output_index", index},
               {"content_index", 0},
               {"text", text_}});
    events += Event({{"type", "response.content_part.done"},
                     {"item_id", open_["id"]},
                     {"output_index", index},
                     {"content_index", 0},
                     {"part", part_}});
    open_["content"] = Json::array({part_});
    if (message) open_["status"] = "completed";
    events +=
        Event({{"type", "response.output_item.done"}, {"output_index", index}, {"item", open_}});
    output_.push_back(std::move(open_));
    open_ = Json();
    return events;
  }

  // "event: TYPE\ndata: JSON\n\n", numbered; nothing when not streamed.
  std::string Event(Json data) {
    if (!stream_) return "";
    data["sequence_number"] = sequence_++;
    return NamedSseEvent(data);
  }

  const ResponseHeader header_;
  const std::string suffix_;  // of the response id, shared by its items' ids
  const Json echo_;
  const Json conversation_;
  const bool keep_, stream_;
  ResponseStore& store_;
  Json output_ = Json::array();  // the items closed so far
  Json open_;                    // the reasoning or message item being written; null: none
  Json part_;                    // its content part
  std::string text_;             // its text so far
  int64_t sequence_ = 0;
};

}  // namespace

std::unique_ptr<ReplyEncoder> MakeResponsesEncoder(ResponseHeader header,
                                                   const ResponsesRequest& request,
                                                   ResponseStore& store) {
  return std::make_unique<ResponsesEncoder>(std::move(header), request, store);
}

}  // namespace warp::computed::serve
