#include "computed/serve/reply_grammar.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "computed/constrain/json_schema_grammar.h"
#include "computed/serve/reply_markers.h"

namespace warp::computed::serve {
namespace {

using constrain::Element;
using constrain::GrammarBuilder;
using constrain::Sequence;
using Json = nlohmann::ordered_json;

// Builds one reply's grammar. Thread-compatible.
class Builder {
 public:
  Builder(const ReplyDialect& dialect, const text::Tokenizer& tokenizer)
      : dialect_(dialect), tokenizer_(tokenizer), schemas_(b_) {}

  // `marker` as its special token, or its bytes where the tokenizer has none.
  void Mark(std::string_view marker, Sequence& sequence) {
    if (IsToken(marker)) {
      sequence.push_back(GrammarBuilder::Marker(*tokenizer_.TokenToId(marker)));
    } else {
      b_.AppendLiteral(marker, sequence);
    }
  }
  void Text(std::string_view text, Sequence& sequence) { b_.AppendLiteral(text, sequence); }

  // Whether `marker` is one token of this tokenizer.
  bool IsToken(std::string_view marker) const {
    const std::optional<int32_t> id = tokenizer_.TokenToId(marker);
    return id && !tokenizer_.PieceBytes(*id);
  }

  // Free text (reasoning) up to `close`: any bytes when `close` is one token
  // (the text cannot spell it); else any but '<', so that the text cannot
  // hold the close's bytes and the parser ends the reasoning where this does.
  Element FreeText(std::string_view close) {
    int32_t& rule = IsToken(close) ? free_text_ : free_text_no_tag_;
    if (rule < 0) {
      constrain::ByteSet bytes;
      bytes.set();
      if (!IsToken(close)) bytes.reset('<');
      rule = b_.AddRule("text");
      b_.AddAlternative(rule, {b_.Bytes(bytes), GrammarBuilder::Ref(rule)});
      b_.AddAlternative(rule, {});
    }
    return GrammarBuilder::Ref(rule);
  }

  // What may come before the answer: reasoning to its close when the reply
  // starts inside it; gpt-oss's optional analysis message.
  Sequence Preamble() {
    Sequence out;
    if (dialect_.format == ReplyFormat::kGptOss) {
      Sequence analysis;
      if (!dialect_.starts_in_reasoning) {
        Mark(kHarmonyChannel, analysis);
        Text("analysis", analysis);
        Mark(kHarmonyMessage, analysis);
      }
      analysis.push_back(FreeText(kHarmonyEnd));
      Mark(kHarmonyEnd, analysis);
      Mark(kHarmonyStart, analysis);
      Text("assistant", analysis);
      if (dialect_.starts_in_reasoning) return analysis;
      out.push_back(GrammarBuilder::Ref(b_.AddRule("analysis", {analysis, {}})));
    } else if (dialect_.format != ReplyFormat::kPlain) {
      // The reasoning block: open already (the rest of it, then the answer),
      // or one the model may open itself (Qwen3 and the others that write
      // <think> first) before the answer.
      Sequence reasoning;
      if (!dialect_.starts_in_reasoning) Mark(kThinkOpen, reasoning);
      reasoning.push_back(FreeText(kThinkClose));
      Mark(kThinkClose, reasoning);
      const int32_t newlines = b_.AddRule("newlines", {b_.Literal("\n\n"), b_.Literal("\n"), {}});
      reasoning.push_back(GrammarBuilder::Ref(newlines));
      if (dialect_.starts_in_reasoning) return reasoning;
      out.push_back(GrammarBuilder::Ref(b_.AddRule("reasoning", {reasoning, {}})));
    }
    return out;
  }

  // The JSON content of response_format.
  absl::StatusOr<Sequence> JsonAnswer(const Json& format) {
    int32_t value;
    if (format["type"] == "json_object") {
      value = schemas_.AnyObject();
    } else {
      absl::StatusOr<int32_t> compiled = schemas_.Compile(format["schema"]);
      if (!compiled.ok()) return compiled.status();
      value = *compiled;
    }
    Sequence out;
    if (dialect_.format == ReplyFormat::kGptOss) {
      Mark(kHarmonyChannel, out);
      Text("final", out);
      Mark(kHarmonyMessage, out);
    }
    out.push_back(GrammarBuilder::Ref(value));
    return out;
  }

