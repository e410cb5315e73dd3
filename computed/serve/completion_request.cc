#include "computed/serve/completion_request.h"

#include <cmath>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "computed/serve/request_fields.h"

namespace warp::computed::serve {
namespace {

using Json = nlohmann::ordered_json;

// OpenAI's limit on stop sequences.
constexpr size_t kMaxStops = 4;
// The message roles the OpenAI API knows; the chat template decides what
// each means ("developer" is the newer name of "system").
const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};

// Fields that would change the reply but that WARP does not implement.
bool Refused(const Json& body, const std::string& key, std::string* why) {
  const auto it = body.find(key);
  if (it == body.end() || it->is_null()) return false;
  if (key == "n") {
    if (it->is_number_integer() && it->get<int64_t>() == 1) return false;
    *why = "only n = 1 is served";
  } else if (key == "logprobs" || key == "echo") {
    if (it->is_boolean() && !it->get<bool>()) return false;
    *why = "is not supported";
  } else if (key == "top_logprobs" || key == "best_of" || key == "suffix") {
    *why = "is not supported";
  } else if (key == "logit_bias") {
    if (it->is_object() && it->empty()) return false;
    *why = "is not supported";
  } else if (key == "frequency_penalty" || key == "presence_penalty") {
    if (it->is_number() && it->get<double>() == 0) return false;
    *why = "is not supported (only 0)";
  }
  return true;
}

class Parser {
 public:
  Parser(const Json& body, CompletionRequest& out) : body_(body), out_(out), fields_(body) {}

  std::optional<ApiError> Run() {
    if (!body_.is_object()) return BadRequest("", "the request body must be a JSON object");
    for (const char* key :
         {"n", "logprobs", "echo", "top_logprobs", "best_of", "suffix", "logit_bias",
          "frequency_penalty", "presence_penalty"}) {
      std::string why;
      if (Refused(body_, key, &why)) return BadRequest(key, absl::StrCat(key, " ", why));
    }
    if (auto e = fields_.String("model", &out_.model, /*required=*/false)) return e;
    if (out_.endpoint == Endpoint::kChat) {
      if (auto e = Messages()) return e;
      if (auto e = Tools()) return e;
      if (auto e = fields_.Bool("parallel_tool_calls", &out_.parallel_tool_calls)) return e;
      if (const Json* format = Find("response_format")) {
        std::variant<Json, ApiError> parsed =
            ParseOutputFormat(*format, "response_format", /*schema_nested=*/true);
        if (ApiError* error = std::get_if<ApiError>(&parsed)) return *error;
        out_.output_format = std::get<Json>(std::move(parsed));
      }
      if (const Json* kwargs = Find("chat_template_kwargs")) {
        if (!kwargs->is_object()) return BadRequest("chat_template_kwargs", "must be an object");
        out_.template_kwargs = *kwargs;
      }
      // OpenAI's reasoning_effort is a variable of the templates that take
      // one (gpt-oss: "Reasoning: high"), as llama.cpp's server passes it.
      if (const Json* effort = Find("reasoning_effort")) {
        if (!effort->is_string() || (*effort != "minimal" && *effort != "low" &&
                                     *effort != "medium" && *effort != "high")) {
          return BadRequest(
              "reasoning_effort",
              "reasoning_effort must be \"minimal\", \"low\", \"medium\" or \"high\"");
        }
        if (!out_.template_kwargs.contains("reasoning_effort")) {
          out_.template_kwargs["reasoning_effort"] = *effort;
        }
      }
    } else {
      if (auto e = Prompt()) return e;
    }
    if (auto e = MaxTokens()) return e;
    if (auto e = Sampling()) return e;
    if (auto e = Stop()) return e;
    if (auto e = fields_.Bool("stream", &out_.stream)) return e;
    if (auto e = fields_.Bool("ignore_eos", &out_.ignore_eos)) return e;
    if (const Json* options = Find("stream_options")) {
      if (!options->is_object()) return BadRequest("stream_options", "must be an object");
      if (!out_.stream) {
        return BadRequest("stream_options", "stream_options is only allowed with stream: true");
      }
      const auto usage = options->find("include_usage");
      if (usage != options->end() && !usage->is_null()) {
        if (!usage->is_boolean()) {
          return BadRequest("stream_options.include_usage", "must be a boolean");
        }
        out_.include_usage = usage->get<bool>();
      }
    }
    return std::nullopt;
  }

 private:
  const Json* Find(const std::string& key) const { return fields_.Find(key); }

