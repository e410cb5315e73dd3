#include "common/store/engram_store.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/format/engram_table.h"
#include "common/io/aligned_buffer.h"
#include "common/status.h"
#include "common/store/engram_files.h"

namespace warp {

// A record of the cache, or held by a fetch after the cache dropped it.
struct EngramFetch::Held {
  struct Waiter {
    std::shared_ptr<ReadBatch> batch;
    size_t index = 0;
  };
  absl::StatusOr<ExpertRecord> record = absl::UnknownError("not read yet");
  bool done = false;
  std::vector<Waiter> waiters;         // Read batches to complete when done
  std::list<ExpertKey>::iterator lru;  // in lru_ once done, ok and cached
};

absl::StatusOr<std::unique_ptr<EngramStore>> EngramStore::Open(
    std::shared_ptr<const Container> container, const Options& options) {
  std::vector<EngramTableEntry> tables = container->manifest().engram;
  WARP_ASSIGN_OR_RETURN(
      std::unique_ptr<EngramFiles> files,
      EngramFiles::Open(std::move(container), {.io_threads = options.io_threads,
                                               .verify = options.verify}));
  auto store = std::make_unique<EngramStore>(std::move(tables), *files, options);
  store->owned_records_ = std::move(files);
  return store;
}

EngramStore::EngramStore(std::vector<EngramTableEntry> tables, ExpertSource& records,
                         const Options& options)
    : tables_(std::move(tables)),
      records_(records),
      capacity_(options.cache_bytes / kEngramRecordBytes) {}

EngramStore::~EngramStore() {
  std::unique_lock lock(mu_);
  changed_.wait(lock, [&] { return reads_in_flight_ == 0; });
}

uint64_t EngramStore::cache_bytes() const { return capacity_ * kEngramRecordBytes; }

EngramStore::Counters EngramStore::counters() const {
  std::lock_guard lock(mu_);
  return counters_;
}

std::map<std::string, uint64_t> EngramStore::CounterMap() const {
  const Counters c = counters();
  return {{"engram.rows", c.rows},
          {"engram.row_hits", c.row_hits},
          {"engram.records_read", c.records_read},
          {"engram.read_bytes", c.bytes_read}};
}

ExpertKey EngramStore::KeyOf(const EngramRow& row) const {
  const EngramTableEntry& table = tables_[row.table];
  return {EngramKeyLayer(table.layer), static_cast<uint32_t>(EngramRecordOf(table, row.row))};
}

std::shared_ptr<EngramStore::Record> EngramStore::Request(const ExpertKey& key,
                                                          std::vector<ExpertKey>& to_read,
                                                          bool* cached) {
  auto [it, fresh] = cache_.try_emplace(key);
  *cached = !fresh;
  if (fresh) {
    it->second = std::make_shared<Record>();
    to_read.push_back(key);
    ++reads_in_flight_;
  } else if (it->second->done && it->second->record.ok()) {
    lru_.splice(lru_.end(), lru_, it->second->lru);  // most recent
  }
  return it->second;
}

void EngramStore::StartReads(std::vector<ExpertKey> keys) {
  if (keys.empty()) return;
  std::shared_ptr<ReadBatch> batch = records_.Read(keys, Priority::kCertain);
  batch->ForwardTo([this, keys = std::move(keys)](size_t index,
                                                  absl::StatusOr<ExpertRecord> record) {
    Landed(keys[index], std::move(record));
  });
}

void EngramStore::Landed(const ExpertKey& key, absl::StatusOr<ExpertRecord> record) {
  if (record.ok()) {
    // The cache owns its bytes: a record that came in a daemon's reply (or
    // leased from its memory) must not hold the reply (or the lease).
    auto copy = std::make_shared<AlignedBuffer>(AlignedBuffer::Uninitialized(kEngramRecordBytes));
    std::memcpy(copy->data(), record->bytes().data(),
                std::min<uint64_t>(record->bytes().size(), kEngramRecordBytes));
    record->data = copy->span();
    record->owner = std::move(copy);
  }
  std::vector<Record::Waiter> waiters;
  absl::StatusOr<ExpertRecord> result;
  {
    std::lock_guard lock(mu_);
    std::shared_ptr<Record> landed = cache_.at(key);
    landed->record = std::move(record);
    landed->done = true;
    waiters.swap(landed->waiters);
    if (!waiters.empty()) result = landed->record;
    ++counters_.records_read;  // failed ones too: each was asked of `records_`
    counters_.bytes_read += kEngramRecordBytes;
    if (landed->record.ok()) {
      landed->lru = lru_.insert(lru_.end(), key);
      EvictBeyondBudget();  // fetches hold theirs
    } else {
      cache_.erase(key);  // never kept; its waiters hold it
    }
    changed_.notify_all();
  }
  for (Record::Waiter& waiter : waiters) waiter.batch->Complete(waiter.index, result);
  std::lock_guard lock(mu_);
  --reads_in_flight_;
  changed_.notify_all();  // under mu_: the destructor may return as soon as it sees 0
}

EngramFetch EngramStore::Fetch(std::span<const EngramRow> rows) {
  EngramFetch fetch;
  fetch.rows_.assign(rows.begin(), rows.end());
  fetch.records_.reserve(rows.size());
  std::vector<ExpertKey> to_read;
  {
    std::lock_guard lock(mu_);
    for (const EngramRow& r : rows) {
      bool cached = false;
      fetch.records_.push_back(Request(KeyOf(r), to_read, &cached));
      ++counters_.rows;
      if (cached) ++counters_.row_hits;
    }
  }
  StartReads(std::move(to_read));
  return fetch;
}

void EngramStore::WaitFor(std::unique_lock<std::mutex>& lock,
                          std::span<const std::shared_ptr<Record>> records) {
  changed_.wait(lock, [&] {
    return std::all_of(records.begin(), records.end(), [](const auto& r) { return r->done; });
  });
}

absl::Status EngramStore::Rows(const EngramFetch& fetch, std::span<const size_t> which,
                               std::span<std::byte> out) {
  std::vector<std::shared_ptr<Record>> wanted;
  wanted.reserve(which.size());
  for (size_t i : which) wanted.push_back(fetch.records_[i]);
  {
    std::unique_lock lock(mu_);
    WaitFor(lock, wanted);
  }
  uint64_t at = 0;
  for (size_t w = 0; w < which.size(); ++w) {
    WARP_RETURN_IF_ERROR(wanted[w]->record.status());
    const EngramRow& row = fetch.rows_[which[w]];
    const EngramTableEntry& table = tables_[row.table];
    std::memcpy(out.data() + at,
                wanted[w]->record->data.data() + EngramOffsetInRecord(table, row.row),
                table.row_bytes);
    at += table.row_bytes;
  }
  return absl::OkStatus();
}

absl::Status EngramStore::Rows(const EngramFetch& fetch, std::span<std::byte> out) {
  std::vector<size_t> all(fetch.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return Rows(fetch, all, out);
}

std::shared_ptr<ReadBatch> EngramStore::Read(std::span<const ExpertKey> keys) {
  auto batch = std::make_shared<ReadBatch>(keys.size());
  std::vector<ExpertKey> to_read;
  std::vector<std::pair<size_t, absl::StatusOr<ExpertRecord>>> ready;
  {
    std::lock_guard lock(mu_);
    for (size_t i = 0; i < keys.size(); ++i) {
      if (absl::StatusOr<uint32_t> table = EngramTableOfKey(tables_, keys[i].layer, keys[i].expert);
          !table.ok()) {
        ready.emplace_back(i, table.status());
        continue;
      }
      bool cached = false;
      std::shared_ptr<Record> record = Request(keys[i], to_read, &cached);
      if (!record->done) {
        record->waiters.push_back({batch, i});
        continue;
      }
      absl::StatusOr<ExpertRecord> copy = record->record;
      if (copy.ok()) copy->served = Served::kCache;
      ready.emplace_back(i, std::move(copy));
    }
  }
  for (auto& [index, record] : ready) batch->Complete(index, std::move(record));
  StartReads(std::move(to_read));
  return batch;
}

void EngramStore::Prefetch(std::span<const ExpertKey> keys) {
  std::vector<ExpertKey> to_read;
  {
    std::lock_guard lock(mu_);
    for (const ExpertKey& key : keys) {
      bool cached = false;
      if (EngramTableOfKey(tables_, key.layer, key.expert).ok()) Request(key, to_read, &cached);
    }
  }
  StartReads(std::move(to_read));
}

void EngramStore::Prefetch(std::span<const EngramRow> rows) {
  std::vector<ExpertKey> to_read;
  {
    std::lock_guard lock(mu_);
    for (const EngramRow& r : rows) {
      bool cached = false;
      Request(KeyOf(r), to_read, &cached);
    }
  }
  StartReads(std::move(to_read));
}

void EngramStore::EvictBeyondBudget() {
  while (lru_.size() > capacity_) {
    cache_.erase(lru_.front());
    lru_.pop_front();
  }
}

}  // namespace warp
