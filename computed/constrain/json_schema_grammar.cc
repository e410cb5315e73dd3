#include "computed/constrain/json_schema_grammar.h"

#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warp::computed::constrain {
namespace {

using Json = nlohmann::ordered_json;

constexpr int64_t kMaxBoundedLength = 1024;  // minLength/maxLength/maxItems expand into rules
constexpr int64_t kIntegerDigits = 16;
constexpr int64_t kFractionDigits = 16;
constexpr int64_t kExponentDigits = 2;  // 1e+99: within a double (1e+701 is not, parsers refuse it)

const std::set<std::string, std::less<>>& Annotations() {
  static const auto* const kAnnotations = new std::set<std::string, std::less<>>{
      "title",    "description", "default",  "examples",  "format", "$schema",     "$id",
      "$comment", "deprecated",  "readOnly", "writeOnly", "$defs",  "definitions", "strict"};
  return *kAnnotations;
}

const std::set<std::string, std::less<>>& Keywords() {
  static const auto* const kKeywords = new std::set<std::string, std::less<>>{
      "type",  "properties", "required",  "additionalProperties",
      "items", "minItems",   "maxItems",  "enum",
      "const", "anyOf",      "oneOf",     "allOf",
      "$ref",  "minLength",  "maxLength", "minimum"};
  return *kKeywords;
}

absl::Status Refuse(const std::string& path, const std::string& message) {
  return absl::InvalidArgumentError(absl::StrCat("schema at ", path, ": ", message));
}

// A non-negative integer keyword, at most kMaxBoundedLength (or unbounded: -1).
absl::StatusOr<int64_t> Bound(const Json& schema, const char* key, int64_t absent,
                              const std::string& path) {
  const auto found = schema.find(key);
  if (found == schema.end()) return absent;
  if (!found->is_number_unsigned() || found->get<uint64_t>() > uint64_t{kMaxBoundedLength}) {
    return Refuse(path,
                  absl::StrCat("\"", key, "\" must be an integer from 0 to ", kMaxBoundedLength));
  }
  return found->get<int64_t>();
}

void DumpTo(const Json& value, std::string& out) {
  if (value.is_object()) {
    out += '{';
    bool first = true;
    for (const auto& [key, item] : value.items()) {
      if (!first) out += ", ";
      first = false;
      out += Json(key).dump();
      out += ": ";
      DumpTo(item, out);
    }
    out += '}';
  } else if (value.is_array()) {
    out += '[';
    for (size_t k = 0; k < value.size(); ++k) {
      if (k) out += ", ";
      DumpTo(value[k], out);
    }
    out += ']';
  } else {
    out += value.dump();
  }
}

}  // namespace

std::string PythonJsonDump(const Json& value) {
  std::string out;
  DumpTo(value, out);
  return out;
}

absl::StatusOr<int32_t> JsonSchemaGrammar::Compile(const Json& schema) {
  root_ = &schema;
  refs_.clear();  // another document's names
  return Value(schema, "$");
}

int32_t JsonSchemaGrammar::OptionalSpace() {
  if (space_ < 0) space_ = b_.AddRule("space", {b_.Literal(" "), {}});
  return space_;
}

Sequence JsonSchemaGrammar::Comma() { return {b_.Byte(','), GrammarBuilder::Ref(OptionalSpace())}; }

Sequence JsonSchemaGrammar::Colon() { return {b_.Byte(':'), GrammarBuilder::Ref(OptionalSpace())}; }

int32_t JsonSchemaGrammar::Times(Element element, int64_t min, int64_t max,
                                 const std::string& name) {
  // The optional part first: unbounded (rest ::= e rest | ε) or a chain of
  // max - min optional copies.
  int32_t rest;
  if (max < 0) {
    rest = b_.AddRule(name + "-rest");
    b_.AddAlternative(rest, {element, GrammarBuilder::Ref(rest)});
    b_.AddAlternative(rest, {});
  } else {
    rest = b_.AddRule(name + "-none", {{}});
    for (int64_t k = min; k < max; ++k) {
      rest = b_.AddRule(absl::StrCat(name, "-upto", max - k),
                        {{element, GrammarBuilder::Ref(rest)}, {}});
    }
  }
  Sequence required(static_cast<size_t>(min), element);
  required.push_back(GrammarBuilder::Ref(rest));
  return b_.AddRule(name, {required});
}

