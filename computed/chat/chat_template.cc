#include "computed/chat/chat_template.h"

#include <iterator>
#include <optional>
#include <system_error>
#include <vector>

#include "absl/status/status.h"
#include "common/io/file.h"
#include "common/json_depth.h"
#include "common/status.h"
#include "computed/chat/strings.h"

namespace warp::chat {
namespace {

namespace fs = std::filesystem;

// transformers' SPECIAL_TOKENS_ATTRIBUTES: single tokens, then the one list
// (apply_chat_template passes special_tokens_map, which holds those that are set).
constexpr std::string_view kSpecialTokenKeys[] = {
    "bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token"};
constexpr std::string_view kAdditionalSpecialTokens = "additional_special_tokens";

// A token entry is a string or an AddedToken object {"content": ...}; null means unset.
absl::StatusOr<std::optional<std::string>> TokenString(const nlohmann::json& entry,
                                                       std::string_view where) {
  if (entry.is_null()) return std::optional<std::string>();
  if (entry.is_string()) return std::optional<std::string>(entry.get<std::string>());
  if (entry.is_object()) {
    auto content = entry.find("content");
    if (content != entry.end() && content->is_string())
      return std::optional<std::string>(content->get<std::string>());
  }
  return absl::InvalidArgumentError(
      Cat(where, ": expected a string or an object with a string \"content\", got ",
          entry.type_name()));
}

// additional_special_tokens: a list of token entries, passed as a list of strings.
absl::StatusOr<nlohmann::json> TokenList(const nlohmann::json& entry, std::string_view where) {
  if (!entry.is_array()) {
    return absl::InvalidArgumentError(Cat(where, ": expected a list, got ", entry.type_name()));
  }
  nlohmann::json tokens = nlohmann::json::array();
  for (size_t i = 0; i < entry.size(); ++i) {
    WARP_ASSIGN_OR_RETURN(std::optional<std::string> token,
                          TokenString(entry[i], Cat(where, "[", i, "]")));
    if (token.has_value()) tokens.push_back(*token);
  }
  return tokens;
}

// One special-token variable: a list for additional_special_tokens, else a
// string; null when unset.
absl::StatusOr<nlohmann::json> TokenValue(std::string_view key, const nlohmann::json& entry,
                                          std::string_view where) {
  if (key == kAdditionalSpecialTokens) return TokenList(entry, where);
  WARP_ASSIGN_OR_RETURN(std::optional<std::string> token, TokenString(entry, where));
  if (!token.has_value()) return nlohmann::json();
  return nlohmann::json(*token);
}

// "chat_template": a string, or [{"name", "template"}, ...] with a "default".
absl::StatusOr<std::string> SelectTemplate(const nlohmann::json& entry, const std::string& path) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.is_array()) {
    std::string names;
    for (const nlohmann::json& item : entry) {
      if (!item.is_object() || !item.contains("name") || !item.contains("template") ||
          !item["name"].is_string() || !item["template"].is_string()) {
        return absl::InvalidArgumentError(Cat(
            path,
            ": chat_template: each list entry must be {\"name\": string, \"template\": string}"));
      }
      if (item["name"] == "default") return item["template"].get<std::string>();
      names += Cat(names.empty() ? "" : ", ", item["name"].get<std::string>());
    }
    return absl::NotFoundError(
        Cat(path, ": chat_template has no \"default\" template (has: ", names, ")"));
  }
  return absl::InvalidArgumentError(
      Cat(path, ": chat_template: expected a string or a list of {name, template}, got ",
          entry.type_name()));
}

}  // namespace

absl::StatusOr<nlohmann::json> ChatTemplate::SpecialTokensOf(const nlohmann::json& config,
                                                             std::string_view origin) {
  nlohmann::json tokens = nlohmann::json::object();
  if (!config.is_object()) return tokens;
  std::vector<std::string_view> keys(std::begin(kSpecialTokenKeys), std::end(kSpecialTokenKeys));
  keys.push_back(kAdditionalSpecialTokens);
  for (std::string_view key : keys) {
    auto it = config.find(key);
    if (it == config.end()) continue;
    WARP_ASSIGN_OR_RETURN(nlohmann::json value, TokenValue(key, *it, Cat(origin, ": ", key)));
    if (!value.is_null()) tokens[std::string(key)] = std::move(value);
  }
  return tokens;
}

