#include "computed/text/pre_tokenizer.h"

#include <functional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "computed/text/byte_level.h"
#include "computed/text/split_behavior.h"
#include "computed/text/text_pattern.h"
#include "computed/text/unicode.h"

namespace warp::text {
namespace {

// GPT-2's pattern, which ByteLevel(use_regex: true) splits with.
constexpr std::string_view kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
// Whitespace's pattern: runs of word characters or of other non-spaces.
constexpr std::string_view kWhitespacePattern = R"(\w+|[^\w\s]+)";

using PieceSplitter = std::function<absl::StatusOr<std::vector<std::string>>(
    std::string piece, size_t index, const PreTokenizeContext& context)>;

// Applies `split` to each piece and concatenates the results.
absl::StatusOr<std::vector<std::string>> SplitEach(std::vector<std::string> pieces,
                                                   const PreTokenizeContext& context,
                                                   const PieceSplitter& split) {
  std::vector<std::string> out;
  out.reserve(pieces.size());
  for (size_t k = 0; k < pieces.size(); ++k) {
    absl::StatusOr<std::vector<std::string>> parts = split(std::move(pieces[k]), k, context);
    if (!parts.ok()) return parts.status();
    for (std::string& part : *parts) {
      if (!part.empty()) out.push_back(std::move(part));
    }
  }
  return out;
}

// Every pre-tokenizer but Sequence is a per-piece function.
class PiecewisePreTokenizer : public PreTokenizer {
 public:
  explicit PiecewisePreTokenizer(PieceSplitter split) : split_(std::move(split)) {}
  absl::StatusOr<std::vector<std::string>> PreTokenize(
      std::vector<std::string> pieces, const PreTokenizeContext& context) const override {
    return SplitEach(std::move(pieces), context, split_);
  }