int32_t JsonSchemaGrammar::Repeat(int32_t item, int64_t min, int64_t max, const std::string& name) {
  if (max == 0) return b_.AddRule(name, {{}});
  Sequence separated = Comma();
  separated.push_back(GrammarBuilder::Ref(item));
  const int32_t next = b_.AddRule(name + "-next", {separated});
  const int32_t tail = Times(GrammarBuilder::Ref(next), min > 0 ? min - 1 : 0,
                             max < 0 ? -1 : max - 1, name + "-tail");
  const int32_t list =
      b_.AddRule(name + "-list", {{GrammarBuilder::Ref(item), GrammarBuilder::Ref(tail)}});
  if (min > 0) return list;
  return b_.AddRule(name, {{GrammarBuilder::Ref(list)}, {}});
}

int32_t JsonSchemaGrammar::StringChar() {
  if (string_char_ >= 0) return string_char_;
  auto range = [](int first, int last) {
    ByteSet set;
    for (int c = first; c <= last; ++c) set.set(c);
    return set;
  };
  auto set_of = [](std::string_view bytes) {
    ByteSet set;
    for (const char c : bytes) set.set(static_cast<uint8_t>(c));
    return set;
  };
  ByteSet ascii = range(0x20, 0x7f);
  ascii.reset('"');
  ascii.reset('\\');
  const Element tail = b_.Bytes(range(0x80, 0xbf));
  const Element h = b_.Bytes(set_of("0123456789abcdefABCDEF"));
  const Element u = b_.Byte('u'), backslash = b_.Byte('\\');
  const Element d = b_.Bytes(set_of("dD"));
  // One character: printable ASCII other than '"' and '\', a UTF-8 sequence
  // (well formed: no overlong form, no surrogate, nothing past U+10FFFF), or
  // an escape; \uXXXX never a lone surrogate (strict parsers refuse one).
  // minLength and maxLength count these, as JSON Schema counts characters.
  string_char_ = b_.AddRule(
      "char", {{b_.Bytes(ascii)},
               {b_.Bytes(range(0xc2, 0xdf)), tail},
               {b_.Byte(0xe0), b_.Bytes(range(0xa0, 0xbf)), tail},
               {b_.Bytes(range(0xe1, 0xec)), tail, tail},
               {b_.Byte(0xed), b_.Bytes(range(0x80, 0x9f)), tail},
               {b_.Bytes(range(0xee, 0xef)), tail, tail},
               {b_.Byte(0xf0), b_.Bytes(range(0x90, 0xbf)), tail, tail},
               {b_.Bytes(range(0xf1, 0xf3)), tail, tail, tail},
               {b_.Byte(0xf4), b_.Bytes(range(0x80, 0x8f)), tail, tail},
               {backslash, b_.Bytes(set_of("\"\\/bfnrt"))},
               {backslash, u, b_.Bytes(set_of("0123456789abcABCeEfF")), h, h, h},
               {backslash, u, d, b_.Bytes(set_of("01234567")), h, h},
               {backslash, u, d, b_.Bytes(set_of("89abAB")), h, h, backslash, u, d,
                b_.Bytes(set_of("cdefCDEF")), h, h}});
  return string_char_;
}

int32_t JsonSchemaGrammar::AnyString() {
  if (any_string_ >= 0) return any_string_;
  const int32_t chars = Times(GrammarBuilder::Ref(StringChar()), 0, -1, "chars");
  any_string_ = b_.AddRule("string", {{b_.Byte('"'), GrammarBuilder::Ref(chars), b_.Byte('"')}});
  return any_string_;
}

absl::StatusOr<int32_t> JsonSchemaGrammar::String(const Json& schema, const std::string& path) {
  WARP_ASSIGN_OR_RETURN(const int64_t min, Bound(schema, "minLength", 0, path));
  WARP_ASSIGN_OR_RETURN(const int64_t max, Bound(schema, "maxLength", -1, path));
  if (min == 0 && max < 0) return AnyString();
  if (max >= 0 && max < min) return Refuse(path, "maxLength is below minLength");
  const int32_t chars = Times(GrammarBuilder::Ref(StringChar()), min, max, path + "-chars");
  return b_.AddRule(path, {{b_.Byte('"'), GrammarBuilder::Ref(chars), b_.Byte('"')}});
}

