#include "common/memory/memory_limits.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <limits>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/status.h"

namespace warp {
namespace {

namespace fs = std::filesystem;

// cgroup v1 reports "no limit" as LONG_MAX rounded down to the page size
// (9223372036854771712 with 4 KiB pages; other page sizes round differently),
// so anything this large is treated as unlimited rather than matched exactly.
constexpr uint64_t kV1UnlimitedBytes = uint64_t{1} << 62;

// Where the two hierarchies are mounted, relative to `root`.
constexpr std::string_view kV2Mount = "sys/fs/cgroup";
constexpr std::string_view kV1MemoryMount = "sys/fs/cgroup/memory";

// The file names that hold a cgroup's limit and usage in one hierarchy.
struct CgroupFiles {
  std::string_view mount;
  std::string_view limit_file;
  std::string_view usage_file;
  bool v1;  // v1 spells "no limit" as a huge number, v2 as "max"
};
constexpr CgroupFiles kV2Files = {kV2Mount, "memory.max", "memory.current", false};
constexpr CgroupFiles kV1Files = {kV1MemoryMount, "memory.limit_in_bytes", "memory.usage_in_bytes",
                                  true};

// One cgroup that has a limit.
struct CgroupLimit {
  uint64_t limit_bytes = 0;
  std::optional<uint64_t> usage_bytes;  // nullopt if the usage file is missing
  std::string source;                   // the limit file

