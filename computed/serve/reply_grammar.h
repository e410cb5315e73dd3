#pragma once

// ReplyGrammar: what a request that constrains its reply makes the model
// write, in the model's own dialect (reply_parser.h), as a grammar for
// constrained decoding:
//   - response_format json_object / json_schema (text.format in Responses):
//     the content is one JSON value of the schema;
//   - tool_choice "required" or a named function (Anthropic any / tool): a
//     call of one of those tools in the dialect's tool-call syntax, its
//     arguments valid under the tool's parameters; more calls may follow
//     unless parallel_tool_calls is false (harmony: one call, which ends the turn).
// A reply may reason freely first: up to the block's close when it starts
// inside one (ReplyStartsInReasoning), else in a <think> block the model
// opens itself; gpt-oss in an analysis message. Markers are their special
// tokens where the tokenizer has them.

#include <memory>
#include <string_view>
#include <variant>

#include "computed/constrain/grammar.h"
#include "computed/serve/api_error.h"
#include "computed/serve/completion_request.h"
#include "computed/serve/reply_parser.h"
#include "computed/text/tokenizer.h"

namespace warp::computed::serve {

struct ReplyDialect {
  ReplyFormat format = ReplyFormat::kPlain;
  bool starts_in_reasoning = false;
  // DeepSeek V3/R1 write "function<sep>NAME\n```json\nARGS\n```"; V3.1 "NAME<sep>ARGS".
  bool fenced_arguments = false;
};

// The dialect of a chat template's source, for a reply to `rendered_prompt`.
ReplyDialect DialectOf(ReplyFormat format, std::string_view template_source,
                       std::string_view rendered_prompt);

// The grammar `request` puts on its reply, null when it puts none; or the
// 400 naming what cannot be constrained (a schema keyword and its place, a
// tool_choice naming no tool, a dialect with no tool-call syntax).
std::variant<std::shared_ptr<const constrain::Grammar>, ApiError> ReplyGrammar(
    const CompletionRequest& request, const ReplyDialect& dialect,
    const text::Tokenizer& tokenizer);

}  // namespace warp::computed::serve