absl::StatusOr<int32_t> JsonSchemaGrammar::Number(const Json& schema, bool integer,
                                                  const std::string& path) {
  bool signed_ = true;
  if (const auto minimum = schema.find("minimum"); minimum != schema.end()) {
    if (!minimum->is_number() || minimum->get<double>() != 0) {
      return Refuse(path, "\"minimum\" other than 0 is not supported");
    }
    signed_ = false;
  }
  ByteSet digit, nonzero, e, sign;
  for (char c = '0'; c <= '9'; ++c) digit.set(c);
  nonzero = digit;
  nonzero.reset('0');
  e.set('e');
  e.set('E');
  sign.set('-');
  sign.set('+');
  const int32_t more_digits = Times(b_.Bytes(digit), 0, kIntegerDigits - 1, "digits");
  const int32_t whole =
      b_.AddRule("whole", {b_.Literal("0"), {b_.Bytes(nonzero), GrammarBuilder::Ref(more_digits)}});
  Sequence number;
  if (signed_) number.push_back(GrammarBuilder::Ref(b_.AddRule("minus", {b_.Literal("-"), {}})));
  number.push_back(GrammarBuilder::Ref(whole));
  if (!integer) {
    const int32_t fraction_digits = Times(b_.Bytes(digit), 1, kFractionDigits, "fraction-digits");
    const int32_t fraction =
        b_.AddRule("fraction", {{b_.Byte('.'), GrammarBuilder::Ref(fraction_digits)}, {}});
    const int32_t exponent_digits = Times(b_.Bytes(digit), 1, kExponentDigits, "exponent-digits");
    const int32_t exponent_sign = b_.AddRule("exponent-sign", {{b_.Bytes(sign)}, {}});
    const int32_t exponent = b_.AddRule(
        "exponent",
        {{b_.Bytes(e), GrammarBuilder::Ref(exponent_sign), GrammarBuilder::Ref(exponent_digits)},
         {}});
    number.push_back(GrammarBuilder::Ref(fraction));
    number.push_back(GrammarBuilder::Ref(exponent));
  }
  return b_.AddRule(integer ? "integer" : "number", {number});
}

int32_t JsonSchemaGrammar::AnyNumber() {
  if (any_number_ < 0) any_number_ = *Number(Json::object(), /*integer=*/false, "number");
  return any_number_;
}

int32_t JsonSchemaGrammar::AnyValue() {
  if (any_value_ >= 0) return any_value_;
  any_value_ = b_.AddRule("value");
  const int32_t array = b_.AddRule(
      "array",
      {{b_.Byte('['), GrammarBuilder::Ref(Repeat(any_value_, 0, -1, "elements")), b_.Byte(']')}});
  for (const Sequence& alternative : std::vector<Sequence>{{GrammarBuilder::Ref(AnyObject())},
                                                           {GrammarBuilder::Ref(array)},
                                                           {GrammarBuilder::Ref(AnyString())},
                                                           {GrammarBuilder::Ref(AnyNumber())},
                                                           b_.Literal("true"),
                                                           b_.Literal("false"),
                                                           b_.Literal("null")}) {
    b_.AddAlternative(any_value_, alternative);
  }
  return any_value_;
}

int32_t JsonSchemaGrammar::AnyObject() {
  if (any_object_ >= 0) return any_object_;
  any_object_ = b_.AddRule("object");
  Sequence member{GrammarBuilder::Ref(AnyString())};
  for (const Element& e : Colon()) member.push_back(e);
  member.push_back(GrammarBuilder::Ref(AnyValue()));
  const int32_t members = Repeat(b_.AddRule("member", {member}), 0, -1, "members");
  b_.AddAlternative(any_object_, {b_.Byte('{'), GrammarBuilder::Ref(members), b_.Byte('}')});
  return any_object_;
}

int32_t JsonSchemaGrammar::Literals(const Json& values, const std::string& name) {
  const int32_t rule = b_.AddRule(name);
  for (const Json& value : values) b_.AddAlternative(rule, b_.Literal(PythonJsonDump(value)));
  return rule;
}

