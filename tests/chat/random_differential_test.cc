// Randomly generated expressions and statements (fixed seed) rendered by WARP
// and by Python Jinja2 with transformers' settings: catches divergences in
// operator, filter and method combinations no hand-written case thought of.
// Every template is compared; the known divergences are listed by index.

#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "absl/strings/str_cat.h"
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
  // No "**": left out while the peer was @huggingface/jinja, whose pow (V8's
  // fdlibm) is not correctly rounded; adding it renumbers the templates.
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

// Why WARP renders a generated template differently from Python Jinja2
// (parity of the interpreter with Python is its own issue).
constexpr std::string_view kAddress =
    "Python prints an iterator's or a generator's object address (reverse, unique, items, "
    "select/reject, map); WARP prints the list";
constexpr std::string_view kRange =
    "range() makes a list in WARP; Python prints range(a, b) and refuses it in tojson";
constexpr std::string_view kLoop =
    "{{ loop }} is a dict in WARP; Python prints a LoopContext object";
constexpr std::string_view kFilterBlockString =
    "{% filter length %}: Python joins a filter block's result as a string and raises on an int";
constexpr std::string_view kStrict =
    "WARP refuses a filter, index or slice on a type where Python converts it (str() for the "
    "string filters), iterates it (a string, a dict) or yields undefined";
constexpr std::string_view kBool =
    "WARP refuses arithmetic, comparisons and number filters on bools, which Python treats as "
    "the ints 0 and 1";
constexpr std::string_view kWhitespace =
    "trim_blocks / lstrip_blocks: WARP's preprocessing (after @huggingface/jinja's) differs "
    "from Python's lexer around {% set %}, comments, '-' markers and the template's start";
constexpr std::string_view kLength =
    "`.length` is a JavaScript property WARP keeps; undefined in Python";
constexpr std::string_view kTitle =
    "the title filter's word boundaries (Python: whitespace, '-', '(', '{', '[', '<' only)";
constexpr std::string_view kAttributeBeforeMinus =
    "`-3.content`: Python applies the attribute first and raises on the undefined attribute of "
    "an int";
constexpr std::string_view kGetFilter =
    "WARP has a `get` filter; Python Jinja2 has none";
constexpr std::string_view kUndefinedCallable =
    "an undefined value is callable in Python (Undefined defines __call__)";
constexpr std::string_view kIndentEmpty =
    "'' | indent(2, true) is the indentation in Python, '' in WARP";
constexpr std::string_view kDictViews =
    "d.keys() prints as dict_keys([...]) in Python; WARP prints a list";

