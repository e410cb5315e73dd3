#include "computed/text/normalizer.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "computed/text/text_pattern.h"
#include "computed/text/unicode.h"

namespace warp::text {
namespace {

class UnicodeFormNormalizer : public Normalizer {
 public:
  explicit UnicodeFormNormalizer(NormalForm form) : form_(form) {}
  absl::StatusOr<std::string> Normalize(std::string_view text) const override {
    return NormalizeUnicode(text, form_);
  }

 private:
  NormalForm form_;
};

class LowercaseNormalizer : public Normalizer {
 public:
  absl::StatusOr<std::string> Normalize(std::string_view text) const override {
    return ToLowercase(text);
  }
};

class ReplaceNormalizer : public Normalizer {
 public:
  ReplaceNormalizer(TextPattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  absl::StatusOr<std::string> Normalize(std::string_view text) const override {
    return pattern_.ReplaceAll(text, content_);
  }

 private:
  TextPattern pattern_;
  std::string content_;
};

// Like Hugging Face: an empty text stays empty.
class PrependNormalizer : public Normalizer {
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  absl::StatusOr<std::string> Normalize(std::string_view text) const override {
    if (text.empty()) return std::string();
    return absl::StrCat(prefix_, std::string(text));
  }

 private:
  std::string prefix_;
};

class StripNormalizer : public Normalizer {
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  absl::StatusOr<std::string> Normalize(std::string_view text) const override {
    if (left_) text.remove_prefix(LeadingWhitespaceBytes(text));
    if (right_) text.remove_suffix(TrailingWhitespaceBytes(text));
    return std::string(text);
  }

 private:
  bool left_;
  bool right_;
};

class SequenceNormalizer : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  absl::StatusOr<std::string> Normalize(std::string_view text) const override {
    std::string current(text);
    for (const auto& step : steps_) {
      absl::StatusOr<std::string> next = step->Normalize(current);
      if (!next.ok()) return next.status();
      current = *std::move(next);
    }
    return current;
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

absl::StatusOr<std::unique_ptr<Normalizer>> ParseSequence(const Json& config,
                                                          std::string_view path) {
  absl::StatusOr<std::vector<std::unique_ptr<Normalizer>>> steps =
      ParseSteps<Normalizer>(config, "normalizers", path, ParseNormalizer);
  if (!steps.ok()) return steps.status();
  return std::make_unique<SequenceNormalizer>(*std::move(steps));
}

absl::StatusOr<std::unique_ptr<Normalizer>> ParseReplace(const Json& config,
                                                         std::string_view path) {
  absl::StatusOr<TextPattern> pattern = TextPattern::FromField(config, path);
  if (!pattern.ok()) return pattern.status();
  absl::StatusOr<std::string> content = StringField(config, "content", path);
  if (!content.ok()) return content.status();
  return std::make_unique<ReplaceNormalizer>(*std::move(pattern), *std::move(content));
}

absl::StatusOr<std::unique_ptr<Normalizer>> ParseStrip(const Json& config, std::string_view path) {
  absl::StatusOr<bool> left = BoolFieldOr(config, "strip_left", path, true);
  if (!left.ok()) return left.status();
  absl::StatusOr<bool> right = BoolFieldOr(config, "strip_right", path, true);
  if (!right.ok()) return right.status();
  return std::make_unique<StripNormalizer>(*left, *right);
}

}  // namespace

absl::StatusOr<std::unique_ptr<Normalizer>> ParseNormalizer(const Json& config,
                                                            std::string_view path) {
  if (config.is_null()) return nullptr;
  absl::StatusOr<std::string> type = ComponentType(config, path);
  if (!type.ok()) return type.status();
  if (*type == "Sequence") return ParseSequence(config, path);
  if (*type == "NFC") return std::make_unique<UnicodeFormNormalizer>(NormalForm::kNfc);
  if (*type == "NFD") return std::make_unique<UnicodeFormNormalizer>(NormalForm::kNfd);
  if (*type == "NFKC") return std::make_unique<UnicodeFormNormalizer>(NormalForm::kNfkc);
  if (*type == "NFKD") return std::make_unique<UnicodeFormNormalizer>(NormalForm::kNfkd);
  if (*type == "Lowercase") return std::make_unique<LowercaseNormalizer>();
  if (*type == "Replace") return ParseReplace(config, path);
  if (*type == "Strip") return ParseStrip(config, path);
  if (*type == "Prepend") {
    absl::StatusOr<std::string> prefix = StringField(config, "prepend", path);
    if (!prefix.ok()) return prefix.status();
    return std::make_unique<PrependNormalizer>(*std::move(prefix));
  }
  return FieldError(path, absl::StrCat("unknown normalizer type \"", *type,
                                       "\" (supported: Sequence, NFC, NFD, NFKC, NFKD, "
                                       "Lowercase, Replace, Prepend, Strip)"));
}

}  // namespace warp::text
