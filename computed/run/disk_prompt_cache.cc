#include "computed/run/disk_prompt_cache.h"

#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "common/hash.h"
#include "common/io/file.h"
#include "common/logging.h"
#include "common/status.h"

namespace warp::computed {
namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'W', 'A', 'R', 'P', 'P', 'C', 'E', '1'};
constexpr uint32_t kVersion = 1;
constexpr std::string_view kSuffix = ".wpc";
constexpr size_t kPendingWrites = 2;  // more are dropped, oldest first: bounds the memory held

// magic, version, key length, id count, state length; then the key, the ids,
// the state and a CRC32C of everything before it.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t key_bytes;
  uint64_t ids;
  uint64_t state_bytes;
};
static_assert(sizeof(Header) == 32);

spdlog::logger& Log() { return Logger("computed"); }

// The entry's size from its header, or 0 when the header's counts cannot be
// a file of `file_bytes` (a flipped bit must not size a vector).
uint64_t EntryBytes(const Header& h, uint64_t file_bytes) {
  const uint64_t fixed = sizeof(Header) + sizeof(uint32_t);
  if (file_bytes < fixed || h.key_bytes > file_bytes || h.state_bytes > file_bytes ||
      h.ids > file_bytes / sizeof(int32_t)) {
    return 0;
  }
  const uint64_t total = fixed + h.key_bytes + h.ids * sizeof(int32_t) + h.state_bytes;
  return total == file_bytes ? total : 0;
}

int64_t ModifiedNanos(const fs::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  return int64_t{st.st_mtim.tv_sec} * 1'000'000'000 + st.st_mtim.tv_nsec;
}

int64_t Touch(const fs::path& path) {
  ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);  // now; a failure only ages the entry
  return ModifiedNanos(path);
}

}  // namespace

std::string EncodePromptCacheEntry(std::string_view key, std::span<const int32_t> ids,
                                   std::string_view state) {
  Header header{};
  std::memcpy(header.magic, kMagic, sizeof(kMagic));
  header.version = kVersion;
  header.key_bytes = static_cast<uint32_t>(key.size());
  header.ids = ids.size();
  header.state_bytes = state.size();
  std::string out;
  out.reserve(sizeof(Header) + key.size() + ids.size_bytes() + state.size() + sizeof(uint32_t));
  out.append(reinterpret_cast<const char*>(&header), sizeof(header));
  out.append(key);
  out.append(reinterpret_cast<const char*>(ids.data()), ids.size_bytes());
  out.append(state);
  const uint32_t crc = Crc32c(std::as_bytes(std::span(out)));
  out.append(reinterpret_cast<const char*>(&crc), sizeof(crc));
  return out;
}

absl::StatusOr<std::unique_ptr<DiskPromptCache>> DiskPromptCache::Open(
    DiskPromptCacheOptions options) {
  std::error_code error;
  fs::create_directories(options.dir, error);
  if (error) {
    return absl::FailedPreconditionError(absl::StrCat("--prompt-cache-dir ", options.dir.string(),
                                                      ": cannot create it: ", error.message()));
  }
  if (::access(options.dir.c_str(), W_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--prompt-cache-dir ", options.dir.string(), ": not writable"));
  }
  auto cache = std::unique_ptr<DiskPromptCache>(new DiskPromptCache(std::move(options)));
  cache->Scan();
  return cache;
}

DiskPromptCache::DiskPromptCache(DiskPromptCacheOptions options)
    : options_(std::move(options)), writer_([this] { WriteLoop(); }) {}

DiskPromptCache::~DiskPromptCache() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  writer_.join();
}

