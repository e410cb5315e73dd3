// The client's side of a gRPC Read: a ReadChunk's bytes, as a daemon (or
// anything at its address) sent them, cut into gRPC slices. The first input
// byte sets the slice size (1 + byte); the rest is the message, decoded by
// DecodeReadChunk and, when it decodes, its data copied out piece by piece.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/wire/read_chunk_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t piece = size_t{data[0]} + 1;
  std::vector<grpc::Slice> slices;
  for (size_t at = 1; at < size; at += piece) {
    slices.emplace_back(data + at, std::min(piece, size - at));
  }
  const grpc::ByteBuffer buffer(slices.data(), slices.size());
  warp::IncomingReadChunk chunk;
  if (!warp::DecodeReadChunk(buffer, &chunk).ok()) return 0;
  std::string out(chunk.data_bytes(), '\0');
  size_t copied = 0;
  chunk.CopyDataTo(reinterpret_cast<std::byte*>(out.data()),
                   [&](std::span<const std::byte> bytes) { copied += bytes.size(); });
  if (copied != out.size() || out.size() > size) std::abort();
  return 0;
}
