#include "common/io/disk_probe.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

#include "absl/synchronization/mutex.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"
#include "common/status.h"

namespace warp {
namespace {

constexpr uint64_t kBlock = 4096;

struct Piece {
  size_t file = 0;
  uint64_t offset = 0;
  uint64_t bytes = 0;
};

}  // namespace

absl::StatusOr<DiskProbe> ProbeDiskReads(const std::vector<std::filesystem::path>& files,
                                         const DiskProbeOptions& options) {
  DiskProbe probe;
  std::vector<OpenedFile> opened;
  std::vector<Piece> pieces;
  uint64_t planned = 0;
  for (size_t f = 0; f < files.size() && planned < options.max_bytes; ++f) {
    WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(files[f], /*want_direct=*/true));
    WARP_ASSIGN_OR_RETURN(uint64_t size, FileSize(file.fd.get(), files[f].string()));
    probe.direct = probe.direct && file.direct;
    for (uint64_t offset = 0; offset + kBlock <= size && planned < options.max_bytes;) {
      const uint64_t bytes =
          std::min({options.piece_bytes, (size - offset) / kBlock * kBlock, options.max_bytes - planned});
      pieces.push_back({opened.size(), offset, bytes});
      offset += bytes;
      planned += bytes;
    }
    opened.push_back(std::move(file));
  }
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::duration<double>(options.max_seconds);
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> read{0};
  absl::Mutex mu;
  absl::Status failure;
  std::vector<std::thread> threads;
  for (int t = 0; t < std::max(1, options.threads); ++t) {
    threads.emplace_back([&] {
      AlignedBuffer buffer(options.piece_bytes);
      for (size_t i = next++; i < pieces.size(); i = next++) {
        // The first piece always: a probe never measures nothing.
        if (i > 0 && std::chrono::steady_clock::now() >= deadline) return;
        const Piece& piece = pieces[i];
        absl::Status status = PreadFull(opened[piece.file].fd.get(),
                                        buffer.span().first(piece.bytes), piece.offset,
                                        files[piece.file].string());
        if (!status.ok()) {
          absl::MutexLock lock(&mu);
          if (failure.ok()) failure = status;
          return;
        }
        read += piece.bytes;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  WARP_RETURN_IF_ERROR(failure);
  probe.bytes = read;
  probe.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return probe;
}

}  // namespace warp