void DiskPromptCache::Scan() {
  std::vector<Entry> found;
  std::error_code error;
  for (const fs::directory_entry& file : fs::directory_iterator(options_.dir, error)) {
    const fs::path& path = file.path();
    if (path.string().find(".wpc.tmp") != std::string::npos) {
      // A write a crash cut short, if it is old: another process may be writing a new one.
      const auto age = fs::file_time_type::clock::now() - fs::last_write_time(path, error);
      if (!error && age > std::chrono::hours(1)) fs::remove(path, error);
      continue;
    }
    if (path.extension() != kSuffix) continue;
    absl::StatusOr<OpenedFile> opened = OpenForRead(path, /*want_direct=*/false);
    if (!opened.ok()) continue;
    Header header{};
    if (!PreadFull(opened->fd.get(), std::as_writable_bytes(std::span(&header, 1)), 0,
                   path.string())
             .ok() ||
        std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0 || header.version != kVersion ||
        header.key_bytes != options_.key.size()) {
      continue;  // not an entry of this version and key: another model's, left alone
    }
    std::string key(header.key_bytes, '\0');
    if (!PreadFull(opened->fd.get(), std::as_writable_bytes(std::span(key)), sizeof(header),
                   path.string())
             .ok() ||
        key != options_.key) {
      continue;
    }
    absl::StatusOr<uint64_t> size = FileSize(opened->fd.get(), path.string());
    if (!size.ok()) continue;
    if (EntryBytes(header, *size) == 0) {
      Log().warn("prompt cache: {}: {} bytes, which its header's sizes do not add up to; removed",
                 path.string(), *size);
      fs::remove(path, error);
      continue;
    }
    Entry entry{.path = path, .ids = std::vector<int32_t>(header.ids), .bytes = *size};
    if (!PreadFull(opened->fd.get(), std::as_writable_bytes(std::span(entry.ids)),
                   sizeof(header) + header.key_bytes, path.string())
             .ok()) {
      continue;
    }
    entry.used = ModifiedNanos(path);
    found.push_back(std::move(entry));
  }
  std::lock_guard<std::mutex> lock(mutex_);
  entries_ = std::move(found);
  for (const Entry& entry : entries_) stats_.bytes += entry.bytes;
  stats_.entries = entries_.size();
  EvictLocked();
  Log().info("prompt cache: {} entries of this model, {} bytes, in {}", entries_.size(),
             stats_.bytes, options_.dir.string());
}

fs::path DiskPromptCache::PathOf(std::span<const int32_t> ids) const {
  const uint64_t hash =
      Fnv1a64(std::string_view(reinterpret_cast<const char*>(ids.data()), ids.size_bytes()),
              Fnv1a64(options_.key));
  char name[17];
  std::snprintf(name, sizeof(name), "%016llx", static_cast<unsigned long long>(hash));
  return options_.dir / absl::StrCat(name, std::string(kSuffix));
}

absl::StatusOr<std::string> DiskPromptCache::ReadEntry(const Entry& entry) const {
  WARP_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(entry.path));
  if (bytes.size() < sizeof(Header) + sizeof(uint32_t)) {
    return absl::DataLossError(absl::StrCat("truncated to ", bytes.size(), " bytes"));
  }
  Header header{};
  std::memcpy(&header, bytes.data(), sizeof(header));
  if (std::memcmp(header.magic, kMagic, sizeof(kMagic)) != 0 || header.version != kVersion) {
    return absl::DataLossError("not a prompt cache entry of this version");
  }
  if (EntryBytes(header, bytes.size()) == 0) {
    return absl::DataLossError(
        absl::StrCat(bytes.size(), " bytes, which its header's sizes do not add up to"));
  }
  uint32_t stored = 0;
  std::memcpy(&stored, bytes.data() + bytes.size() - sizeof(stored), sizeof(stored));
  const uint32_t crc =
      Crc32c(std::as_bytes(std::span(bytes.data(), bytes.size() - sizeof(stored))));
  if (crc != stored) {
    return absl::DataLossError(absl::StrCat("CRC32C ", crc, " where the entry says ", stored));
  }
  const std::string_view key(bytes.data() + sizeof(header), header.key_bytes);
  if (key != options_.key) {
    return absl::DataLossError(
        absl::StrCat("a state of \"", std::string(key), "\", not of \"", options_.key, "\""));
  }
  const size_t ids_at = sizeof(header) + header.key_bytes;
  if (header.ids != entry.ids.size() || std::memcmp(bytes.data() + ids_at, entry.ids.data(),
                                                    entry.ids.size() * sizeof(int32_t)) != 0) {
    return absl::DataLossError("its token ids changed since it was indexed");
  }
  return bytes.substr(ids_at + header.ids * sizeof(int32_t), header.state_bytes);
}

void DiskPromptCache::Refuse(const Entry& entry, const absl::Status& why) {
  Log().warn("prompt cache: {}: {}; removed, the prefix is recomputed", entry.path.string(),
             std::string(why.message()));
  ++stats_.refused;
  // Only the file that was read: the same ids may have been written again since.
  for (const Entry& held : entries_) {
    if (held.path == entry.path && held.used != entry.used) return;
  }
  std::error_code error;
  fs::remove(entry.path, error);
  Forget(entry.path);
}

void DiskPromptCache::Forget(const fs::path& path) {
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->path == path) {
      stats_.bytes -= it->bytes;
      entries_.erase(it);
      break;
    }
  }
  stats_.entries = entries_.size();
}

void DiskPromptCache::Refuse(std::span<const int32_t> ids, const absl::Status& why) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& entry : entries_) {
    if (std::equal(entry.ids.begin(), entry.ids.end(), ids.begin(), ids.end())) {
      const Entry copy = entry;
      Refuse(copy, why);
      return;
    }
  }
}

