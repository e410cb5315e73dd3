#include "computed/serve/reply_state.h"

#include <random>
#include <utility>

#include "common/logging.h"

namespace warp::computed::serve {

ReplyState::ReplyState(const text::Tokenizer& tokenizer, ReplyFormat format,
                       bool starts_in_reasoning, std::vector<std::string> stops,
                       std::unique_ptr<ReplyEncoder> encoder, std::string log_id, bool chat)
    : decoder_(tokenizer, /*skip_special_tokens=*/format == ReplyFormat::kPlain),
      stops_(std::move(stops)),
      parser_(format,
              {.starts_in_reasoning = starts_in_reasoning, .call_id_seed = std::random_device{}()}),
      encoder_(std::move(encoder)),
      log_id_(std::move(log_id)),
      chat_(chat) {}

void ReplyState::OnPrefilled(const GenerationFigures& figures) {
  Push(encoder_->Prefilled(figures));
}

bool ReplyState::OnToken(int32_t id) {
  absl::StatusOr<std::string> piece = decoder_.Push(id);
  if (!piece.ok()) {
    decode_error_ = piece.status();
    return false;
  }
  Add(stops_.Push(*piece));
  return !stops_.matched();
}

void ReplyState::OnDone(const absl::Status& status, FinishReason reason,
                        const GenerationFigures& figures) {
  if (status.ok() && decode_error_.ok()) {
    if (!stops_.matched()) Add(stops_.Push(decoder_.Flush()) + stops_.Flush());
    if (chat_) Send(parser_.Finish());
    const ReplyEnd end{.reason = reason, .stop_sequence = stops_.matched_stop()};
    End(encoder_->Finish(reply_, end, figures));
    if (reply_.malformed_tool_calls > 0) {
      Logger("serve").warn("{}: {} tool calls did not parse; their text is in the content", log_id_,
                           reply_.malformed_tool_calls);
    }
  } else {
    const ApiError error = FromStatus(status.ok() ? decode_error_ : status);
    Logger("serve").error("{}: {}", log_id_, error.message);
    http_status_ = error.http_status;
    End(encoder_->Error(error));
  }
  channel_.Close();
}

void ReplyState::End(std::string last) {
  // A streamed reply ends with events like the rest; a whole one is the body.
  if (encoder_->streamed()) {
    Push(last);
  } else {
    body_ = std::move(last);
  }
}

void ReplyState::Add(const std::string& text) {
  if (text.empty()) return;
  if (!chat_) {
    Send(ReplyDelta{.content = text});
    return;
  }
  Send(parser_.Push(text));
}

void ReplyState::Send(const ReplyDelta& delta) {
  const int first_call = static_cast<int>(reply_.tool_calls.size());
  reply_.Append(delta);
  Push(encoder_->Delta(delta, first_call));
}

void ReplyState::Push(const std::string& events) {
  if (!events.empty()) channel_.Push(events);
}

}  // namespace warp::computed::serve
