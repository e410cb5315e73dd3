// StreamingDecoder: the prefix/read-offset scheme of text-generation-inference.
// The window holds the ids of the last emitted step plus the pending ones;
// the text to emit is decode(window) minus decode(emitted part of window).
// Decoding the emitted step again gives the decoders their context (a
// preceding byte-level run, the leading space SentencePiece drops only at the
// very start), and the window never grows past the pending ids.

#include "computed/text/tokenizer.h"
#include "computed/text/utf8.h"

namespace warp::text {

StreamingDecoder::StreamingDecoder(const Tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(tokenizer), skip_special_tokens_(skip_special_tokens) {}

absl::StatusOr<std::string> StreamingDecoder::DecodeWindow(size_t end) const {
  const absl::Span<const int32_t> ids(window_.data(), end);
  return window_at_start_ ? tokenizer_.Decode(ids, skip_special_tokens_)
                          : tokenizer_.DecodeContinuation(ids, skip_special_tokens_);
}

absl::StatusOr<std::string> StreamingDecoder::Push(int32_t id) {
  window_.push_back(id);
  absl::StatusOr<std::string> emitted = DecodeWindow(read_offset_);
  absl::StatusOr<std::string> full = DecodeWindow(window_.size());
  if (!emitted.ok() || !full.ok()) {
    window_.pop_back();  // the stream goes on without the bad id
    return emitted.ok() ? full.status() : emitted.status();
  }
  // A trailing U+FFFD is most likely a character whose bytes are still coming.
  if (full->size() <= emitted->size() || !full->starts_with(*emitted) ||
      full->ends_with(kReplacementChar)) {
    return std::string();
  }
  std::string text = full->substr(emitted->size());
  window_.erase(window_.begin(), window_.begin() + static_cast<ptrdiff_t>(read_offset_));
  window_at_start_ = window_at_start_ && read_offset_ == 0;
  read_offset_ = window_.size();
  return text;
}

std::string StreamingDecoder::Flush() {
  absl::StatusOr<std::string> emitted = DecodeWindow(read_offset_);
  absl::StatusOr<std::string> full = DecodeWindow(window_.size());
  std::string rest;
  if (emitted.ok() && full.ok() && full->size() > emitted->size() && full->starts_with(*emitted)) {
    rest = full->substr(emitted->size());
  }
  window_.clear();
  read_offset_ = 0;
  window_at_start_ = true;
  return rest;
}

}  // namespace warp::text
