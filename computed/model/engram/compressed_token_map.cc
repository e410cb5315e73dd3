#include "computed/model/engram/compressed_token_map.h"

#include <utf8proc.h>

#include <optional>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "computed/text/tokenizer.h"
#include "computed/text/unicode.h"
#include "computed/text/utf8.h"

namespace warp::computed {
namespace {

// vLLM's stand-in for a lone space while Strip runs (a private-use character).
constexpr char32_t kSentinel = 0xE000;

bool IsMark(char32_t code_point) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(code_point))) {
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return true;
    default:
      return false;
  }
}

// Rust's char::to_lowercase: the full mapping of one code point, without the
// context rules of str::to_lowercase (no word-final sigma; tokenizers'
// Lowercase maps char by char). text::ToLowercase applies those rules, so it
// is not used here.
void AppendLowercase(char32_t code_point, std::string& out) {
  if (code_point == 0x130) {  // the one unconditional multi-character mapping
    out.append("i\xCC\x87");
    return;
  }
  text::AppendCodePoint(
      static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(code_point))), out);
}

bool IsCollapsedSpace(char32_t code_point) {
  return code_point == ' ' || code_point == '\t' || code_point == '\r' || code_point == '\n';
}

// StripAccents, Lowercase and Replace([ \t\r\n]+ -> " ") in one pass: lowercase
// maps no code point to a mark or to one of the collapsed spaces (U+0130 is gone
// after NFD), so the steps commute with a single left-to-right scan.
std::string FoldDecomposed(std::string_view decomposed) {
  std::string folded;
  folded.reserve(decomposed.size());
  bool in_space_run = false;
  text::ForEachCodePoint(decomposed, [&](char32_t code_point, size_t, size_t) {
    if (IsMark(code_point)) return;
    if (IsCollapsedSpace(code_point)) {
      if (!in_space_run) folded.push_back(' ');
      in_space_run = true;
      return;
    }
    in_space_run = false;
    AppendLowercase(code_point, folded);
  });
  return folded;
}

std::string KeyOf(std::string_view decoded, std::string_view raw_token) {
  if (decoded.find(text::kReplacementChar) != std::string_view::npos) {
    return std::string(raw_token);  // a partial UTF-8 byte token: its raw form
  }
  std::string normalized = NormalizeEngramText(decoded);
  return normalized.empty() ? std::string(decoded) : normalized;
}

}  // namespace

std::string NormalizeEngramText(std::string_view text) {
  const std::string folded = FoldDecomposed(text::NormalizeUnicode(
      text::NormalizeUnicode(text, text::NormalForm::kNfkc), text::NormalForm::kNfd));
  if (folded == " ") return folded;  // Replace(^ $ -> U+E000), Strip, U+E000 -> " "
  std::string_view stripped = std::string_view(folded).substr(text::LeadingWhitespaceBytes(folded));
  stripped.remove_suffix(text::TrailingWhitespaceBytes(stripped));
  std::string out;
  out.reserve(stripped.size());
  text::ForEachCodePoint(stripped, [&](char32_t code_point, size_t offset, size_t length) {
    if (code_point == kSentinel) {
      out.push_back(' ');
    } else {
      out.append(stripped.substr(offset, length));
    }
  });
  return out;
}

absl::StatusOr<CompressedTokenMap> BuildCompressedTokenMap(std::span<const std::string> decoded,
                                                           std::span<const std::string> raw_tokens,
                                                           int32_t expected_compressed_vocab_size) {
  if (decoded.size() != raw_tokens.size()) {
    return absl::InvalidArgumentError(absl::StrCat("engram token map: ", decoded.size(),
                                                   " decoded texts but ", raw_tokens.size(),
                                                   " raw tokens"));
  }
  CompressedTokenMap map;
  map.lookup.reserve(decoded.size());
  absl::flat_hash_map<std::string, int32_t> key_to_id;
  for (size_t id = 0; id < decoded.size(); ++id) {
    if (absl::Status status = text::CheckUtf8(decoded[id], "decoded text"); !status.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("engram token map: token id ", id, ": ", status.message()));
    }
    const int32_t next_id = static_cast<int32_t>(key_to_id.size());
    map.lookup.push_back(
        key_to_id.try_emplace(KeyOf(decoded[id], raw_tokens[id]), next_id).first->second);
  }
  map.compressed_vocab_size = static_cast<int32_t>(key_to_id.size());
  if (map.compressed_vocab_size != expected_compressed_vocab_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        "engram_compressed_vocab_size is ", expected_compressed_vocab_size,
        " in the config, but the tokenizer's ", decoded.size(), " token ids normalize to ",
        map.compressed_vocab_size,
        " compressed ids: every engram hash multiplier derives from this count, so the engram "
        "tables would be read at the wrong rows"));
  }
  return map;
}

absl::StatusOr<CompressedTokenMap> BuildCompressedTokenMap(const text::Tokenizer& tokenizer,
                                                           int32_t expected_compressed_vocab_size) {
  const size_t num_ids = static_cast<size_t>(tokenizer.vocab_size());
  std::vector<std::string> decoded(num_ids);
  std::vector<std::string> raw_tokens(num_ids);
  for (size_t id = 0; id < num_ids; ++id) {
    const int32_t token_id = static_cast<int32_t>(id);
    WARP_ASSIGN_OR_RETURN(decoded[id], tokenizer.Decode({&token_id, 1},
                                                        /*skip_special_tokens=*/false));
    if (decoded[id].find(text::kReplacementChar) != std::string::npos) {
      raw_tokens[id] = tokenizer.IdToToken(token_id).value_or("");
    }
  }
  return BuildCompressedTokenMap(decoded, raw_tokens, expected_compressed_vocab_size);
}

}  // namespace warp::computed
