#include "computed/serve/http_head.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace warp::computed::serve {
namespace {

std::string_view Trim(std::string_view text) {
  const size_t begin = text.find_first_not_of(" \t");
  if (begin == std::string_view::npos) return {};
  return text.substr(begin, text.find_last_not_of(" \t") - begin + 1);
}

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  return absl::EqualsIgnoreCase(absl::string_view(a.data(), a.size()),
                                absl::string_view(b.data(), b.size()));
}

// RFC 9110's tchar: what a field name is made of.
bool IsTokenChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool HasControlByte(std::string_view text) {
  return std::any_of(text.begin(), text.end(), [](char c) {
    const auto byte = static_cast<unsigned char>(c);
    return (byte < 0x20 && byte != '\t') || byte == 0x7f;
  });
}

// A line without its LF and an optional CR before it.
std::string_view LineText(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

}  // namespace

std::optional<std::string_view> HttpHead::Field(std::string_view name) const {
  for (const auto& [field, value] : fields) {
    if (EqualsIgnoringCase(field, name)) return std::string_view(value);
  }
  return std::nullopt;
}

std::vector<std::string_view> HttpHead::Values(std::string_view name) const {
  std::vector<std::string_view> out;
  for (const auto& [field, value] : fields) {
    if (!EqualsIgnoringCase(field, name)) continue;
    for (absl::string_view part : absl::StrSplit(absl::string_view(value), ',')) {
      const std::string_view trimmed = Trim(std::string_view(part.data(), part.size()));
      if (!trimmed.empty()) out.push_back(trimmed);
    }
  }
  return out;
}

void HttpHead::Remove(std::string_view name) {
  std::erase_if(fields, [&](const auto& field) { return EqualsIgnoringCase(field.first, name); });
}

std::string HttpHead::Serialize() const {
  std::string out = start_line + "\r\n";
  for (const auto& [field, value] : fields) absl::StrAppend(&out, field, ": ", value, "\r\n");
  out += "\r\n";
  return out;
}

HeadScan ScanHead(std::string_view bytes, const HeadLimits& limits) {
  size_t lines = 0;  // the start line and the fields so far
  size_t start = 0;
  while (true) {
    const size_t newline = bytes.find('\n', start);
    if (newline == std::string_view::npos) break;
    const bool blank = LineText(bytes.substr(start, newline - start)).empty();
    start = newline + 1;
    if (start > limits.max_bytes) return {.state = HeadScan::State::kTooLarge};
    if (blank && lines == 0) continue;  // blank lines before a request line (RFC 9112 2.2)
    if (blank) return {.state = HeadScan::State::kComplete, .end = start};
    if (++lines > limits.max_fields + 1) return {.state = HeadScan::State::kTooLarge};
  }
  if (bytes.size() > limits.max_bytes) return {.state = HeadScan::State::kTooLarge};
  return {};
}

std::optional<HttpHead> ParseHead(std::string_view head) {
  HttpHead out;
  for (absl::string_view raw : absl::StrSplit(absl::string_view(head.data(), head.size()), '\n')) {
    const std::string_view line = LineText(std::string_view(raw.data(), raw.size()));
    if (line.empty()) {
      if (out.start_line.empty()) continue;
      break;  // the blank line ending the head
    }
    if (HasControlByte(line)) return std::nullopt;
    if (out.start_line.empty()) {
      if (line.front() == ' ' || line.front() == '\t') return std::nullopt;
      out.start_line = std::string(line);
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos) return std::nullopt;  // also obs-fold
    const std::string_view name = line.substr(0, colon);
    if (!std::all_of(name.begin(), name.end(), IsTokenChar)) return std::nullopt;
    out.fields.emplace_back(std::string(name), std::string(Trim(line.substr(colon + 1))));
  }
  if (out.start_line.empty()) return std::nullopt;
  return out;
}