// The generated templates (default seed and count) that WARP renders
// differently from Python Jinja2, by index, grouped by reason. A template
// listed here that renders as Python does fails the test: remove it from the
// list. A change to the generator renumbers them: regenerate the list from
// the test's failures.
constexpr testing::KnownDivergence kKnownRandomDivergences[] = {
    {"#15", kAddress}, {"#651", kAddress}, {"#763", kAddress}, {"#892", kAddress}, {"#1044", kAddress},
    {"#1167", kAddress}, {"#1257", kAddress}, {"#1467", kAddress}, {"#1657", kAddress}, {"#1692", kAddress},
    {"#1725", kAddress}, {"#1891", kAddress}, {"#1899", kAddress},
    {"#41", kRange}, {"#69", kRange}, {"#133", kRange}, {"#203", kRange}, {"#237", kRange},
    {"#277", kRange}, {"#279", kRange}, {"#284", kRange}, {"#342", kRange}, {"#367", kRange},
    {"#429", kRange}, {"#453", kRange}, {"#558", kRange}, {"#580", kRange}, {"#670", kRange},
    {"#711", kRange}, {"#731", kRange}, {"#767", kRange}, {"#810", kRange}, {"#869", kRange},
    {"#898", kRange}, {"#913", kRange}, {"#995", kRange}, {"#1012", kRange}, {"#1100", kRange},
    {"#1152", kRange}, {"#1274", kRange}, {"#1324", kRange}, {"#1336", kRange}, {"#1394", kRange},
    {"#1407", kRange}, {"#1515", kRange}, {"#1569", kRange}, {"#1572", kRange}, {"#1600", kRange},
    {"#1603", kRange}, {"#1620", kRange}, {"#1630", kRange}, {"#1648", kRange}, {"#1712", kRange},
    {"#1729", kRange}, {"#1744", kRange}, {"#1835", kRange}, {"#1861", kRange}, {"#1966", kRange},
    {"#1971", kRange}, {"#1973", kRange},
    {"#91", kLoop}, {"#109", kLoop}, {"#125", kLoop}, {"#391", kLoop}, {"#444", kLoop}, {"#561", kLoop},
    {"#922", kLoop}, {"#1159", kLoop}, {"#1293", kLoop}, {"#1355", kLoop}, {"#1800", kLoop},
    {"#1851", kLoop}, {"#1866", kLoop}, {"#1886", kLoop},
    {"#82", kFilterBlockString}, {"#393", kFilterBlockString}, {"#451", kFilterBlockString},
    {"#1829", kFilterBlockString}, {"#1879", kFilterBlockString},
    {"#60", kStrict}, {"#77", kStrict}, {"#83", kStrict}, {"#144", kStrict}, {"#152", kStrict},
    {"#171", kStrict}, {"#179", kStrict}, {"#184", kStrict}, {"#206", kStrict}, {"#215", kStrict},
    {"#234", kStrict}, {"#264", kStrict}, {"#267", kStrict}, {"#311", kStrict}, {"#366", kStrict},
    {"#390", kStrict}, {"#395", kStrict}, {"#472", kStrict}, {"#482", kStrict},
    {"#507", kStrict}, {"#522", kStrict}, {"#533", kStrict}, {"#615", kStrict},
    {"#632", kStrict}, {"#893", kStrict}, {"#914", kStrict}, {"#951", kStrict}, {"#1045", kStrict},
    {"#1056", kStrict}, {"#1060", kStrict}, {"#1156", kStrict}, {"#1162", kStrict}, {"#1214", kStrict},
    {"#1227", kStrict}, {"#1246", kStrict}, {"#1266", kStrict}, {"#1278", kStrict}, {"#1331", kStrict},
    {"#1346", kStrict}, {"#1364", kStrict}, {"#1509", kStrict}, {"#1549", kStrict}, {"#1642", kStrict},
    {"#1645", kStrict}, {"#1674", kStrict}, {"#1702", kStrict}, {"#1708", kStrict}, {"#1766", kStrict},
    {"#1798", kStrict}, {"#1812", kStrict}, {"#1813", kStrict}, {"#1855", kStrict},
    {"#54", kBool}, {"#198", kBool}, {"#553", kBool}, {"#685", kBool}, {"#944", kBool}, {"#971", kBool},
    {"#1041", kBool}, {"#1125", kBool}, {"#1131", kBool}, {"#1178", kBool}, {"#1208", kBool},
    {"#1400", kBool}, {"#1430", kBool}, {"#1517", kBool}, {"#1608", kBool}, {"#1664", kBool},
    {"#1779", kBool},
    {"#64", kWhitespace}, {"#105", kWhitespace}, {"#199", kWhitespace}, {"#200", kWhitespace},
    {"#216", kWhitespace}, {"#250", kWhitespace}, {"#290", kWhitespace}, {"#297", kWhitespace},
    {"#326", kWhitespace}, {"#374", kWhitespace}, {"#399", kWhitespace}, {"#403", kWhitespace},
    {"#423", kWhitespace}, {"#447", kWhitespace}, {"#476", kWhitespace}, {"#491", kWhitespace},
    {"#495", kWhitespace}, {"#543", kWhitespace}, {"#601", kWhitespace}, {"#628", kWhitespace},
    {"#835", kWhitespace}, {"#841", kWhitespace}, {"#849", kWhitespace}, {"#853", kWhitespace},
    {"#925", kWhitespace}, {"#938", kWhitespace}, {"#948", kWhitespace}, {"#953", kWhitespace},
    {"#969", kWhitespace}, {"#989", kWhitespace}, {"#1008", kWhitespace}, {"#1030", kWhitespace},
    {"#1039", kWhitespace}, {"#1065", kWhitespace}, {"#1123", kWhitespace}, {"#1124", kWhitespace},
    {"#1150", kWhitespace}, {"#1163", kWhitespace}, {"#1177", kWhitespace}, {"#1218", kWhitespace},
    {"#1252", kWhitespace}, {"#1269", kWhitespace}, {"#1300", kWhitespace}, {"#1404", kWhitespace},
    {"#1444", kWhitespace}, {"#1448", kWhitespace}, {"#1508", kWhitespace}, {"#1510", kWhitespace},
    {"#1552", kWhitespace}, {"#1652", kWhitespace}, {"#1679", kWhitespace}, {"#1727", kWhitespace},
    {"#1740", kWhitespace}, {"#1755", kWhitespace}, {"#1787", kWhitespace}, {"#1818", kWhitespace},
    {"#1931", kWhitespace}, {"#1953", kWhitespace},
    {"#623", kLength}, {"#1019", kLength}, {"#1114", kLength},
    {"#50", kTitle}, {"#288", kTitle},
    {"#394", kAttributeBeforeMinus},
    {"#793", kGetFilter},
    {"#1524", kUndefinedCallable}, {"#1934", kUndefinedCallable},
    {"#1724", kIndentEmpty},
    {"#1902", kDictViews},
};

