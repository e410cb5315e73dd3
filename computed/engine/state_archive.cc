#include "computed/engine/state_archive.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace warp::computed {

void StateArchive::Fail(std::string what) {
  if (status_.ok()) {
    status_ = absl::DataLossError(absl::StrCat("state at byte ", offset_, ": ", what));
  }
}

void StateArchive::Bytes(void* data, size_t size) {
  if (!status_.ok() || size == 0) return;  // an empty vector's data() may be null
  if (!reading()) {
    out_->append(static_cast<const char*>(data), size);
  } else if (in_.size() - offset_ < size) {
    Fail(absl::StrCat("needs ", size, " bytes, ", in_.size() - offset_, " left"));
    return;
  } else {
    std::memcpy(data, in_.data() + offset_, size);
  }
  offset_ += size;
}

void StateArchive::U32(uint32_t& value) { Bytes(&value, sizeof(value)); }

void StateArchive::Count(uint32_t& value, uint64_t most, std::string_view what) {
  U32(value);
  if (reading() && ok() && value > most) {
    Fail(absl::StrCat(value, " ", std::string(what), ", past the ", most, " this state holds"));
  }
}

void StateArchive::Bool(bool& value) {
  uint8_t byte = value ? 1 : 0;
  Bytes(&byte, 1);
  if (reading() && byte > 1) Fail(absl::StrCat("a flag of ", int{byte}));
  value = byte == 1;
}

void StateArchive::Floats(std::span<float> values) {
  uint64_t count = values.size();
  Bytes(&count, sizeof(count));
  if (reading() && ok() && count != values.size()) {
    Fail(absl::StrCat(count, " floats where this model's state holds ", values.size()));
    return;
  }
  Bytes(values.data(), values.size() * sizeof(float));
}

template <typename T>
void StateArchive::Vector(std::vector<T>& values, std::string_view what) {
  uint64_t count = values.size();
  Bytes(&count, sizeof(count));
  if (!ok()) return;
  if (reading()) {
    if (count > (in_.size() - offset_) / sizeof(T)) {
      Fail(absl::StrCat(count, " ", std::string(what), ", past the end"));
      return;
    }
    values.resize(count);
  }
  Bytes(values.data(), values.size() * sizeof(T));
}

void StateArchive::FloatVector(std::vector<float>& values) { Vector(values, "floats"); }

void StateArchive::IdVector(std::vector<int32_t>& values) { Vector(values, "ids"); }

absl::Status StateArchive::Finish() {
  if (ok() && reading() && offset_ != in_.size()) {
    Fail(absl::StrCat(in_.size() - offset_, " bytes left over"));
  }
  return status_;
}

}  // namespace warp::computed
