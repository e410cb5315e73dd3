#pragma once

// HttpServer: `computed serve`'s endpoints over cpp-httplib.
//
//   POST /v1/chat/completions  chat through the model's template (stream or not,
//                              tools, reasoning_content, usage)
//   POST /v1/completions       a raw prompt
//   POST /v1/responses         OpenAI's Responses API (stream or not, function
//                              tools, previous_response_id, usage)
//   POST /v1/messages          Anthropic's Messages API (stream or not, tools,
//                              thinking, usage); errors in Anthropic's shape
//   POST /v1/messages/count_tokens  the prompt's tokens
//   GET  /v1/models            the one model
//   GET  /health               200 when the engine runs
//   GET  /metrics              Prometheus text: the engine's and the store's counters
//   GET  /                     the chat page
//   GET  /dashboard            the engine's figures from /metrics, plotted
//
// With an API key, /v1/* and /metrics need "Authorization: Bearer KEY" or
// "x-api-key: KEY" (401 otherwise). Requests are checked before they queue (400 with an OpenAI
// error body naming the field) and run one at a time in arrival order on
// the EngineWorker. A response waits for its request with keep-alives: SSE
// comments while streaming, whitespace before a JSON body that takes long;
// a keep-alive or token the client no longer takes cancels the request.
//
// Clients reach httplib through HttpFront (http_front.h), which reads each
// request to bounds first; httplib itself listens on a Unix socket in a
// private directory.
//
// Thread-safe: connections are served on httplib's pool; Stop from any thread.

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "absl/status/statusor.h"
#include "computed/constrain/vocabulary.h"
#include "computed/run/model_text.h"
#include "computed/serve/completion_request.h"
#include "computed/serve/engine_worker.h"
#include "computed/serve/openai_json.h"
#include "computed/serve/http_front.h"
#include "computed/serve/log_budget.h"
#include "computed/serve/reply_encoder.h"
#include "computed/serve/reply_parser.h"
#include "computed/serve/response_store.h"
#include "nlohmann/json.hpp"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace warp::computed::serve {

struct ServerOptions {
  // The listening address (host, port; 0: any free port, Bind says which),
  // and the bounds on what a client may send or hold.
  FrontOptions front;
  std::string api_key;  // empty: none required
  std::string model_name;  // the id /v1/models lists and responses carry
  // Between keep-alives while a response waits, and before a non-streamed
  // response gives up on sending a proper error status.
  std::chrono::milliseconds keepalive{5000};
  size_t connection_threads = 8;
  // Extra template variables from --tools / --template-kwargs, under each
  // request's own tools and chat_template_kwargs.
  nlohmann::ordered_json template_context = nlohmann::ordered_json::object();
};

// Responses API replies kept for previous_response_id, newest first.
inline constexpr size_t kStoredResponses = 256;

class HttpServer {
 public:
  HttpServer(EngineWorker& engine, const ModelText& text, ServerOptions options);
  ~HttpServer();

  // Binds the listening socket: the port in use, or what went wrong, naming
  // the address.
  absl::StatusOr<int> Bind();
  // Serves until Stop.
  absl::Status Serve();
  void Stop();

 private:
  struct Prepared;  // a request checked, rendered and tokenized
  void Route();
  bool Authorized(const httplib::Request& request, httplib::Response& response) const;
  // The prompt's tokens; Prepare adds the reply's budget.
  std::variant<Prepared, ApiError> Tokenize(const CompletionRequest& request) const;
  std::variant<Prepared, ApiError> Prepare(const CompletionRequest& request) const;
  // A malformed request: logged (a few a minute) and answered.
  void Refuse(const httplib::Request& request, httplib::Response& response,
              const ApiError& error) const;
  // OpenAI's chat completions and completions.
  void Complete(const httplib::Request& request, httplib::Response& response, Endpoint endpoint);
  // OpenAI's responses.
  void Responses(const httplib::Request& request, httplib::Response& response);
  // Anthropic's messages and messages/count_tokens.
  void Messages(const httplib::Request& request, httplib::Response& response);
  void CountTokens(const httplib::Request& request, httplib::Response& response);
  // The API's writer of one reply, made once the reply has its header.
  using EncoderFactory = std::function<std::unique_ptr<ReplyEncoder>(const ResponseHeader&,
                                                                     const CompletionRequest&)>;
  // Prepares `chat` (400s sent as the path's API answers them) and runs it,
  // its reply written by the encoder `make_encoder` makes; ids `id_prefix`HEX.
  void Answer(const httplib::Request& request, httplib::Response& response,
              const CompletionRequest& chat, std::string_view id_prefix,
              const EncoderFactory& make_encoder);
  // Queues `p` and sends its reply as `encoder` writes it.
  void Run(const httplib::Request& request, httplib::Response& response, Prepared& p,
           std::unique_ptr<ReplyEncoder> encoder, const std::string& id);
  // The tokenizer's tokens for constrained decoding, made at the first use.
  std::shared_ptr<const constrain::Vocabulary> Vocabulary() const;

  EngineWorker& engine_;
  const ModelText& text_;
  const ServerOptions options_;
  const ReplyFormat chat_format_;  // of the model's chat template
  const std::unique_ptr<httplib::Server> http_;
  std::unique_ptr<HttpFront> front_;
  std::string socket_dir_;  // httplib's Unix socket is in it; removed after
  ResponseStore responses_{kStoredResponses};  // previous_response_id's conversations
  mutable std::once_flag vocabulary_once_;
  mutable std::shared_ptr<const constrain::Vocabulary> vocabulary_;  // set once, by Vocabulary()
  mutable LogBudget refusal_log_{20};  // 401s and malformed requests, a few a minute
};

}  // namespace warp::computed::serve
