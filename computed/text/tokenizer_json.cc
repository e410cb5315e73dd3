#include "computed/text/tokenizer_json.h"

#include "absl/strings/str_cat.h"
#include "common/json_depth.h"
#include "common/status.h"

namespace warp::text {
namespace {

// nlohmann::json SAX handler: builds the DOM, except model.vocab and
// model.merges, which go to BpeTables.
//
// Thread-compatible: one per parse.
class CapturingSax {
 public:
  explicit CapturingSax(TokenizerJson& out) : out_(out) {}

  bool null() { return Value(nullptr); }
  bool boolean(bool value) { return Value(value); }
  bool number_integer(int64_t value) { return Value(value); }
  bool number_unsigned(uint64_t value) { return Value(value); }
  bool number_float(double value, const std::string&) { return Value(value); }
  bool string(std::string& value) { return Value(std::move(value)); }
  bool binary(Json::binary_t& value) { return Value(std::move(value)); }

  bool key(std::string& key) {
    key_ = std::move(key);
    return true;
  }

  bool start_object(size_t) {
    if (capture_ != Capture::kNone) return CaptureError("a nested object");
    if (InModel() && key_ == "vocab") {
      capture_ = Capture::kVocab;
      out_.bpe.has_vocab = true;
      return true;
    }
    return Open(Json::object());
  }
  bool end_object() {
    if (capture_ == Capture::kVocab) {
      capture_ = Capture::kNone;
      return true;
    }
    return Close();
  }
  bool start_array(size_t) {
    if (capture_ == Capture::kMerges && !in_pair_) {
      in_pair_ = true;
      pair_.clear();
      return true;
    }
    if (capture_ != Capture::kNone) return CaptureError("a nested array");
    if (InModel() && key_ == "merges") {
      capture_ = Capture::kMerges;
      out_.bpe.has_merges = true;
      return true;
    }
    return Open(Json::array());
  }
  bool end_array() {
    if (capture_ == Capture::kMerges && in_pair_) {
      in_pair_ = false;
      if (pair_.size() != 2) return MergeError();
      out_.bpe.merges.emplace_back(std::move(pair_[0]), std::move(pair_[1]));
      return true;
    }
    if (capture_ == Capture::kMerges) {
      capture_ = Capture::kNone;
      return true;
    }
    return Close();
  }

  bool parse_error(size_t byte, const std::string&, const Json::exception& error) {
    // nlohmann counts bytes from 1.
    syntax_error_ =
        absl::StrCat("malformed JSON at byte offset ", byte > 0 ? byte - 1 : 0, ": ", error.what());
    return false;
  }

  // Why parsing stopped: a syntax error or a malformed captured entry.
  absl::Status Error(std::string_view source) const {
    return absl::InvalidArgumentError(absl::StrCat(
        std::string(source), ": ", syntax_error_.empty() ? capture_error_ : syntax_error_));
  }

 private:
  enum class Capture { kNone, kVocab, kMerges };

  // The innermost open container is the root's "model" object.
  bool InModel() const { return stack_.size() == 2 && model_open_; }

  template <typename T>
  bool Value(T&& value) {
    if (capture_ == Capture::kVocab) return VocabValue(value);
    if (capture_ == Capture::kMerges) return MergeValue(value);
    Insert(Json(std::forward<T>(value)));
    return true;
  }

  template <typename T>
  bool VocabValue(const T& value) {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      if (value >= 0 && static_cast<uint64_t>(value) <= INT32_MAX) {
        out_.bpe.vocab.emplace_back(std::move(key_), static_cast<int64_t>(value));
        return true;
      }
    }
    capture_error_ = absl::StrCat("model.vocab.", key_, ": expected a non-negative integer id");
    return false;
  }

  template <typename T>
  bool MergeValue(T& value) {
    if constexpr (std::is_same_v<T, std::string>) {
      if (in_pair_) {
        pair_.push_back(std::move(value));
        return true;
      }
      const size_t space = value.find(' ');
      if (space != std::string::npos && value.find(' ', space + 1) == std::string::npos) {
        out_.bpe.merges.emplace_back(value.substr(0, space), value.substr(space + 1));
        return true;
      }
    }
    return MergeError();
  }

  bool MergeError() {
    capture_error_ = absl::StrCat("model.merges[", out_.bpe.merges.size(),
                                  "]: expected \"left right\" or [\"left\", \"right\"]");
    return false;
  }

  bool CaptureError(std::string_view what) {
    if (capture_ == Capture::kMerges) return MergeError();
    capture_error_ = absl::StrCat("model.vocab.", key_,
                                  ": expected a non-negative integer id, not ", std::string(what));
    return false;
  }

  Json* Insert(Json value) {
    if (stack_.empty()) {
      out_.root = std::move(value);
      return &out_.root;
    }
    Json* top = stack_.back();
    if (top->is_array()) {
      top->push_back(std::move(value));
      return &top->back();
    }
    return &((*top)[key_] = std::move(value));
  }

  bool Open(Json container) {
    const bool is_model = stack_.size() == 1 && key_ == "model" && container.is_object();
    stack_.push_back(Insert(std::move(container)));
    if (is_model) model_open_ = true;
    return true;
  }

  bool Close() {
    if (stack_.size() == 2) model_open_ = false;
    stack_.pop_back();
    return true;
  }

  TokenizerJson& out_;
  std::vector<Json*> stack_;  // open containers; each lives in its parent, which waits
  std::string key_;
  bool model_open_ = false;
  Capture capture_ = Capture::kNone;
  bool in_pair_ = false;
  std::vector<std::string> pair_;
  std::string syntax_error_;
  std::string capture_error_;
};

}  // namespace

absl::StatusOr<TokenizerJson> ParseTokenizerJson(std::string_view text, std::string_view source) {
  TokenizerJson out;
  WARP_RETURN_IF_ERROR(CheckJsonDepth(text, source));
  CapturingSax sax(out);
  if (!Json::sax_parse(text.begin(), text.end(), &sax)) return sax.Error(source);
  return out;
}

}  // namespace warp::text
