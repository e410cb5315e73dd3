#pragma once

// ReplyEncoder: how one API writes a reply — its stream events as the reply
// grows, its whole body, its errors and its keep-alive. ReplyState (the
// decoding, stop strings and tool-call parsing every API shares) feeds it;
// one implementation per API: OpenAI chat completions and completions
// (openai_encoder.h), Anthropic Messages (messages_encoder.h).
//
// Thread-compatible: one reply's encoder is used by the engine thread only.

#include <string>
#include <string_view>

#include "computed/serve/api_error.h"
#include "computed/serve/engine_worker.h"
#include "computed/serve/reply_parser.h"

namespace warp::computed::serve {

// How a reply ended.
struct ReplyEnd {
  FinishReason reason = FinishReason::kStop;
  std::string stop_sequence;  // the stop string that ended it; empty: none did
};

class ReplyEncoder {
 public:
  virtual ~ReplyEncoder() = default;

  // Streamed: the events sent once the prompt is in the KV cache.
  virtual std::string Prefilled(const GenerationFigures& figures) = 0;
  // Streamed: the events of what the reply gained. `first_call` is the index
  // of the delta's first tool call in the whole reply.
  virtual std::string Delta(const ReplyDelta& delta, int first_call) = 0;
  // The whole body (not streamed) or the last events (streamed).
  virtual std::string Finish(const Reply& reply, const ReplyEnd& end,
                             const GenerationFigures& figures) = 0;
  // A failure: the body, or (streamed) the event that ends the stream.
  virtual std::string Error(const ApiError& error) = 0;
  // Sent after each quiet interval of a streamed reply.
  virtual std::string_view KeepAlive() const = 0;
  // Whether the reply is streamed: Finish and Error give events, else a body.
  virtual bool streamed() const = 0;
};

}  // namespace warp::computed::serve
