#include "computed/serve/http_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>
#include <random>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/wire/lan_auth.h"
#include "computed/serve/chat_page.h"
#include "computed/serve/dashboard_page.h"
#include "computed/serve/event_channel.h"
#include "computed/serve/messages_encoder.h"
#include "computed/serve/messages_request.h"
#include "computed/serve/metrics.h"
#include "computed/serve/openai_encoder.h"
#include "computed/serve/openai_json.h"
#include "computed/serve/reply_grammar.h"
#include "computed/serve/reply_state.h"
#include "computed/serve/responses_encoder.h"
#include "computed/serve/responses_request.h"
#include "computed/serve/sse.h"
#include "computed/serve/stop_strings.h"
#include "computed/text/tokenizer.h"

namespace warp::computed::serve {
namespace {

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// Larger bodies are refused (413) before they are read whole.
constexpr size_t kMaxBodyBytes = 16 << 20;
// Template variables a request may not set (transformers' own arguments).
constexpr const char* kReservedVariables[] = {"messages", "tools", "documents",
                                              "add_generation_prompt"};

spdlog::logger& Log() { return Logger("serve"); }


// Anthropic's endpoints answer errors in Anthropic's shape, the rest in OpenAI's.
bool IsMessagesPath(const std::string& path) { return absl::StartsWith(path, "/v1/messages"); }

void SendError(httplib::Response& response, const ApiError& error, const std::string& path) {
  response.status = error.http_status;
  response.set_content(
      Dump(IsMessagesPath(path) ? error.ToAnthropicJson() : error.ToJson()), "application/json");
}

// Anthropic's clients send the API version they speak; any is served, none is refused as the
// Messages API refuses it.
std::optional<ApiError> MissingAnthropicVersion(const httplib::Request& request) {
  if (request.has_header("anthropic-version")) return std::nullopt;
  return BadRequest("anthropic-version", "anthropic-version: header is required");
}

std::string RandomId(std::string_view prefix) {
  static thread_local std::mt19937_64 random{std::random_device{}()};
  return absl::StrCat(std::string(prefix), absl::Hex(random(), absl::kZeroPad16));
}

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Sends what `state` produces as it comes, keeping the connection alive
// (`keepalive` text after each quiet interval). False when the client is
// gone: the request is cancelled.
bool Relay(ReplyState& state, httplib::DataSink& sink, std::chrono::milliseconds interval,
           std::string_view keepalive) {
  std::string event;
  while (true) {
    const EventChannel::Wait wait = state.channel().Pop(interval, &event);
    if (wait == EventChannel::Wait::kClosed) return true;
    const std::string_view data = wait == EventChannel::Wait::kEvent ? event : keepalive;
    if (!sink.write(data.data(), data.size())) {
      state.cancelled()->store(true);
      return false;
    }
  }
}

// The template's variables for `request`: `base` (--tools, --template-kwargs)
// under the request's chat_template_kwargs and tools.
std::variant<OrderedJson, ApiError> TemplateContext(const OrderedJson& base,
                                                    const CompletionRequest& request) {
  OrderedJson context = base;
  for (const auto& [key, value] : request.template_kwargs.items()) {
    for (const char* reserved : kReservedVariables) {
      if (key == reserved) {
        return BadRequest("chat_template_kwargs",
                          absl::StrCat("chat_template_kwargs may not set \"", key, "\""));
      }
    }
    context[key] = value;
  }
  if (!request.tools.is_null() && request.tool_choice != "none") context["tools"] = request.tools;
  return context;
}

// `messages` rendered for a reply. An assistant turn with tool calls comes
// back from clients as "content": null, and some templates (Qwen3's
// `'</think>' in message.content`) fail on it, as they do in transformers.
// Rendered again with "" (what llama.cpp's server does for such templates);
// a template that takes null keeps its own render.
absl::StatusOr<std::string> RenderForReply(const chat::ChatTemplate& chat_template,
                                           const OrderedJson& messages,
                                           const OrderedJson& context) {
  absl::StatusOr<std::string> rendered =
      chat_template.RenderOrdered(messages, /*add_generation_prompt=*/true, context);
  if (rendered.ok()) return rendered;
  OrderedJson with_empty = messages;
  bool had_null = false;
  for (OrderedJson& message : with_empty) {
    auto content = message.find("content");
    if (content == message.end() || content->is_null()) {
      message["content"] = "";
      had_null = true;
    }
  }
  if (had_null) {
    absl::StatusOr<std::string> again =
        chat_template.RenderOrdered(with_empty, /*add_generation_prompt=*/true, context);
    if (again.ok()) rendered = std::move(again);
  }
  return rendered;
}

// A chat request's prompt: its messages through the model's chat template.
std::variant<std::string, ApiError> RenderChat(const ModelText& text,
                                               const OrderedJson& template_context,
                                               const CompletionRequest& request) {
  if (!text.chat_template) {
    return BadRequest("messages",
                      "the model has no chat template (serve it with --chat-template FILE, or "
                      "use /v1/completions)");
  }
  std::variant<OrderedJson, ApiError> context = TemplateContext(template_context, request);
  if (ApiError* error = std::get_if<ApiError>(&context)) return *error;
  absl::StatusOr<std::string> rendered =
      RenderForReply(*text.chat_template, request.messages, std::get<OrderedJson>(context));
  if (!rendered.ok()) {
    return BadRequest("messages", absl::StrCat("the chat template refused the messages: ",
                                               std::string(rendered.status().message())));
  }
  return *std::move(rendered);
}

// The reply's max_tokens for a prompt of `prompt` tokens, or why the
// context (of `context` positions; `trained`, if known, bounds the prompt)
// cannot hold it.
std::variant<uint32_t, ApiError> ReplyBudget(const CompletionRequest& request, uint64_t prompt,
                                             uint64_t context, uint64_t trained) {
  const char* what = request.endpoint == Endpoint::kChat ? "messages" : "prompt";
  auto too_long = [&](std::string message) {
    ApiError error = BadRequest(what, std::move(message));
    error.code = "context_length_exceeded";
    return error;
  };
  if (trained > 0 && prompt > trained) {
    return too_long(absl::StrCat("the prompt has ", prompt,
                                 " tokens; the model was trained on at most ", trained));
  }
  if (prompt >= context) {
    return too_long(absl::StrCat("the prompt has ", prompt, " tokens; the context holds ", context,
                                 " (computed serve --context) with one left to reply"));
  }
  const uint32_t max_tokens = request.max_tokens.value_or(static_cast<uint32_t>(context - prompt));
  if (prompt + max_tokens > context) {
    return too_long(absl::StrCat("the prompt has ", prompt, " tokens and max_tokens is ",
                                 max_tokens, "; the context holds ", context,
                                 " (computed serve --context)"));
  }
  return max_tokens;
}

}  // namespace

struct HttpServer::Prepared {
  CompletionRequest request;
  std::vector<int32_t> ids;
  uint32_t max_tokens = 0;
  ReplyDialect dialect;  // of the reply (kPlain for /v1/completions)
  std::shared_ptr<const constrain::Grammar> grammar;  // null: the reply is free
};

HttpServer::HttpServer(EngineWorker& engine, const ModelText& text, ServerOptions options)
    : engine_(engine),
      text_(text),
      options_(std::move(options)),
      chat_format_(text.chat_template ? DetectReplyFormat(text.chat_template->source())
                                      : ReplyFormat::kPlain),
      http_(std::make_unique<httplib::Server>()) {
  Route();
}

HttpServer::~HttpServer() {
  Stop();
  // Serve removes it once it returns; a server bound but never served (or
  // refused after Bind) removes it here.
  if (!socket_dir_.empty()) {
    std::error_code ignored;
    std::filesystem::remove_all(socket_dir_, ignored);
  }
}

absl::StatusOr<int> HttpServer::Bind() {
  const char* tmp = std::getenv("TMPDIR");
  std::string dir = absl::StrCat(tmp && *tmp ? tmp : "/tmp", "/warp-serve-XXXXXX");
  if (::mkdtemp(dir.data()) == nullptr) {  // 0700: only this user reaches httplib
    return absl::UnavailableError(
        absl::StrCat("cannot make a private directory for the server's socket under ",
                     tmp && *tmp ? tmp : "/tmp", ": ", std::strerror(errno)));
  }
  socket_dir_ = dir;
  FrontOptions front = options_.front;
  front.upstream_path = dir + "/http.sock";
  http_->set_address_family(AF_UNIX);
  if (!http_->bind_to_port(front.upstream_path, 80)) {
    return absl::UnavailableError(
        absl::StrCat("cannot listen on the server's socket ", front.upstream_path));
  }
  front_ = std::make_unique<HttpFront>(std::move(front));
  return front_->Bind();
}

absl::Status HttpServer::Serve() {
  if (front_ == nullptr) return absl::FailedPreconditionError("HttpServer::Serve before Bind");
  bool upstream_ran = false;
  std::thread upstream([&] { upstream_ran = http_->listen_after_bind(); });
  front_->Serve();
  http_->stop();
  upstream.join();
  std::error_code ignored;
  std::filesystem::remove_all(socket_dir_, ignored);
  if (!upstream_ran) {
    return absl::InternalError(
        absl::StrCat("the server's socket ", socket_dir_, "/http.sock stopped serving"));
  }
  return absl::OkStatus();
}

void HttpServer::Stop() {
  if (front_ != nullptr) front_->Stop();
  http_->stop();
}

bool HttpServer::Authorized(const httplib::Request& request, httplib::Response& response) const {
  if (options_.api_key.empty()) return true;
  // OpenAI's clients send "Authorization: Bearer KEY", Anthropic's "x-api-key: KEY".
  std::string header = request.get_header_value("Authorization");
  constexpr absl::string_view kBearer = "Bearer ";
  if (absl::StartsWith(header, kBearer) &&
      TokensEqual(std::string_view(header).substr(kBearer.size()), options_.api_key)) {
    return true;
  }
  if (header.empty()) header = request.get_header_value("x-api-key");
  if (request.has_header("x-api-key") &&
      TokensEqual(request.get_header_value("x-api-key"), options_.api_key)) {
    return true;
  }
  uint64_t dropped = 0;
  if (refusal_log_.Allow(&dropped)) {
    Log().warn("{}: 401 for {} {}: {}{}", request.get_header_value(kPeerField), request.method,
               request.path, header.empty() ? "no API key" : "an incorrect API key",
               dropped ? absl::StrCat(" (", dropped, " more not logged)") : "");
  }
  SendError(response,
            ApiError{.http_status = 401,
                     .message = header.empty()
                                    ? "no API key: send Authorization: Bearer KEY or x-api-key: KEY"
                                    : "incorrect API key provided",
                     .code = "invalid_api_key"},
            request.path);
  return false;
}

void HttpServer::Route() {
  http_->set_payload_max_length(kMaxBodyBytes);
  // httplib's default also sets SO_REUSEPORT: a second server on the same
  // port would then share it silently instead of failing to bind.
  http_->set_socket_options([](int socket) {
    const int yes = 1;
    ::setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const size_t threads = options_.connection_threads;
  http_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  http_->set_pre_routing_handler(
      [this](const httplib::Request& request, httplib::Response& response) {
        const bool guarded =
            absl::StartsWith(request.path, "/v1/") || absl::StartsWith(request.path, "/metrics");
        if (guarded && !Authorized(request, response))
          return httplib::Server::HandlerResponse::Handled;
        return httplib::Server::HandlerResponse::Unhandled;
      });
  http_->set_error_handler([](const httplib::Request& request, httplib::Response& response) {
    if (!response.body.empty()) return;
    if (response.status == 404) {
      SendError(response,
                ApiError{.http_status = 404,
                         .message = absl::StrCat("no such endpoint: ", request.method, " ",
                                                 request.path),
                         .type = "not_found_error"},
                request.path);
    } else if (response.status == 413) {
      SendError(response,
                ApiError{.http_status = 413,
                         .message = absl::StrCat("the request body is larger than ",
                                                 kMaxBodyBytes, " bytes")},
                request.path);
    }
  });
  http_->Post("/v1/chat/completions",
              [this](const httplib::Request& request, httplib::Response& response) {
                Complete(request, response, Endpoint::kChat);
              });
  http_->Post("/v1/completions",
              [this](const httplib::Request& request, httplib::Response& response) {
                Complete(request, response, Endpoint::kText);
              });
  http_->Post("/v1/responses", [this](const httplib::Request& request, httplib::Response& response) {
    Responses(request, response);
  });
  http_->Post("/v1/messages", [this](const httplib::Request& request, httplib::Response& response) {
    Messages(request, response);
  });
  http_->Post("/v1/messages/count_tokens",
              [this](const httplib::Request& request, httplib::Response& response) {
                CountTokens(request, response);
              });
  http_->Get("/v1/models", [this](const httplib::Request&, httplib::Response& response) {
    const Json model = {{"id", options_.model_name},
                        {"object", "model"},
                        {"created", 0},
                        {"owned_by", "warp"},
                        {"meta", {{"context_length", engine_.context()}}}};
    response.set_content(Dump({{"object", "list"}, {"data", Json::array({model})}}),
                         "application/json");
  });
  http_->Get("/health", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(R"({"status":"ok"})", "application/json");
  });
  http_->Get("/metrics", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(PrometheusText(engine_.Stats()), "text/plain; version=0.0.4");
  });
  http_->Get("/", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(std::string(ChatPageHtml()), "text/html; charset=utf-8");
  });
  http_->Get("/metrics/heat", [this](const httplib::Request&, httplib::Response& response) {
    response.set_content(Dump(HeatJson(engine_.Stats().usage.get())), "application/json");
  });
  http_->Get("/dashboard", [](const httplib::Request&, httplib::Response& response) {
    response.set_content(std::string(DashboardHtml()), "text/html; charset=utf-8");
  });
}

