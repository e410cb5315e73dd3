#include "computed/text/decoder.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "computed/text/byte_level.h"
#include "computed/text/text_pattern.h"
#include "computed/text/utf8.h"

namespace warp::text {
namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

}  // namespace

int ParseByteFallbackToken(std::string_view token) {
  if (token.size() != 6 || !token.starts_with("<0x") || token.back() != '>') return -1;
  const int high = HexValue(token[3]);
  const int low = HexValue(token[4]);
  return high < 0 || low < 0 ? -1 : high * 16 + low;
}

namespace {

// Byte-level tokens back to text. A token with a character outside the byte
// map keeps its own UTF-8 bytes, as tokenizers does.
class ByteLevelDecoder : public Decoder {
 public:
  absl::StatusOr<std::vector<DecodePiece>> DecodeChain(std::vector<DecodePiece> pieces,
                                                       const DecodeContext&) const override {
    std::vector<DecodePiece> out;
    std::string bytes;
    auto flush = [&] {
      if (!bytes.empty()) out.push_back({Utf8Lossy(bytes)});
      bytes.clear();
    };
    for (DecodePiece& piece : pieces) {
      if (piece.added) {
        flush();
        out.push_back(std::move(piece));
      } else {
        AppendBytes(piece.text, bytes);
      }
    }
    flush();
    return out;
  }

 private:
  static void AppendBytes(std::string_view token, std::string& bytes) {
    const size_t mark = bytes.size();
    bool mapped = true;
    ForEachCodePoint(token, [&](char32_t code_point, size_t, size_t) {
      const int byte = CharToByte(code_point);
      mapped &= byte >= 0;
      if (mapped) bytes.push_back(static_cast<char>(byte));
    });
    if (!mapped) bytes.replace(mark, std::string::npos, token);
  }
};

// Runs of <0xXX> tokens become the text their bytes spell; an invalid run
// becomes one U+FFFD per token (tokenizers' ByteFallback).
class ByteFallbackDecoder : public Decoder {
 public:
  absl::StatusOr<std::vector<DecodePiece>> DecodeChain(std::vector<DecodePiece> pieces,
                                                       const DecodeContext&) const override {
    std::vector<DecodePiece> out;
    std::string bytes;
    size_t num_byte_tokens = 0;
    auto flush = [&] {
      if (num_byte_tokens == 0) return;
      if (CheckUtf8(bytes, "").ok()) {
        out.push_back({bytes});
      } else {
        for (size_t k = 0; k < num_byte_tokens; ++k) out.push_back({std::string(kReplacementChar)});
      }
      bytes.clear();
      num_byte_tokens = 0;
    };
    for (DecodePiece& piece : pieces) {
      if (const int byte = ParseByteFallbackToken(piece.text); byte >= 0) {
        bytes.push_back(static_cast<char>(byte));
        ++num_byte_tokens;
      } else {
        flush();
        out.push_back(std::move(piece));
      }
    }
    flush();
    return out;
  }

};

// The replacement character back to spaces. The space the pre-tokenizer
// prepended goes: one leading space of the first piece, as the JS port does
// (the Rust crate drops every replacement in the first piece, so "  x"
// would lose both spaces).
class MetaspaceDecoder : public Decoder {
 public:
  MetaspaceDecoder(std::string replacement, bool strip_first)
      : replacement_(std::move(replacement)), strip_first_(strip_first) {}
  absl::StatusOr<std::vector<DecodePiece>> DecodeChain(
      std::vector<DecodePiece> pieces, const DecodeContext& context) const override {
    for (size_t k = 0; k < pieces.size(); ++k) {
      std::string& text = pieces[k].text;
      text = absl::StrReplaceAll(text, {{replacement_, " "}});
      if (k == 0 && strip_first_ && context.at_text_start && text.starts_with(' ')) {
        text.erase(0, 1);
      }
    }
    return pieces;
  }

 private:
  std::string replacement_;
  bool strip_first_;
};

class FuseDecoder : public Decoder {
 public:
  absl::StatusOr<std::vector<DecodePiece>> DecodeChain(std::vector<DecodePiece> pieces,
                                                       const DecodeContext&) const override {
    DecodePiece fused;
    for (const DecodePiece& piece : pieces) fused.text += piece.text;
    return std::vector<DecodePiece>{std::move(fused)};
  }
};

// Drops up to `start` leading and `stop` trailing `content` characters.
class StripDecoder : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop)
      : content_(std::move(content)), start_(start), stop_(stop) {}
  absl::StatusOr<std::vector<DecodePiece>> DecodeChain(
      std::vector<DecodePiece> pieces, const DecodeContext& context) const override {
    for (size_t k = 0; k < pieces.size(); ++k) {
      std::string& text = pieces[k].text;
      const bool strip_start = k > 0 || context.at_text_start;
      for (size_t n = 0; strip_start && n < start_ && text.starts_with(content_); ++n) {
        text.erase(0, content_.size());
      }
      for (size_t n = 0; n < stop_ && text.ends_with(content_); ++n) {
        text.erase(text.size() - content_.size());
      }
    }
    return pieces;
  }

 private:
  std::string content_;
  size_t start_;
  size_t stop_;
};