TEST(RandomDifferentialTest, GeneratedTemplatesMatchPython) {
  const json context = json::parse(R"({
    "x": 3, "s": "a,b c", "l": [3, 1, 2], "d": {"b": 2, "a": 1},
    "m": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": " Yo "}]})");
  // WARP_CHAT_RANDOM_SEED / WARP_CHAT_RANDOM_CASES explore beyond the fixed
  // set; kKnownRandomDivergences holds for the fixed set only.
  const char* seed = std::getenv("WARP_CHAT_RANDOM_SEED");
  const char* count = std::getenv("WARP_CHAT_RANDOM_CASES");
  const bool fixed_set = seed == nullptr && count == nullptr;
  Generator generator(seed != nullptr ? static_cast<uint32_t>(std::atoi(seed)) : 20240726);
  const int num_cases = count != nullptr ? std::atoi(count) : 2000;
  std::vector<testing::ReferenceCase> cases;
  for (int i = 0; i < num_cases; ++i) cases.push_back({generator.Template(), context});
  absl::StatusOr<std::vector<testing::ReferenceResult>> python = testing::RenderWithPython(cases);
  ASSERT_TRUE(python.ok()) << python.status();
  std::vector<testing::Comparison> comparisons;
  int python_rendered = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string& source = cases[i].template_source;
    absl::StatusOr<JinjaTemplate> tmpl = JinjaTemplate::Parse(source, "random");
    absl::StatusOr<std::string> out = tmpl.ok() ? tmpl->Render(context) : absl::StatusOr<std::string>(tmpl.status());
    comparisons.push_back({absl::StrCat("#", i), source, testing::Difference(out, (*python)[i])});
    python_rendered += (*python)[i].ok;
  }
  if (fixed_set) {
    testing::ExpectOnlyKnownDivergences(comparisons, kKnownRandomDivergences, "kKnownRandomDivergences");
  } else {
    testing::ExpectOnlyKnownDivergences(comparisons, {}, "the list of an exploration run (empty)");
  }
  // Most generated templates render (the rest raise in both engines).
  EXPECT_GT(python_rendered, num_cases / 2);
}

}  // namespace
}  // namespace warp::chat