std::variant<HttpServer::Prepared, ApiError> HttpServer::Tokenize(
    const CompletionRequest& request) const {
  Prepared out{.request = request};
  absl::StatusOr<std::vector<int32_t>> ids;
  if (request.endpoint == Endpoint::kChat) {
    std::variant<std::string, ApiError> rendered =
        RenderChat(text_, options_.template_context, request);
    if (ApiError* error = std::get_if<ApiError>(&rendered)) return *error;
    const std::string& prompt = std::get<std::string>(rendered);
    out.dialect = DialectOf(chat_format_, text_.chat_template->source(), prompt);
    ids = text_.tokenizer->Encode(prompt);
  } else {
    ids = text_.tokenizer->Encode(request.prompt, /*add_special_tokens=*/true);
  }
  if (!ids.ok()) return BadRequest("", std::string(ids.status().message()));
  if (ids->empty()) return BadRequest("", "the prompt is empty once tokenized");
  out.ids = *std::move(ids);
  return out;
}

std::variant<HttpServer::Prepared, ApiError> HttpServer::Prepare(
    const CompletionRequest& request) const {
  std::variant<Prepared, ApiError> out = Tokenize(request);
  if (ApiError* error = std::get_if<ApiError>(&out)) return *error;
  Prepared& p = std::get<Prepared>(out);
  std::variant<uint32_t, ApiError> max_tokens =
      ReplyBudget(request, p.ids.size(), engine_.context(), engine_.trained_positions());
  if (ApiError* error = std::get_if<ApiError>(&max_tokens)) return *error;
  p.max_tokens = std::get<uint32_t>(max_tokens);
  if (request.endpoint == Endpoint::kChat) {
    std::variant<std::shared_ptr<const constrain::Grammar>, ApiError> grammar =
        ReplyGrammar(request, p.dialect, *text_.tokenizer);
    if (ApiError* error = std::get_if<ApiError>(&grammar)) return *error;
    p.grammar = std::get<std::shared_ptr<const constrain::Grammar>>(std::move(grammar));
  }
  return out;
}

