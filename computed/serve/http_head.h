#pragma once

// HTTP/1.1 message framing for the server's front (http_front.h), written to
// bounds: a head (start line and fields) read into at most `max_bytes` and
// `max_fields`, and a chunked body decoded as it arrives. Nothing here trusts
// a size the peer sent.
//
// Thread contract: values; a ChunkedDecoder belongs to one connection.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace warp::computed::serve {

struct HeadLimits {
  size_t max_bytes = 64 << 10;  // start line, fields and the blank line
  size_t max_fields = 100;
};

// A request or response head as sent: "GET /x HTTP/1.1" or "HTTP/1.1 200 OK",
// then the fields in order.
struct HttpHead {
  std::string start_line;
  std::vector<std::pair<std::string, std::string>> fields;

  // The first field called `name` (case-insensitive), trimmed.
  std::optional<std::string_view> Field(std::string_view name) const;
  // Every value of the fields called `name`, comma lists split, trimmed.
  std::vector<std::string_view> Values(std::string_view name) const;
  void Remove(std::string_view name);
  // Start line, fields, blank line, with CRLFs.
  std::string Serialize() const;
};

// Where a head ends in the bytes read so far.
struct HeadScan {
  enum class State { kIncomplete, kComplete, kTooLarge };
  State state = State::kIncomplete;
  size_t end = 0;  // kComplete: bytes of the head, its blank line included
};
// Looks for the blank line ending a head (CRLF CRLF, or LF LF) at the start
// of `bytes`. kTooLarge once the head, or the bytes without an end, exceed
// the limits: the caller answers 431 without reading more.
HeadScan ScanHead(std::string_view bytes, const HeadLimits& limits);

// Parses a complete head (ScanHead's `end` bytes). nullopt: malformed (no
// start line, a field without a colon or with whitespace before it, a
// control byte, obsolete line folding).
std::optional<HttpHead> ParseHead(std::string_view head);

// A request's body, as its head frames it.
struct BodyFraming {
  enum class Kind { kNone, kLength, kChunked };
  Kind kind = Kind::kNone;
  uint64_t length = 0;  // kLength
};
// The request's framing, or what is wrong with it: both Transfer-Encoding
// and Content-Length (a smuggling shape), a coding other than chunked,
// Content-Length values that differ or are not decimal. `error` is then the
// reason, for a 400 (or 501 for an unknown coding: `not_implemented`).
struct FramingResult {
  BodyFraming framing;
  std::string error;
  bool not_implemented = false;
};
FramingResult RequestFraming(const HttpHead& head);

// A chunked body decoded from bytes as they arrive; the payload is appended
// to `out` as long as it stays within `max_payload`.
class ChunkedDecoder {
 public:
  enum class Result { kMore, kDone, kTooLarge, kMalformed };
  explicit ChunkedDecoder(uint64_t max_payload) : max_payload_(max_payload) {}

  // Consumes from `bytes`; `*used` is how many belong to the body (kDone
  // leaves the rest, the next request's, unused).
  Result Feed(std::string_view bytes, size_t* used, std::string* out);

 private:
  enum class Stage { kSize, kData, kDataEnd, kTrailer };
  static constexpr size_t kMaxLine = 4096;  // a size line (with extensions), a trailer field
  Stage stage_ = Stage::kSize;
  std::string line_;
  uint64_t left_ = 0;  // of the current chunk
  uint64_t total_ = 0;
  const uint64_t max_payload_;
};

}  // namespace warp::computed::serve
