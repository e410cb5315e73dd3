#include "common/wire/read_chunk_wire.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace warp {
namespace {

constexpr uint32_t kDataField = 4;  // v1::ReadChunk.data
constexpr uint32_t kLengthDelimited = 2;

void AppendVarint(uint64_t value, std::string* out) {
  while (value >= 0x80) {
    out->push_back(static_cast<char>(value | 0x80));
    value >>= 7;
  }
  out->push_back(static_cast<char>(value));
}

// Reads across the slices of a received message, tracking the offset for errors.
class SliceCursor {
 public:
  explicit SliceCursor(const std::vector<grpc::Slice>& slices) : slices_(slices) { SkipEmpty(); }

  bool done() const { return slice_ == slices_.size(); }
  uint64_t offset() const { return offset_; }

  bool ReadByte(uint8_t* byte) {
    if (done()) return false;
    *byte = slices_[slice_].begin()[at_];
    Advance(1);
    return true;
  }

  bool ReadVarint(uint64_t* value) {
    *value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      uint8_t byte;
      if (!ReadByte(&byte)) return false;
      *value |= uint64_t{byte & 0x7fu} << shift;
      if ((byte & 0x80) == 0) return true;
    }
    return false;  // more than ten bytes
  }

  // Appends the next n bytes to `out` (copied) or to `slices` (referenced).
  bool Copy(uint64_t n, std::string* out) {
    return Take(n, [&](const grpc::Slice& slice, size_t begin, size_t len) {
      out->append(reinterpret_cast<const char*>(slice.begin()) + begin, len);
    });
  }
  bool Reference(uint64_t n, std::vector<grpc::Slice>* slices) {
    return Take(n, [&](const grpc::Slice& slice, size_t begin, size_t len) {
      slices->push_back(begin == 0 && len == slice.size() ? slice : slice.sub(begin, begin + len));
    });
  }

 private:
  template <typename Sink>
  bool Take(uint64_t n, Sink sink) {
    while (n > 0) {
      if (done()) return false;
      const size_t len = std::min<uint64_t>(n, slices_[slice_].size() - at_);
      sink(slices_[slice_], at_, len);
      Advance(len);
      n -= len;
    }
    return true;
  }

  void Advance(size_t n) {
    at_ += n;
    offset_ += n;
    if (at_ == slices_[slice_].size()) {
      ++slice_;
      at_ = 0;
      SkipEmpty();
    }
  }
  void SkipEmpty() {
    while (slice_ < slices_.size() && slices_[slice_].size() == 0) ++slice_;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t slice_ = 0;  // the slice being read
  size_t at_ = 0;     // within it
  uint64_t offset_ = 0;
};

}  // namespace

size_t IncomingReadChunk::data_bytes() const {
  size_t bytes = 0;
  for (const grpc::Slice& slice : data) bytes += slice.size();
  return bytes;
}

void IncomingReadChunk::CopyDataTo(std::byte* out) const {
  CopyDataTo(out, [](std::span<const std::byte>) {});
}

void IncomingReadChunk::CopyDataTo(
    std::byte* out, absl::FunctionRef<void(std::span<const std::byte> copied)> copied) const {
  for (const grpc::Slice& slice : data) {
    for (size_t at = 0; at < slice.size(); at += kCopyPieceBytes) {
      const size_t n = std::min(kCopyPieceBytes, slice.size() - at);
      std::memcpy(out, slice.begin() + at, n);
      copied(std::span<const std::byte>(out, n));
      out += n;
    }
  }
}

void EncodeReadChunk(const OutgoingReadChunk& chunk, grpc::ByteBuffer* out) {
  std::string head = chunk.head.SerializeAsString();
  if (chunk.data.empty()) {
    grpc::Slice slice(head);
    *out = grpc::ByteBuffer(&slice, 1);
    return;
  }
  AppendVarint(kDataField << 3 | kLengthDelimited, &head);
  AppendVarint(chunk.data.size(), &head);
  // The data slice holds its own reference to the keeper: gRPC may drop the
  // slice after the writer has returned.
  grpc::Slice slices[2] = {
      grpc::Slice(head),
      grpc::Slice(
          const_cast<std::byte*>(chunk.data.data()), chunk.data.size(),
          [](void* keeper) { delete static_cast<std::shared_ptr<const void>*>(keeper); },
          new std::shared_ptr<const void>(chunk.keeper))};
  *out = grpc::ByteBuffer(slices, 2);
}

absl::Status DecodeReadChunk(const grpc::ByteBuffer& in, IncomingReadChunk* chunk) {
  chunk->head.Clear();
  chunk->data.clear();
  std::vector<grpc::Slice> slices;
  if (grpc::Status dumped = in.Dump(&slices); !dumped.ok()) {
    return absl::DataLossError(
        absl::StrCat("ReadChunk: unreadable buffer: ", dumped.error_message()));
  }
  SliceCursor cursor(slices);
  std::string head;  // every field but data, re-encoded for the generated parser
  bool has_data = false;
  while (!cursor.done()) {
    const uint64_t at = cursor.offset();
    const auto malformed = [&](std::string_view what) {
      return absl::DataLossError(
          absl::StrCat("ReadChunk: ", std::string(what), " at byte ", at, " of ", in.Length()));
    };
    uint64_t tag;
    if (!cursor.ReadVarint(&tag)) return malformed("truncated tag");
    const uint64_t field = tag >> 3;
    const uint32_t wire_type = tag & 7;
    if (field == 0 || field > UINT32_MAX) return malformed(absl::StrCat("field number ", field));
    if (field == kDataField) {
      uint64_t length;
      if (wire_type != kLengthDelimited) return malformed("data field not length-delimited");
      if (has_data) return malformed("a second data field");
      if (!cursor.ReadVarint(&length) || !cursor.Reference(length, &chunk->data)) {
        return malformed("truncated data field");
      }
      has_data = true;
      continue;
    }
    AppendVarint(tag, &head);
    uint64_t value;
    bool whole = true;
    switch (wire_type) {
      case 0:
        whole = cursor.ReadVarint(&value);
        AppendVarint(value, &head);
        break;
      case 1:
        whole = cursor.Copy(8, &head);
        break;
      case kLengthDelimited:
        whole = cursor.ReadVarint(&value);
        AppendVarint(value, &head);
        whole = whole && cursor.Copy(value, &head);
        break;
      case 5:
        whole = cursor.Copy(4, &head);
        break;
      default:
        return malformed(absl::StrCat("wire type ", wire_type, " of field ", field));
    }
    if (!whole) return malformed(absl::StrCat("truncated field ", field));
  }
  if (!chunk->head.ParseFromString(head)) {
    return absl::DataLossError(absl::StrCat("ReadChunk: fields of ", in.Length(),
                                            " bytes do not parse as warp.v1.ReadChunk"));
  }
  return absl::OkStatus();
}

}  // namespace warp