std::shared_ptr<const constrain::Vocabulary> HttpServer::Vocabulary() const {
  std::call_once(vocabulary_once_, [this] {
    vocabulary_ = std::make_shared<const constrain::Vocabulary>(
        constrain::Vocabulary::FromTokenizer(*text_.tokenizer));
  });
  return vocabulary_;
}

void HttpServer::Refuse(const httplib::Request& request, httplib::Response& response,
                        const ApiError& error) const {
  uint64_t dropped = 0;
  if (refusal_log_.Allow(&dropped)) {
    Log().warn("{}: {} for {}: {}{}", request.get_header_value(kPeerField), error.http_status,
               request.path, error.message,
               dropped ? absl::StrCat(" (", dropped, " more not logged)") : "");
  }
  SendError(response, error, request.path);
}

void HttpServer::Complete(const httplib::Request& request, httplib::Response& response,
                          Endpoint endpoint) {
  std::variant<CompletionRequest, ApiError> parsed = ParseCompletionRequest(request.body, endpoint);
  if (ApiError* error = std::get_if<ApiError>(&parsed)) return Refuse(request, response, *error);
  Answer(request, response, std::get<CompletionRequest>(parsed),
         endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-",
         [&](const ResponseHeader& header, const CompletionRequest& chat) {
           return MakeOpenAiEncoder(endpoint, header, chat.stream, chat.include_usage);
         });
}