absl::StatusOr<int32_t> JsonSchemaGrammar::Ref(const std::string& ref, const std::string& path) {
  if (const auto found = refs_.find(ref); found != refs_.end()) return found->second;
  std::string key;
  for (const char* prefix : {"#/$defs/", "#/definitions/"}) {
    if (ref.starts_with(prefix)) {
      const std::string section = std::string(prefix).substr(2, std::string(prefix).size() - 3);
      const auto defs = root_->find(section);
      key = ref.substr(std::string(prefix).size());
      if (defs == root_->end() || !defs->is_object() || !defs->contains(key)) {
        return Refuse(path, absl::StrCat("\"$ref\": \"", ref, "\" names no definition"));
      }
      const int32_t rule = b_.AddRule(ref);
      refs_.emplace(ref, rule);  // before compiling: the definition may refer to itself
      WARP_ASSIGN_OR_RETURN(const int32_t target,
                            Value((*defs)[key], absl::StrCat("$.", section, ".", key)));
      b_.AddAlternative(rule, {GrammarBuilder::Ref(target)});
      return rule;
    }
  }
  return Refuse(path, absl::StrCat("\"$ref\": \"", ref,
                                   "\" is not supported (only #/$defs/NAME and "
                                   "#/definitions/NAME)"));
}

absl::StatusOr<int32_t> JsonSchemaGrammar::Object(const Json& schema, const std::string& path) {
  struct Property {
    std::string key;
    int32_t value;
    bool required;
  };
  std::set<std::string> required;
  if (const auto found = schema.find("required"); found != schema.end()) {
    if (!found->is_array()) return Refuse(path, "\"required\" must be an array of names");
    for (const Json& name : *found) {
      if (!name.is_string()) return Refuse(path, "\"required\" must be an array of names");
      required.insert(name.get<std::string>());
    }
  }
  std::vector<Property> properties;
  if (const auto found = schema.find("properties"); found != schema.end()) {
    if (!found->is_object()) return Refuse(path, "\"properties\" must be an object");
    for (const auto& [key, value] : found->items()) {
      WARP_ASSIGN_OR_RETURN(const int32_t rule,
                            Value(value, absl::StrCat(path, ".properties.", key)));
      properties.push_back({key, rule, required.contains(key)});
    }
  }
  for (const std::string& name : required) {
    bool declared = false;
    for (const Property& p : properties) declared |= p.key == name;
    if (!declared) properties.push_back({name, AnyValue(), true});
  }
  if (properties.empty()) {
    const auto additional = schema.find("additionalProperties");
    if (additional == schema.end() || *additional == true) return AnyObject();
    if (*additional == false) return b_.AddRule(path, {b_.Literal("{}")});
    WARP_ASSIGN_OR_RETURN(const int32_t value, Value(*additional, path + ".additionalProperties"));
    Sequence member{GrammarBuilder::Ref(AnyString())};
    for (const Element& e : Colon()) member.push_back(e);
    member.push_back(GrammarBuilder::Ref(value));
    const int32_t members =
        Repeat(b_.AddRule(path + "-member", {member}), 0, -1, path + "-members");
    return b_.AddRule(path, {{b_.Byte('{'), GrammarBuilder::Ref(members), b_.Byte('}')}});
  }
  // Properties in order, each optional one skippable: after(i, comma) is what
  // may follow once the properties before i are written (comma: some were).
  std::vector<int32_t> after[2];
  after[0].assign(properties.size() + 1, -1);
  after[1].assign(properties.size() + 1, -1);
  after[0][properties.size()] = after[1][properties.size()] = b_.AddRule(path + "-end", {{}});
  for (size_t i = properties.size(); i-- > 0;) {
    for (int comma = 0; comma < 2; ++comma) {
      Sequence member = comma ? Comma() : Sequence{};
      b_.AppendLiteral(Json(properties[i].key).dump(), member);
      for (const Element& e : Colon()) member.push_back(e);
      member.push_back(GrammarBuilder::Ref(properties[i].value));
      member.push_back(GrammarBuilder::Ref(after[1][i + 1]));
      std::vector<Sequence> alternatives{member};
      if (!properties[i].required)
        alternatives.push_back({GrammarBuilder::Ref(after[comma][i + 1])});
      after[comma][i] = b_.AddRule(absl::StrCat(path, "-from", i), std::move(alternatives));
    }
  }
  return b_.AddRule(path, {{b_.Byte('{'), GrammarBuilder::Ref(after[0][0]), b_.Byte('}')}});
}