  uint64_t room_bytes() const {
    const uint64_t usage = usage_bytes.value_or(0);
    return limit_bytes > usage ? limit_bytes - usage : 0;
  }
};

absl::Status MalformedLine(const fs::path& path, int line_no, absl::string_view problem,
                           absl::string_view line) {
  return absl::InvalidArgumentError(
      absl::StrCat(path.string(), ":", line_no, ": ", problem, ": \"", line, "\""));
}

// Reads a whole procfs/sysfs file. Not std::ifstream: the errno decides the
// status code, and a missing cgroup file (NotFound) is skipped by the caller.
absl::StatusOr<std::string> ReadSmallFile(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoToStatus(errno, path.string());
  std::string text;
  char buf[4096];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      return ErrnoToStatus(err, path.string());
    }
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return text;
}

// Strict decimal: digits only, no sign, no whitespace, no overflow.
std::optional<uint64_t> ParseDecimal(absl::string_view text) {
  uint64_t value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (text.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

struct Meminfo {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;
};

// Parses the "<number> kB" after "MemTotal:" or "MemAvailable:".
absl::StatusOr<uint64_t> ParseMeminfoKb(const fs::path& path, int line_no, absl::string_view line) {
  absl::string_view value = absl::StripAsciiWhitespace(line.substr(line.find(':') + 1));
  std::optional<uint64_t> kib;
  if (absl::ConsumeSuffix(&value, "kB"))
    kib = ParseDecimal(absl::StripTrailingAsciiWhitespace(value));
  if (!kib.has_value()) return MalformedLine(path, line_no, "expected \"<number> kB\"", line);
  if (*kib > std::numeric_limits<uint64_t>::max() / 1024) {
    return MalformedLine(path, line_no, "value overflows 64 bits", line);
  }
  return *kib * 1024;
}

absl::StatusOr<Meminfo> ReadMeminfo(const fs::path& path) {
  WARP_ASSIGN_OR_RETURN(const std::string text, ReadSmallFile(path));
  std::optional<uint64_t> total_bytes;
  std::optional<uint64_t> available_bytes;
  int line_no = 0;
  for (const absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    std::optional<uint64_t>* slot = nullptr;
    if (absl::StartsWith(line, "MemTotal:")) slot = &total_bytes;
    if (absl::StartsWith(line, "MemAvailable:")) slot = &available_bytes;
    if (slot == nullptr) continue;  // other fields may change format; only these two matter
    WARP_ASSIGN_OR_RETURN(*slot, ParseMeminfoKb(path, line_no, line));
  }
  if (!total_bytes.has_value() || !available_bytes.has_value()) {
    // MemAvailable exists since Linux 3.14; MemFree would overstate what is free to use.
    return absl::InvalidArgumentError(absl::StrCat(
        path.string(), ": no ", total_bytes.has_value() ? "MemAvailable" : "MemTotal", " line"));
  }
  return Meminfo{.total_bytes = *total_bytes, .available_bytes = *available_bytes};
}

// The process's cgroup path in each hierarchy, as /proc/self/cgroup lists it.
struct CgroupPaths {
  std::optional<std::string> v2;         // from the "0::<path>" line
  std::optional<std::string> v1_memory;  // from the "<id>:<...,memory,...>:<path>" line
};

// A missing file means no cgroups (not Linux, or /proc without them): no paths.
absl::StatusOr<CgroupPaths> ReadProcSelfCgroup(const fs::path& path) {
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (absl::IsNotFound(text.status())) return CgroupPaths{};
  if (!text.ok()) return text.status();
  CgroupPaths paths;
  int line_no = 0;
  for (const absl::string_view line : absl::StrSplit(*text, '\n')) {
    ++line_no;
    if (line.empty()) continue;
    // hierarchy-ID:controller-list:cgroup-path; the path itself may contain ':'.
    const std::vector<absl::string_view> fields = absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3 || !absl::StartsWith(fields[2], "/")) {
      return MalformedLine(path, line_no, "expected \"<id>:<controllers>:/<path>\"", line);
    }
    if (fields[0] == "0" && fields[1].empty()) {
      paths.v2 = std::string(fields[2]);
      continue;
    }
    for (const absl::string_view controller : absl::StrSplit(fields[1], ',')) {
      if (controller == "memory") paths.v1_memory = std::string(fields[2]);
    }
  }
  return paths;
}

// `mount`/`cgroup_path` and each ancestor up to `mount` itself, leaf first.
// A path with ".." lies outside our cgroup namespace, where nothing is visible,
// so only the mount root is returned for it.
std::vector<fs::path> LeafToRootDirs(const fs::path& mount, absl::string_view cgroup_path) {
  std::vector<fs::path> dirs = {mount};
  for (const absl::string_view name : absl::StrSplit(cgroup_path, '/', absl::SkipEmpty())) {
    if (name == "..") return {mount};
    if (name == ".") continue;
    dirs.push_back(dirs.back() / std::string(name));
  }
  std::reverse(dirs.begin(), dirs.end());
  return dirs;
}

// Reads a one-number cgroup file. nullopt if it is missing, or (for a limit
// file) if it says there is no limit.
absl::StatusOr<std::optional<uint64_t>> ReadCgroupNumber(const fs::path& path, bool is_limit,
                                                         bool v1) {
  absl::StatusOr<std::string> text = ReadSmallFile(path);
  if (absl::IsNotFound(text.status())) return std::nullopt;
  if (!text.ok()) return text.status();
  const absl::string_view value = absl::StripAsciiWhitespace(*text);
  if (is_limit && !v1 && value == "max") return std::nullopt;
  const std::optional<uint64_t> bytes = ParseDecimal(value);
  if (!bytes.has_value()) return MalformedLine(path, 1, "expected a byte count", value);
  if (is_limit && v1 && *bytes >= kV1UnlimitedBytes) return std::nullopt;
  return bytes;
}

// Folds every limited cgroup on the way from the leaf to the mount root into
// `tightest`, keeping the one with the least room (the leaf on ties).
absl::Status FindTightestLimit(const fs::path& root, const CgroupFiles& files,
                               absl::string_view cgroup_path,
                               std::optional<CgroupLimit>& tightest) {
  for (const fs::path& dir : LeafToRootDirs(root / files.mount, cgroup_path)) {
    const fs::path limit_path = dir / files.limit_file;
    WARP_ASSIGN_OR_RETURN(const std::optional<uint64_t> limit_bytes,
                          ReadCgroupNumber(limit_path, /*is_limit=*/true, files.v1));
    if (!limit_bytes.has_value()) continue;
    WARP_ASSIGN_OR_RETURN(std::optional<uint64_t> usage_bytes,
                          ReadCgroupNumber(dir / files.usage_file, /*is_limit=*/false, files.v1));
    CgroupLimit candidate{
        .limit_bytes = *limit_bytes, .usage_bytes = usage_bytes, .source = limit_path.string()};
    if (!tightest.has_value() || candidate.room_bytes() < tightest->room_bytes()) {
      tightest = std::move(candidate);
    }
  }
  return absl::OkStatus();
}

}  // namespace

uint64_t MemoryLimits::available_bytes() const {
  if (!cgroup_limit_bytes.has_value()) return mem_available_bytes;
  const uint64_t usage = cgroup_usage_bytes.value_or(0);
  const uint64_t room = *cgroup_limit_bytes > usage ? *cgroup_limit_bytes - usage : 0;
  return std::min(mem_available_bytes, room);
}

absl::StatusOr<MemoryLimits> ReadMemoryLimits(const fs::path& root) {
  WARP_ASSIGN_OR_RETURN(const Meminfo meminfo, ReadMeminfo(root / "proc/meminfo"));
  WARP_ASSIGN_OR_RETURN(const CgroupPaths paths, ReadProcSelfCgroup(root / "proc/self/cgroup"));

  // On hybrid hosts both lines exist; the hierarchy without the memory
  // controller simply has no limit files, so checking both is safe.
  std::optional<CgroupLimit> tightest;
  if (paths.v2.has_value()) {
    WARP_RETURN_IF_ERROR(FindTightestLimit(root, kV2Files, *paths.v2, tightest));
  }
  if (paths.v1_memory.has_value()) {
    WARP_RETURN_IF_ERROR(FindTightestLimit(root, kV1Files, *paths.v1_memory, tightest));
  }

  MemoryLimits limits;
  limits.mem_total_bytes = meminfo.total_bytes;
  limits.mem_available_bytes = meminfo.available_bytes;
  if (tightest.has_value()) {
    limits.cgroup_limit_bytes = tightest->limit_bytes;
    limits.cgroup_usage_bytes = tightest->usage_bytes;
    limits.cgroup_source = std::move(tightest->source);
  }
  return limits;
}

absl::StatusOr<CgroupPressure> ReadCgroupPressure(const fs::path& limit_file) {
  const fs::path dir = limit_file.parent_path();
  const bool v1 = limit_file.filename() == kV1Files.limit_file;
  const CgroupFiles& files = v1 ? kV1Files : kV2Files;
  CgroupPressure reading;
  WARP_ASSIGN_OR_RETURN(std::optional<uint64_t> limit,
                        ReadCgroupNumber(limit_file, /*is_limit=*/true, v1));
  if (!limit.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(limit_file.string(), ": no limit"));
  }
  reading.limit_bytes = *limit;
  const fs::path usage_file = dir / std::string(files.usage_file);
  WARP_ASSIGN_OR_RETURN(std::optional<uint64_t> usage,
                        ReadCgroupNumber(usage_file, /*is_limit=*/false, v1));
  if (!usage.has_value())
    return absl::NotFoundError(absl::StrCat(usage_file.string(), ": missing"));
  reading.usage_bytes = *usage;