void HttpServer::Messages(const httplib::Request& request, httplib::Response& response) {
  if (std::optional<ApiError> error = MissingAnthropicVersion(request)) {
    return Refuse(request, response, *error);
  }
  std::variant<CompletionRequest, ApiError> parsed =
      ParseMessagesRequest(request.body, /*count_tokens=*/false);
  if (ApiError* error = std::get_if<ApiError>(&parsed)) return Refuse(request, response, *error);
  Answer(request, response, std::get<CompletionRequest>(parsed), "msg_",
         [](const ResponseHeader& header, const CompletionRequest& chat) {
           return MakeMessagesEncoder(header, chat.stream);
         });
}

void HttpServer::Responses(const httplib::Request& request, httplib::Response& response) {
  std::variant<ResponsesRequest, ApiError> parsed = ParseResponsesRequest(request.body, responses_);
  if (ApiError* error = std::get_if<ApiError>(&parsed)) return Refuse(request, response, *error);
  const ResponsesRequest& responses_request = std::get<ResponsesRequest>(parsed);
  Answer(request, response, responses_request.chat, "resp_",
         [&](const ResponseHeader& header, const CompletionRequest&) {
           return MakeResponsesEncoder(header, responses_request, responses_);
         });
}

void HttpServer::Answer(const httplib::Request& request, httplib::Response& response,
                        const CompletionRequest& chat, std::string_view id_prefix,
                        const EncoderFactory& make_encoder) {
  std::variant<Prepared, ApiError> prepared = Prepare(chat);
  if (ApiError* error = std::get_if<ApiError>(&prepared)) {
    return SendError(response, *error, request.path);
  }
  Prepared& p = std::get<Prepared>(prepared);
  const ResponseHeader header{
      .id = RandomId(id_prefix),
      .created = UnixSeconds(),
      .model = p.request.model.empty() ? options_.model_name : p.request.model};
  Run(request, response, p, make_encoder(header, p.request), header.id);
}

