// The Jinja engine on its own: expressions, statements, filters and tests,
// with expected outputs written out (the reference comparisons are in
// differential_test.cc and family_test.cc).

#include <string>
#include <thread>
#include <vector>

#include "computed/chat/jinja_template.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace warp::chat {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;
using warp::testing::StatusIs;

// Renders `source` with `context`; failures come back as "ERROR: message".
std::string R(const std::string& source, const json& context = json::object()) {
  absl::StatusOr<JinjaTemplate> tmpl = JinjaTemplate::Parse(source, "t");
  if (!tmpl.ok()) return "ERROR: " + std::string(tmpl.status().message());
  absl::StatusOr<std::string> out = tmpl->Render(context);
  if (!out.ok()) return "ERROR: " + std::string(out.status().message());
  return *out;
}

TEST(JinjaExpressionTest, Arithmetic) {
  EXPECT_EQ(R("{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 // 2 }} {{ 7 % 3 }} {{ 7 / 2 }} {{ 2 ** 3 ** 2 }}"),
            "7 9 3 1 3.5 64");
  EXPECT_EQ(R("{{ -x + 1 }} {{ 1.5 + 1 }} {{ 4 / 2 }}", {{"x", 5}}), "-4 2.5 2.0");
}

TEST(JinjaExpressionTest, ComparisonsAndEquality) {
  EXPECT_EQ(R("{{ 1 < 2 }} {{ 2 >= 3 }} {{ 'a' == 'a' }} {{ 'a' != 'b' }} {{ 1 == 1.0 }}"),
            "True False True True True");  // Python prints True/False (issue 16)
}

TEST(JinjaExpressionTest, MembershipAndNot) {
  EXPECT_EQ(R("{{ 'ell' in 'hello' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 3 not in [1] }} {{ not true }}"),
            "True True True True False");  // Python prints True/False (issue 16)
  EXPECT_EQ(R("{{ 'x' in missing }}"), "False");  // Jinja2's Undefined is an empty iterable
}

TEST(JinjaExpressionTest, AndOrShortCircuitAndReturnOperands) {
  EXPECT_EQ(R("{{ false and missing.f() }}|{{ true or missing.f() }}|{{ 0 or 'b' }}|{{ 'a' and 'b' }}"),
            "False|True|b|b");  // Python prints True/False (issue 16)
}

TEST(JinjaExpressionTest, TildeConcatenatesAnything) {
  EXPECT_EQ(R("{{ 'n' ~ 1 ~ 2.0 ~ true }}"), "n12.0True");  // str() of each, as Python Jinja2 (issue 16)
  EXPECT_EQ(R("{{ 'n' + 1 }}").rfind("ERROR", 0), 0u);  // Python: str + int is a TypeError (the JS peer concatenates)
}

TEST(JinjaExpressionTest, SlicingAndIndexing) {
  const json ctx = {{"xs", {1, 2, 3, 4}}, {"s", "héllo"}};
  EXPECT_EQ(R("{{ xs[::-1] }} {{ xs[1:] }} {{ xs[:-1] }} {{ xs[-1] }} {{ xs[9] }}|", ctx),
            "[4, 3, 2, 1] [2, 3, 4] [1, 2, 3] 4 |");
  EXPECT_EQ(R("{{ s[::-1] }} {{ s[1:3] }} {{ s[1] }}", ctx), "olléh él é");
}

TEST(JinjaExpressionTest, DictAndAttributeAccess) {
  const json ctx = {{"m", {{"role", "user"}, {"content", "hi"}}}};
  EXPECT_EQ(R("{{ m['role'] }} {{ m.content }} {{ m.missing }}|{{ m.get('role') }} {{ m.get('x', 'd') }}", ctx),
            "user hi |user d");
}

TEST(JinjaExpressionTest, TernaryAndSelect) {
  EXPECT_EQ(R("{{ 'a' if x else 'b' }}{{ 'c' if not x }}", {{"x", false}}), "bc");
}

