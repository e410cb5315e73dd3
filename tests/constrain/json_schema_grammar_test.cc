#include "computed/constrain/json_schema_grammar.h"

#include <random>
#include <string>
#include <string_view>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace warp::computed::constrain {
namespace {

using Json = nlohmann::ordered_json;

absl::StatusOr<Grammar> Compile(const Json& schema) {
  GrammarBuilder builder;
  JsonSchemaGrammar compiler(builder);
  absl::StatusOr<int32_t> root = compiler.Compile(schema);
  if (!root.ok()) return root.status();
  return std::move(builder).Build(*root);
}

bool Matches(const Grammar& grammar, std::string_view text) {
  GrammarState state = GrammarState::Start(grammar);
  for (const char c : text) state = state.AfterByte(grammar, static_cast<uint8_t>(c));
  return state.can_end();
}

// A random text the grammar accepts: printable ASCII bytes drawn uniformly
// among those it allows, ending where it may with probability 1/4.
std::string RandomMatch(const Grammar& grammar, std::mt19937& rng) {
  GrammarState state = GrammarState::Start(grammar);
  std::string text;
  while (!state.finished()) {
    if (state.can_end() && rng() % 4 == 0) break;
    std::vector<uint8_t> allowed;
    for (int c = 0x20; c < 0x7f; ++c) {
      if (state.Accepts(grammar, static_cast<uint8_t>(c))) allowed.push_back(c);
    }
    if (allowed.empty()) break;
    const uint8_t c = allowed[rng() % allowed.size()];
    text.push_back(static_cast<char>(c));
    state = state.AfterByte(grammar, c);
  }
  return text;
}

const Json kWeather = Json::parse(R"({
  "type": "object",
  "properties": {
    "city": {"type": "string", "description": "a city"},
    "unit": {"enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "minimum": 0},
    "hourly": {"type": "boolean"},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "maxItems": 2}
  },
  "required": ["city", "days"],
  "additionalProperties": false
})");

TEST(JsonSchemaGrammarTest, AcceptsWhatTheSchemaDoes) {
  absl::StatusOr<Grammar> grammar = Compile(kWeather);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  for (const char* text : {
           R"({"city": "Oslo", "days": 3})", R"({"city":"Oslo","days":0})",
           R"({"city": "\"Ko\u00e9\\n", "unit": "celsius", "days": 12, "hourly": true})",
           R"({"city": "", "days": 1, "tags": ["a", "bcd"]})",
           R"({"city": "x", "days": 1, "tags": []})",
           R"({"city": "x", "days": 1, "tags": ["日本語"]})",  // maxLength counts characters
           R"({"city": "\ud83d\ude00", "days": 1})",  // a surrogate pair
       }) {
    EXPECT_TRUE(Matches(*grammar, text)) << text;
  }
  for (const char* text : {
           R"({"days": 3, "city": "Oslo"})",    // out of the schema's order
           R"({"city": "Oslo"})",               // days is required
           R"({"city": "Oslo", "days": -1})",   // minimum 0
           R"({"city": "Oslo", "days": 01})",   // no leading zero
           R"({"city": "Oslo", "days": 1.5})",  // an integer
           R"({"city": "Oslo", "days": 1, "unit": "kelvin"})",
           R"({"city": "Oslo", "days": 1, "tags": ["abcd"]})",         // maxLength 3
           R"({"city": "Oslo", "days": 1, "tags": ["a", "b", "c"]})",  // maxItems 2
           R"({"city": "Oslo", "days": 1, "extra": 1})",
           R"({ "city": "Oslo", "days": 1})",    // no padding
           "{\"city\": \"a\tb\", \"days\": 1}",  // a raw control character
           R"({"city": "\udc00", "days": 1})",   // a lone surrogate
       }) {
    EXPECT_FALSE(Matches(*grammar, text)) << text;
  }
}

TEST(JsonSchemaGrammarTest, RandomMatchesParseAndValidate) {
  absl::StatusOr<Grammar> grammar = Compile(kWeather);
  ASSERT_TRUE(grammar.ok());
  std::mt19937 rng(7);
  for (int k = 0; k < 300; ++k) {
    const std::string text = RandomMatch(*grammar, rng);
    SCOPED_TRACE(text);
    const Json value = Json::parse(text);  // throws: a failure
    ASSERT_TRUE(value.is_object());
    ASSERT_TRUE(value.contains("city") && value["city"].is_string());
    ASSERT_TRUE(value["days"].is_number_unsigned());
    if (value.contains("unit")) {
      EXPECT_TRUE(value["unit"] == "celsius" || value["unit"] == "fahrenheit");
    }
    if (value.contains("tags")) {
      ASSERT_LE(value["tags"].size(), 2u);
      for (const Json& tag : value["tags"]) EXPECT_LE(tag.get<std::string>().size(), 3u);
    }
    for (const auto& [key, unused] : value.items()) {
      EXPECT_TRUE(kWeather["properties"].contains(key)) << key;
    }
  }
}