bool DiskPromptCache::Holds(std::span<const int32_t> ids) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Entry& entry : entries_) {
    if (std::equal(entry.ids.begin(), entry.ids.end(), ids.begin(), ids.end())) {
      entry.used = Touch(entry.path);
      return true;
    }
  }
  return false;
}

std::optional<DiskPromptCache::Hit> DiskPromptCache::Lookup(std::span<const int32_t> ids,
                                                            size_t longer_than) {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const Entry* best = nullptr;
    for (const Entry& entry : entries_) {
      if (entry.ids.size() <= longer_than || entry.ids.size() > ids.size()) continue;
      if (best != nullptr && entry.ids.size() <= best->ids.size()) continue;
      if (std::equal(entry.ids.begin(), entry.ids.end(), ids.begin())) best = &entry;
    }
    if (best == nullptr) {
      ++stats_.misses;
      return std::nullopt;
    }
    const Entry chosen = *best;
    lock.unlock();  // reading a large entry must not hold up Store
    absl::StatusOr<std::string> state = ReadEntry(chosen);
    lock.lock();
    if (!state.ok()) {
      if (absl::IsDataLoss(state.status())) {
        Refuse(chosen, state.status());
      } else {  // gone (evicted meanwhile) or unreadable for now: a miss, the file left alone
        Forget(chosen.path);
        ++stats_.misses;
        return std::nullopt;
      }
      continue;
    }
    for (Entry& entry : entries_) {
      if (entry.path == chosen.path) entry.used = Touch(entry.path);
    }
    ++stats_.hits;
    stats_.hit_tokens += chosen.ids.size();
    return Hit{.ids = chosen.ids, .state = *std::move(state)};
  }
}

void DiskPromptCache::Store(std::vector<int32_t> ids, std::string state) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (Entry& entry : entries_) {
      if (entry.ids == ids) {
        entry.used = Touch(entry.path);
        return;
      }
    }
    if (queue_.size() >= kPendingWrites) {
      queue_.pop_front();
      ++stats_.dropped;
    }
    queue_.push_back({std::move(ids), std::move(state)});
  }
  wake_.notify_all();
}

void DiskPromptCache::Flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return queue_.empty() && !writing_; });
}

void DiskPromptCache::WriteLoop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
    if (queue_.empty()) break;  // stopping, and everything written
    Pending next = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    Write(std::move(next.ids), std::move(next.state));
    lock.lock();
    writing_ = false;
    idle_.notify_all();
  }
  idle_.notify_all();
}

void DiskPromptCache::Write(std::vector<int32_t> ids, std::string state) {
  const std::string bytes = EncodePromptCacheEntry(options_.key, ids, state);
  if (bytes.size() > options_.max_bytes) {
    Log().debug("prompt cache: a {}-token entry of {} bytes is past the bound of {}; not kept",
                ids.size(), bytes.size(), options_.max_bytes);
    return;
  }
  const fs::path path = PathOf(ids);
  // A temp name of this process and write: two servers sharing the directory
  // never write one temp file, and Scan removes only old ones.
  const absl::Status written = WriteFileAtomically(
      path, bytes, absl::StrCat(".tmp.", ::getpid(), ".", temp_counter_.fetch_add(1)));
  std::lock_guard<std::mutex> lock(mutex_);
  if (!written.ok()) {
    ++stats_.write_failures;
    Log().warn("prompt cache: {} (the prefix is not kept; the run goes on)",
               std::string(written.message()));
    return;
  }
  ++stats_.writes;
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {  // the same ids rewritten
    if (it->path == path) {
      stats_.bytes -= it->bytes;
      entries_.erase(it);
      break;
    }
  }
  entries_.push_back(
      Entry{.path = path, .ids = std::move(ids), .bytes = bytes.size(), .used = Touch(path)});
  stats_.bytes += bytes.size();
  stats_.entries = entries_.size();
  EvictLocked();
}

void DiskPromptCache::EvictLocked() {
  while (stats_.bytes > options_.max_bytes && !entries_.empty()) {
    auto oldest = std::min_element(entries_.begin(), entries_.end(),
                                   [](const Entry& a, const Entry& b) { return a.used < b.used; });
    std::error_code error;
    fs::remove(oldest->path, error);
    stats_.bytes -= oldest->bytes;
    entries_.erase(oldest);
    ++stats_.evictions;
  }
  stats_.entries = entries_.size();
}

DiskPromptCacheStats DiskPromptCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

}  // namespace warp::computed
