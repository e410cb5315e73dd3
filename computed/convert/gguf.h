#pragma once

// GgufFile: the header, metadata and tensor directory of a GGUF file
// (ggml-org/ggml docs/gguf.md, versions 2 and 3), checked before any tensor
// is read: the magic, the version, every key and value, every tensor's
// type, shape and extent against the file's size. Tensor data is read on
// demand (Read), so a file of any size is opened in bounded memory.
//
// Thread-safe after Open: Read is a pread.

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "common/io/file.h"

namespace warp::computed {

// ggml's tensor types GGUF files carry, by their numbers in ggml.h.
enum class GgmlType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kBF16 = 30,
  kMXFP4 = 39,
};

// Elements per block and bytes per block of `type`; nullopt for a type this
// reader does not know (the IQ and ternary types among them).
struct GgmlBlock {
  uint32_t elements, bytes;
};
std::optional<GgmlBlock> GgmlBlockOf(uint32_t type);
std::string GgmlTypeName(uint32_t type);

// One metadata value: a scalar, a string, or an array of one of those.
struct GgufValue;
using GgufArray = std::vector<GgufValue>;
struct GgufValue {
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> value;
  uint32_t type = 0;  // gguf_type as stored (0 uint8 .. 12 float64)
};

struct GgufTensor {
  std::string name;
  std::vector<uint64_t> dims;  // innermost first, as GGUF stores them
  uint32_t type = 0;
  uint64_t offset = 0;  // absolute, in the file
  uint64_t bytes = 0;
};

class GgufFile {
 public:
  static absl::StatusOr<std::unique_ptr<GgufFile>> Open(const std::filesystem::path& path);

  const std::filesystem::path& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* Find(const std::string& name) const;

  // Typed metadata reads; errors name the file and key ("m.gguf: qwen3moe.expert_count: missing").
  absl::StatusOr<uint64_t> Uint(const std::string& key) const;
  absl::StatusOr<double> Float(const std::string& key) const;
  absl::StatusOr<std::string> String(const std::string& key) const;

  // Bytes [offset, offset + out.size()) of `tensor`'s data.
  absl::Status Read(const GgufTensor& tensor, uint64_t offset, std::span<std::byte> out) const;

 private:
  GgufFile() = default;
  absl::Status KeyError(const std::string& key, std::string_view problem) const;

  std::filesystem::path path_;
  ScopedFd fd_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> by_name_;
};

}  // namespace warp::computed
