#include "computed/text/added_tokens.h"

#include "common/utf8.h"
#include "computed/text/unicode.h"
#include "computed/text/utf8.h"

namespace warp::text {
namespace {

bool IsWordChar(char32_t code_point) { return code_point == '_' || IsAlphanumeric(code_point); }

bool EndsWithWordChar(std::string_view text) {
  if (text.empty()) return false;
  size_t start = text.size() - 1;
  while (start > 0 && utf8::IsContinuation(text[start])) --start;
  size_t length = 0;
  return IsWordChar(DecodeCodePoint(text, start, &length));
}

bool StartsWithWordChar(std::string_view text) {
  if (text.empty()) return false;
  size_t length = 0;
  return IsWordChar(DecodeCodePoint(text, 0, &length));
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<Entry> entries) : entries_(std::move(entries)) {
  node_entry_.push_back(-1);  // the root
  for (size_t index = 0; index < entries_.size(); ++index) {
    const std::string& pattern = entries_[index].pattern;
    if (pattern.empty()) continue;
    first_bytes_[static_cast<unsigned char>(pattern[0])] = true;
    int32_t node = 0;
    for (const char byte : pattern) {
      const uint64_t key = static_cast<uint64_t>(node) * 256 + static_cast<unsigned char>(byte);
      auto [it, inserted] = edges_.try_emplace(key, static_cast<int32_t>(node_entry_.size()));
      if (inserted) node_entry_.push_back(-1);
      node = it->second;
    }
    if (node_entry_[node] < 0) node_entry_[node] = static_cast<int32_t>(index);
  }
}

int32_t AddedTokenMatcher::LongestMatch(std::string_view text, size_t pos, size_t* length) const {
  int32_t best = -1;
  int32_t node = 0;
  for (size_t k = pos; k < text.size(); ++k) {
    const uint64_t key = static_cast<uint64_t>(node) * 256 + static_cast<unsigned char>(text[k]);
    const auto it = edges_.find(key);
    if (it == edges_.end()) break;
    node = it->second;
    if (node_entry_[node] >= 0) {
      best = node_entry_[node];
      *length = k + 1 - pos;
    }
  }
  return best;
}

std::vector<TextSegment> AddedTokenMatcher::Split(std::string_view text) const {
  std::vector<TextSegment> segments;
  size_t emitted = 0;  // end of the last token segment
  size_t pos = 0;
  while (pos < text.size()) {
    size_t length = 0;
    const int32_t index =
        first_bytes_[static_cast<unsigned char>(text[pos])] ? LongestMatch(text, pos, &length) : -1;
    if (index < 0) {
      ++pos;
      continue;
    }
    const AddedToken& token = entries_[index].token;
    size_t begin = pos;
    size_t end = pos + length;
    pos = end;
    if (token.single_word &&
        (EndsWithWordChar(text.substr(0, begin)) || StartsWithWordChar(text.substr(end)))) {
      continue;
    }
    if (token.lstrip) begin -= TrailingWhitespaceBytes(text.substr(emitted, begin - emitted));
    if (token.rstrip) {
      end += LeadingWhitespaceBytes(text.substr(end));
      pos = end;
    }
    if (emitted < begin) segments.push_back({text.substr(emitted, begin - emitted), emitted});
    segments.push_back({text.substr(begin, end - begin), begin, token.id});
    emitted = end;
  }
  if (emitted < text.size()) segments.push_back({text.substr(emitted), emitted});
  return segments;
}

}  // namespace warp::text
