#pragma once

// Frames of the Unix-socket fast path (proto/warp/v1/fastpath.proto is the
// contract, docs/FORMAT.md#fast-path-frames pins the preamble): encoding,
// and full sends/receives over a connected SOCK_STREAM Unix socket, with the
// one file descriptor a Hello reply carries (SCM_RIGHTS).
//
//   +------------------+---------------------+---------------+----------------+
//   | magic (u32 LE)   | header_bytes (u32)  | header        | payload        |
//   | 57 58 46 50 WXFP | <= 1 MiB            | FastPath*     | replies only   |
//   +------------------+---------------------+---------------+----------------+
//
// Thread-compatible: each call is one blocking exchange on a socket; callers
// serialize writers of one socket.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "common/io/file.h"
#include "google/protobuf/message_lite.h"

namespace warp {

// "WXFP" (WARP eXpert Fast Path) read as a little-endian u32: the frame's
// first bytes spell it in a dump, like the record footer's "WXPR".
inline constexpr uint32_t kFastPathMagic = 0x50465857;
inline constexpr size_t kFastPathPreambleBytes = 8;
// Headers carry offsets and statuses, never record bytes: 1 MiB is far above
// any legal header (256 keys ~ 10 KiB) and bounds what a bad peer makes us allocate.
inline constexpr uint32_t kMaxFastPathHeaderBytes = 1 << 20;
inline constexpr uint32_t kFastPathProtocolVersion = 1;

// The preamble and serialized `header`: a frame without payload.
std::string EncodeFastPathFrame(const google::protobuf::MessageLite& header);

// Sends `frame`, then every piece of `payload`, in full. `pass_fd` >= 0 is
// attached to the first byte (SCM_RIGHTS). Never raises SIGPIPE. A closed or
// failed peer is Unavailable; a send timeout (SO_SNDTIMEO) is DeadlineExceeded.
absl::Status SendFastPathFrame(int socket, std::string_view frame,
                               std::span<const std::span<const std::byte>> payload = {},
                               int pass_fd = -1);

struct ReceivedFastPathHeader {
  std::string header;  // the serialized FastPathRequest / FastPathReply
  ScopedFd fd;         // a descriptor that came with the frame, if any
};

// Reads one preamble and its header. Unavailable "connection closed" on EOF
// (at a frame boundary or inside one); InvalidArgument for a bad magic or a
// header longer than kMaxFastPathHeaderBytes (the caller should close the
// connection: the stream cannot be resynchronized); DeadlineExceeded on a
// receive timeout (SO_RCVTIMEO).
absl::StatusOr<ReceivedFastPathHeader> RecvFastPathHeader(int socket);

// Reads exactly out.size() bytes (a reply payload). Errors as RecvFastPathHeader.
absl::Status RecvFastPathPayload(int socket, std::span<std::byte> out);

}  // namespace warp