 private:
  PieceSplitter split_;
};

class SequencePreTokenizer : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  absl::StatusOr<std::vector<std::string>> PreTokenize(
      std::vector<std::string> pieces, const PreTokenizeContext& context) const override {
    for (const auto& step : steps_) {
      absl::StatusOr<std::vector<std::string>> next = step->PreTokenize(std::move(pieces), context);
      if (!next.ok()) return next.status();
      pieces = *std::move(next);
    }
    return pieces;
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

std::unique_ptr<PreTokenizer> Piecewise(PieceSplitter split) {
  return std::make_unique<PiecewisePreTokenizer>(std::move(split));
}

// A splitter cutting each piece at the matches of `pattern`.
PieceSplitter PatternSplitter(TextPattern pattern, bool invert, SplitBehavior behavior) {
  return [pattern = std::move(pattern), invert, behavior](
             std::string piece, size_t,
             const PreTokenizeContext&) -> absl::StatusOr<std::vector<std::string>> {
    absl::StatusOr<std::vector<Match>> matches = pattern.FindAll(piece);
    if (!matches.ok()) return matches.status();
    return SplitByMatches(piece, *matches, invert, behavior);
  };
}

// A splitter cutting each piece at the code points where `pred` holds.
PieceSplitter CodePointSplitter(std::function<bool(char32_t)> pred, SplitBehavior behavior) {
  return [pred = std::move(pred), behavior](
             std::string piece, size_t,
             const PreTokenizeContext&) -> absl::StatusOr<std::vector<std::string>> {
    return SplitByMatches(piece, MatchCodePoints(piece, pred), /*invert=*/false, behavior);
  };
}

// ByteLevel: optionally a leading space, GPT-2's split, then bytes to
// their stand-in characters (byte_level.h).
absl::StatusOr<std::vector<std::string>> ByteLevelSplit(std::string_view input,
                                                        bool add_prefix_space, const Regex* regex) {
  std::string text;
  if (add_prefix_space && !input.starts_with(' ')) text.push_back(' ');
  text.append(input);
  std::vector<std::string> parts;
  if (regex == nullptr) {
    parts.push_back(std::move(text));
  } else {
    absl::StatusOr<std::vector<Match>> matches = regex->FindAll(text);
    if (!matches.ok()) return matches.status();
    parts = SplitByMatches(text, *matches, /*invert=*/false, SplitBehavior::kIsolated);
  }
  for (std::string& part : parts) part = BytesToChars(part);
  return parts;
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseSplit(const Json& config,
                                                         std::string_view path) {
  absl::StatusOr<TextPattern> pattern = TextPattern::FromField(config, path);
  if (!pattern.ok()) return pattern.status();
  absl::StatusOr<std::string> behavior_name = StringField(config, "behavior", path);
  if (!behavior_name.ok()) return behavior_name.status();
  absl::StatusOr<SplitBehavior> behavior = ParseSplitBehavior(*behavior_name);
  if (!behavior.ok()) {
    return FieldError(FieldPath(path, "behavior"), std::string(behavior.status().message()));
  }
  absl::StatusOr<bool> invert = BoolFieldOr(config, "invert", path, false);
  if (!invert.ok()) return invert.status();
  return Piecewise(PatternSplitter(*std::move(pattern), *invert, *behavior));
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseByteLevel(const Json& config,
                                                             std::string_view path) {
  absl::StatusOr<bool> add_prefix_space = BoolFieldOr(config, "add_prefix_space", path, true);
  if (!add_prefix_space.ok()) return add_prefix_space.status();
  absl::StatusOr<bool> use_regex = BoolFieldOr(config, "use_regex", path, true);
  if (!use_regex.ok()) return use_regex.status();
  std::shared_ptr<const Regex> regex;
  if (*use_regex) {
    absl::StatusOr<std::unique_ptr<Regex>> compiled =
        Regex::Compile(kGpt2Pattern, RegexDialect::kOniguruma);
    if (!compiled.ok()) return compiled.status();
    regex = *std::move(compiled);
  }
  return Piecewise(
      [prefix = *add_prefix_space, regex](std::string piece, size_t, const PreTokenizeContext&) {
        return ByteLevelSplit(piece, prefix, regex.get());
      });
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseMetaspace(const Json& config,
                                                             std::string_view path) {
  absl::StatusOr<MetaspaceOptions> options = ParseMetaspaceOptions(config, path);
  if (!options.ok()) return options.status();
  absl::StatusOr<bool> split = BoolFieldOr(config, "split", path, true);
  if (!split.ok()) return split.status();
  absl::StatusOr<TextPattern> delimiter = TextPattern::Literal(options->replacement);
  if (!delimiter.ok()) return delimiter.status();
  PieceSplitter splitter = PatternSplitter(*delimiter, false, SplitBehavior::kMergedWithNext);
  return Piecewise(
      [replacement = options->replacement, scheme = options->prepend_scheme, split = *split,
       splitter](std::string piece, size_t index,
                 const PreTokenizeContext& context) -> absl::StatusOr<std::vector<std::string>> {
        piece = absl::StrReplaceAll(piece, {{" ", replacement}});
        const bool prepend =
            scheme == "always" || (scheme == "first" && index == 0 && context.at_text_start);
        if (prepend && !piece.starts_with(replacement)) piece.insert(0, replacement);
        if (!split) return std::vector<std::string>{std::move(piece)};
        return splitter(std::move(piece), index, context);
      });
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseSequence(const Json& config,
                                                            std::string_view path) {
  absl::StatusOr<std::vector<std::unique_ptr<PreTokenizer>>> steps =
      ParseSteps<PreTokenizer>(config, "pretokenizers", path, ParsePreTokenizer);
  if (!steps.ok()) return steps.status();
  return std::make_unique<SequencePreTokenizer>(*std::move(steps));
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseWhitespace() {
  absl::StatusOr<std::unique_ptr<Regex>> regex =
      Regex::Compile(kWhitespacePattern, RegexDialect::kOniguruma);
  if (!regex.ok()) return regex.status();
  std::shared_ptr<const Regex> shared = *std::move(regex);
  // Hugging Face splits with Invert(pattern) + Removed: the matches stay.
  return Piecewise([shared](std::string piece, size_t,
                            const PreTokenizeContext&) -> absl::StatusOr<std::vector<std::string>> {
    absl::StatusOr<std::vector<Match>> matches = shared->FindAll(piece);
    if (!matches.ok()) return matches.status();
    return SplitByMatches(piece, *matches, /*invert=*/true, SplitBehavior::kRemoved);
  });
}

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParseBehaviorSplit(
    const Json& config, std::string_view path, std::function<bool(char32_t)> pred) {
  absl::StatusOr<std::string> name = StringFieldOr(config, "behavior", path, "Isolated");
  if (!name.ok()) return name.status();
  absl::StatusOr<SplitBehavior> behavior = ParseSplitBehavior(*name);
  if (!behavior.ok()) {
    return FieldError(FieldPath(path, "behavior"), std::string(behavior.status().message()));
  }
  return Piecewise(CodePointSplitter(std::move(pred), *behavior));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PreTokenizer>> ParsePreTokenizer(const Json& config,
                                                                std::string_view path) {
  if (config.is_null()) return nullptr;
  absl::StatusOr<std::string> type = ComponentType(config, path);
  if (!type.ok()) return type.status();
  if (*type == "Sequence") return ParseSequence(config, path);
  if (*type == "Split") return ParseSplit(config, path);
  if (*type == "ByteLevel") return ParseByteLevel(config, path);
  if (*type == "Metaspace") return ParseMetaspace(config, path);
  if (*type == "Whitespace") return ParseWhitespace();
  if (*type == "WhitespaceSplit") {
    return Piecewise(CodePointSplitter(IsWhitespace, SplitBehavior::kRemoved));
  }
  if (*type == "Punctuation") return ParseBehaviorSplit(config, path, IsPunctuation);
  if (*type == "Digits") {
    absl::StatusOr<bool> individual = BoolFieldOr(config, "individual_digits", path, false);
    if (!individual.ok()) return individual.status();
    return Piecewise(CodePointSplitter(
        IsNumeric, *individual ? SplitBehavior::kIsolated : SplitBehavior::kContiguous));
  }
  return FieldError(path, absl::StrCat("unknown pre-tokenizer type \"", *type,
                                       "\" (supported: Sequence, Split, ByteLevel, Metaspace, "
                                       "Whitespace, WhitespaceSplit, Punctuation, Digits)"));
}

}  // namespace warp::text
