#include "computed/text/post_processor.h"

#include "absl/strings/str_cat.h"

namespace warp::text {
namespace {

class IdentityPostProcessor : public PostProcessor {
 public:
  std::vector<int32_t> Process(std::vector<int32_t> ids) const override { return ids; }
};

// The "single" template: fixed ids around the sequence ($A).
class TemplatePostProcessor : public PostProcessor {
 public:
  // `before` and `after` hold the special ids on each side of $A.
  TemplatePostProcessor(std::vector<int32_t> before, std::vector<int32_t> after)
      : before_(std::move(before)), after_(std::move(after)) {}
  std::vector<int32_t> Process(std::vector<int32_t> ids) const override {
    std::vector<int32_t> out = before_;
    out.insert(out.end(), ids.begin(), ids.end());
    out.insert(out.end(), after_.begin(), after_.end());
    return out;
  }

 private:
  std::vector<int32_t> before_;
  std::vector<int32_t> after_;
};

class SequencePostProcessor : public PostProcessor {
 public:
  explicit SequencePostProcessor(std::vector<std::unique_ptr<PostProcessor>> steps)
      : steps_(std::move(steps)) {}
  std::vector<int32_t> Process(std::vector<int32_t> ids) const override {
    for (const auto& step : steps_) ids = step->Process(std::move(ids));
    return ids;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> steps_;
};

// The ids of special token `name` from the template's "special_tokens" map.
absl::StatusOr<std::vector<int32_t>> SpecialIds(const Json& config, const std::string& name,
                                                std::string_view path) {
  const Json* specials = FindField(config, "special_tokens");
  const Json* entry = specials == nullptr ? nullptr : FindField(*specials, name);
  const std::string entry_path = FieldPath(FieldPath(path, "special_tokens"), name);
  if (entry == nullptr) {
    return FieldError(FieldPath(path, "special_tokens"),
                      absl::StrCat("template names \"", name, "\", which is not defined here"));
  }
  absl::StatusOr<const Json*> ids_json = ArrayField(*entry, "ids", entry_path);
  if (!ids_json.ok()) return ids_json.status();
  std::vector<int32_t> ids;
  for (const Json& id : **ids_json) {
    if (!id.is_number_integer()) return FieldError(FieldPath(entry_path, "ids"), "expected ids");
    ids.push_back(id.get<int32_t>());
  }
  return ids;
}

absl::StatusOr<std::unique_ptr<PostProcessor>> ParseTemplate(const Json& config,
                                                             std::string_view path) {
  const std::string single_path = FieldPath(path, "single");
  absl::StatusOr<const Json*> single = ArrayField(config, "single", path);
  if (!single.ok()) return single.status();
  std::vector<int32_t> before, after;
  bool seen_sequence = false;
  for (size_t k = 0; k < (*single)->size(); ++k) {
    const Json& item = (**single)[k];
    const std::string item_path = IndexPath(single_path, k);
    if (FindField(item, "Sequence") != nullptr) {
      seen_sequence = true;
      continue;
    }
    const Json* special = FindField(item, "SpecialToken");
    if (special == nullptr) return FieldError(item_path, "expected SpecialToken or Sequence");
    absl::StatusOr<std::string> name =
        StringField(*special, "id", FieldPath(item_path, "SpecialToken"));
    if (!name.ok()) return name.status();
    absl::StatusOr<std::vector<int32_t>> ids = SpecialIds(config, *name, path);
    if (!ids.ok()) return ids.status();
    std::vector<int32_t>& side = seen_sequence ? after : before;
    side.insert(side.end(), ids->begin(), ids->end());
  }
  return std::make_unique<TemplatePostProcessor>(std::move(before), std::move(after));
}

absl::StatusOr<std::unique_ptr<PostProcessor>> ParseSequence(const Json& config,
                                                             std::string_view path) {
  absl::StatusOr<std::vector<std::unique_ptr<PostProcessor>>> steps =
      ParseSteps<PostProcessor>(config, "processors", path, ParsePostProcessor);
  if (!steps.ok()) return steps.status();
  return std::make_unique<SequencePostProcessor>(*std::move(steps));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostProcessor>> ParsePostProcessor(const Json& config,
                                                                  std::string_view path) {
  if (config.is_null()) return nullptr;
  absl::StatusOr<std::string> type = ComponentType(config, path);
  if (!type.ok()) return type.status();
  if (*type == "TemplateProcessing") return ParseTemplate(config, path);
  if (*type == "ByteLevel") return std::make_unique<IdentityPostProcessor>();
  if (*type == "Sequence") return ParseSequence(config, path);
  return FieldError(path, absl::StrCat("unknown post-processor type \"", *type,
                                       "\" (supported: TemplateProcessing, ByteLevel, Sequence)"));
}

}  // namespace warp::text