TEST(JinjaExpressionTest, PrintsLikeTheReference) {
  EXPECT_EQ(R("{{ none }}|{{ missing }}|{{ true }}|{{ 1.0 }}|{{ [1, 'a'] }}|{{ {'a': none} }}"),
            "None||True|1.0|[1, 'a']|{'a': None}");  // Python's str() and repr() (issue 16)
}

TEST(JinjaStatementTest, ForLoopVariables) {
  EXPECT_EQ(R("{% for x in xs %}{{ loop.index }}{{ loop.index0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }} {% endfor %}",
              {{"xs", {"a", "b"}}}),
            "10TrueFalse2 21FalseTrue2 ");  // Python prints True/False (issue 16)
}

TEST(JinjaStatementTest, ForElseBreakContinue) {
  EXPECT_EQ(R("{% for x in [] %}x{% else %}empty{% endfor %}"), "empty");
  EXPECT_EQ(R("{% for x in [1, 2, 3, 4] %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 4 %}{% break %}{% endif %}{{ x }}{% endfor %}"),
            "13");
  EXPECT_EQ(R("{% for x in [1, 2, 3] if x != 2 %}{{ x }}{% endfor %}"), "13");
  EXPECT_EQ(R("{% for k, v in {'a': 1}.items() %}{{ k }}={{ v }}{% endfor %}"), "a=1");
}

TEST(JinjaStatementTest, WhitespaceControl) {
  EXPECT_EQ(R("a  {%- if true -%}  b  {%- endif -%}  c"), "abc");
  EXPECT_EQ(R("a\n  {{- 'b' -}}\n  c"), "abc");
  EXPECT_EQ(R("{% if true %}\n  x\n{% endif %}\n"), "  x\n");  // trim_blocks, and the final newline dropped
  EXPECT_EQ(R("  {% if true %}x{% endif %}"), "x");             // lstrip_blocks
  EXPECT_EQ(R("  {{ 'x' }}"), "  x");                           // but not before {{
}

TEST(JinjaStatementTest, SetAndNamespace) {
  EXPECT_EQ(R("{% set x = 1 %}{% for i in [1] %}{% set x = 2 %}{% endfor %}{{ x }}"), "1");
  EXPECT_EQ(R("{% set ns = namespace(x=1) %}{% for i in [1, 2] %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}"), "4");
  EXPECT_EQ(R("{% set a, b = 'p', 'q' %}{{ b }}{{ a }}"), "qp");
  EXPECT_EQ(R("{% set block %}x{{ 1 }}{% endset %}[{{ block }}]"), "[x1]");
}

TEST(JinjaStatementTest, IfElifElse) {
  const std::string source = "{% if x == 1 %}one{% elif x == 2 %}two{% else %}other{% endif %}";
  EXPECT_EQ(R(source, {{"x", 1}}), "one");
  EXPECT_EQ(R(source, {{"x", 2}}), "two");
  EXPECT_EQ(R(source, {{"x", 3}}), "other");
}

TEST(JinjaStatementTest, MacrosAndCallBlocks) {
  EXPECT_EQ(R("{% macro tag(name, body='') %}<{{ name }}>{{ body }}</{{ name }}>{% endmacro %}{{ tag('b', 'x') }}{{ tag(name='i') }}"),
            "<b>x</b><i></i>");
  EXPECT_EQ(R("{% macro box() %}[{{ caller() }}]{% endmacro %}{% call box() %}in{% endcall %}"), "[in]");
  EXPECT_EQ(R("{% filter upper %}abc{% endfilter %}"), "ABC");
}

TEST(JinjaFilterTest, StringFilters) {
  EXPECT_EQ(R("[{{ '  a b \n' | trim }}] {{ 'héllo' | length }} {{ 'ab' | upper }} {{ 'a b' | title }}"),
            "[a b] 5 AB A B");
  EXPECT_EQ(R("{{ 'a\nb' | indent(2) }}|{{ 'a,b' | replace(',', ';') }}"), "a\n  b|a;b");
}

TEST(JinjaFilterTest, ListFilters) {
  EXPECT_EQ(R("{{ xs | length }} {{ xs | first }} {{ xs | last }} {{ xs | join(', ') }} {{ xs | sort | list }}",
              {{"xs", {3, 1, 2}}}),
            "3 3 2 3, 1, 2 [1, 2, 3]");
  EXPECT_EQ(R("{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='content') | join }}",
              {{"ms", json::parse(R"([{"role": "user", "content": "a"}, {"role": "bot", "content": "b"}])")}}),
            "a");
}