class ReplaceDecoder : public Decoder {
 public:
  ReplaceDecoder(TextPattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  absl::StatusOr<std::vector<DecodePiece>> DecodeChain(std::vector<DecodePiece> pieces,
                                                       const DecodeContext&) const override {
    for (DecodePiece& piece : pieces) {
      absl::StatusOr<std::string> replaced = pattern_.ReplaceAll(piece.text, content_);
      if (!replaced.ok()) return replaced.status();
      piece.text = *std::move(replaced);
    }
    return pieces;
  }

 private:
  TextPattern pattern_;
  std::string content_;
};

class SequenceDecoder : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  absl::StatusOr<std::vector<DecodePiece>> DecodeChain(
      std::vector<DecodePiece> pieces, const DecodeContext& context) const override {
    for (const auto& step : steps_) {
      absl::StatusOr<std::vector<DecodePiece>> next = step->DecodeChain(std::move(pieces), context);
      if (!next.ok()) return next.status();
      pieces = *std::move(next);
    }
    return pieces;
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

absl::StatusOr<std::unique_ptr<Decoder>> ParseSequence(const Json& config, std::string_view path) {
  absl::StatusOr<std::vector<std::unique_ptr<Decoder>>> steps =
      ParseSteps<Decoder>(config, "decoders", path, ParseDecoder);
  if (!steps.ok()) return steps.status();
  return std::make_unique<SequenceDecoder>(*std::move(steps));
}

absl::StatusOr<std::unique_ptr<Decoder>> ParseMetaspace(const Json& config, std::string_view path) {
  absl::StatusOr<MetaspaceOptions> options = ParseMetaspaceOptions(config, path);
  if (!options.ok()) return options.status();
  return std::make_unique<MetaspaceDecoder>(options->replacement,
                                            options->prepend_scheme != "never");
}

absl::StatusOr<std::unique_ptr<Decoder>> ParseStrip(const Json& config, std::string_view path) {
  absl::StatusOr<std::string> content = StringFieldOr(config, "content", path, " ");
  absl::StatusOr<int64_t> start = IntFieldOr(config, "start", path, 0);
  absl::StatusOr<int64_t> stop = IntFieldOr(config, "stop", path, 0);
  for (const absl::Status& status : {content.status(), start.status(), stop.status()}) {
    if (!status.ok()) return status;
  }
  if (content->empty() || *start < 0 || *stop < 0) {
    return FieldError(path, "expected a non-empty content and non-negative start and stop");
  }
  return std::make_unique<StripDecoder>(*content, *start, *stop);
}

absl::StatusOr<std::unique_ptr<Decoder>> ParseReplace(const Json& config, std::string_view path) {
  absl::StatusOr<TextPattern> pattern = TextPattern::FromField(config, path);
  if (!pattern.ok()) return pattern.status();
  absl::StatusOr<std::string> content = StringField(config, "content", path);
  if (!content.ok()) return content.status();
  return std::make_unique<ReplaceDecoder>(*std::move(pattern), *std::move(content));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Decoder>> ParseDecoder(const Json& config, std::string_view path) {
  if (config.is_null()) return nullptr;
  absl::StatusOr<std::string> type = ComponentType(config, path);
  if (!type.ok()) return type.status();
  if (*type == "Sequence") return ParseSequence(config, path);
  if (*type == "ByteLevel") return std::make_unique<ByteLevelDecoder>();
  if (*type == "ByteFallback") return std::make_unique<ByteFallbackDecoder>();
  if (*type == "Metaspace") return ParseMetaspace(config, path);
  if (*type == "Fuse") return std::make_unique<FuseDecoder>();
  if (*type == "Strip") return ParseStrip(config, path);
  if (*type == "Replace") return ParseReplace(config, path);
  return FieldError(path, absl::StrCat("unknown decoder type \"", *type,
                                       "\" (supported: Sequence, ByteLevel, ByteFallback, "
                                       "Metaspace, Fuse, Strip, Replace)"));
}

}  // namespace warp::text
