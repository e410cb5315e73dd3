#include "common/store/bank_set.h"

#include <atomic>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/logging.h"
#include "common/status.h"

namespace warp {

absl::StatusOr<IoBackend> ParseIoBackend(std::string_view name) {
  if (name.empty()) return kDefaultIoBackend;
  if (name == "pread") return IoBackend::kPread;
  if (name == "uring") return IoBackend::kUring;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown I/O engine \"", std::string(name), "\" (pread or uring)"));
}

const char* IoBackendName(IoBackend backend) {
  return backend == IoBackend::kUring ? "uring" : "pread";
}

absl::StatusOr<std::unique_ptr<BankSet>> BankSet::Open(std::shared_ptr<const Container> container,
                                                       Options options) {
  std::function<void()> prepare_reader_thread;
  if (!options.pread && options.io_backend == IoBackend::kUring) {
    UringReader::Options unregistered = options.uring;  // a probe need not pin anything
    unregistered.fixed = nullptr;
    absl::StatusOr<std::unique_ptr<UringReader>> probe = UringReader::Create(unregistered);
    if (absl::IsInvalidArgument(probe.status())) return probe.status();  // bad depth or piece
    if (probe.ok()) {
      if (options.ordered_pieces && options.uring.gate == nullptr) {
        options.uring.gate = std::make_shared<PieceGate>(options.uring.depth);
      }
      options.pread = [uring = options.uring](int fd, std::span<std::byte> out, uint64_t offset,
                                              std::string_view path, const ReadRank& rank,
                                              const OnLanded& on_landed) {
        return UringPreadFull(uring, fd, out, offset, path, &rank, on_landed);
      };
      prepare_reader_thread = [uring = options.uring] { UringPrepareThread(uring); };
    } else {
      static std::atomic<bool> warned{false};  // one line per process, not per shard
      if (!warned.exchange(true)) {
        Logger("expertd.store")
            .warn("--io-engine uring: {}; reading with pread",
                  std::string(probe.status().message()));
      }
      options.io_backend = IoBackend::kPread;
    }
  }
  if (!options.pread) {
    options.pread = [](int fd, std::span<std::byte> out, uint64_t offset, std::string_view path,
                       const ReadRank& /*rank*/,
                       const OnLanded& /*on_landed*/) { return PreadFull(fd, out, offset, path); };
  }
  auto banks = std::unique_ptr<BankSet>(new BankSet(std::move(container), std::move(options)));
  banks->prepare_reader_thread_ = std::move(prepare_reader_thread);
  bool warned = false;
  for (const BankEntry& bank : banks->container_->manifest().banks) {
    WARP_ASSIGN_OR_RETURN(OpenedFile file,
                          OpenForRead(banks->container_->BankPath(bank), /*want_direct=*/true));
    if (!file.direct && !warned) {
      Logger("expertd.store")
          .warn("{}: the filesystem refuses O_DIRECT; reading through the page cache",
                banks->container_->dir().string());
      warned = true;
    }
    banks->files_.push_back(std::move(file));
    banks->verified_.push_back(std::make_unique<std::atomic<bool>[]>(bank.num_experts));
  }
  return banks;
}

absl::StatusOr<ExpertRecord> BankSet::ReadRecord(const ExpertKey& key, const ReadRank& rank) const {
  const uint64_t record_bytes = RecordBytes(key);
  if (record_bytes == 0) return NotHeld(key);
  std::shared_ptr<AlignedBuffer> buffer = buffers_->Get(record_bytes);
  WARP_RETURN_IF_ERROR(ReadRecordInto(key, buffer->span(), rank));
  std::span<const std::byte> data = buffer->span().first(record_bytes);
  return ExpertRecord{
      .key = key, .owner = std::move(buffer), .data = data, .record_bytes = record_bytes};
}

uint64_t BankSet::RecordBytes(const ExpertKey& key) const {
  if (!container_->RecordOffset(key.layer, key.expert)) return 0;
  return container_->manifest().FindBank(key.layer)->record_bytes;
}

absl::Status BankSet::ReadRecordInto(const ExpertKey& key, std::span<std::byte> out,
                                     const ReadRank& rank, const OnLanded& on_landed) const {
  const Manifest& manifest = container_->manifest();
  const std::optional<uint64_t> offset = container_->RecordOffset(key.layer, key.expert);
  if (!offset) return NotHeld(key);
  const BankEntry* bank = manifest.FindBank(key.layer);
  WARP_CHECK(out.size() >= bank->record_bytes);
  const size_t index = static_cast<size_t>(bank - manifest.banks.data());
  const std::string path = container_->BankPath(*bank).string();
  std::span<std::byte> bytes = out.first(bank->record_bytes);
  std::atomic<bool>& verified = verified_[index][key.expert];
  const bool check_crc =
      options_.verify && (options_.verify_every_read || !verified.load(std::memory_order_relaxed));
  const RecordExpectation expected = container_->Expectation(key.layer, key.expert);
  // The payload's CRC is taken as its pieces land, on this thread while the
  // rest are read, not after: a record is ready as soon as its last piece is.
  PayloadDigest digest(bytes.first(expected.payload_bytes));
  OnLanded landed_hook;
  if (check_crc || on_landed) {
    landed_hook = [&](uint64_t landed) {
      if (on_landed) on_landed(landed);  // the engine first: its compute waits
      if (check_crc) digest.Landed(landed);
    };
  }
  absl::Status status =
      options_.pread(files_[index].fd.get(), bytes, *offset, path, rank, landed_hook);
  if (!status.ok()) {
    return Annotate(status, absl::StrCat("expert ", key.expert, " of layer ", key.layer));
  }
  std::optional<uint32_t> crc;
  if (check_crc) crc = digest.Crc();
  status = CheckRecordAgainstCrc(bytes, expected, crc);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat(status.message(), " (", path, " @", *offset, ")"));
  }
  if (check_crc) verified.store(true, std::memory_order_relaxed);
  return absl::OkStatus();
}

absl::Status BankSet::NotHeld(const ExpertKey& key) const {
  return absl::NotFoundError(absl::StrCat("expert ", key.expert, " of layer ", key.layer,
                                          ": not held by ", container_->dir().string()));
}

}  // namespace warp