  // One call of `function` ({"name", "parameters"}) in the dialect's syntax.
  absl::StatusOr<Sequence> Call(const Json& function) {
    const std::string name = function["name"].get<std::string>();
    int32_t arguments;
    const auto parameters = function.find("parameters");
    if (parameters == function.end() || parameters->is_null()) {
      arguments = schemas_.AnyObject();
    } else {
      absl::StatusOr<int32_t> compiled = schemas_.Compile(*parameters);
      if (!compiled.ok()) {
        return absl::InvalidArgumentError(
            absl::StrCat("tool \"", name, "\": ", compiled.status().message()));
      }
      arguments = *compiled;
    }
    const Element args = GrammarBuilder::Ref(arguments);
    Sequence out;
    switch (dialect_.format) {
      case ReplyFormat::kQwen3:
        Mark(kQwenCallOpen, out);
        Text(absl::StrCat("\n{\"name\": ", Json(name).dump(), ", \"arguments\": "), out);
        out.push_back(args);
        Text("}\n", out);
        Mark(kQwenCallClose, out);
        break;
      case ReplyFormat::kDeepSeekV3:
        Mark(kDsCallOpen, out);
        if (dialect_.fenced_arguments) {
          Text("function", out);
          Mark(kDsSep, out);
          Text(absl::StrCat(name, "\n```json\n"), out);
          out.push_back(args);
          Text("\n```", out);
        } else {
          Text(name, out);
          Mark(kDsSep, out);
          out.push_back(args);
        }
        Mark(kDsCallClose, out);
        break;
      case ReplyFormat::kKimiK2: {
        Mark(kKimiCallOpen, out);
        Text(absl::StrCat("functions.", name, ":"), out);
        constrain::ByteSet digit;
        for (char c = '0'; c <= '9'; ++c) digit.set(c);
        const Element d = b_.Bytes(digit);
        // The call's index, 0 to 999.
        out.push_back(GrammarBuilder::Ref(b_.AddRule("index", {{d}, {d, d}, {d, d, d}})));
        Mark(kKimiArgs, out);
        out.push_back(args);
        Mark(kKimiCallClose, out);
        break;
      }
      case ReplyFormat::kGptOss:
        Mark(kHarmonyChannel, out);
        Text(absl::StrCat("commentary to=functions.", name, " "), out);
        Mark("<|constrain|>", out);
        Text("json", out);
        Mark(kHarmonyMessage, out);
        out.push_back(args);
        break;
      case ReplyFormat::kPlain:
        return absl::InvalidArgumentError("unreachable");
    }
    return out;
  }

  // One or more calls of `functions`, wrapped as the dialect wraps them.
  absl::StatusOr<Sequence> Calls(const std::vector<Json>& functions, bool parallel) {
    const int32_t call = b_.AddRule("call");
    for (const Json& function : functions) {
      absl::StatusOr<Sequence> one = Call(function);
      if (!one.ok()) return one.status();
      b_.AddAlternative(call, *std::move(one));
    }
    Sequence separator;  // what the templates write between calls
    if (dialect_.format == ReplyFormat::kQwen3 ||
        (dialect_.format == ReplyFormat::kDeepSeekV3 && dialect_.fenced_arguments)) {
      Text("\n", separator);
    }
    const bool many = parallel && dialect_.format != ReplyFormat::kGptOss;
    Sequence calls{GrammarBuilder::Ref(call)};
    if (many) {
      const int32_t more = b_.AddRule("more-calls");
      Sequence again = separator;
      again.push_back(GrammarBuilder::Ref(call));
      again.push_back(GrammarBuilder::Ref(more));
      b_.AddAlternative(more, std::move(again));
      b_.AddAlternative(more, {});
      calls.push_back(GrammarBuilder::Ref(more));
    }
    Sequence out;
    if (dialect_.format == ReplyFormat::kDeepSeekV3) Mark(kDsSectionOpen, out);
    if (dialect_.format == ReplyFormat::kKimiK2) Mark(kKimiSectionOpen, out);
    out.insert(out.end(), calls.begin(), calls.end());
    if (dialect_.format == ReplyFormat::kDeepSeekV3) Mark(kDsSectionClose, out);
    if (dialect_.format == ReplyFormat::kKimiK2) Mark(kKimiSectionClose, out);
    return out;
  }

