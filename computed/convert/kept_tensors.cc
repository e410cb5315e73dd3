#include "computed/convert/kept_tensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/io/file.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace warp::computed {
namespace {

constexpr uint64_t kChunkBytes = uint64_t{64} << 20;

absl::Status WriteAll(int fd, std::span<const std::byte> bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return ErrnoToStatus(errno, absl::StrCat(path, ": write"));
    bytes = bytes.subspan(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<KeptTensorsEntry>> WriteKeptTensors(
    const Checkpoint& checkpoint, const KeptTensorsRule& rule, const std::filesystem::path& dir,
    const std::function<void(uint64_t)>& advance) {
  std::vector<const SourceTensor*> kept;
  for (const auto& [key, tensor] : checkpoint.tensors()) {  // a map: in name order
    const std::string& name = key;  // a named reference: clang 15 captures no binding
    if (std::none_of(rule.prefixes.begin(), rule.prefixes.end(),
                     [&](const std::string& prefix) { return absl::StartsWith(name, prefix); })) {
      continue;
    }
    if (tensor.dtype == SourceDtype::kGgmlBlocks || tensor.interleaved || tensor.llama_rope_heads) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": ", SourceTypeName(tensor),
                       " cannot be kept verbatim in ", rule.file, " (safetensors data only)"));
    }
    kept.push_back(&tensor);
  }
  if (kept.empty()) return std::nullopt;

  // The safetensors header: each tensor's dtype, shape and [begin, end) in the data.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  header["__metadata__"] = {{"format", "pt"}, {"kept_by", "computed convert"}};
  uint64_t data_bytes = 0;
  for (const SourceTensor* tensor : kept) {
    header[tensor->name] = {{"dtype", std::string(SourceDtypeName(tensor->dtype))},
                            {"shape", tensor->shape},
                            {"data_offsets", {data_bytes, data_bytes + tensor->bytes}}};
    data_bytes += tensor->bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-aligned
  const uint64_t length = text.size();
  std::string preamble(8, '\0');
  for (int i = 0; i < 8; ++i) preamble[i] = static_cast<char>((length >> (8 * i)) & 0xff);

  const std::filesystem::path path = dir / rule.file;
  const std::string tmp = path.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return ErrnoToStatus(errno, tmp);
  ScopedFd closer(fd);
  absl::Status status = WriteAll(fd, std::as_bytes(std::span(preamble)), tmp);
  if (status.ok()) status = WriteAll(fd, std::as_bytes(std::span(text)), tmp);
  std::vector<std::byte> chunk(std::min<uint64_t>(kChunkBytes, std::max<uint64_t>(data_bytes, 1)));
  for (size_t i = 0; status.ok() && i < kept.size(); ++i) {
    for (uint64_t at = 0; status.ok() && at < kept[i]->bytes; at += chunk.size()) {
      const std::span<std::byte> part =
          std::span(chunk).first(std::min<uint64_t>(chunk.size(), kept[i]->bytes - at));
      status = checkpoint.Read(*kept[i], at, part);
      if (status.ok()) status = WriteAll(fd, part, tmp);
      if (status.ok()) advance(part.size());
    }
  }
  if (status.ok() && ::fsync(fd) != 0) status = ErrnoToStatus(errno, tmp + ": fsync");
  closer = ScopedFd();
  if (status.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) {
    status = ErrnoToStatus(errno, absl::StrCat("rename ", tmp, " to ", path.string()));
  }
  if (!status.ok()) {
    ::unlink(tmp.c_str());
    return status;
  }
  return KeptTensorsEntry{.file = rule.file,
                          .about = rule.about,
                          .tensors = kept.size(),
                          .bytes = 8 + length + data_bytes};
}

}  // namespace warp::computed