void HttpServer::CountTokens(const httplib::Request& request, httplib::Response& response) {
  if (std::optional<ApiError> error = MissingAnthropicVersion(request)) {
    return Refuse(request, response, *error);
  }
  std::variant<CompletionRequest, ApiError> parsed =
      ParseMessagesRequest(request.body, /*count_tokens=*/true);
  if (ApiError* error = std::get_if<ApiError>(&parsed)) return Refuse(request, response, *error);
  std::variant<Prepared, ApiError> tokenized = Tokenize(std::get<CompletionRequest>(parsed));
  if (ApiError* error = std::get_if<ApiError>(&tokenized)) {
    return SendError(response, *error, request.path);
  }
  response.set_content(Dump({{"input_tokens", std::get<Prepared>(tokenized).ids.size()}}),
                       "application/json");
}

void HttpServer::Run(const httplib::Request& request, httplib::Response& response, Prepared& p,
                     std::unique_ptr<ReplyEncoder> encoder, const std::string& id) {
  auto state = std::make_shared<ReplyState>(*text_.tokenizer, p.dialect.format,
                                            p.dialect.starts_in_reasoning,
                                            p.request.stop, std::move(encoder), id,
                                            p.request.endpoint == Endpoint::kChat);
  GenerationJob job;
  job.prompt = std::move(p.ids);
  job.max_tokens = p.max_tokens;
  job.sampling = p.request.sampling;
  if (!p.request.seeded) job.sampling.seed = std::random_device{}();
  if (!p.request.ignore_eos) job.stop_ids = text_.stop_ids;
  if (p.grammar) {
    job.constraint = std::make_shared<constrain::TokenConstraint>(
        p.grammar, Vocabulary(), std::vector<int32_t>(job.stop_ids.begin(), job.stop_ids.end()));
  }
  job.cancelled = state->cancelled();
  job.on_prefilled = [state](const GenerationFigures& figures) { state->OnPrefilled(figures); };
  job.on_token = [state](int32_t id) { return state->OnToken(id); };
  job.on_done = [state](const absl::Status& status, FinishReason reason,
                        const GenerationFigures& figures) {
    state->OnDone(status, reason, figures);
  };
  Log().info("{}: {} prompt tokens, at most {} to generate", id, job.prompt.size(),
             job.max_tokens);
  if (absl::Status submitted = engine_.Submit(std::move(job)); !submitted.ok()) {
    return SendError(response, FromStatus(submitted), request.path);
  }

  const std::chrono::milliseconds interval = options_.keepalive;
  if (p.request.stream) {
    response.set_header("Cache-Control", "no-cache");
    response.set_chunked_content_provider(
        "text/event-stream",
        [state, interval](size_t, httplib::DataSink& sink) {
          if (Relay(*state, sink, interval, state->encoder().KeepAlive())) sink.done();
          return true;
        },
        [state](bool) { state->cancelled()->store(true); });  // a no-op once it ended
    return;
  }
  // Not streamed: a reply that ends within one interval gets its own status
  // (an engine error is a 4xx/5xx); a longer one is sent as 200 with
  // whitespace before the JSON, which keeps the connection and tells a
  // client that left.
  std::string unused;
  if (state->channel().Pop(interval, &unused) == EventChannel::Wait::kClosed) {
    response.status = state->http_status();
    response.set_content(state->body(), "application/json");
    return;
  }
  response.set_chunked_content_provider(
      "application/json",
      [state, interval](size_t, httplib::DataSink& sink) {
        if (Relay(*state, sink, interval, "\n") &&
            sink.write(state->body().data(), state->body().size())) {
          sink.done();
        }
        return true;
      },
      [state](bool) { state->cancelled()->store(true); });
}

}  // namespace warp::computed::serve
