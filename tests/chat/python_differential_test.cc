// Targeted snippets rendered by WARP and by Python Jinja2 with transformers'
// settings (tests/chat/reference_render.py): byte-identical, and an error
// wherever Python raises one. Each case is a place where @huggingface/jinja
// (the earlier peer) renders differently and WARP now follows Python
// (issue 16). The real templates are compared in family_test.cc
// (*MatchesPython), and differential_test.cc / random_differential_test.cc
// take Python's result wherever the two peers differ.
#include <string>
#include <vector>

#include "computed/chat/jinja_template.h"
#include "gtest/gtest.h"
#include "tests/chat/reference.h"

namespace warp::chat {
namespace {

using nlohmann::json;
using testing::ReferenceCase;
using testing::ReferenceResult;

struct Case {
  const char* name;
  const char* source;
  json context = json::object();
};

const json kMessages = json::parse(R"([
  {"role": "system", "content": "Be brief."},
  {"role": "user", "content": "  Hi there \n"}
])");

std::vector<Case> PythonCases() {
  return {
      {"tojson_non_ascii", "{{ 'é ✓ 日本 🙂 \\u00e9' | tojson }}|{{ {'k': 'é'} | tojson }}"},
      {"tojson_nested", "{{ v | tojson }}|{{ v | tojson(indent=2) }}|{{ v | tojson(indent=0) }}|{{ v | tojson(separators=(',', ':')) }}|{{ v | tojson(sort_keys=true) }}",
       {{"v", json::parse(R"({"b": [1, 2.0, {"c": null}], "a": {"x": true, "y": []}, "e": {}})")}}},
      {"string_of_values", "{{ true | string }}|{{ none | string }}|{{ ['a', 1] | string }}|{{ {'a': 'b'} | string }}|{{ 1.0 | string }}|{{ (1, 2) | string }}"},
      {"items_filter", "{% for k, v in d | items %}{{ k }}={{ v }};{% endfor %}{{ d | items | list }}", {{"d", {{"b", 1}, {"a", 2}}}}},
      {"defined_tests", "{{ x is defined }}{{ x.y is defined }}{{ m[0].role is defined }}{{ m[0].nope is defined }}{{ y is not defined }}", {{"x", 1}, {"m", kMessages}}},
      {"trim_variants", "[{{ '  a  ' | trim }}][{{ 'xxaxx' | trim('x') }}][{{ s.strip('\\n') }}]", {{"s", "\n  x y  \n"}}},
      {"concat_types", "{{ 'a' ~ true ~ none ~ [1] ~ {'k': 1} }}"},
      {"plus_string_int_error", "{{ 'n=' + 2 }}"},
      {"string_compare", "{{ 'a' < 'b' }}{{ 'b' > 'ab' }}"},
      {"string_mul", "{{ 'ab' * 3 }}{{ '=' * 0 }}"},
      {"eq_no_coercion", "{{ '1' == 1 }}{{ true == 1 }}{{ 1 == 1.0 }}{{ [1, 2] == [1, 2] }}{{ {'a': 1} == {'a': 1} }}"},
      {"keys_order", "{{ d }}|{{ d | tojson }}", {{"d", {{"b", 1}, {"10", 2}, {"2", 3}, {"a", 4}}}}},
      {"safe_trim", "{{ '<b>' | safe }}|{{ ' x ' | trim | safe }}|{{ '<&>' }}"},
      {"dict_literal_print", "{% set d = {'a': 1, 'b': 'two', 'c': none} %}{{ d }}|{{ d.items() | list }}|{{ d.keys() | list }}"},
      {"trailing_newline", "a\n"},
      {"generation", "{% for m in ['x', 'y'] %}{% generation %}{{ m }}\n{% endgeneration %}{% endfor %}"},
      {"namespace_print", "{% set ns = namespace(a=1, b='x') %}{{ ns.a }}{{ ns.b }}"},
      {"join_mixed", "{{ [1, 'a', none, true] | join(',') }}"},
      {"length_of_dict", "{{ {'a': 1} | length }}{{ 'héllo' | length }}"},
      {"slice_neg", "{{ 'hello'[-3:] }}{{ [1,2,3][::-1] }}{{ 'abc'[5:] }}"},
      {"none_methods", "{{ none | default('d') }}|{{ missing | default('d') }}|{{ missing }}"},
      {"undefined_in_for", "{% for x in missing %}x{% else %}empty{% endfor %}"},
      {"upper_lower", "{{ 'ǅ straße' | upper }}|{{ 'ÀÉ' | lower }}"},
  };
}

void Check(const std::vector<Case>& cases) {
  std::vector<ReferenceCase> reference_cases;
  for (const Case& c : cases) reference_cases.push_back({c.source, c.context});
  auto results = testing::RenderWithPython(reference_cases);
  ASSERT_TRUE(results.ok()) << results.status();
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].name);
    const ReferenceResult& expected = (*results)[i];
    absl::StatusOr<JinjaTemplate> parsed = JinjaTemplate::Parse(cases[i].source, "case");
    absl::StatusOr<std::string> rendered =
        parsed.ok() ? parsed->Render(cases[i].context) : absl::StatusOr<std::string>(parsed.status());
    if (!expected.ok) {
      EXPECT_FALSE(rendered.ok()) << "python fails (" << expected.error << ") but we render: "
                                  << testing::Visible(*rendered);
      continue;
    }
    EXPECT_TRUE(rendered.ok()) << rendered.status() << "\npython: " << testing::Visible(expected.output);
    if (rendered.ok()) {
      EXPECT_EQ(testing::Visible(*rendered), testing::Visible(expected.output));
    }
  }
}

TEST(PythonDifferentialTest, PythonCases) { Check(PythonCases()); }

}  // namespace
}  // namespace warp::chat
