#include "common/io/uring_reader.h"

#include <liburing.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/io/file.h"
#include "common/logging.h"
#include "common/status.h"

namespace warp {
namespace {

struct Piece {
  uint64_t offset;  // within the read
  uint64_t bytes;
  uint64_t done = 0;
};

// The file range one ReadFull reads and the memory it lands in.
struct ReadTarget {
  int fd;
  std::span<std::byte> out;
  uint64_t offset;  // in the file
  std::string_view path;
  std::optional<int> fixed;  // the registered buffer `out` lies in, if any
};

// One ReadFull under way: its pieces, those not in flight, and what stopped
// it. Lives on the reading thread's stack for the one call.
class PieceRead {
 public:
  // `rank` must outlive the PieceRead (PieceGate::Read follows it).
  PieceRead(io_uring* ring, uint32_t depth, const ReadTarget& target, uint64_t piece_bytes,
            PieceGate* gate, const ReadRank& rank)
      : ring_(ring), depth_(depth), target_(target) {
    for (uint64_t at = 0; at < target.out.size(); at += piece_bytes) {
      pieces_.push_back(
          {.offset = at, .bytes = std::min<uint64_t>(piece_bytes, target.out.size() - at)});
    }
    for (size_t i = 0; i < pieces_.size(); ++i) to_submit_.push_back(i);
    if (gate != nullptr) gated_.emplace(gate, rank, pieces_.size());
  }

  // After a failure or the file's end nothing new goes out; what is in flight is drained.
  bool stopped() const { return !failed_.ok() || ends_at_.has_value(); }
  bool busy() const { return in_flight_ > 0 || (!stopped() && !to_submit_.empty()); }

  // Queues pieces while the gate and the ring take them.
  void QueuePieces() {
    while (!stopped() && !to_submit_.empty() && in_flight_ < depth_) {
      // With nothing in flight, wait for the gate: no completion will ask again.
      if (gated_ && !gated_->Take(/*wait=*/in_flight_ == 0)) break;
      io_uring_sqe* sqe = io_uring_get_sqe(ring_);
      if (sqe == nullptr) {
        if (gated_) {  // not sent: the grant goes back, the piece still wants one
          gated_->Landed();
          gated_->Again();
        }
        break;
      }
      const size_t index = to_submit_.front();
      to_submit_.pop_front();
      PrepRead(sqe, index);
      ++in_flight_;
    }
  }

  // Submits what is queued and waits for a completion.
  void SubmitAndWait() {
    const int submitted = io_uring_submit_and_wait(ring_, 1);
    if (submitted < 0 && submitted != -EINTR && submitted != -EAGAIN) {
      // The ring itself failed: the pieces in flight cannot be waited for,
      // and `out` could still be written. Nothing sane remains.
      Logger("expertd.store")
          .critical("{}: io_uring_submit_and_wait: {}", target_.path, std::strerror(-submitted));
      std::abort();
    }
  }

  // While pieces are in flight, sends the next ones out without waiting.
  void SubmitMore() {
    if (in_flight_ == 0) return;
    QueuePieces();
    io_uring_submit(ring_);
  }

  // Takes every completion the ring holds.
  void Reap() {
    io_uring_cqe* cqe;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(ring_, head, cqe) {
      ++seen;
      --in_flight_;
      if (gated_) gated_->Landed();
      Complete(io_uring_cqe_get_data64(cqe), cqe->res);
    }
    io_uring_cq_advance(ring_, seen);
  }

  // Extends the landed prefix over the pieces now whole; true if it grew.
  bool AdvanceLanded() {
    const size_t was_whole = whole_;
    while (whole_ < pieces_.size() && pieces_[whole_].done == pieces_[whole_].bytes) ++whole_;
    return whole_ > was_whole;
  }
  uint64_t landed_bytes() const {
    return whole_ < pieces_.size() ? pieces_[whole_].offset : target_.out.size();
  }

  // ReadFull's result once nothing is in flight.
  absl::Status Result() const {
    if (ends_at_ && failed_.ok()) {
      // The bytes before the first hole count as read, as PreadFull counts them.
      return absl::DataLossError(absl::StrCat(std::string(target_.path), ": short read at ",
                                              target_.offset, ": got ", *ends_at_, " of ",
                                              target_.out.size(), " bytes"));
    }
    return failed_;
  }

