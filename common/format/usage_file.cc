#include "common/format/usage_file.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/crc32c.h"
#include "common/io/file.h"
#include "common/status.h"

namespace warp {
namespace {

constexpr size_t kHeaderBytes = 32;
constexpr size_t kEntryBytes = 16;
constexpr size_t kCrcBytes = 4;

template <typename T>
void Put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

template <typename T>
T Get(std::string_view bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(value));
  return value;
}

bool KeyLess(const ExpertUsage& a, const ExpertUsage& b) {
  return a.layer != b.layer ? a.layer < b.layer : a.expert < b.expert;
}

}  // namespace

void UsageTable::Merge(const UsageTable& other) {
  WARP_CHECK(fingerprint == other.fingerprint);
  tokens += other.tokens;
  std::vector<ExpertUsage> merged;
  merged.reserve(entries.size() + other.entries.size());
  auto a = entries.begin();
  auto b = other.entries.begin();
  while (a != entries.end() || b != other.entries.end()) {
    if (b == other.entries.end() || (a != entries.end() && KeyLess(*a, *b))) {
      merged.push_back(*a++);
    } else if (a == entries.end() || KeyLess(*b, *a)) {
      merged.push_back(*b++);
    } else {
      merged.push_back({a->layer, a->expert, a->count + b->count});
      ++a;
      ++b;
    }
  }
  entries = std::move(merged);
}

std::vector<ExpertUsage> UsageTable::Hottest() const {
  std::vector<ExpertUsage> sorted = entries;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const ExpertUsage& a, const ExpertUsage& b) { return a.count > b.count; });
  return sorted;
}

std::string EncodeUsage(const UsageTable& table) {
  std::string out;
  out.reserve(kHeaderBytes + table.entries.size() * kEntryBytes + kCrcBytes);
  Put(out, kUsageMagic);
  Put(out, kUsageVersion);
  Put(out, table.fingerprint);
  Put(out, table.tokens);
  Put(out, static_cast<uint64_t>(table.entries.size()));
  for (const ExpertUsage& entry : table.entries) {
    Put(out, entry.layer);
    Put(out, entry.expert);
    Put(out, entry.count);
  }
  Put(out, Crc32c(out));
  return out;
}

absl::StatusOr<UsageTable> DecodeUsage(std::string_view bytes, std::string_view source_name) {
  auto fail = [&](std::string_view problem) {
    return absl::DataLossError(absl::StrCat(std::string(source_name), ": ", std::string(problem)));
  };
  if (bytes.size() < kHeaderBytes + kCrcBytes) return fail("too short for a usage file");
  if (Get<uint32_t>(bytes, 0) != kUsageMagic) return fail("bad magic (not a usage file)");
  if (const uint32_t version = Get<uint32_t>(bytes, 4); version != kUsageVersion) {
    return fail(absl::StrCat("version ", version, " is not supported (this build reads ",
                             kUsageVersion, ")"));
  }
  UsageTable table;
  table.fingerprint = Get<uint64_t>(bytes, 8);
  table.tokens = Get<uint64_t>(bytes, 16);
  const uint64_t num_entries = Get<uint64_t>(bytes, 24);
  if (num_entries > (bytes.size() - kHeaderBytes - kCrcBytes) / kEntryBytes ||
      bytes.size() != kHeaderBytes + num_entries * kEntryBytes + kCrcBytes) {
    return fail(absl::StrCat("size ", bytes.size(), " does not match ", num_entries, " entries"));
  }
  const size_t crc_offset = bytes.size() - kCrcBytes;
  if (Crc32c(bytes.substr(0, crc_offset)) != Get<uint32_t>(bytes, crc_offset)) {
    return fail("checksum mismatch");
  }
  for (uint64_t i = 0; i < num_entries; ++i) {
    const size_t offset = kHeaderBytes + i * kEntryBytes;
    ExpertUsage entry{Get<uint32_t>(bytes, offset), Get<uint32_t>(bytes, offset + 4),
                      Get<uint64_t>(bytes, offset + 8)};
    if (!table.entries.empty() && !KeyLess(table.entries.back(), entry)) {
      return fail(absl::StrCat("entry ", i, " is out of order"));
    }
    table.entries.push_back(entry);
  }
  return table;
}

absl::StatusOr<UsageTable> ReadUsageFile(const std::filesystem::path& path) {
  WARP_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  return DecodeUsage(bytes, path.string());
}

absl::Status WriteUsageFile(const std::filesystem::path& path, const UsageTable& table) {
  return WriteFileAtomically(path, EncodeUsage(table));
}

}  // namespace warp