  absl::StatusOr<constrain::Grammar> Build(Sequence body) && {
    Sequence root = Preamble();
    root.insert(root.end(), body.begin(), body.end());
    return std::move(b_).Build(b_.AddRule("reply", {root}));
  }

 private:
  const ReplyDialect& dialect_;
  const text::Tokenizer& tokenizer_;
  GrammarBuilder b_;
  constrain::JsonSchemaGrammar schemas_;
  int32_t free_text_ = -1, free_text_no_tag_ = -1;
};

// The functions tool_choice forces ({"name", "parameters"}), none when it forces none.
std::variant<std::vector<Json>, ApiError> ForcedFunctions(const CompletionRequest& request) {
  const Json& choice = request.tool_choice;
  const bool required = choice == "required";
  if (!required && !choice.is_object()) return std::vector<Json>{};
  if (!request.tools.is_array() || request.tools.empty()) {
    return BadRequest("tool_choice",
                      "tool_choice forces a tool call, but the request has no tools");
  }
  std::string named;
  if (!required) {
    const auto function = choice.find("function");
    if (function == choice.end() || !function->is_object() || !function->contains("name") ||
        !(*function)["name"].is_string()) {
      return BadRequest("tool_choice", "tool_choice.function.name must be a string");
    }
    named = (*function)["name"].get<std::string>();
  }
  std::vector<Json> functions;
  for (const Json& tool : request.tools) {
    const Json& function = tool["function"];
    if (required || function["name"] == named) functions.push_back(function);
  }
  if (functions.empty()) {
    return BadRequest("tool_choice",
                      absl::StrCat("tool_choice names \"", named, "\", which is not in tools"));
  }
  return functions;
}

}  // namespace

ReplyDialect DialectOf(ReplyFormat format, std::string_view template_source,
                       std::string_view rendered_prompt) {
  return ReplyDialect{
      .format = format,
      .starts_in_reasoning = ReplyStartsInReasoning(format, rendered_prompt),
      .fenced_arguments = template_source.find("```json") != std::string_view::npos};
}

std::variant<std::shared_ptr<const constrain::Grammar>, ApiError> ReplyGrammar(
    const CompletionRequest& request, const ReplyDialect& dialect,
    const text::Tokenizer& tokenizer) {
  std::variant<std::vector<Json>, ApiError> forced = ForcedFunctions(request);
  if (ApiError* error = std::get_if<ApiError>(&forced)) return *error;
  const std::vector<Json>& functions = std::get<std::vector<Json>>(forced);
  if (functions.empty() && request.output_format.is_null()) {
    return std::shared_ptr<const constrain::Grammar>();
  }
  if (!functions.empty() && !request.output_format.is_null()) {
    return BadRequest(request.output_format_field,
                      absl::StrCat(request.output_format_field,
                                   " cannot be combined with a tool_choice that forces a call"));
  }
  Builder builder(dialect, tokenizer);
  absl::StatusOr<Sequence> body;
  std::string field;
  if (!functions.empty()) {
    if (dialect.format == ReplyFormat::kPlain) {
      return BadRequest("tool_choice",
                        "the model's chat template writes no tool calls WARP can read, so a "
                        "call cannot be forced; use \"auto\" or \"none\"");
    }
    body = builder.Calls(functions, request.parallel_tool_calls);
    field = "tools";
  } else {
    body = builder.JsonAnswer(request.output_format);
    field = request.output_format_field;
  }
  if (!body.ok()) return BadRequest(field, std::string(body.status().message()));
  absl::StatusOr<constrain::Grammar> grammar = std::move(builder).Build(*std::move(body));
  if (!grammar.ok()) return BadRequest(field, std::string(grammar.status().message()));
  return std::make_shared<const constrain::Grammar>(*std::move(grammar));
}

}  // namespace warp::computed::serve
