#pragma once

// StateArchive: one sequence's state (every layer's KV cache, recurrent
// state, compressor windows and checkpoints) written to bytes or read back,
// for the prompt cache on disk (run/disk_prompt_cache.h). Each state class
// lists its fields once, in Archive(StateArchive&), which both writes and
// reads: the two directions cannot drift apart.
//
// Reading checks each field's size against the one allocated (a state of
// another model or context is refused, naming the byte offset) and never
// reads past the input. Thread-compatible.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace warp::computed {

class StateArchive {
 public:
  // Appends to `out`.
  static StateArchive Writer(std::string* out) { return StateArchive(out, {}); }
  // Reads `in`, which must outlive the archive.
  static StateArchive Reader(std::string_view in) { return StateArchive(nullptr, in); }

  bool reading() const { return out_ == nullptr; }

  void U32(uint32_t& value);
  // A count this state can hold at most `most` of; reading more is refused,
  // naming `what` ("compressed entries").
  void Count(uint32_t& value, uint64_t most, std::string_view what);
  void Bool(bool& value);
  // Exactly `values.size()` floats (a span into an allocated state).
  void Floats(std::span<float> values);
  // A vector whose size is part of the state.
  void FloatVector(std::vector<float>& values);
  void IdVector(std::vector<int32_t>& values);
  // An optional of a type T with Archive(StateArchive&) or its own lambda.
  template <typename T, typename Fn>
  void Optional(std::optional<T>& value, Fn&& fields) {
    bool present = value.has_value();
    Bool(present);
    if (reading() && present) value = T{};
    if (reading() && !present) value.reset();
    if (present && ok()) fields(*value);
  }

  // Reading: a value read is not one this state can hold.
  void Refuse(std::string what) { Fail(std::move(what)); }

  bool ok() const { return status_.ok(); }
  // Reading: DataLoss naming the offset of the first field that did not fit,
  // or trailing bytes (call Finish).
  const absl::Status& status() const { return status_; }
  // Reading: fails unless every byte was read.
  absl::Status Finish();

 private:
  StateArchive(std::string* out, std::string_view in) : out_(out), in_(in) {}
  void Bytes(void* data, size_t size);
  template <typename T>
  void Vector(std::vector<T>& values, std::string_view what);
  void Fail(std::string what);

  std::string* out_;
  std::string_view in_;
  size_t offset_ = 0;
  absl::Status status_;
};

}  // namespace warp::computed