 private:
  // The read of piece `index`'s rest into `sqe`.
  void PrepRead(io_uring_sqe* sqe, size_t index) {
    const Piece& piece = pieces_[index];
    std::byte* to = target_.out.data() + piece.offset + piece.done;
    const unsigned bytes = static_cast<unsigned>(piece.bytes - piece.done);
    const uint64_t at = target_.offset + piece.offset + piece.done;
    if (target_.fixed) {
      io_uring_prep_read_fixed(sqe, target_.fd, to, bytes, at, *target_.fixed);
    } else {
      io_uring_prep_read(sqe, target_.fd, to, bytes, at);
    }
    io_uring_sqe_set_data64(sqe, index);
  }

  // Piece `index`'s read returned `res`: retried, failed, at the file's end,
  // or `res` bytes further (its rest queued if short).
  void Complete(size_t index, int res) {
    Piece& piece = pieces_[index];
    if (res == -EINTR || res == -EAGAIN) {
      to_submit_.push_front(index);
      if (gated_) gated_->Again();
    } else if (res < 0) {
      if (failed_.ok())
        failed_ = ErrnoToStatus(-res, absl::StrCat(std::string(target_.path), " @",
                                                   target_.offset + piece.offset + piece.done));
    } else if (res == 0) {
      ends_at_ = std::min(ends_at_.value_or(UINT64_MAX), piece.offset + piece.done);
    } else {
      piece.done += static_cast<uint64_t>(res);
      if (piece.done < piece.bytes) {  // a short piece: the rest
        to_submit_.push_front(index);
        if (gated_) gated_->Again();
      }
    }
  }

  io_uring* const ring_;
  const uint32_t depth_;
  const ReadTarget target_;
  std::vector<Piece> pieces_;
  std::deque<size_t> to_submit_;     // pieces (or their rests) not in flight
  absl::Status failed_;              // the first errno error
  std::optional<uint64_t> ends_at_;  // the lowest hole where the file ended
  uint32_t in_flight_ = 0;
  size_t whole_ = 0;  // pieces [0, whole_) have landed
  std::optional<PieceGate::Read> gated_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UringReader>> UringReader::Create(Options options) {
  if (options.depth == 0 || options.depth > 4096 || options.piece_bytes == 0 ||
      options.piece_bytes % 4096 != 0 || options.piece_bytes > (1u << 30)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "io_uring reader: depth ", options.depth, " and piece size ", options.piece_bytes,
        " (need a depth of 1 to 4096 and pieces a multiple of 4096 up to 1 GiB)"));
  }
  auto ring = std::make_unique<io_uring>();
  const int err = io_uring_queue_init(options.depth, ring.get(), 0);
  if (err < 0) {
    return absl::UnavailableError(
        absl::StrCat("io_uring_queue_init(", options.depth, "): ", std::strerror(-err)));
  }
  bool registered = false;
  if (options.fixed != nullptr && !options.fixed->buffers.empty()) {
    std::vector<iovec> iovecs;
    uint64_t bytes = 0;
    for (std::span<std::byte> buffer : options.fixed->buffers) {
      iovecs.push_back({.iov_base = buffer.data(), .iov_len = buffer.size()});
      bytes += buffer.size();
    }
    const int refused =
        io_uring_register_buffers(ring.get(), iovecs.data(), static_cast<unsigned>(iovecs.size()));
    registered = refused == 0;
    static std::atomic<bool> warned{false};
    if (!registered && !warned.exchange(true)) {
      Logger("expertd.store")
          .warn(
              "io_uring: registering {} buffers of {} bytes in all: {}; reading into them "
              "unregistered (slower; raise RLIMIT_MEMLOCK, e.g. LimitMEMLOCK= in the unit)",
              iovecs.size(), bytes, std::strerror(-refused));
    }
  }
  return std::unique_ptr<UringReader>(new UringReader(std::move(ring), options, registered));
}

UringReader::UringReader(std::unique_ptr<io_uring> ring, Options options, bool registered)
    : ring_(std::move(ring)), options_(std::move(options)), registered_(registered) {}

std::optional<int> UringReader::FixedIndex(std::span<const std::byte> out) const {
  if (!registered_) return std::nullopt;
  const std::vector<std::span<std::byte>>& buffers = options_.fixed->buffers;
  for (size_t i = 0; i < buffers.size(); ++i) {
    const std::byte* begin = buffers[i].data();
    if (out.data() >= begin && out.data() + out.size() <= begin + buffers[i].size()) {
      return static_cast<int>(i);
    }
  }
  return std::nullopt;
}

UringReader::~UringReader() { io_uring_queue_exit(ring_.get()); }

uint64_t DeviceRequestBytesOn4KiBPages(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return 0;
  const std::string device =
      absl::StrCat("/sys/dev/block/", major(st.st_dev), ":", minor(st.st_dev));
  // A partition's queue is its disk's.
  for (const char* queue : {"/queue/max_segments", "/../queue/max_segments"}) {
    std::ifstream file(device + queue);  // sysfs: the size stat gives is not the text's
    uint64_t segments = 0;
    if (file >> segments && segments > 0) return segments * 4096;
  }
  return 0;
}

uint64_t UringReader::FixedPieceBytes(int fd) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return options_.piece_bytes;
  auto [it, inserted] = fixed_piece_bytes_.try_emplace(st.st_dev, options_.piece_bytes);
  if (inserted) {
    const uint64_t limit = DeviceRequestBytesOn4KiBPages(fd);
    if (limit >= 4096) it->second = std::min(options_.piece_bytes, limit);
  }
  return it->second;
}