TEST(JinjaFilterTest, DefaultFilter) {
  EXPECT_EQ(R("{{ missing | default('d') }} {{ '' | default('d') }}|{{ '' | default('d', true) }}"), "d |d");
}

TEST(JinjaFilterTest, TojsonMatchesTheReferenceFormat) {
  const json ctx = {{"v", json::parse(R"({"b": [1, 2.5, null], "a": "é\"</x>"})")}};
  EXPECT_EQ(R("{{ v | tojson }}", ctx), R"({"a": "é\"</x>", "b": [1, 2.5, null]})");
  EXPECT_EQ(R("{{ v | tojson(indent=2) }}", ctx),
            "{\n  \"a\": \"é\\\"</x>\",\n  \"b\": [\n    1,\n    2.5,\n    null\n  ]\n}");
  EXPECT_EQ(R("{{ v.a | tojson(ensure_ascii=true) }}", ctx), R"("\u00e9\"</x>")");
  EXPECT_EQ(R("{{ v.b | tojson(separators=(',', ':')) }}", ctx), "[1,2.5,null]");
}

TEST(JinjaTestTest, Tests) {
  const json ctx = {{"s", "x"}, {"n", nullptr}, {"d", json::object()}, {"l", json::array()}};
  EXPECT_EQ(R("{{ s is defined }}{{ u is defined }}{{ u is undefined }}{{ n is none }}{{ s is string }}"
              "{{ d is mapping }}{{ l is sequence }}{{ s is not mapping }}{{ 1 is number }}",
              ctx),
            "TrueFalseTrueTrueTrueTrueTrueTrueTrue");  // Python prints True/False (issue 16)
}

TEST(JinjaTestTest, StringMethods) {
  EXPECT_EQ(R("{{ s.startswith('<a>') }} {{ s.endswith('</a>') }} {{ s.split('</a>')[0] }} {{ ' x '.strip() }}",
              {{"s", "<a>b</a>"}}),
            "True True <a>b x");  // Python prints True/False (issue 16)
}

TEST(JinjaTemplateTest, RenderOrderedKeepsKeyOrder) {
  absl::StatusOr<JinjaTemplate> tmpl = JinjaTemplate::Parse("{{ d | tojson }}", "t");
  WARP_ASSERT_OK(tmpl);
  nlohmann::ordered_json ordered;
  ordered["d"]["z"] = 1;
  ordered["d"]["a"] = 2;
  EXPECT_EQ(*tmpl->RenderOrdered(ordered), R"({"z": 1, "a": 2})");
  EXPECT_EQ(*tmpl->Render(json::parse(R"({"d": {"z": 1, "a": 2}})")), R"({"a": 2, "z": 1})");
}

TEST(JinjaTemplateTest, ContextMayNotRedefineGlobals) {
  absl::StatusOr<JinjaTemplate> tmpl = JinjaTemplate::Parse("{{ x }}", "t");
  WARP_ASSERT_OK(tmpl);
  EXPECT_THAT(tmpl->Render({{"range", 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'range' would redefine a Jinja global")));
  EXPECT_THAT(tmpl->Render(json::array()), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a JSON object")));
}

TEST(JinjaTemplateTest, RendersFromManyThreadsAtOnce) {
  absl::StatusOr<JinjaTemplate> tmpl = JinjaTemplate::Parse(
      "{% set ns = namespace(s='') %}{% for m in messages %}{% set ns.s = ns.s ~ m %}{% endfor %}{{ ns.s }}", "t");
  WARP_ASSERT_OK(tmpl);
  std::vector<std::thread> threads;
  std::vector<std::string> outputs(4);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<std::string> out = tmpl->Render({{"messages", {std::to_string(t), "x"}}});
        outputs[t] = out.ok() ? *out : "error";
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(outputs[t], std::to_string(t) + "x");
}

}  // namespace
}  // namespace warp::chat
