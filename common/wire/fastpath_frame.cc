#include "common/wire/fastpath_frame.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace warp {
namespace {

void PutU32(uint32_t value, char* out) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<char>((value >> (8 * i)) & 0xff);
}

uint32_t GetU32(const unsigned char* in) {
  return uint32_t{in[0]} | uint32_t{in[1]} << 8 | uint32_t{in[2]} << 16 | uint32_t{in[3]} << 24;
}

absl::Status SocketError(int err, const char* what) {
  if (err == EAGAIN || err == EWOULDBLOCK) {
    return absl::DeadlineExceededError(absl::StrCat(what, ": timed out"));
  }
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(err)));
}

// Sends `bytes` in full; the descriptor, if any, rides on the first sendmsg.
absl::Status SendAll(int socket, std::span<const std::byte> bytes, int pass_fd) {
  while (!bytes.empty()) {
    iovec iov{const_cast<std::byte*>(bytes.data()), bytes.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (pass_fd >= 0) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(cmsg), &pass_fd, sizeof(int));
    }
    const ssize_t n = ::sendmsg(socket, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SocketError(errno, "send");
    }
    bytes = bytes.subspan(static_cast<size_t>(n));
    pass_fd = -1;
  }
  return absl::OkStatus();
}

// Receives exactly out.size() bytes; keeps the first descriptor received in `fd`.
absl::Status RecvAll(int socket, std::span<std::byte> out, ScopedFd* fd) {
  while (!out.empty()) {
    iovec iov{out.data(), out.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    const ssize_t n = ::recvmsg(socket, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0) {
      if (errno == EINTR) continue;
      return SocketError(errno, "receive");
    }
    for (cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
      if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int received;
        std::memcpy(&received, CMSG_DATA(cmsg) + i * sizeof(int), sizeof(int));
        ScopedFd owned(received);  // unexpected extras are closed here
        if (fd != nullptr && !fd->valid()) *fd = std::move(owned);
      }
    }
    if (n == 0) return absl::UnavailableError("connection closed");
    out = out.subspan(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

std::string EncodeFastPathFrame(const google::protobuf::MessageLite& header) {
  std::string frame(kFastPathPreambleBytes, '\0');
  PutU32(kFastPathMagic, frame.data());
  PutU32(static_cast<uint32_t>(header.ByteSizeLong()), frame.data() + 4);
  header.AppendToString(&frame);
  return frame;
}

absl::Status SendFastPathFrame(int socket, std::string_view frame,
                               std::span<const std::span<const std::byte>> payload, int pass_fd) {
  if (absl::Status status = SendAll(socket, std::as_bytes(std::span(frame)), pass_fd);
      !status.ok()) {
    return status;
  }
  for (std::span<const std::byte> piece : payload) {
    if (absl::Status status = SendAll(socket, piece, -1); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::StatusOr<ReceivedFastPathHeader> RecvFastPathHeader(int socket) {
  ReceivedFastPathHeader received;
  unsigned char preamble[kFastPathPreambleBytes];
  if (absl::Status status =
          RecvAll(socket, std::as_writable_bytes(std::span(preamble)), &received.fd);
      !status.ok()) {
    return status;
  }
  const uint32_t magic = GetU32(preamble);
  const uint32_t header_bytes = GetU32(preamble + 4);
  if (magic != kFastPathMagic) {
    return absl::InvalidArgumentError(absl::StrCat("bad frame magic 0x",
                                                   absl::Hex(magic, absl::kZeroPad8), ", want 0x",
                                                   absl::Hex(kFastPathMagic, absl::kZeroPad8)));
  }
  if (header_bytes > kMaxFastPathHeaderBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("frame header of ", header_bytes, " bytes exceeds ", kMaxFastPathHeaderBytes));
  }
  // Grown as the bytes arrive, not to the size announced: a client that
  // announces a megabyte and stalls holds only what it sent.
  constexpr size_t kStep = 64 << 10;
  while (received.header.size() < header_bytes) {
    const size_t have = received.header.size();
    received.header.resize(std::min<size_t>(header_bytes, have + kStep));
    if (absl::Status status = RecvAll(
            socket, std::as_writable_bytes(std::span(received.header).subspan(have)), &received.fd);
        !status.ok()) {
      return status;
    }
  }
  return received;
}

absl::Status RecvFastPathPayload(int socket, std::span<std::byte> out) {
  return RecvAll(socket, out, nullptr);
}

}  // namespace warp
