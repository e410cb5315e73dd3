#pragma once

// ReplyState: one reply as it is generated, whatever the API. The engine
// thread feeds it tokens; it decodes them, cuts the reply at a stop string,
// parses chat replies (reasoning, content, tool calls) and hands what the
// reply gained to its API's ReplyEncoder, whose events go into the channel
// the connection's thread sends from.
//
// Thread contract: the engine thread calls OnPrefilled/OnToken/OnDone; the
// channel, `cancelled` and (once the channel is closed) http_status/body are
// the connection's.

#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "computed/serve/event_channel.h"
#include "computed/serve/reply_encoder.h"
#include "computed/serve/reply_parser.h"
#include "computed/serve/stop_strings.h"
#include "computed/text/tokenizer.h"

namespace warp::computed::serve {

class ReplyState {
 public:
  // `format`: kPlain for a raw completion (nothing parsed, special tokens
  // skipped); a chat template's otherwise. `log_id` names the reply in logs.
  ReplyState(const text::Tokenizer& tokenizer, ReplyFormat format, bool starts_in_reasoning,
             std::vector<std::string> stops, std::unique_ptr<ReplyEncoder> encoder,
             std::string log_id, bool chat);

  EventChannel& channel() { return channel_; }
  const std::shared_ptr<std::atomic<bool>>& cancelled() const { return cancelled_; }
  const ReplyEncoder& encoder() const { return *encoder_; }
  // The non-streamed response, once the channel is closed.
  int http_status() const { return http_status_; }
  const std::string& body() const { return body_; }

  void OnPrefilled(const GenerationFigures& figures);
  // False once a stop string ended the reply.
  bool OnToken(int32_t id);
  void OnDone(const absl::Status& status, FinishReason reason, const GenerationFigures& figures);

 private:
  // Text past the stop strings: parsed (chat) and sent.
  void Add(const std::string& text);
  void Send(const ReplyDelta& delta);
  void Push(const std::string& events);
  void End(std::string last);

  text::StreamingDecoder decoder_;
  StopStrings stops_;
  ReplyParser parser_;
  const std::unique_ptr<ReplyEncoder> encoder_;
  const std::string log_id_;
  const bool chat_;
  Reply reply_;
  absl::Status decode_error_;
  int http_status_ = 200;
  std::string body_;
  EventChannel channel_;
  const std::shared_ptr<std::atomic<bool>> cancelled_ = std::make_shared<std::atomic<bool>>(false);
};

}  // namespace warp::computed::serve
