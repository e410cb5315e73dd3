#include "computed/chat/preprocess.h"

#include "computed/chat/unicode.h"

namespace warp::chat {
namespace {

class Builder {
 public:
  explicit Builder(const Preprocessed& in) : in_(in) {}
  void Copy(size_t from, size_t to) {
    out_.text.append(in_.text, from, to - from);
    out_.origin.insert(out_.origin.end(), in_.origin.begin() + from, in_.origin.begin() + to);
  }
  Preprocessed Finish() {
    out_.origin.push_back(in_.origin.back());
    return std::move(out_);
  }

 private:
  const Preprocessed& in_;
  Preprocessed out_;
};

// Byte length of a JavaScript line terminator at `i` (\n, \r, U+2028, U+2029), or 0.
size_t LineTerminatorAt(std::string_view t, size_t i) {
  if (t[i] == '\n' || t[i] == '\r') return 1;
  if (t.substr(i, 3) == "\xE2\x80\xA8" || t.substr(i, 3) == "\xE2\x80\xA9") return 3;
  return 0;
}

// /^[ \t]*({[#%-])/gm -> "$1"
Preprocessed LstripBlocks(const Preprocessed& in) {
  const std::string_view t = in.text;
  Builder out(in);
  bool line_start = true;
  size_t i = 0;
  while (i < t.size()) {
    if (line_start) {
      line_start = false;
      size_t j = i;
      while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
      if (j + 1 < t.size() && t[j] == '{' && (t[j + 1] == '#' || t[j + 1] == '%' || t[j + 1] == '-')) {
        i = j;
      }
      if (i >= t.size()) break;
    }
    const size_t terminator = LineTerminatorAt(t, i);
    const size_t len = terminator > 0 ? terminator : 1;
    out.Copy(i, i + len);
    i += len;
    line_start = terminator > 0;
  }
  return out.Finish();
}

// /([#%-]})\n/g -> "$1"
Preprocessed TrimBlocks(const Preprocessed& in) {
  const std::string_view t = in.text;
  Builder out(in);
  size_t i = 0;
  while (i < t.size()) {
    if ((t[i] == '#' || t[i] == '%' || t[i] == '-') && t.substr(i + 1, 2) == "}\n") {
      out.Copy(i, i + 2);
      i += 3;
    } else {
      out.Copy(i, i + 1);
      ++i;
    }
  }
  return out.Finish();
}

size_t SkipWhitespace(std::string_view t, size_t i) {
  while (size_t len = JsWhitespaceAt(t, i)) i += len;
  return i;
}

// Matches {%-? \s* (end)?generation \s* -?%} at `i`; returns its end or 0.
size_t MatchGenerationTag(std::string_view t, size_t i, bool* lstrip, bool* rstrip) {
  if (t.substr(i, 2) != "{%") return 0;
  size_t j = i + 2;
  *lstrip = j < t.size() && t[j] == '-';
  if (*lstrip) ++j;
  j = SkipWhitespace(t, j);
  if (t.substr(j, 3) == "end") j += 3;
  if (t.substr(j, 10) != "generation") return 0;
  j = SkipWhitespace(t, j + 10);
  *rstrip = j < t.size() && t[j] == '-';
  if (*rstrip) ++j;
  return t.substr(j, 2) == "%}" ? j + 2 : 0;
}

// /(\s*){%(-?)\s*(?:end)?generation\s*(-?)%}(\s*)/gs, keeping the outer
// whitespace unless the matching "-" marker asks to strip it.
Preprocessed RemoveGenerationTags(const Preprocessed& in) {
  const std::string_view t = in.text;
  Builder out(in);
  size_t copied = 0;  // everything before this is already emitted (regex lastIndex)
  for (size_t i = t.find("{%"); i != std::string_view::npos; i = t.find("{%", i + 1)) {
    if (i < copied) continue;
    bool lstrip = false;
    bool rstrip = false;
    const size_t tag_end = MatchGenerationTag(t, i, &lstrip, &rstrip);
    if (tag_end == 0) continue;
    size_t before = i;
    while (before > copied) {
      const size_t len = JsWhitespaceBefore(t, before);
      if (len == 0 || before - len < copied) break;
      before -= len;
    }
    const size_t after = SkipWhitespace(t, tag_end);
    out.Copy(copied, before);
    if (!lstrip) out.Copy(before, i);
    if (!rstrip) out.Copy(tag_end, after);
    copied = after;
    i = after > 0 ? after - 1 : 0;
  }
  out.Copy(copied, t.size());
  return out.Finish();
}

}  // namespace

Preprocessed Preprocess(std::string_view source) {
  // Jinja2's lexer: every \r\n and \r becomes \n (newline_sequence), and
  // one trailing newline is dropped (keep_trailing_newline=False).
  Preprocessed p;
  for (size_t i = 0; i < source.size(); ++i) {
    p.origin.push_back(i);
    if (source[i] == '\r') {
      p.text += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      p.text += source[i];
    }
  }
  if (!p.text.empty() && p.text.back() == '\n') {
    p.text.pop_back();
    p.origin.pop_back();
  }
  p.origin.push_back(p.text.empty() ? 0 : p.origin.back() + 1);
  return RemoveGenerationTags(TrimBlocks(LstripBlocks(p)));
}

}  // namespace warp::chat
