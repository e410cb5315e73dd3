#include "common/store/engram_store.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/format/bank_format.h"
#include "common/format/engram_table.h"
#include "common/status.h"

namespace warp {

absl::StatusOr<std::unique_ptr<EngramStore>> EngramStore::Open(
    std::shared_ptr<const Container> container, const Options& options) {
  auto store = std::unique_ptr<EngramStore>(new EngramStore(std::move(container), options));
  for (const EngramTableEntry& table : store->container_->manifest().engram) {
    WARP_ASSIGN_OR_RETURN(OpenedFile file,
                          OpenForRead(store->container_->dir() / table.file, /*want_direct=*/true));
    store->files_.push_back(std::move(file));
  }
  for (uint32_t i = 0; i < std::max(1u, options.io_threads); ++i) {
    store->threads_.emplace_back([s = store.get()] { s->ReadLoop(); });
  }
  return store;
}

EngramStore::EngramStore(std::shared_ptr<const Container> container, const Options& options)
    : container_(std::move(container)),
      options_(options),
      capacity_(options.cache_bytes / kEngramRecordBytes) {}

EngramStore::~EngramStore() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

uint32_t EngramStore::row_bytes(uint32_t table) const {
  return container_->manifest().engram[table].row_bytes;
}

EngramStore::Counters EngramStore::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::shared_ptr<EngramStore::Record> EngramStore::Request(uint64_t key, bool* cached) {
  auto [it, fresh] = records_.try_emplace(key);
  *cached = !fresh;
  if (fresh) {
    it->second = std::make_shared<Record>();
    queue_.push_back(key);
    changed_.notify_one();
  } else if (it->second->done && it->second->status.ok()) {
    lru_.splice(lru_.end(), lru_, it->second->lru);  // most recent
  }
  return it->second;
}

void EngramStore::Fetch(std::span<const EngramRow> rows) {
  std::lock_guard lock(mu_);
  for (const EngramRow& r : rows) {
    const EngramTableEntry& table = container_->manifest().engram[r.table];
    bool cached = false;
    Request(Key(r.table, EngramRecordOf(table, r.row)), &cached);
    ++counters_.rows;
    if (cached) ++counters_.row_hits;
  }
}

absl::Status EngramStore::Rows(std::span<const EngramRow> rows, std::span<std::byte> out) {
  std::vector<std::shared_ptr<Record>> held;
  std::unique_lock lock(mu_);
  for (const EngramRow& r : rows) {
    const EngramTableEntry& table = container_->manifest().engram[r.table];
    bool cached = false;
    held.push_back(Request(Key(r.table, EngramRecordOf(table, r.row)), &cached));
  }
  changed_.wait(lock, [&] {
    return std::all_of(held.begin(), held.end(), [](const auto& r) { return r->done; });
  });
  uint64_t at = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    WARP_RETURN_IF_ERROR(held[i]->status);
    const EngramTableEntry& table = container_->manifest().engram[rows[i].table];
    std::memcpy(out.data() + at, held[i]->data.data() + EngramOffsetInRecord(table, rows[i].row),
                table.row_bytes);
    at += table.row_bytes;
  }
  EvictBeyondBudget();
  return absl::OkStatus();
}

void EngramStore::EvictBeyondBudget() {
  while (lru_.size() > capacity_) {
    records_.erase(lru_.front());
    lru_.pop_front();
  }
}

absl::Status EngramStore::ReadRecord(uint64_t key, Record& record) const {
  const uint32_t index = static_cast<uint32_t>(key >> 40);
  const uint64_t number = key & ((uint64_t{1} << 40) - 1);
  const EngramTableEntry& table = container_->manifest().engram[index];
  const std::string path = (container_->dir() / table.file).string();
  const uint64_t offset = number * kEngramRecordBytes;
  record.data = AlignedBuffer::Uninitialized(kEngramRecordBytes);
  WARP_RETURN_IF_ERROR(PreadFull(files_[index].fd.get(), record.data.span(), offset, path));
  const BankEntry bank = EngramBank(table);
  const absl::Status checked = CheckRecord(record.data.span(),
                                           {.layer = bank.layer,
                                            .expert = static_cast<uint32_t>(number),
                                            .payload_bytes = bank.payload_bytes,
                                            .fingerprint = container_->manifest().fingerprint},
                                           options_.verify);
  if (checked.ok()) return checked;
  // CheckRecord names an expert; this is a table's record.
  const std::string message(checked.message());
  const size_t colon = message.find(": ");
  return absl::Status(
      checked.code(),
      absl::StrCat(path, " @", offset, ": record ", number, " of the engram table of layer ",
                   table.layer, ": ",
                   colon == std::string::npos ? message : message.substr(colon + 2)));
}

void EngramStore::ReadLoop() {
  std::unique_lock lock(mu_);
  for (;;) {
    changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (stopping_) return;
    const uint64_t key = queue_.front();
    queue_.pop_front();
    std::shared_ptr<Record> record = records_.at(key);
    lock.unlock();
    absl::Status status = ReadRecord(key, *record);
    lock.lock();
    record->status = std::move(status);
    record->done = true;
    ++counters_.records_read;
    counters_.bytes_read += kEngramRecordBytes;
    if (record->status.ok()) {
      record->lru = lru_.insert(lru_.end(), key);
    } else {
      records_.erase(key);  // a corrupt record is never kept; its waiters hold it
    }
    changed_.notify_all();
  }
}

}  // namespace warp
