#pragma once

// Typed access to tokenizer.json fields with errors that name the JSON path
// ("normalizer.normalizers[1].pattern: expected a string"). Loaders prepend
// the file name on the way up.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace warp::text {

using Json = nlohmann::json;

// Parses `text`; a syntax error names `source` and the line, column and byte.
absl::StatusOr<Json> ParseJson(std::string_view text, std::string_view source);

std::string FieldPath(std::string_view parent, std::string_view key);  // "parent.key"
std::string IndexPath(std::string_view parent, size_t index);          // "parent[index]"

// InvalidArgument "path: message".
absl::Status FieldError(std::string_view path, std::string_view message);

// The field, or nullptr when it is missing or null.
const Json* FindField(const Json& object, std::string_view key);

absl::StatusOr<std::string> StringField(const Json& object, std::string_view key,
                                        std::string_view path);
absl::StatusOr<std::string> StringFieldOr(const Json& object, std::string_view key,
                                          std::string_view path, std::string_view fallback);
absl::StatusOr<bool> BoolFieldOr(const Json& object, std::string_view key, std::string_view path,
                                 bool fallback);
absl::StatusOr<int64_t> IntFieldOr(const Json& object, std::string_view key, std::string_view path,
                                   int64_t fallback);
// The required array field `key`.
absl::StatusOr<const Json*> ArrayField(const Json& object, std::string_view key,
                                       std::string_view path);

// The steps of a Sequence component: each element of the array `key`, parsed
// by `parse(element, "path.key[i]")`; a null step (a no-op) is left out.
template <typename Step, typename Parse>
absl::StatusOr<std::vector<std::unique_ptr<Step>>> ParseSteps(const Json& config,
                                                              std::string_view key,
                                                              std::string_view path, Parse parse) {
  absl::StatusOr<const Json*> list = ArrayField(config, key, path);
  if (!list.ok()) return list.status();
  std::vector<std::unique_ptr<Step>> steps;
  for (size_t k = 0; k < (*list)->size(); ++k) {
    absl::StatusOr<std::unique_ptr<Step>> step =
        parse((**list)[k], IndexPath(FieldPath(path, key), k));
    if (!step.ok()) return step.status();
    if (*step != nullptr) steps.push_back(*std::move(step));
  }
  return steps;
}

// The fields a Metaspace pre-tokenizer and decoder share: the replacement of
// spaces ("▁") and when a space is prepended: "always", "first" or "never"
// (from the older add_prefix_space when prepend_scheme is absent).
struct MetaspaceOptions {
  std::string replacement;
  std::string prepend_scheme;
};
absl::StatusOr<MetaspaceOptions> ParseMetaspaceOptions(const Json& config, std::string_view path);

// The "type" of the component at `path`. REQUIRES nothing: a non-object
// or a missing type is an error naming the path.
absl::StatusOr<std::string> ComponentType(const Json& component, std::string_view path);

}  // namespace warp::text
