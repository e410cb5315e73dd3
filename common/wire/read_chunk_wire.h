#pragma once

// warp.v1.ReadChunk on the gRPC wire without copying a record's bytes in user
// space. The daemon sends a chunk's data as a slice over the record where it
// lies (its cache slot), kept alive by the record's lease until gRPC has
// written it; the client takes the data as slices of the buffer gRPC received
// and copies them once, into its record. The generated code would copy twice
// on each side (into the message, then into or out of gRPC's buffer).
//
// The bytes on the wire are a v1::ReadChunk's: a client built on the generated
// stub reads what this daemon sends, and this client reads a daemon that
// sends generated messages.
//
// Values; thread-compatible.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "grpcpp/impl/serialization_traits.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "grpcpp/support/status.h"
#include "warp/v1/expert_service.pb.h"

namespace warp {

// The full name of warp.v1.ExpertStore's Read, which the client registers by
// hand to read IncomingReadChunk (a test checks it against the generated
// service; the daemon replaces the generated handler in place).
inline constexpr char kReadMethod[] = "/warp.v1.ExpertStore/Read";

// One chunk as the daemon sends it.
struct OutgoingReadChunk {
  v1::ReadChunk head;                  // every field but data (data must be empty)
  std::span<const std::byte> data;     // the chunk's bytes, inside what `keeper` keeps
  std::shared_ptr<const void> keeper;  // held by gRPC until it has sent `data`
};

// One chunk as the client receives it.
struct IncomingReadChunk {
  v1::ReadChunk head;             // every field but data
  std::vector<grpc::Slice> data;  // data's bytes, in order: slices of the received buffer
  // Not OK for a malformed message (then the fields above mean nothing). The
  // reader checks it: gRPC would read a failed parse as the stream's end.
  absl::Status decoded;

  size_t data_bytes() const;
  // Copies data's bytes to `out` (data_bytes() long).
  void CopyDataTo(std::byte* out) const;
  // The same, calling `copied` with each piece of at most kCopyPieceBytes
  // just written, while it is in cache (ReceivedDigest).
  void CopyDataTo(std::byte* out,
                  absl::FunctionRef<void(std::span<const std::byte> copied)> copied) const;
  static constexpr size_t kCopyPieceBytes = 64 << 10;
};

// `chunk` as the slices of `out`: head's encoding, data's tag and length,
// then data itself, not copied.
void EncodeReadChunk(const OutgoingReadChunk& chunk, grpc::ByteBuffer* out);

// Parses `in` (a v1::ReadChunk's bytes) into `chunk`, taking data as slices
// of `in`. DataLoss naming the field and offset of a malformed message.
absl::Status DecodeReadChunk(const grpc::ByteBuffer& in, IncomingReadChunk* chunk);

}  // namespace warp

// How gRPC's typed streams (ServerWriter, ClientReader) carry the two types.
template <>
class grpc::SerializationTraits<warp::OutgoingReadChunk> {
 public:
  static grpc::Status Serialize(const warp::OutgoingReadChunk& chunk, grpc::ByteBuffer* buffer,
                                bool* own_buffer) {
    warp::EncodeReadChunk(chunk, buffer);
    *own_buffer = true;
    return grpc::Status::OK;
  }
};

template <>
class grpc::SerializationTraits<warp::IncomingReadChunk> {
 public:
  static grpc::Status Deserialize(grpc::ByteBuffer* buffer, warp::IncomingReadChunk* chunk) {
    chunk->decoded = warp::DecodeReadChunk(*buffer, chunk);
    buffer->Clear();
    return grpc::Status::OK;
  }
};
