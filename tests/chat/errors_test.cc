// Unsupported features and broken templates fail with the feature and its
// line:column, at parse time where possible; render-time errors name where.

#include <string>

#include "computed/chat/jinja_template.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace warp::chat {
namespace {

using nlohmann::json;
using ::testing::AllOf;
using ::testing::HasSubstr;
using warp::testing::StatusIs;

absl::Status ParseError(const std::string& source) {
  absl::StatusOr<JinjaTemplate> tmpl = JinjaTemplate::Parse(source, "chat template");
  return tmpl.status();
}

absl::Status RenderError(const std::string& source, const json& context = json::object()) {
  absl::StatusOr<JinjaTemplate> tmpl = JinjaTemplate::Parse(source, "chat template");
  if (!tmpl.ok()) return absl::InternalError("parse failed: " + tmpl.status().ToString());
  return tmpl->Render(context).status();
}

TEST(JinjaErrorTest, UnsupportedStatementsFailAtParseNamingTheFeatureAndPosition) {
  EXPECT_THAT(ParseError("ok\n\n    {% include 'x' %}"),
              StatusIs(absl::StatusCode::kUnimplemented,
                       "chat template line 3, column 8: unsupported Jinja feature: {% include %}"));
  for (const char* statement : {"extends 'x'", "import 'x' as y", "from 'x' import y", "block b", "with x = 1",
                                "raw", "autoescape true", "do x"}) {
    SCOPED_TRACE(statement);
    EXPECT_THAT(ParseError(std::string("{% ") + statement + " %}"),
                StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("line 1, column 4: unsupported Jinja feature: {% ")));
  }
  EXPECT_THAT(ParseError("{% frobnicate %}"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("unsupported Jinja feature: unknown statement {% frobnicate %}")));
}

