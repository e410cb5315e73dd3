// Randomly generated expressions and statements (fixed seed) rendered by both
// engines: catches divergences from @huggingface/jinja in operator, filter
// and method combinations no hand-written case thought of.

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "computed/chat/jinja_template.h"
#include "gtest/gtest.h"
#include "tests/chat/reference.h"

namespace warp::chat {
namespace {

using nlohmann::json;

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  std::string Expression(int depth) {
    if (depth <= 0) return Atom();
    switch (Pick(9)) {
      case 0: return Pick({"not ", "-"}) + Operand(depth - 1);
      case 1:
      case 2: return Operand(depth - 1) + " " + Pick(kBinary) + " " + Operand(depth - 1);
      case 3: return Operand(depth - 1) + " | " + Pick(kFilters);
      case 4: return Operand(depth - 1) + " is " + Pick({"", "not "}) + Pick(kTests);
      case 5: return Operand(depth - 1) + Pick(kMembers);
      case 6: return Operand(depth - 1) + " if " + Operand(depth - 1) + " else " + Operand(depth - 1);
      case 7: return "[" + Expression(depth - 1) + ", " + Expression(depth - 1) + "]";
      default: return Atom();
    }
  }

  std::string Template() {
    switch (Pick(7)) {
      case 0:
        return "{% for v in " + Operand(1) + " %}{{ loop.index }}:{{ v }}{{ ',' if not loop.last }}{% else %}-{% endfor %}";
      case 1:
        return "{% set ns = namespace(acc=" + Atom() + ") %}{% for v in l %}{% set ns.acc = ns.acc ~ v %}{% endfor %}{{ ns.acc }}";
      case 2:
        return "{% if " + Expression(2) + " %}yes{% elif " + Expression(1) + " %}elif{% else %}no{% endif %}";
      case 3:
        return Layout(2);
      case 4:
        return Control();
      default:
        return "{{ " + Expression(3) + " }}";
    }
  }

  // Macros, call/filter blocks and loop control around random expressions.
  std::string Control() {
    switch (Pick(5)) {
      case 0:
        return "{% macro f(a, b=" + Atom() + ") %}[{{ a }}|{{ b }}|{{ varargs }}]{% endmacro %}{{ f(" + Atom() +
               (Pick(2) ? ", " + Atom() : "") + (Pick(2) ? ", " + Atom() : "") + ") }}";
      case 1:
        return "{% for v in " + Pick({"l", "m", "d", "[1, 2, 3, 4]", "range(5)"}) + " %}{{ v }}{% if " + Expression(1) +
               " %}{% " + Pick({"break", "continue"}) + " %}{% endif %};{% else %}E{% endfor %}";
      case 2:
        return "{% macro w(t) %}<{{ t }}>{{ caller(" + Atom() + ") }}</{{ t }}>{% endmacro %}{% call(z) w(" + Atom() +
               ") %}{{ z }}{{ " + Expression(1) + " }}{% endcall %}";
      case 3:
        return "{% filter " + Pick({"upper", "trim", "indent(2)", "title", "length"}) + " %} " + Expression(1) +
               "\n {{ " + Expression(2) + " }} {% endfilter %}";
      default:
        return "{% set a, b = " + Atom() + ", " + Expression(1) + " %}{% set c %}{{ b }}-{{ a }}{% endset %}{{ c }}";
    }
  }

  // Text, tags and comments with random whitespace and "-" markers around
  // them: exercises trim_blocks, lstrip_blocks and whitespace control.
  std::string Layout(int depth) {
    std::string out;
    const int parts = 1 + Pick(4);
    for (int i = 0; i < parts; ++i) {
      out += Pick(kText);
      switch (depth > 0 ? Pick(5) : Pick(2)) {
        case 0: out += Open("{{") + " " + Atom() + " " + Close("}}"); break;
        case 1: out += Open("{#") + " note " + Close("#}"); break;
        case 2: out += Open("{%") + " if " + Atom() + " " + Close("%}") + Layout(depth - 1) + Open("{%") + " else " +
                       Close("%}") + Layout(depth - 1) + Open("{%") + " endif " + Close("%}"); break;
        case 3: out += Open("{%") + " for v in l " + Close("%}") + Layout(depth - 1) + Open("{{") + " v " + Close("}}") +
                       Open("{%") + " endfor " + Close("%}"); break;
        default: out += Open("{%") + " set t = " + Atom() + " " + Close("%}"); break;
      }
    }
    return out + Pick(kText);
  }

