#pragma once

// JsonSchemaGrammar: the grammar rules of the JSON texts a JSON schema
// accepts, for structured output and forced tool calls. Texts are written as
// Python's json.dumps writes them: ", " and ": " between items (the space may
// be left out) and no other whitespace, so that a model cannot pad a reply
// forever; object properties come in the schema's order.
//
// Supported keywords: type (one or a list), properties, required,
// additionalProperties, items, minItems, maxItems, enum, const, anyOf,
// oneOf (taken as anyOf, as llama.cpp does: exclusivity is not enforced),
// allOf of one schema, $ref to "#/$defs/NAME" or "#/definitions/NAME",
// minLength, maxLength (up to 1024), minimum 0 (a number without a sign).
// Annotations pass: title, description, default, examples, format (an
// annotation in JSON Schema 2020-12), $schema, $id, $comment, deprecated,
// readOnly, writeOnly. Anything else is refused by name and place:
// `schema at $.properties.when: "pattern" is not supported`.
//
// Thread-compatible.

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "computed/constrain/grammar.h"
#include "nlohmann/json.hpp"

namespace warp::computed::constrain {

class JsonSchemaGrammar {
 public:
  // Adds its rules to `builder`, which must outlive it.
  explicit JsonSchemaGrammar(GrammarBuilder& builder) : b_(builder) {}

  // The rule of one value that `schema` accepts (its $refs point into it);
  // InvalidArgument naming the keyword and its place if it cannot be taken.
  absl::StatusOr<int32_t> Compile(const nlohmann::ordered_json& schema);
  // Any JSON value (json_object mode's object members, a schema of `{}`).
  int32_t AnyValue();
  // Any JSON object.
  int32_t AnyObject();

 private:
  using Json = nlohmann::ordered_json;
  absl::StatusOr<int32_t> Value(const Json& schema, const std::string& path);
  absl::StatusOr<int32_t> Typed(const Json& schema, const std::string& type,
                                const std::string& path);
  absl::StatusOr<int32_t> Object(const Json& schema, const std::string& path);
  absl::StatusOr<int32_t> Array(const Json& schema, const std::string& path);
  absl::StatusOr<int32_t> String(const Json& schema, const std::string& path);
  absl::StatusOr<int32_t> Number(const Json& schema, bool integer, const std::string& path);
  absl::StatusOr<int32_t> Ref(const std::string& ref, const std::string& path);
  // Literal alternatives: enum and const.
  int32_t Literals(const Json& values, const std::string& name);
  // `item` repeated [min, max] times (max < 0: unbounded), separated by commas.
  int32_t Repeat(int32_t item, int64_t min, int64_t max, const std::string& name);
  // `element` repeated [min, max] times with nothing between.
  int32_t Times(Element element, int64_t min, int64_t max, const std::string& name);
  int32_t StringChar();
  int32_t AnyString();
  int32_t AnyNumber();
  int32_t OptionalSpace();
  Sequence Comma();
  Sequence Colon();

  GrammarBuilder& b_;
  const Json* root_ = nullptr;
  std::map<std::string, int32_t> refs_;
  int32_t any_value_ = -1, any_object_ = -1, string_char_ = -1, any_string_ = -1, any_number_ = -1,
          space_ = -1;
};

// A JSON value as Python's json.dumps writes it (ensure_ascii off).
std::string PythonJsonDump(const nlohmann::ordered_json& value);

}  // namespace warp::computed::constrain
