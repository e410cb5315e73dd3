#include "computed/text/json_fields.h"

#include "absl/strings/str_cat.h"
#include "common/json_depth.h"

namespace warp::text {

absl::StatusOr<Json> ParseJson(std::string_view text, std::string_view source) {
  // nlohmann::json reports syntax errors with their position only by
  // exception; it is caught here, at the boundary, and becomes a Status.
  if (absl::Status depth = CheckJsonDepth(text, source); !depth.ok()) return depth;
  try {
    return Json::parse(text);
  } catch (const Json::parse_error& error) {
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": malformed JSON at byte offset ",
                     error.byte > 0 ? error.byte - 1 : 0, ": ", error.what()));
  } catch (const Json::exception& error) {  // out_of_range: a number past a double, e.g. 1e400
    return absl::InvalidArgumentError(
        absl::StrCat(std::string(source), ": malformed JSON: ", error.what()));
  }
}

std::string FieldPath(std::string_view parent, std::string_view key) {
  return parent.empty() ? std::string(key)
                        : absl::StrCat(std::string(parent), ".", std::string(key));
}

std::string IndexPath(std::string_view parent, size_t index) {
  return absl::StrCat(std::string(parent), "[", index, "]");
}

absl::Status FieldError(std::string_view path, std::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(std::string(path), ": ", std::string(message)));
}

const Json* FindField(const Json& object, std::string_view key) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::StatusOr<std::string> StringField(const Json& object, std::string_view key,
                                        std::string_view path) {
  const Json* field = FindField(object, key);
  if (field == nullptr) return FieldError(FieldPath(path, key), "missing");
  if (!field->is_string()) return FieldError(FieldPath(path, key), "expected a string");
  return field->get<std::string>();
}

absl::StatusOr<std::string> StringFieldOr(const Json& object, std::string_view key,
                                          std::string_view path, std::string_view fallback) {
  if (FindField(object, key) == nullptr) return std::string(fallback);
  return StringField(object, key, path);
}

absl::StatusOr<bool> BoolFieldOr(const Json& object, std::string_view key, std::string_view path,
                                 bool fallback) {
  const Json* field = FindField(object, key);
  if (field == nullptr) return fallback;
  if (!field->is_boolean()) return FieldError(FieldPath(path, key), "expected true or false");
  return field->get<bool>();
}

absl::StatusOr<int64_t> IntFieldOr(const Json& object, std::string_view key, std::string_view path,
                                   int64_t fallback) {
  const Json* field = FindField(object, key);
  if (field == nullptr) return fallback;
  if (!field->is_number_integer()) return FieldError(FieldPath(path, key), "expected an integer");
  return field->get<int64_t>();
}

absl::StatusOr<const Json*> ArrayField(const Json& object, std::string_view key,
                                       std::string_view path) {
  const Json* field = FindField(object, key);
  if (field == nullptr) return FieldError(FieldPath(path, key), "missing");
  if (!field->is_array()) return FieldError(FieldPath(path, key), "expected an array");
  return field;
}

absl::StatusOr<std::string> ComponentType(const Json& component, std::string_view path) {
  if (!component.is_object()) return FieldError(path, "expected an object");
  return StringField(component, "type", path);
}

absl::StatusOr<MetaspaceOptions> ParseMetaspaceOptions(const Json& config, std::string_view path) {
  absl::StatusOr<std::string> replacement = StringFieldOr(config, "replacement", path, "\u2581");
  if (!replacement.ok()) return replacement.status();
  absl::StatusOr<bool> add_prefix_space = BoolFieldOr(config, "add_prefix_space", path, true);
  if (!add_prefix_space.ok()) return add_prefix_space.status();
  absl::StatusOr<std::string> scheme =
      StringFieldOr(config, "prepend_scheme", path, *add_prefix_space ? "always" : "never");
  if (!scheme.ok()) return scheme.status();
  if (*scheme != "always" && *scheme != "first" && *scheme != "never") {
    return FieldError(
        FieldPath(path, "prepend_scheme"),
        absl::StrCat("unknown prepend_scheme \"", *scheme, "\" (supported: always, first, never)"));
  }
  return MetaspaceOptions{.replacement = *std::move(replacement),
                          .prepend_scheme = *std::move(scheme)};
}

}  // namespace warp::text
