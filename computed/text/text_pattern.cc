#include "computed/text/text_pattern.h"

namespace warp::text {

absl::StatusOr<TextPattern> TextPattern::FromField(const Json& config, std::string_view path) {
  const Json* pattern = FindField(config, "pattern");
  if (pattern == nullptr) return FieldError(FieldPath(path, "pattern"), "missing");
  return FromJson(*pattern, FieldPath(path, "pattern"));
}

absl::StatusOr<TextPattern> TextPattern::FromJson(const Json& pattern, std::string_view path) {
  if (!pattern.is_object()) {
    return FieldError(path, "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  TextPattern result;
  if (FindField(pattern, "String") != nullptr) {
    absl::StatusOr<std::string> literal = StringField(pattern, "String", path);
    if (!literal.ok()) return literal.status();
    result.literal_ = *std::move(literal);
    return result;
  }
  if (FindField(pattern, "Regex") == nullptr) {
    return FieldError(path, "expected {\"String\": ...} or {\"Regex\": ...}");
  }
  absl::StatusOr<std::string> source = StringField(pattern, "Regex", path);
  if (!source.ok()) return source.status();
  absl::StatusOr<std::unique_ptr<Regex>> regex = Regex::Compile(*source, RegexDialect::kOniguruma);
  if (!regex.ok()) {
    return FieldError(FieldPath(path, "Regex"), std::string(regex.status().message()));
  }
  result.regex_ = *std::move(regex);
  return result;
}

absl::StatusOr<TextPattern> TextPattern::Literal(std::string literal) {
  TextPattern result;
  result.literal_ = std::move(literal);
  return result;
}

absl::StatusOr<std::vector<Match>> TextPattern::FindAll(std::string_view text) const {
  if (regex_ != nullptr) return regex_->FindAll(text);
  std::vector<Match> matches;
  if (literal_.empty()) return matches;
  for (size_t pos = text.find(literal_); pos != std::string_view::npos;
       pos = text.find(literal_, pos + literal_.size())) {
    matches.push_back({pos, pos + literal_.size()});
  }
  return matches;
}

absl::StatusOr<std::string> TextPattern::ReplaceAll(std::string_view text,
                                                    std::string_view content) const {
  absl::StatusOr<std::vector<Match>> matches = FindAll(text);
  if (!matches.ok()) return matches.status();
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (const Match& match : *matches) {
    out.append(text.substr(prev, match.begin - prev));
    out.append(content);
    prev = match.end;
  }
  out.append(text.substr(prev));
  return out;
}

}  // namespace warp::text