TEST(JinjaErrorTest, UnknownFiltersAndTestsFailAtParse) {
  EXPECT_THAT(ParseError("{{ x | frobnicate }}"),
              StatusIs(absl::StatusCode::kUnimplemented, "chat template line 1, column 8: unsupported Jinja filter: frobnicate"));
  EXPECT_THAT(ParseError("{{ x | upper(1) }}"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("unsupported Jinja filter: upper(...)")));
  EXPECT_THAT(ParseError("{% if x is sameas is none %}{% endif %}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("You cannot chain multiple tests with is")));
  EXPECT_THAT(ParseError("{{ x is frob }}"),
              StatusIs(absl::StatusCode::kUnimplemented, "chat template line 1, column 9: unsupported Jinja test: frob"));
  EXPECT_THAT(ParseError("{% for x in xs recursive %}{% endfor %}"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("unsupported Jinja feature: recursive for loops")));
}

TEST(JinjaErrorTest, UnterminatedBlocksNameTheOpener) {
  EXPECT_THAT(ParseError("a\n{% if x %}b"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unterminated {% if %} (opened at line 2, column 4): expected {% endif %}")));
  EXPECT_THAT(ParseError("{% for x in xs %}{% if x %}{% endfor %}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected {% endfor %}")));
  EXPECT_THAT(ParseError("{% macro m() %}x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected {% endmacro %}")));
  EXPECT_THAT(ParseError("{% endif %}"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 1, column 4: unexpected {% endif %}")));
}

TEST(JinjaErrorTest, UnterminatedTagsAndLiterals) {
  EXPECT_THAT(ParseError("{{ x"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected end of template")));
  EXPECT_THAT(ParseError("{{ x }"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected '}}'")));
  EXPECT_THAT(ParseError("{% if x "), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected end of template")));
  EXPECT_THAT(ParseError("line\n{{ 'abc }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, "chat template line 2, column 4: unterminated string literal"));
  EXPECT_THAT(ParseError("{# note"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unterminated comment")));
  EXPECT_THAT(ParseError("{{ 'a\\q' }}"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown escape sequence '\\q'")));
  EXPECT_THAT(ParseError("{{ a ! b }}"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("column 6: unexpected character '!'")));
}

TEST(JinjaErrorTest, UndefinedMethodsFailAtRenderWithTheirPosition) {
  EXPECT_THAT(RenderError("\n  {{ messages.append(1) }}", {{"messages", json::array()}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "chat template line 2, column 6: unknown method 'append' of list"));
  EXPECT_THAT(RenderError("{{ s.format(1) }}", {{"s", "x"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown method 'format' of string")));
  EXPECT_THAT(RenderError("{{ nothing() }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'nothing' is not a function")));
}

TEST(JinjaErrorTest, RaiseExceptionCarriesTheTemplatesMessage) {
  EXPECT_THAT(RenderError("{% if true %}\n{{ raise_exception('Only user and assistant roles are supported!') }}{% endif %}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "chat template line 2, column 4: raise_exception: Only user and assistant roles are supported!"));
}

TEST(JinjaErrorTest, TypeErrorsNameTheOperation) {
  // Python compares strings, and iterates them (issue 16): neither is an error any more.
  EXPECT_THAT(RenderError("{{ 'a' < 1 }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unsupported operator '<' between string and int")));
  EXPECT_THAT(RenderError("{{ x + 1 }}", {{"x", nullptr}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot apply '+' to none")));
  EXPECT_THAT(RenderError("{% for c in 1 %}{% endfor %}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot iterate over a int")));
  EXPECT_THAT(RenderError("{{ 1 | trim }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("filter 'trim' does not apply to a int")));
  EXPECT_THAT(RenderError("{% break %}"), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("{% break %} outside of a loop")));
  EXPECT_THAT(RenderError("{{ [1, 'a'] | sort }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot compare int with string")));
}

// The Jinja2 builtins' bad arguments are named (python_filters.cc).
TEST(JinjaErrorTest, BuiltinFilterArgumentsAreNamed) {
  const std::pair<const char*, const char*> cases[] = {
      {"{{ [1] | batch(0) }}", "batch: linecount must be a positive int"},
      {"{{ [1] | slice(0) }}", "slice: slices must be a positive int"},
      {"{{ 1.5 | round(1, 'up') }}", "round: method must be 'common', 'ceil' or 'floor'"},
      {"{{ 'x' | round }}", "round applies to a number, not string"},
      {"{{ ['a'] | sum }}", "sum: unsupported operand types for +: int and string"},
      {"{{ 3 | min }}", "min applies to a list, not int"},
      {"{{ 'x' | center('w') }}", "center: width must be an int"},
      {"{{ '%d' | format('a') }}", "format: %d needs a number, not string"},
      {"{{ 'a' | format(1) }}", "format: not all arguments converted during string formatting"},
      {"{{ 3 | count }}", "count applies to a string, list or dict, not int"},
  };
  for (const auto& [source, message] : cases) {
    EXPECT_THAT(RenderError(source), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message))) << source;
  }
  EXPECT_THAT(RenderError("{{ '%q' | format(1) }}"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("format: the conversion %q is not supported")));
}

TEST(JinjaErrorTest, UnsupportedFilterOptionsFailAtRender) {
  // tojson(sort_keys=true) is supported now: Python sorts by code point (issue 16).
  EXPECT_THAT(RenderError("{{ ['a'] | map('wordwrap') }}"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("unsupported Jinja feature: map('wordwrap', ...)")));
  EXPECT_THAT(RenderError("{{ [] | map(reverse=true) }}"),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("map() without attribute=")));
}

TEST(JinjaErrorTest, RunawayRecursionIsAnError) {
  EXPECT_THAT(RenderError("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("macro calls nest deeper than")));
  EXPECT_THAT(ParseError("{{ " + std::string(2000, '(') + "1" + std::string(2000, ')') + " }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("nests too deeply")));
}

// Issue 15, confirmed by tests/fuzz (chat_template_fuzz): loops nested over
// range(10000000) rendered for hours and grew the output without bound. Work,
// strings and lists are bounded now, and the error names the line.
TEST(JinjaErrorTest, UnboundedWorkOrOutputIsAnErrorNamingTheLine) {
  EXPECT_THAT(RenderError("{% for i in range(1000) %}\n{% for j in range(1000) %}"
                          "{% for k in range(1000) %}{{ k }}{% endfor %}{% endfor %}{% endfor %}"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("chat template line 2"), HasSubstr("1000000 steps"))));
  EXPECT_THAT(RenderError("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(30) %}\n"
                          "{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
              StatusIs(absl::StatusCode::kResourceExhausted,
                       AllOf(HasSubstr("line 2"), HasSubstr("a string of more than 16 MiB"))));
  EXPECT_THAT(RenderError("{{ range(2000000) | length }}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("range() is too large")));
}

}  // namespace
}  // namespace warp::chat
