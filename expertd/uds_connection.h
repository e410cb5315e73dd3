#pragma once

// UdsConnection: the daemon's side of one fast-path client connection
// (proto/warp/v1/fastpath.proto): Hello (with the cache memfd), Reads answered
// with slot offsets and leases, Releases, Prefetch hints, CancelSpeculative.
// Framing only: every request is decided by the RequestHandler it shares with
// the gRPC service. Owns the leases of
// its client: each is the ExpertRecord the store handed out, so its slot can
// be neither evicted nor reused until the client releases it or the
// connection ends, when all of them are dropped — a client that dies never
// pins slots forever. Bounded: at most Limits::max_leases leases (records past
// it travel as payload copies), a frame once begun must arrive within
// stall_timeout, and a connection holding no lease is closed after
// idle_timeout without a request (clients reconnect on their next read).
//
// Owned by its connection thread (Serve); StopReading() may be called from
// any thread.

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "common/io/file.h"
#include "expertd/request_handler.h"
#include "warp/v1/fastpath.pb.h"

namespace warp::expertd {

class UdsConnection {
 public:
  struct Limits {
    size_t max_leases = 1024;                         // slots one client may pin at once
    std::chrono::milliseconds stall_timeout{10'000};  // the rest of a begun frame
    std::chrono::milliseconds idle_timeout{300'000};  // between requests, with no lease held
  };

  // REQUIRES: `handler` outlives the connection.
  UdsConnection(ScopedFd socket, const RequestHandler& handler, const Limits& limits);
  ~UdsConnection();  // drops the leases still held

  // Serves frames until the client closes the connection, sends a malformed
  // frame (logged at warn) or StopReading() is called. The request in
  // progress is answered first. Releases every lease on return.
  void Serve();

  // Makes Serve return after the request in progress (shutdown(SHUT_RD)).
  void StopReading();

 private:
  // Handles one request; a non-OK status ends the connection.
  absl::Status Handle(const v1::FastPathRequest& request);
  absl::Status Hello(const v1::FastPathHello& hello);
  absl::Status Read(const v1::FastPathRead& read);
  // Describes `record` in `entry`: leased in the arena, or appended to `payload`.
  void AddRecord(absl::StatusOr<ExpertRecord>& record, v1::FastPathRecord& entry,
                 std::vector<std::span<const std::byte>>& payload, uint64_t& payload_bytes);

  // Waits for a request's first byte: false once idle_timeout passes with no
  // lease held (the connection is then closed).
  bool AwaitRequest();

  ScopedFd socket_;
  const RequestHandler& handler_;
  const Limits limits_;
  bool said_hello_ = false;
  bool stream_records_ = false;  // one reply per record (the client asked for it)
  uint64_t next_lease_id_ = 1;
  absl::flat_hash_map<uint64_t, ExpertRecord> leases_;  // lease id -> the leased record
};

}  // namespace warp::expertd