absl::StatusOr<ChatTemplate> ChatTemplate::Load(const fs::path& tokenizer_config_json) {
  const std::string path = tokenizer_config_json.string();
  WARP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(tokenizer_config_json));
  WARP_RETURN_IF_ERROR(CheckJsonDepth(text, path));
  nlohmann::json config;
  try {  // nlohmann reports the byte position only through its exception
    config = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& error) {  // parse_error, or out_of_range (1e400)
    return absl::InvalidArgumentError(Cat(path, ": invalid JSON: ", error.what()));
  }
  if (!config.is_object()) return absl::InvalidArgumentError(Cat(path, ": expected a JSON object"));
  WARP_ASSIGN_OR_RETURN(nlohmann::json tokens, SpecialTokensOf(config, path));
  // Releases saved by newer transformers keep the template in its own file,
  // which then wins over the config (as when transformers loads it, and as
  // `computed convert` picks it).
  const fs::path sibling = tokenizer_config_json.parent_path() / "chat_template.jinja";
  std::error_code ignored;
  if (fs::exists(sibling, ignored)) {
    WARP_ASSIGN_OR_RETURN(std::string source, ReadFileToString(sibling));
    WARP_ASSIGN_OR_RETURN(JinjaTemplate jinja, JinjaTemplate::Parse(source, sibling.string()));
    return ChatTemplate(std::move(jinja), std::move(tokens));
  }
  auto entry = config.find("chat_template");
  if (entry == config.end() || entry->is_null()) {
    return absl::NotFoundError(
        Cat(path, ": no chat_template (and no chat_template.jinja beside it)"));
  }
  WARP_ASSIGN_OR_RETURN(std::string source, SelectTemplate(*entry, path));
  WARP_ASSIGN_OR_RETURN(JinjaTemplate jinja,
                        JinjaTemplate::Parse(source, Cat(path, " chat_template")));
  return ChatTemplate(std::move(jinja), std::move(tokens));
}

absl::StatusOr<ChatTemplate> ChatTemplate::FromSource(std::string source, std::string origin,
                                                      nlohmann::json special_tokens) {
  if (special_tokens.is_null()) special_tokens = nlohmann::json::object();
  if (!special_tokens.is_object()) {
    return absl::InvalidArgumentError(Cat(origin, ": special tokens must be a JSON object"));
  }
  nlohmann::json tokens = nlohmann::json::object();
  for (auto it = special_tokens.begin(); it != special_tokens.end(); ++it) {
    WARP_ASSIGN_OR_RETURN(
        nlohmann::json value,
        TokenValue(it.key(), it.value(), Cat(origin, ": special token ", it.key())));
    if (!value.is_null()) tokens[it.key()] = std::move(value);
  }
  WARP_ASSIGN_OR_RETURN(JinjaTemplate jinja, JinjaTemplate::Parse(source, std::move(origin)));
  return ChatTemplate(std::move(jinja), std::move(tokens));
}

namespace {

// The render context of the file comment, for either key ordering.
template <typename Json>
Json MakeContextOf(const nlohmann::json& special_tokens, const Json& messages,
                   bool add_generation_prompt, const Json& extra_context) {
  Json context = special_tokens;
  context["messages"] = messages;
  context["add_generation_prompt"] = add_generation_prompt;
  context["tools"] = nullptr;
  context["documents"] = nullptr;
  if (extra_context.is_object()) {
    for (auto it = extra_context.begin(); it != extra_context.end(); ++it)
      context[it.key()] = it.value();
  }
  return context;
}

template <typename Json>
absl::Status CheckRenderArguments(const JinjaTemplate& jinja, const Json& messages,
                                  const Json& extra_context) {
  if (!messages.is_array()) {
    return absl::InvalidArgumentError(
        Cat(jinja.origin(), ": messages must be a JSON array, got ", messages.type_name()));
  }
  if (!extra_context.is_object()) {
    return absl::InvalidArgumentError(
        Cat(jinja.origin(), ": the extra context must be a JSON object"));
  }
  return absl::OkStatus();
}

}  // namespace

nlohmann::json ChatTemplate::MakeContext(const nlohmann::json& messages, bool add_generation_prompt,
                                         const nlohmann::json& extra_context) const {
  return MakeContextOf(special_tokens_, messages, add_generation_prompt, extra_context);
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::json& messages,
                                                 bool add_generation_prompt) const {
  return Render(messages, add_generation_prompt, nlohmann::json::object());
}

absl::StatusOr<std::string> ChatTemplate::Render(const nlohmann::json& messages,
                                                 bool add_generation_prompt,
                                                 const nlohmann::json& extra_context) const {
  WARP_RETURN_IF_ERROR(CheckRenderArguments(template_, messages, extra_context));
  return template_.Render(MakeContext(messages, add_generation_prompt, extra_context));
}

absl::StatusOr<std::string> ChatTemplate::RenderOrdered(
    const nlohmann::ordered_json& messages, bool add_generation_prompt,
    const nlohmann::ordered_json& extra_context) const {
  WARP_RETURN_IF_ERROR(CheckRenderArguments(template_, messages, extra_context));
  return template_.RenderOrdered(
      MakeContextOf(special_tokens_, messages, add_generation_prompt, extra_context));
}

}  // namespace warp::chat
