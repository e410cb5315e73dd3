#include "common/store/engram_files.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/format/bank_format.h"
#include "common/format/engram_table.h"
#include "common/io/aligned_buffer.h"
#include "common/status.h"

namespace warp {

absl::StatusOr<std::unique_ptr<EngramFiles>> EngramFiles::Open(
    std::shared_ptr<const Container> container, const Options& options) {
  auto files = std::unique_ptr<EngramFiles>(new EngramFiles(std::move(container), options));
  for (const EngramTableEntry& table : files->container_->manifest().engram) {
    WARP_ASSIGN_OR_RETURN(OpenedFile file,
                          OpenForRead(files->container_->dir() / table.file, /*want_direct=*/true));
    files->files_.push_back(std::move(file));
  }
  for (uint32_t i = 0; i < std::max(1u, options.io_threads); ++i) {
    files->threads_.emplace_back([f = files.get()] { f->ReadLoop(); });
  }
  return files;
}

EngramFiles::~EngramFiles() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  queued_.notify_all();
  for (std::thread& thread : threads_) thread.join();
  for (Job& job : queue_) {
    job.batch->Complete(job.index, absl::CancelledError("the engram tables were closed"));
  }
}

std::shared_ptr<ReadBatch> EngramFiles::Read(std::span<const ExpertKey> keys, Priority) {
  auto batch = std::make_shared<ReadBatch>(keys.size());
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < keys.size(); ++i) queue_.push_back({keys[i], batch, i});
  }
  queued_.notify_all();
  return batch;
}

std::map<std::string, uint64_t> EngramFiles::Counters() const {
  std::lock_guard lock(mu_);
  return {{"engram.records_read", records_read_},
          {"engram.read_bytes", records_read_ * kEngramRecordBytes}};
}

absl::StatusOr<ExpertRecord> EngramFiles::ReadRecord(const ExpertKey& key) const {
  WARP_ASSIGN_OR_RETURN(const uint32_t index,
                        EngramTableOfKey(container_->manifest().engram, key.layer, key.expert));
  const EngramTableEntry& table = container_->manifest().engram[index];
  const std::string path = (container_->dir() / table.file).string();
  const uint64_t offset = uint64_t{key.expert} * kEngramRecordBytes;
  auto data = std::make_shared<AlignedBuffer>(AlignedBuffer::Uninitialized(kEngramRecordBytes));
  WARP_RETURN_IF_ERROR(PreadFull(files_[index].fd.get(), data->span(), offset, path));
  const BankEntry bank = EngramBank(table);
  const absl::Status checked = CheckRecord(data->span(),
                                           {.layer = bank.layer,
                                            .expert = key.expert,
                                            .payload_bytes = bank.payload_bytes,
                                            .fingerprint = container_->manifest().fingerprint},
                                           options_.verify);
  if (!checked.ok()) {
    // CheckRecord names an expert; this is a table's record.
    const std::string message(checked.message());
    const size_t colon = message.find(": ");
    return absl::Status(
        checked.code(),
        absl::StrCat(path, " @", offset, ": record ", key.expert, " of the engram table of layer ",
                     table.layer, ": ",
                     colon == std::string::npos ? message : message.substr(colon + 2)));
  }
  const std::span<const std::byte> bytes = data->span();
  return ExpertRecord{.key = key,
                      .owner = std::move(data),
                      .data = bytes,
                      .record_bytes = kEngramRecordBytes,
                      .served = Served::kDisk};
}

void EngramFiles::ReadLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    queued_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    Job job = std::move(queue_.front());
    queue_.pop_front();
    lock.unlock();
    absl::StatusOr<ExpertRecord> record = ReadRecord(job.key);
    lock.lock();
    if (record.ok()) ++records_read_;
    lock.unlock();
    job.batch->Complete(job.index, std::move(record));
    lock.lock();
  }
}

}  // namespace warp
