#pragma once

// ExpertSource: where the engine gets routed-expert records from. One
// interface for the embedded store, the Unix-socket client and the gRPC
// client, so the forward pass never knows which it talks to. Records are
// always verified (footer + CRC32C) before they are handed out.

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "common/io/aligned_buffer.h"

namespace warp {

struct ExpertKey {
  uint32_t layer = 0;   // decoder layer index
  uint32_t expert = 0;  // routed expert within the layer
  friend bool operator==(const ExpertKey&, const ExpertKey&) = default;
};

// One verified record. The buffer is shared: a cache may hold the same bytes.
struct ExpertRecord {
  ExpertKey key;
  std::shared_ptr<const AlignedBuffer> buffer;
  uint64_t record_bytes = 0;

  std::span<const std::byte> bytes() const { return buffer->span().first(record_bytes); }
};

// Thread-safe.
class ExpertSource {
 public:
  virtual ~ExpertSource() = default;

  // Reads every key and returns one result per key, in key order. A bad key
  // (unknown, corrupt, I/O error) fails only itself, with a message naming the
  // layer, expert and file.
  virtual std::vector<absl::StatusOr<ExpertRecord>> Read(std::span<const ExpertKey> keys) = 0;
};

}  // namespace warp
