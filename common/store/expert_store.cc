#include "common/store/expert_store.h"

#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <time.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "common/byte_size.h"
#include "common/check.h"
#include "common/format/bank_format.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/store/engine_activity.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23  // Linux 5.14; older kernels refuse it with EINVAL
#endif

namespace warp {
namespace {

size_t LatencyBucket(double ms) {
  constexpr double kBounds[] = {0.1, 0.3, 1, 3, 10, 30, 100};
  size_t bucket = 0;
  while (bucket < 7 && ms >= kBounds[bucket]) ++bucket;
  return bucket;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExpertStore>> ExpertStore::Open(
    std::shared_ptr<const Container> container, Options options) {
  uint64_t slot_bytes = kBankAlignment;
  uint64_t records_held = 0;
  for (const BankEntry& bank : container->manifest().banks) {
    slot_bytes = std::max(slot_bytes, AlignUp(bank.record_bytes, kBankAlignment));
    records_held += container->HeldExperts(bank).size();
  }
  // A cache larger than the records it can hold would only be reported (and
  // charged to the budget) without ever being used.
  const uint64_t cache_slots =
      std::min<uint64_t>({options.cache_bytes / slot_bytes, records_held, UINT32_MAX / 2});
  if (!options.shared_arena) options.staging_slots = 0;
  options.staging_slots = std::min(options.staging_slots, UINT32_MAX / 2);
  const uint64_t num_slots = cache_slots + options.staging_slots;
  std::unique_ptr<RecordArena> arena;
  std::vector<uint32_t> staging;
  if (num_slots > 0) {
    WARP_ASSIGN_OR_RETURN(arena, RecordArena::Create(slot_bytes, static_cast<uint32_t>(num_slots),
                                                     "warp-record-cache", options.shared_arena));
    // Staging slots are the store's for good: the cache never sees them, and
    // each I/O thread's ring registers them (FixedBuffers).
    auto fixed = std::make_shared<FixedBuffers>();
    for (uint32_t i = 0; i < options.staging_slots; ++i) {
      staging.push_back(*arena->Allocate());
      if (slot_bytes <= (uint64_t{1} << 30)) fixed->buffers.push_back(arena->Slot(staging.back()));
    }
    if (!fixed->buffers.empty()) options.banks.uring.fixed = std::move(fixed);
  }
  options.banks.spare_buffers = options.io_threads;
  WARP_ASSIGN_OR_RETURN(auto banks, BankSet::Open(std::move(container), options.banks));
  return std::unique_ptr<ExpertStore>(new ExpertStore(
      std::move(banks), std::move(arena), slot_bytes, cache_slots, std::move(staging), options));
}

ExpertStore::ExpertStore(std::unique_ptr<BankSet> banks, std::unique_ptr<RecordArena> arena,
                         uint64_t slot_bytes, uint64_t cache_slots, std::vector<uint32_t> staging,
                         const Options& options)
    : banks_(std::move(banks)),
      arena_(std::move(arena)),
      slot_bytes_(slot_bytes),
      max_cache_bytes_(cache_slots * slot_bytes),
      staging_slots_(static_cast<uint32_t>(staging.size())),
      io_threads_(options.io_threads),
      cache_(
          RecordCache::Options{.capacity_bytes = max_cache_bytes_,
                               .policy = options.cache_policy,
                               .foresight = options.foresight}),
      staging_free_(std::move(staging)) {
  io_ = std::make_unique<IoEngine>(
      options.io_threads, [this](const ExpertKey& key, Priority) { RunRead(key); },
      [this](const ExpertKey& key, Priority) { DropRead(key); },
      [this] { banks_->PrepareReaderThread(); });
  if (options.prefault_cache && arena_ != nullptr) {
    paced_ = options.pace_growth_below_bytes_per_second > 0;
    prefaulter_ = std::thread(
        [this, pace_below = options.pace_growth_below_bytes_per_second,
         yield = options.prefault_yields_to_prefill] { PrefaultLoop(pace_below, yield); });
  }
}

std::string ExpertStore::Settings() const {
  const BankSet::Options& banks = banks_->options();
  std::string io = IoBackendName(banks_->io_backend());
  if (banks_->io_backend() == IoBackend::kUring) {
    absl::StrAppend(&io, ", ", banks.uring.depth, " pieces of ", FormatBytes(banks.uring.piece_bytes),
                    banks.ordered_pieces ? " in flight, ordered by priority"
                                         : " in flight per read, unordered");
  }
  absl::MutexLock lock(&mu_);
  return absl::StrCat("cache ", FormatBytes(max_cache_bytes_), " (", EvictionPolicyName(cache_.policy()),
                      ", foresight ", cache_.foresight() ? "on" : "off", "), ", io_threads_,
                      " I/O threads reading with ", io, ", verify ",
                      !banks.verify        ? "off"
                      : banks.verify_every_read ? "every read"
                                                : "until a record first passes");
}

namespace {

double ThreadCpuSeconds() {
  timespec now{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

}  // namespace

void ExpertStore::PrefaultLoop(uint64_t pace_below, bool yield_to_prefill) {
  pthread_setname_np(pthread_self(), "warp-prefault");
  const sched_param idle{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle);  // a hint: if refused, it still runs
  while (true) {
    std::span<std::byte> pages;
    {
      absl::MutexLock lock(&mu_);
      // Staging slots count as backed from the start (allocated for good).
      if (shutting_down_ ||
          arena_->backed_slots() >= cache_.capacity_bytes() / slot_bytes_ + staging_slots_) {
        break;
      }
      std::optional<uint32_t> slot = arena_->ClaimUnbackedSlot();
      if (!slot) break;
      pages = arena_->Slot(*slot);
      faulting_slot_ = true;
    }
    const std::optional<double> seconds = FaultIn(pages, yield_to_prefill);
    absl::MutexLock lock(&mu_);
    faulting_slot_ = false;
    if (!seconds) break;
    ++stats_.prefaulted_slots;
    stats_.prefault_bytes_per_second = static_cast<uint64_t>(pages.size() / *seconds);
    paced_ = stats_.prefault_bytes_per_second < pace_below;
  }
  absl::MutexLock lock(&mu_);
  paced_ = false;  // nothing more will be backed ahead of use
}

std::optional<double> ExpertStore::FaultIn(std::span<std::byte> pages, bool yield_to_prefill) {
  // One huge page at a time: a step outlasts the moment it was allowed in by
  // a few milliseconds at most.
  constexpr uint64_t kStep = uint64_t{2} << 20;
  const uint64_t step = yield_to_prefill ? kStep : pages.size();
  double seconds = 1e-6;
  for (uint64_t offset = 0; offset < pages.size(); offset += step) {
    while (yield_to_prefill &&
           !EngineActivity::Process().AwaitPrefaultAllowed(absl::Milliseconds(50))) {
      absl::MutexLock lock(&mu_);
      if (shutting_down_) return std::nullopt;
    }
    // Faults the pages in without writing them: safe beside a read into the
    // slot if it was allocated meanwhile. Timed in CPU time: an idle-priority
    // thread's wall time counts the time it waited for a core.
    const std::span<std::byte> part = pages.subspan(offset, std::min(step, pages.size() - offset));
    const double start = ThreadCpuSeconds();
    if (::madvise(part.data(), part.size(), MADV_POPULATE_WRITE) != 0) {
      // Said once: the loop ends here. Linux before 5.14 has no such advice.
      Logger("expertd.store")
          .info(
              "not faulting the expert cache in ahead (madvise MADV_POPULATE_WRITE: {}); its "
              "pages fault in as records land",
              std::strerror(errno));
      return std::nullopt;
    }
    seconds += ThreadCpuSeconds() - start;
  }
  return seconds;
}

ExpertStore::~ExpertStore() {
  {
    absl::MutexLock lock(&mu_);
    shutting_down_ = true;  // queued reads of any priority fail instead of vanishing
  }
  if (prefaulter_.joinable()) prefaulter_.join();  // ends after the slot it is faulting in
  io_.reset();                                     // joins the readers before the state goes
}

ExpertRecord ExpertStore::LeasedRecord(const ExpertKey& key) {
  cache_.Pin(key);
  const uint64_t record_bytes = banks_->RecordBytes(key);
  // The lease unpins when the last copy of the record is dropped; until then
  // the slot is neither evicted nor reused.
  std::shared_ptr<const void> lease(nullptr, [this, key](const void*) { Release(key); });
  return ExpertRecord{.key = key,
                      .owner = std::move(lease),
                      .data = arena_->Slot(slots_.at(key)).first(record_bytes),
                      .record_bytes = record_bytes};
}

void ExpertStore::Release(const ExpertKey& key) {
  absl::MutexLock lock(&mu_);
  cache_.Unpin(key);
}

std::optional<uint32_t> ExpertStore::Stage(const ExpertKey& key) {
  if (staging_slots_ == 0 || banks_->RecordBytes(key) == 0) return std::nullopt;
  if (staging_free_.empty()) {
    ++stats_.staging_full;
    return std::nullopt;
  }
  const uint32_t slot = staging_free_.back();
  staging_free_.pop_back();
  ++stats_.staged_reads;
  return slot;
}

ExpertRecord ExpertStore::StagedRecord(const ExpertKey& key, uint32_t slot) {
  const uint64_t record_bytes = banks_->RecordBytes(key);
  std::shared_ptr<const void> owner(nullptr, [this, slot](const void*) { Unstage(slot); });
  return ExpertRecord{.key = key,
                      .owner = std::move(owner),
                      .data = arena_->Slot(slot).first(record_bytes),
                      .record_bytes = record_bytes};
}

void ExpertStore::Unstage(uint32_t slot) {
  absl::MutexLock lock(&mu_);
  staging_free_.push_back(slot);
}

std::optional<uint64_t> ExpertStore::ArenaOffset(const ExpertRecord& record) const {
  if (arena_ == nullptr) return std::nullopt;
  return arena_->OffsetOf(record.bytes());
}

void ExpertStore::Fetch(const ExpertKey& key, Priority priority, Callback done, OnLanding landing) {
  absl::ReleasableMutexLock lock(&mu_);
  // A key being read into its slot is resident already, but not readable: join its read.
  if (!in_flight_.contains(key) && cache_.Contains(key)) {
    const Served served = cache_.Origin(key);  // before this use claims it
    cache_.Touch(key, priority);
    ++stats_.hits;
    CountServed(priority, served);
    ExpertRecord record = LeasedRecord(key);
    record.served = served;
    lock.Release();
    done(std::move(record));
    return;
  }
  ++stats_.misses;
  auto [it, inserted] = in_flight_.try_emplace(key);
  InFlight& flight = it->second;
  // Joining a started speculative read is that prediction's hit; a queued one
  // this request takes over is its own read.
  Served served = Served::kDisk;
  if (!inserted && flight.started && flight.started_as == Priority::kLookahead) {
    served = Served::kLookahead;
  } else if (!inserted && flight.started && flight.started_as == Priority::kCertain) {
    served = Served::kCertain;
  }
  CountServed(priority, served);
  // A read under way hands its landing record over at once (the completion,
  // told after, is still what may be trusted).
  std::shared_ptr<LandingRecord> landing_now = landing ? flight.landing : nullptr;
  flight.waiters.push_back(
      {std::move(done), served, flight.started ? nullptr : std::move(landing)});
  if (priority != Priority::kDemand) flight.predicted_by.Add(kLocalClient);
  if (inserted) {
    flight.priority = priority;
    io_->Submit(key, priority);
    return;
  }
  ++stats_.joined;
  Raise(key, flight, priority);
  lock.Release();
  if (landing_now != nullptr) landing(std::move(landing_now));
}

void ExpertStore::Raise(const ExpertKey& key, InFlight& flight, Priority priority) {
  if (priority >= flight.priority) return;
  flight.priority = priority;
  // Queued: queued again at the higher priority (the first to run wins), so
  // that it does not wait behind the speculation. Started: admitted at the
  // higher priority, and its remaining pieces go out at that rank.
  if (!flight.started) io_->Submit(key, priority);
  if (flight.rank != nullptr) flight.rank->Raise(static_cast<uint32_t>(priority));
}

void ExpertStore::CountServed(Priority priority, Served served) {
  if (priority == Priority::kDemand) ++stats_.demand_served[static_cast<size_t>(served)];
}

std::optional<uint32_t> ExpertStore::Admit(const ExpertKey& key, Priority priority,
                                           const ClientSet& predicted_by) {
  if (arena_ == nullptr || banks_->RecordBytes(key) == 0) return std::nullopt;
  // Paced: only slots the prefault thread has backed (the arena hands them
  // out first), so that no read waits for fresh memory.
  const uint64_t limit =
      paced_ ? uint64_t{arena_->backed_slots() - (faulting_slot_ ? 1u : 0u)} * slot_bytes_
             : UINT64_MAX;
  if (limit < cache_.capacity_bytes()) ++stats_.paced_inserts;
  std::optional<std::vector<ExpertKey>> evicted =
      cache_.Insert(key, slot_bytes_, priority, limit, predicted_by);
  if (!evicted) return std::nullopt;
  for (const ExpertKey& old : *evicted) {
    arena_->Free(slots_.at(old));  // evicted keys are unpinned: no lease can see the slot
    slots_.erase(old);
  }
  // The cache charges a whole slot per record and its capacity is the arena,
  // so an admitted key always finds a free slot.
  std::optional<uint32_t> slot = arena_->Allocate();
  WARP_CHECK(slot.has_value());
  slots_[key] = *slot;
  cache_.Pin(key);  // for the read: not evictable while its bytes are in transit
  return slot;
}

absl::StatusOr<ExpertRecord> ExpertStore::ReadFromDisk(const ExpertKey& key, const ReadRank& rank,
                                                       std::optional<uint32_t> slot,
                                                       LandingRecord* landing) {
  if (!slot) return banks_->ReadRecord(key, rank);
  OnLanded on_landed;
  if (landing != nullptr) on_landed = [landing](uint64_t bytes) { landing->Landed(bytes); };
  WARP_RETURN_IF_ERROR(banks_->ReadRecordInto(key, arena_->Slot(*slot), rank, on_landed));
  return ExpertRecord{.key = key, .record_bytes = banks_->RecordBytes(key)};  // data: LeasedRecord
}

void ExpertStore::RunRead(const ExpertKey& key) {
  std::optional<StartedRead> read = StartRead(key);
  if (!read) return;
  for (const OnLanding& tell : read->told) tell(read->landing);
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<ExpertRecord> record =
      ReadFromDisk(key, *read->rank, read->slot ? read->slot : read->staged, read->landing.get());
  if (read->landing != nullptr) {
    if (record.ok()) read->landing->Landed(record->record_bytes);  // a backend that did not say
    read->landing->End();
  }
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  FinishRead(key, *read, ms, std::move(record));
}

std::optional<ExpertStore::StartedRead> ExpertStore::StartRead(const ExpertKey& key) {
  absl::MutexLock lock(&mu_);
  auto it = in_flight_.find(key);
  if (it == in_flight_.end() || it->second.started) return std::nullopt;  // a duplicate job
  InFlight& flight = it->second;
  StartedRead read;
  flight.started = true;
  read.priority = flight.priority;
  flight.started_as = read.priority;
  flight.rank = std::make_shared<ReadRank>(static_cast<uint32_t>(read.priority));
  read.rank = flight.rank;
  read.slot = Admit(key, read.priority, flight.predicted_by);
  if (!read.slot && read.priority == Priority::kLookahead && flight.waiters.empty()) {
    // A guess the cache cannot keep (no free or cold slot: a cache below a
    // working set) would be read into a buffer and dropped, and its demand
    // read again: not read at all.
    ++stats_.lookahead_unkept;
    in_flight_.erase(it);
    return std::nullopt;
  }
  if (!read.slot) read.staged = Stage(key);
  if (stats_.disk_reads_running++ == 0) stats_.busy_since = std::chrono::steady_clock::now();
  // Whoever asks may compute on the record's first rows while the rest
  // land. Only pieces land in order; a pread's record lands whole at its end.
  if ((read.slot || read.staged) && banks_->io_backend() == IoBackend::kUring) {
    read.landing = std::make_shared<LandingRecord>(
        arena_->Slot(read.slot ? *read.slot : *read.staged).first(banks_->RecordBytes(key)));
    flight.landing = read.landing;
    for (Waiter& waiter : flight.waiters) {
      if (waiter.landing) read.told.push_back(std::move(waiter.landing));
    }
  }
  return read;
}

void ExpertStore::FinishRead(const ExpertKey& key, const StartedRead& read, double ms,
                             absl::StatusOr<ExpertRecord> record) {
  std::vector<Waiter> waiters;
  std::vector<absl::StatusOr<ExpertRecord>> results;
  {
    absl::MutexLock lock(&mu_);
    auto it = in_flight_.find(key);
    waiters = std::move(it->second.waiters);
    const Priority joined = it->second.priority;  // a demand may have joined mid-read
    in_flight_.erase(it);
    // A prediction a demand used while it read is warm, not wasted. One a
    // certain prefetch raised stays its own prediction's, foreseen, until
    // the demand comes (RecordCache::Origin).
    if (read.slot && record.ok() && joined == Priority::kDemand && joined < read.priority) {
      cache_.Touch(key, joined);
    }
    SettleSlot(key, read, record);
    CountDiskRead(read.priority, ms, record);
    for (const Waiter& waiter : waiters) {
      results.push_back(record.ok() && read.slot ? absl::StatusOr<ExpertRecord>(LeasedRecord(key))
                                                 : record);
      if (results.back().ok()) results.back()->served = waiter.served;
    }
  }
  if (!record.ok() && record.status().code() == absl::StatusCode::kDataLoss) {
    Logger("expertd.store").warn("{}", std::string(record.status().message()));
  }
  // The waiters' copies are a staged record's last owners: its slot goes back
  // as soon as they drop them, not when this thread gets round to returning.
  if (record.ok()) {
    const ExpertRecord released = *std::move(record);
  }
  for (size_t i = 0; i < waiters.size(); ++i) waiters[i].done(std::move(results[i]));
}

void ExpertStore::SettleSlot(const ExpertKey& key, const StartedRead& read,
                             absl::StatusOr<ExpertRecord>& record) {
  if (read.slot) {
    cache_.Unpin(key);   // the read's pin
    if (!record.ok()) {  // never admitted: the slot goes back at once
      cache_.Erase(key);
      arena_->Free(*read.slot);
      slots_.erase(key);
    }
  }
  if (read.staged && !record.ok()) {
    staging_free_.push_back(*read.staged);
  } else if (read.staged) {
    record = StagedRecord(key, *read.staged);  // every waiter shares it; its slot goes with it
  }
}

void ExpertStore::CountDiskRead(Priority priority, double ms,
                                const absl::StatusOr<ExpertRecord>& record) {
  ++stats_.latency_us_buckets[LatencyBucket(ms)];
  if (--stats_.disk_reads_running == 0) {
    stats_.disk_busy_us += std::chrono::duration_cast<std::chrono::microseconds>(
                               std::chrono::steady_clock::now() - stats_.busy_since)
                               .count();
  }
  if (record.ok()) {
    stats_.read_bytes[static_cast<size_t>(priority)] += record->record_bytes;
  } else if (record.status().code() == absl::StatusCode::kDataLoss) {
    ++stats_.crc_errors;
  } else {
    ++stats_.read_errors;
  }
}

void ExpertStore::DropRead(const ExpertKey& key) {
  std::vector<Waiter> waiters;
  bool shutting_down;
  {
    absl::MutexLock lock(&mu_);
    shutting_down = shutting_down_;
    auto it = in_flight_.find(key);
    if (it == in_flight_.end() || it->second.started) return;
    // A dropped duplicate of a read that a demand re-queued is not a cancellation.
    if (!shutting_down_ && it->second.priority != Priority::kLookahead) return;
    if (!shutting_down_) ++stats_.lookahead_cancelled;
    waiters = std::move(it->second.waiters);
    in_flight_.erase(it);
  }
  for (Waiter& waiter : waiters) {
    waiter.done(absl::CancelledError(absl::StrCat(
        "expert ", key.expert, " of layer ", key.layer,
        shutting_down ? ": the store is shutting down" : ": speculative read cancelled")));
  }
}

std::shared_ptr<ReadBatch> ExpertStore::Read(std::span<const ExpertKey> keys, Priority priority) {
  auto batch = std::make_shared<ReadBatch>(keys.size());
  for (size_t i = 0; i < keys.size(); ++i) {
    Fetch(
        keys[i], priority,
        [batch, i](absl::StatusOr<ExpertRecord> record) { batch->Complete(i, std::move(record)); },
        [batch, i](std::shared_ptr<const LandingRecord> landing) {
          batch->Landing(i, std::move(landing));
        });
  }
  return batch;
}

void ExpertStore::PrefetchFor(std::span<const ExpertKey> keys, Priority priority,
                              ClientId client) {
  absl::MutexLock lock(&mu_);
  for (const ExpertKey& key : keys) {
    if (auto it = in_flight_.find(key); it != in_flight_.end()) {
      // Queued: its insert will say who predicted it. Started: admitted
      // already (unless staged), so foreseen now.
      if (it->second.started) {
        cache_.Foresee(key, client);
      } else {
        it->second.predicted_by.Add(client);
      }
      Raise(key, it->second, priority);  // a certain prefetch of a guess
      continue;
    }
    if (cache_.Foresee(key, client)) continue;  // resident: spared until its layer passes
    InFlight& flight = in_flight_[key];
    flight.priority = priority;
    flight.predicted_by = ClientSet(client);
    io_->Submit(key, priority);
  }
}

size_t ExpertStore::CancelLookahead(uint32_t through_layer, ClientId client) {
  uint64_t before;
  absl::flat_hash_set<ExpertKey> unwanted;  // queued guesses no client hints any more
  {
    absl::MutexLock lock(&mu_);
    before = stats_.lookahead_cancelled;
    for (auto& [key, flight] : in_flight_) {
      if (flight.started || flight.priority != Priority::kLookahead || key.layer > through_layer) {
        continue;
      }
      flight.predicted_by.Remove(client);
      if (flight.predicted_by.empty()) unwanted.insert(key);
    }
    cache_.ForgetForesight(through_layer, client);
  }
  // Unlocked: DropRead takes mu_. A hint of another client that arrives
  // meanwhile for an unwanted key is dropped with it (a hint, not a read).
  if (!unwanted.empty()) {
    io_->DropQueued(Priority::kLookahead,
                    [&](const ExpertKey& key) { return unwanted.contains(key); });
  }
  absl::MutexLock lock(&mu_);
  return stats_.lookahead_cancelled - before;  // queue entries a demand took over don't count
}

uint64_t ExpertStore::SetCacheCapacity(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  if (arena_ == nullptr) return 0;
  const uint64_t capacity = std::min(bytes / slot_bytes_ * slot_bytes_, max_cache_bytes_);
  const bool shrinking = capacity < cache_.capacity_bytes();
  for (const ExpertKey& old : cache_.SetCapacity(capacity)) {
    arena_->Free(slots_.at(old));  // evicted keys are unpinned: no lease can see the slot
    slots_.erase(old);
  }
  if (shrinking) {
    // Every free slot's pages go back (the arena skips slots that hold none).
    for (uint32_t slot = 0; slot < arena_->num_slots(); ++slot) {
      if (!arena_->IsAllocated(slot) && !arena_->Release(slot).ok()) break;  // a shared arena
    }
    ++stats_.cache_shrinks;
  }
  return capacity;
}

bool ExpertStore::IsCached(const ExpertKey& key) const {
  absl::MutexLock lock(&mu_);
  return cache_.Contains(key) && !in_flight_.contains(key);
}

std::map<std::string, uint64_t> ExpertStore::Counters() const {
  absl::MutexLock lock(&mu_);
  const RecordCache::Stats& cache = cache_.stats();
  std::map<std::string, uint64_t> counters = {
      {"cache_hits", stats_.hits},
      {"cache_misses", stats_.misses},
      {"reads_joined", stats_.joined},
      {"demand_hits", stats_.demand_served[static_cast<size_t>(Served::kCache)]},
      {"demand_lookahead_hits", stats_.demand_served[static_cast<size_t>(Served::kLookahead)]},
      {"demand_certain_hits", stats_.demand_served[static_cast<size_t>(Served::kCertain)]},
      {"demand_misses", stats_.demand_served[static_cast<size_t>(Served::kDisk)]},
      {"crc_errors", stats_.crc_errors},
      {"read_errors", stats_.read_errors},
      {"read_bytes_demand", stats_.read_bytes[0]},
      {"read_bytes_certain", stats_.read_bytes[1]},
      {"read_bytes_lookahead", stats_.read_bytes[2]},
      {"lookahead_cancelled", stats_.lookahead_cancelled},
      {"lookahead_unkept", stats_.lookahead_unkept},
      {"cache_used_bytes", cache_.used_bytes()},
      {"cache_capacity_bytes", cache_.capacity_bytes()},
      {"cache_pinned_bytes", cache_.pinned_bytes()},
      {"cache_slot_bytes", slot_bytes_},
      {"cache_free_slots", arena_ ? arena_->free_slots() : 0},
      {"cache_evictions", cache.evictions},
      {"cache_shrinks", stats_.cache_shrinks},
      {"cache_prefaulted_slots", stats_.prefaulted_slots},
      {"staging_slots", staging_slots_},
      {"staging_in_use", staging_slots_ - staging_free_.size()},
      {"staged_reads", stats_.staged_reads},
      {"staging_full", stats_.staging_full},
      {"cache_rejected_inserts", cache.rejected_inserts},
      {"cache_paced_inserts", stats_.paced_inserts},
      {"cache_paced", paced_ ? 1u : 0u},
      {"cache_prefault_bytes_per_second", stats_.prefault_bytes_per_second},
      {"speculative_evicted_unused", cache.speculative_evicted_unused},
      {"cache_foreseen_evicted", cache.foreseen_evicted},
      {"queue_depth", io_->queue_depth()},
      // The busy period under way counts up to now: a run that never lets the
      // disk go idle must not read 0.
      {"disk_busy_us",
       stats_.disk_busy_us + (stats_.disk_reads_running == 0
                                  ? 0
                                  : std::chrono::duration_cast<std::chrono::microseconds>(
                                        std::chrono::steady_clock::now() - stats_.busy_since)
                                        .count())},
  };
  constexpr const char* kBuckets[] = {"lt_0_1ms", "lt_0_3ms", "lt_1ms",   "lt_3ms",
                                      "lt_10ms",  "lt_30ms",  "lt_100ms", "ge_100ms"};
  for (size_t i = 0; i < 8; ++i) {
    counters[absl::StrCat("read_latency_", kBuckets[i])] = stats_.latency_us_buckets[i];
  }
  std::map<std::string, uint64_t> named;
  for (auto& [name, value] : counters) named["expertd.store." + name] = value;
  return named;
}

}  // namespace warp