absl::StatusOr<int32_t> JsonSchemaGrammar::Array(const Json& schema, const std::string& path) {
  WARP_ASSIGN_OR_RETURN(const int64_t min, Bound(schema, "minItems", 0, path));
  WARP_ASSIGN_OR_RETURN(const int64_t max, Bound(schema, "maxItems", -1, path));
  if (max >= 0 && max < min) return Refuse(path, "maxItems is below minItems");
  int32_t item;
  if (const auto items = schema.find("items"); items != schema.end()) {
    WARP_ASSIGN_OR_RETURN(item, Value(*items, path + ".items"));
  } else {
    item = AnyValue();
  }
  const int32_t elements = Repeat(item, min, max, path + "-items");
  return b_.AddRule(path, {{b_.Byte('['), GrammarBuilder::Ref(elements), b_.Byte(']')}});
}

absl::StatusOr<int32_t> JsonSchemaGrammar::Typed(const Json& schema, const std::string& type,
                                                 const std::string& path) {
  if (type == "string") return String(schema, path);
  if (type == "integer") return Number(schema, /*integer=*/true, path);
  if (type == "number") return Number(schema, /*integer=*/false, path);
  if (type == "boolean") return b_.AddRule("boolean", {b_.Literal("true"), b_.Literal("false")});
  if (type == "null") return b_.AddRule("null", {b_.Literal("null")});
  if (type == "object") return Object(schema, path);
  if (type == "array") return Array(schema, path);
  return Refuse(path, absl::StrCat("\"type\": \"", type, "\" is not a JSON Schema type"));
}

absl::StatusOr<int32_t> JsonSchemaGrammar::Value(const Json& schema, const std::string& path) {
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return AnyValue();
    return Refuse(path, "the schema false accepts no value");
  }
  if (!schema.is_object()) return Refuse(path, "a schema must be an object or a boolean");
  for (const auto& [key, unused] : schema.items()) {
    if (!Keywords().contains(key) && !Annotations().contains(key)) {
      return Refuse(path, absl::StrCat("\"", key, "\" is not supported"));
    }
  }
  if (const auto found = schema.find("$ref"); found != schema.end()) {
    if (!found->is_string()) return Refuse(path, "\"$ref\" must be a string");
    return Ref(found->get<std::string>(), path);
  }
  if (const auto found = schema.find("const"); found != schema.end()) {
    return Literals(Json::array({*found}), path + "-const");
  }
  if (const auto found = schema.find("enum"); found != schema.end()) {
    if (!found->is_array() || found->empty())
      return Refuse(path, "\"enum\" must be a non-empty array");
    return Literals(*found, path + "-enum");
  }
  for (const char* key : {"anyOf", "oneOf", "allOf"}) {
    const auto found = schema.find(key);
    if (found == schema.end()) continue;
    if (!found->is_array() || found->empty()) {
      return Refuse(path, absl::StrCat("\"", key, "\" must be a non-empty array"));
    }
    if (std::string_view(key) == "allOf" && found->size() != 1) {
      return Refuse(path, "\"allOf\" of more than one schema is not supported");
    }
    const int32_t rule = b_.AddRule(absl::StrCat(path, "-", key));
    for (size_t k = 0; k < found->size(); ++k) {
      WARP_ASSIGN_OR_RETURN(const int32_t alternative,
                            Value((*found)[k], absl::StrCat(path, ".", key, "[", k, "]")));
      b_.AddAlternative(rule, {GrammarBuilder::Ref(alternative)});
    }
    return rule;
  }
  const auto type = schema.find("type");
  if (type == schema.end()) {
    if (schema.contains("properties") || schema.contains("required") ||
        schema.contains("additionalProperties")) {
      return Object(schema, path);
    }
    if (schema.contains("items")) return Array(schema, path);
    return AnyValue();
  }
  if (type->is_string()) return Typed(schema, type->get<std::string>(), path);
  if (!type->is_array() || type->empty()) {
    return Refuse(path, "\"type\" must be a type name or a non-empty list of them");
  }
  const int32_t rule = b_.AddRule(path + "-types");
  for (const Json& name : *type) {
    if (!name.is_string()) return Refuse(path, "\"type\" must be a type name or a list of them");
    WARP_ASSIGN_OR_RETURN(const int32_t alternative, Typed(schema, name.get<std::string>(), path));
    b_.AddAlternative(rule, {GrammarBuilder::Ref(alternative)});
  }
  return rule;
}

}  // namespace warp::computed::constrain