 private:
  static constexpr const char* kAtoms[] = {
      "0", "1", "7", "-3", "2.0", "0.5", "-1.5", "'a'", "'Hello World'", "''", "' x '", "'é🙂'", "'1'",
      "none", "true", "false", "[1, 2]", "['b', 'a', 'C']", "[]", "{'a': 1, 'b': 'x'}", "{}",
      "x", "s", "l", "d", "m", "u", "m[0]", "m[1].content", "(1, 2)", "'a\\nb\\n\\nc'", "'10'", "' 2.5e1 '",
      "'ABC'", "range(3)", "namespace(k=1)", "loop", "{'b': [1, {'c': none}], 'a': 'é'}", "0.1"};
  // No "**": V8's pow (fdlibm) is not correctly rounded and the C library's
  // is, so inexact powers can differ in the last digit (a documented gap).
  static constexpr const char* kBinary[] = {"+", "-", "*", "/", "//", "%", "~", "==", "!=", "<", ">",
                                            "<=", ">=", "in", "not in", "and", "or"};
  static constexpr const char* kFilters[] = {
      "length", "trim", "upper", "lower", "title", "capitalize", "tojson", "first", "last", "join(',')",
      "join", "default('z')", "default('z', true)", "string", "int", "float", "abs", "reverse", "sort",
      "unique", "list", "items", "indent(2)", "replace('a', 'b')", "tojson(indent=1)", "safe",
      "map(attribute='role')", "selectattr('role', 'equalto', 'user')", "dictsort", "sort(reverse=true)",
      "tojson(ensure_ascii=true)", "join(' | ')", "int(5)", "float(1.5)", "replace('l', 'L', 1)",
      "indent(2, true)", "indent(first=true, blank=true)", "bool", "rejectattr('content')", "keys", "values",
      "get('a')", "sort(attribute='role')", "default(none)", "tojson(separators=(',', ':'))"};
  static constexpr const char* kTests[] = {"defined", "undefined", "none", "string", "number", "integer",
                                           "mapping", "sequence", "iterable", "boolean", "true", "false",
                                           "lower", "upper", "callable"};
  static constexpr const char* kMembers[] = {
      "[0]", "[-1]", "[1:]", "[::-1]", "[:1]", ".length", ".strip()", ".upper()", ".split(',')",
      ".split()", ".startswith('a')", ".endswith('x')", ".get('a')", ".items()", ".keys()", ".values()",
      "['a']", ".content", ".lstrip()", ".replace('l', 'L')", ".title()"};

  static constexpr const char* kText[] = {"", " ", "\n", "  \n  ", "\t", "a", " b ", "\n\n", "x\n    ",
                                         "\u00a0", "\r\n", " \u2028 ", "-", "}"};

  std::string Open(const char* tag) { return std::string(tag) + (Pick(3) == 0 ? "-" : ""); }
  std::string Close(const char* tag) { return (Pick(3) == 0 ? "-" : "") + std::string(tag); }

  int Pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  template <size_t N>
  std::string Pick(const char* const (&options)[N]) { return options[Pick(static_cast<int>(N))]; }
  std::string Pick(std::initializer_list<const char*> options) { return *(options.begin() + Pick(static_cast<int>(options.size()))); }
  std::string Atom() { return Pick(kAtoms); }
  std::string Operand(int depth) { return depth <= 0 || Pick(2) == 0 ? Atom() : "(" + Expression(depth) + ")"; }

  std::mt19937 rng_;
};

TEST(RandomDifferentialTest, GeneratedTemplatesMatchTheReference) {
  const json context = json::parse(R"({
    "x": 3, "s": "a,b c", "l": [3, 1, 2], "d": {"b": 2, "a": 1},
    "m": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": " Yo "}]})");
  // WARP_CHAT_RANDOM_SEED / WARP_CHAT_RANDOM_CASES explore beyond the fixed set.
  const char* seed = std::getenv("WARP_CHAT_RANDOM_SEED");
  const char* count = std::getenv("WARP_CHAT_RANDOM_CASES");
  Generator generator(seed != nullptr ? static_cast<uint32_t>(std::atoi(seed)) : 20240726);
  const int num_cases = count != nullptr ? std::atoi(count) : 2000;
  std::vector<std::string> sources;
  std::vector<testing::ReferenceCase> cases;
  for (int i = 0; i < num_cases; ++i) {
    sources.push_back(generator.Template());
    cases.push_back({sources.back(), context});
  }
  absl::StatusOr<std::vector<testing::ReferenceResult>> results = testing::RenderWithReference(cases);
  ASSERT_TRUE(results.ok()) << results.status();
  int compared = 0;
  for (size_t i = 0; i < sources.size(); ++i) {
    SCOPED_TRACE(sources[i]);
    const testing::ReferenceResult& expected = (*results)[i];
    // Where @huggingface/jinja and Python Jinja2 disagree, WARP follows
    // Python (issue 16) but not yet in every corner random templates reach
    // (range(...) printing, `elif a if b else c`, abs of a bool, ...):
    // generated templates are compared only where the two peers agree.
    if (expected.js_differs) continue;
    absl::StatusOr<JinjaTemplate> tmpl = JinjaTemplate::Parse(sources[i], "random");
    absl::StatusOr<std::string> out = tmpl.ok() ? tmpl->Render(context) : absl::StatusOr<std::string>(tmpl.status());
    if (!expected.ok) {
      EXPECT_FALSE(out.ok()) << "reference error: " << expected.error << "\nours: " << *out;
      continue;
    }
    // Known, deliberate divergence: `[] | first` is an error here, while the
    // reference yields a JavaScript undefined that works in a few places
    // (inside a list literal) and crashes in most.
    if (!out.ok() && absl::StrContains(std::string(out.status().message()), "of an empty list")) continue;
    ++compared;
    ASSERT_TRUE(out.ok()) << out.status() << "\nreference: " << expected.output;
    EXPECT_EQ(*out, expected.output);
  }
  // A third of the generated templates render the same in both peers (and so
  // here); many others print booleans, none or containers, where they differ.
  EXPECT_GT(compared, num_cases / 4);
}

}  // namespace
}  // namespace warp::chat