absl::Status UringReader::ReadFull(int fd, std::span<std::byte> out, uint64_t offset,
                                   std::string_view path, const ReadRank* rank,
                                   const OnLanded& on_landed) {
  const std::optional<int> fixed = FixedIndex(out);
  // Registered memory is expertd's staging slots, 4 KiB pages of shared
  // memory: a piece the device would split costs a request for its last few
  // pages (EFFICIENCY.md).
  const uint64_t piece_bytes = fixed ? FixedPieceBytes(fd) : options_.piece_bytes;
  const ReadRank first(0);
  PieceRead read(ring_.get(), options_.depth,
                 {.fd = fd, .out = out, .offset = offset, .path = path, .fixed = fixed},
                 piece_bytes, options_.gate.get(), rank != nullptr ? *rank : first);
  while (read.busy()) {
    read.QueuePieces();
    read.SubmitAndWait();
    read.Reap();
    const bool grew = read.AdvanceLanded();
    if (on_landed && grew && !read.stopped()) {
      // The next pieces go out before the caller digests these, unless that
      // means waiting at the gate (nothing in flight): the caller first then.
      read.SubmitMore();
      on_landed(read.landed_bytes());
    }
  }
  return read.Result();
}

namespace {

// This thread's reader for `options`, created at its first use; null where
// the kernel refused a ring (said once per process).
UringReader* ThreadReader(const UringReader::Options& options) {
  thread_local std::unique_ptr<UringReader> reader;
  thread_local bool refused = false;
  // A ring registered with other buffers must never read into these, nor
  // one of another disk's gate through this one.
  if (reader != nullptr &&
      (reader->options().fixed != options.fixed || reader->options().gate != options.gate)) {
    reader.reset();
  }
  if (reader == nullptr && !refused) {
    absl::StatusOr<std::unique_ptr<UringReader>> created = UringReader::Create(options);
    if (created.ok()) {
      reader = *std::move(created);
    } else {
      refused = true;
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true)) {
        Logger("expertd.store")
            .warn("{}; reading with pread", std::string(created.status().message()));
      }
    }
  }
  return reader.get();
}

}  // namespace

void UringPrepareThread(const UringReader::Options& options) { ThreadReader(options); }

absl::Status UringPreadFull(const UringReader::Options& options, int fd, std::span<std::byte> out,
                            uint64_t offset, std::string_view path, const ReadRank* rank,
                            const OnLanded& on_landed) {
  UringReader* reader = ThreadReader(options);
  if (reader == nullptr) {
    absl::Status status = PreadFull(fd, out, offset, path);
    if (status.ok() && on_landed) on_landed(out.size());
    return status;
  }
  return reader->ReadFull(fd, out, offset, path, rank, on_landed);
}

}  // namespace warp