FramingResult RequestFraming(const HttpHead& head) {
  FramingResult out;
  const std::vector<std::string_view> codings = head.Values("Transfer-Encoding");
  const std::vector<std::string_view> lengths = head.Values("Content-Length");
  if (!codings.empty() && !lengths.empty()) {
    out.error = "a request may not carry both Transfer-Encoding and Content-Length";
    return out;
  }
  if (!codings.empty()) {
    if (codings.size() != 1 || !EqualsIgnoringCase(codings[0], "chunked")) {
      out.error = "the only transfer coding accepted is chunked";
      out.not_implemented = true;
      return out;
    }
    out.framing.kind = BodyFraming::Kind::kChunked;
    return out;
  }
  if (lengths.empty()) return out;
  for (std::string_view length : lengths) {
    if (length != lengths[0]) {
      out.error = "Content-Length is given twice with different values";
      return out;
    }
  }
  const std::string_view digits = lengths[0];
  if (digits.size() > 18 || !std::all_of(digits.begin(), digits.end(), [](char c) {
        return c >= '0' && c <= '9';
      })) {
    out.error = absl::StrCat("Content-Length is not a decimal byte count: ", std::string(digits));
    return out;
  }
  out.framing.kind = BodyFraming::Kind::kLength;
  for (char c : digits) out.framing.length = out.framing.length * 10 + (c - '0');
  return out;
}

ChunkedDecoder::Result ChunkedDecoder::Feed(std::string_view bytes, size_t* used,
                                            std::string* out) {
  size_t at = 0;
  // Appends to line_ up to a LF; true once the line is whole (LF consumed).
  auto take_line = [&]() {
    const size_t newline = bytes.find('\n', at);
    const size_t end = newline == std::string_view::npos ? bytes.size() : newline;
    line_.append(bytes.substr(at, end - at));
    at = newline == std::string_view::npos ? bytes.size() : newline + 1;
    return newline != std::string_view::npos;
  };
  while (at < bytes.size()) {
    switch (stage_) {
      case Stage::kSize: {
        if (!take_line()) break;
        std::string_view size = Trim(LineText(line_));
        size = size.substr(0, size.find(';'));  // chunk extensions are ignored
        size = Trim(size);
        if (size.empty() || size.size() > 15) return Result::kMalformed;
        uint64_t value = 0;
        for (char c : size) {
          const int digit = absl::ascii_isdigit(static_cast<unsigned char>(c)) ? c - '0'
                            : (c >= 'a' && c <= 'f')                          ? c - 'a' + 10
                            : (c >= 'A' && c <= 'F')                          ? c - 'A' + 10
                                                                               : -1;
          if (digit < 0) return Result::kMalformed;
          value = value * 16 + static_cast<uint64_t>(digit);
        }
        line_.clear();
        if (value == 0) {
          stage_ = Stage::kTrailer;
          break;
        }
        if (value > max_payload_ - total_) return Result::kTooLarge;
        left_ = value;
        total_ += value;
        stage_ = Stage::kData;
        break;
      }
      case Stage::kData: {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(left_, bytes.size() - at));
        out->append(bytes.substr(at, n));
        at += n;
        left_ -= n;
        if (left_ == 0) stage_ = Stage::kDataEnd;
        break;
      }
      case Stage::kDataEnd: {
        const bool whole = take_line();
        if (!line_.empty() && line_ != "\r") {
          return Result::kMalformed;  // a chunk's data runs past its size
        }
        if (!whole) break;
        line_.clear();
        stage_ = Stage::kSize;
        break;
      }
      case Stage::kTrailer:
        if (!take_line()) break;
        if (LineText(line_).empty()) {
          *used = at;
          return Result::kDone;
        }
        line_.clear();  // trailer fields are dropped
        break;
    }
    if (line_.size() > kMaxLine) return Result::kMalformed;
  }
  *used = at;
  return Result::kMore;
}

}  // namespace warp::computed::serve