TEST(JsonSchemaGrammarTest, AnyValueAndCombinators) {
  const Json schema = Json::parse(R"({
    "$defs": {"node": {"type": "object", "properties": {
      "name": {"const": "n"}, "next": {"anyOf": [{"$ref": "#/$defs/node"}, {"type": "null"}]}},
      "required": ["name", "next"]}},
    "type": "object",
    "properties": {
      "tree": {"$ref": "#/$defs/node"},
      "any": {},
      "either": {"type": ["number", "string"]},
      "map": {"type": "object", "additionalProperties": {"type": "boolean"}},
      "pair": {"type": "array", "minItems": 2, "maxItems": 2}
    },
    "required": ["tree", "any", "either", "map", "pair"]
  })");
  absl::StatusOr<Grammar> grammar = Compile(schema);
  ASSERT_TRUE(grammar.ok()) << grammar.status();
  EXPECT_TRUE(Matches(*grammar, R"({"tree": {"name": "n", "next": {"name": "n", "next": null}}, )"
                                R"("any": [1, {"a": [null, true]}, "x", -0.5e+3], "either": 2.25, )"
                                R"("map": {"a": true, "b": false}, "pair": [{}, []]})"));
  EXPECT_TRUE(Matches(*grammar, R"({"tree": {"name": "n", "next": null}, "any": null, )"
                                R"("either": "s", "map": {}, "pair": [1, 2]})"));
  EXPECT_FALSE(Matches(*grammar, R"({"tree": {"name": "m", "next": null}, "any": null, )"
                                 R"("either": "s", "map": {}, "pair": [1, 2]})"));
  EXPECT_FALSE(Matches(*grammar, R"({"tree": {"name": "n", "next": null}, "any": null, )"
                                 R"("either": true, "map": {}, "pair": [1, 2]})"));
  EXPECT_FALSE(Matches(*grammar, R"({"tree": {"name": "n", "next": null}, "any": null, )"
                                 R"("either": 1, "map": {"a": 1}, "pair": [1, 2]})"));
  EXPECT_FALSE(Matches(*grammar, R"({"tree": {"name": "n", "next": null}, "any": null, )"
                                 R"("either": 1, "map": {}, "pair": [1]})"));
}

TEST(JsonSchemaGrammarTest, OptionalPropertiesMayAllBeLeftOut) {
  absl::StatusOr<Grammar> grammar = Compile(Json::parse(
      R"({"properties": {"a": {"type": "null"}, "b": {"type": "null"}, "c": {"type": "null"}}})"));
  ASSERT_TRUE(grammar.ok());
  for (const char* text : {"{}", R"({"b": null})", R"({"a": null, "c": null})",
                           R"({"a": null, "b": null, "c": null})"}) {
    EXPECT_TRUE(Matches(*grammar, text)) << text;
  }
  for (const char* text : {"{,}", R"({, "b": null})", R"({"a": null,})"}) {
    EXPECT_FALSE(Matches(*grammar, text)) << text;
  }
}

TEST(JsonSchemaGrammarTest, RefusesWhatItCannotTakeByName) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type": "string", "pattern": "^a"})", "schema at $: \"pattern\" is not supported"},
      {R"({"properties": {"n": {"type": "integer", "minimum": 1}}})",
       "schema at $.properties.n: \"minimum\" other than 0 is not supported"},
      {R"({"type": "date"})", "schema at $: \"type\": \"date\" is not a JSON Schema type"},
      {R"({"$ref": "other.json#/x"})",
       "schema at $: \"$ref\": \"other.json#/x\" is not supported (only #/$defs/NAME and "
       "#/definitions/NAME)"},
      {R"({"$ref": "#/$defs/missing"})",
       "schema at $: \"$ref\": \"#/$defs/missing\" names no definition"},
      {R"({"type": "string", "maxLength": 5000})",
       "schema at $: \"maxLength\" must be an integer from 0 to 1024"},
      {R"({"type": "string", "minLength": 9223372036854775808})",
       "schema at $: \"minLength\" must be an integer from 0 to 1024"},
      {R"({"allOf": [{"type": "string"}, {"maxLength": 2}]})",
       "schema at $: \"allOf\" of more than one schema is not supported"},
      {R"({"items": false})", "schema at $.items: the schema false accepts no value"},
      {R"(3)", "schema at $: a schema must be an object or a boolean"},
      {R"({"type": "string", "minLength": 3, "maxLength": 2})", "schema at $: maxLength is below minLength"},
      {R"({"type": "array", "minItems": 3, "maxItems": 2})", "schema at $: maxItems is below minItems"},
      {R"({"required": "a"})", "schema at $: \"required\" must be an array of names"},
      {R"({"required": [1]})", "schema at $: \"required\" must be an array of names"},
      {R"({"properties": []})", "schema at $: \"properties\" must be an object"},
      {R"({"$ref": 3})", "schema at $: \"$ref\" must be a string"},
      {R"({"enum": []})", "schema at $: \"enum\" must be a non-empty array"},
      {R"({"anyOf": []})", "schema at $: \"anyOf\" must be a non-empty array"},
      {R"({"type": []})", "schema at $: \"type\" must be a type name or a non-empty list of them"},
      {R"({"type": ["string", 3]})", "schema at $: \"type\" must be a type name or a list of them"},
  };
  for (const auto& [schema, message] : cases) {
    absl::StatusOr<Grammar> grammar = Compile(Json::parse(schema));
    ASSERT_FALSE(grammar.ok()) << schema;
    EXPECT_EQ(grammar.status().message(), message);
  }
  // A definition that is itself with nothing consumed: the grammar says so.
  absl::StatusOr<Grammar> loop = Compile(
      Json::parse(R"({"$defs": {"a": {"anyOf": [{"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"})"));
  ASSERT_FALSE(loop.ok());
  EXPECT_EQ(loop.status().message(), "grammar rule \"#/$defs/a\" is left-recursive");
}

TEST(JsonSchemaGrammarTest, PythonJsonDumpSpacesAsPython) {
  EXPECT_EQ(PythonJsonDump(Json::parse(R"({"a": [1, "x", {"b": null}], "c": true})")),
            R"({"a": [1, "x", {"b": null}], "c": true})");
  EXPECT_EQ(PythonJsonDump(Json::parse(R"({"z":1,"a":2})")), R"({"z": 1, "a": 2})");
}

}  // namespace
}  // namespace warp::computed::constrain