  const fs::path stat_file = dir / "memory.stat";
  absl::StatusOr<std::string> stat = ReadSmallFile(stat_file);
  if (stat.ok()) {
    const absl::string_view key = v1 ? "total_inactive_file " : "inactive_file ";
    int line_no = 0;
    for (const absl::string_view line : absl::StrSplit(*stat, '\n')) {
      ++line_no;
      if (!absl::StartsWith(line, key)) continue;
      const std::optional<uint64_t> bytes = ParseDecimal(line.substr(key.size()));
      if (!bytes.has_value())
        return MalformedLine(stat_file, line_no, "expected a byte count", line);
      reading.inactive_file_bytes = *bytes;
    }
  } else if (!absl::IsNotFound(stat.status())) {
    return stat.status();
  }

  // PSI: "some avg10=1.23 avg60=... total=..." (cgroup v2, Linux >= 4.20).
  const fs::path pressure_file = dir / "memory.pressure";
  absl::StatusOr<std::string> pressure = ReadSmallFile(pressure_file);
  if (pressure.ok()) {
    int line_no = 0;
    for (const absl::string_view line : absl::StrSplit(*pressure, '\n')) {
      ++line_no;
      if (!absl::StartsWith(line, "some ")) continue;
      const size_t at = line.find("avg10=");
      double value = 0;
      if (at == absl::string_view::npos ||
          !absl::SimpleAtod(line.substr(at + 6, line.find(' ', at) - at - 6), &value)) {
        return MalformedLine(pressure_file, line_no, "expected \"some avg10=<percent>\"", line);
      }
      reading.psi_some_avg10 = value;
    }
  }
  return reading;
}

}  // namespace warp
