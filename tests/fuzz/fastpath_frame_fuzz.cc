// The daemon's side of the Unix-socket fast path, fed a byte stream: frames
// (preamble, FastPathRequest header) cut out of the input by
// RecvFastPathHeader, each decoded and answered by a UdsConnection over a
// tiny container's ExpertStore, until the stream ends. The client's end is
// drained (and the memfd a Hello reply carries dropped) by a second thread.

#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <thread>

#include "common/format/container.h"
#include "common/io/file.h"
#include "common/store/expert_store.h"
#include "expertd/request_handler.h"
#include "expertd/uds_connection.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using namespace warp;

expertd::RequestHandler& Handler() {
  static expertd::RequestHandler* handler = [] {
    auto container = Container::Open(fuzz::TinyContainer("fastpath.warp"));
    if (!container.ok()) std::abort();
    // Room for 4 records: reads both hit and miss, and evict.
    auto store =
        ExpertStore::Open(std::move(*container), {.cache_bytes = 4 * 4096, .io_threads = 1});
    if (!store.ok()) std::abort();
    return new expertd::RequestHandler(*store->release(), 256);
  }();
  return *handler;
}

void Drain(int fd) {
  char buffer[1 << 16];
  while (::read(fd, buffer, sizeof(buffer)) > 0) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::Init();
  expertd::RequestHandler& handler = Handler();
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) std::abort();
  ScopedFd client(fds[0]);
  // The input fits the socket buffer (-max_len is far below it): written whole, then EOF.
  for (size_t sent = 0; sent < size;) {
    const ssize_t n = ::send(client.get(), data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) std::abort();
    sent += static_cast<size_t>(n);
  }
  ::shutdown(client.get(), SHUT_WR);
  std::thread drain(Drain, client.get());
  {
    expertd::UdsConnection connection(ScopedFd(fds[1]), handler,
                                      {.stall_timeout = std::chrono::milliseconds(1000),
                                       .idle_timeout = std::chrono::milliseconds(1000)});
    connection.Serve();
  }
  drain.join();
  return 0;
}