  std::optional<ApiError> Messages() {
    const Json* messages = nullptr;
    if (auto e = fields_.NonEmptyArray("messages", &messages)) return e;
    for (size_t i = 0; i < messages->size(); ++i) {
      const Json& m = (*messages)[i];
      const std::string at = absl::StrCat("messages[", i, "]");
      if (!m.is_object()) return BadRequest(at, absl::StrCat(at, " must be an object"));
      const auto role = m.find("role");
      if (role == m.end() || !role->is_string()) {
        return BadRequest(at + ".role", absl::StrCat(at, ".role must be a string"));
      }
      if (!kRoles.contains(role->get<std::string>())) {
        return BadRequest(at + ".role",
                          absl::StrCat(at, ".role: unknown role \"", role->get<std::string>(),
                                       "\" (system, developer, user, assistant, tool)"));
      }
      const auto content = m.find("content");
      const bool may_be_empty = role->get<std::string>() == "assistant" && m.contains("tool_calls");
      if (content == m.end() || content->is_null()) {
        if (!may_be_empty) {
          return BadRequest(at + ".content", absl::StrCat(at, ".content is required"));
        }
      } else if (content->is_array()) {
        for (size_t j = 0; j < content->size(); ++j) {
          const Json& part = (*content)[j];
          const std::string part_at = absl::StrCat(at, ".content[", j, "]");
          if (!part.is_object() || part.value("type", "") != "text" || !part.contains("text") ||
              !part["text"].is_string()) {
            return BadRequest(part_at, absl::StrCat(part_at,
                                                    " must be {\"type\": \"text\", \"text\": "
                                                    "STRING} (text is the only part served)"));
          }
        }
      } else if (!content->is_string()) {
        return BadRequest(at + ".content",
                          absl::StrCat(at, ".content must be a string or an array of parts"));
      }
    }
    out_.messages = *messages;
    return std::nullopt;
  }

  std::optional<ApiError> Tools() {
    if (const Json* tools = Find("tools")) {
      if (!tools->is_array()) return BadRequest("tools", "tools must be an array");
      for (size_t i = 0; i < tools->size(); ++i) {
        const Json& tool = (*tools)[i];
        const std::string at = absl::StrCat("tools[", i, "]");
        if (!tool.is_object() || tool.value("type", "") != "function" ||
            !tool.contains("function") || !tool["function"].is_object() ||
            !tool["function"].contains("name") || !tool["function"]["name"].is_string()) {
          return BadRequest(at, absl::StrCat(at,
                                             " must be {\"type\": \"function\", \"function\": "
                                             "{\"name\": STRING, ...}}"));
        }
      }
      if (!tools->empty()) out_.tools = *tools;
    }
    if (const Json* choice = Find("tool_choice")) {
      const bool word =
          choice->is_string() && (*choice == "none" || *choice == "auto" || *choice == "required");
      const bool function = choice->is_object() && choice->value("type", "") == "function";
      if (!word && !function) {
        return BadRequest("tool_choice",
                          "tool_choice must be \"none\", \"auto\", \"required\" or {\"type\": "
                          "\"function\", \"function\": {\"name\": ...}}");
      }
      out_.tool_choice = *choice;
    }
    return std::nullopt;
  }

  std::optional<ApiError> Prompt() {
    const Json* prompt = Find("prompt");
    if (prompt == nullptr) return BadRequest("prompt", "prompt is required");
    if (prompt->is_array() && prompt->size() == 1 && (*prompt)[0].is_string()) {
      out_.prompt = (*prompt)[0].get<std::string>();
    } else if (prompt->is_string()) {
      out_.prompt = prompt->get<std::string>();
    } else {
      return BadRequest("prompt", "prompt must be a string (or an array of one string)");
    }
    if (out_.prompt.empty()) return BadRequest("prompt", "prompt is empty");
    return std::nullopt;
  }

  std::optional<ApiError> MaxTokens() {
    // max_completion_tokens is the newer name; it wins when both are sent.
    for (const char* key : {"max_completion_tokens", "max_tokens"}) {
      if (Find(key) != nullptr) return fields_.MaxTokens(key, &out_.max_tokens);
    }
    return std::nullopt;
  }

  std::optional<ApiError> Sampling() {
    out_.sampling.temperature = 1.0f;
    if (auto e = fields_.Number("temperature", 0, 2, false, &out_.sampling.temperature)) return e;
    if (auto e = fields_.Number("top_p", 0, 1, true, &out_.sampling.top_p)) return e;
    if (auto e = fields_.TopK(&out_.sampling.top_k)) return e;
    if (const Json* seed = Find("seed")) {
      if (!seed->is_number_integer()) return BadRequest("seed", "seed must be an integer");
      out_.sampling.seed = seed->is_number_unsigned() ? seed->get<uint64_t>()
                                                      : static_cast<uint64_t>(seed->get<int64_t>());
      out_.seeded = true;
    }
    return std::nullopt;
  }

  std::optional<ApiError> Stop() {
    const Json* stop = Find("stop");
    if (stop == nullptr) return std::nullopt;
    if (stop->is_string()) {
      out_.stop.push_back(stop->get<std::string>());
    } else if (stop->is_array() && stop->size() <= kMaxStops) {
      for (const Json& s : *stop) {
        if (!s.is_string()) return BadRequest("stop", "stop must be a string or strings");
        out_.stop.push_back(s.get<std::string>());
      }
    } else {
      return BadRequest("stop",
                        absl::StrCat("stop must be a string or up to ", kMaxStops, " strings"));
    }
    for (const std::string& s : out_.stop) {
      if (s.empty()) return BadRequest("stop", "a stop sequence is empty");
    }
    return std::nullopt;
  }

  const Json& body_;
  CompletionRequest& out_;
  const RequestFields fields_;
};

}  // namespace

std::variant<CompletionRequest, ApiError> ParseCompletionRequest(std::string_view body,
                                                                 Endpoint endpoint) {
  absl::StatusOr<Json> json = ParseRequestBody(body);
  if (!json.ok()) return BadRequest("", std::string(json.status().message()));
  CompletionRequest request;
  request.endpoint = endpoint;
  if (std::optional<ApiError> error = Parser(*json, request).Run()) return *std::move(error);
  return request;
}

}  // namespace warp::computed::serve
