#pragma once

// GgufWriter: GGUF files written byte by byte as ggml's docs/gguf.md lays
// them out, well-formed or not, for the tests of the GGUF reader and importer.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace warp::testing {

// Writes GGUF files byte by byte as docs/gguf.md lays them out.
class GgufWriter {
 public:
  template <typename V>
  static std::string Pod(V v) {
    return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
  }
  static std::string String(const std::string& s) { return Pod(uint64_t{s.size()}) + s; }

  uint32_t magic = 0x46554747, version = 3;

  void Uint32(const std::string& key, uint32_t v) { Kv(key, 4, Pod(v)); }
  void Float32(const std::string& key, float v) { Kv(key, 6, Pod(v)); }
  void Str(const std::string& key, const std::string& v) { Kv(key, 8, String(v)); }
  // A key of any value type with its encoded value as is (for malformed values).
  void Raw(const std::string& key, uint32_t type, const std::string& value) {
    Kv(key, type, value);
  }
  void Strings(const std::string& key, const std::vector<std::string>& v) {
    std::string body = Pod(uint32_t{8}) + Pod(uint64_t{v.size()});
    for (const std::string& s : v) body += String(s);
    Kv(key, 9, body);
  }
  // A tensor of `type` with dims innermost first and `data` (its bytes); `offset`
  // overrides the aligned offset the writer would give it.
  void Tensor(const std::string& name, std::vector<uint64_t> dims, uint32_t type, std::string data,
              std::optional<uint64_t> offset = std::nullopt) {
    tensors_.push_back({name, std::move(dims), type, std::move(data), offset});
  }

  // Overrides the tensor count the header states.
  std::optional<uint64_t> tensor_count;

  std::string Bytes(size_t drop_tail = 0) const {
    std::string out = Pod(magic) + Pod(version) + Pod(tensor_count.value_or(tensors_.size())) +
                      Pod(uint64_t{kv_count_}) + kv_;
    std::string data;
    for (const auto& t : tensors_) {
      while (data.size() % 32 != 0) data.push_back('\0');
      out += String(t.name) + Pod(uint32_t(t.dims.size()));
      for (uint64_t d : t.dims) out += Pod(d);
      out += Pod(t.type) + Pod(t.offset.value_or(data.size()));
      data += t.data;
    }
    while (out.size() % 32 != 0) out.push_back('\0');
    out += data;
    return out.substr(0, out.size() - drop_tail);
  }

 private:
  struct T {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    std::string data;
    std::optional<uint64_t> offset;
  };
  void Kv(const std::string& key, uint32_t type, const std::string& value) {
    kv_ += String(key) + Pod(type) + value;
    ++kv_count_;
  }

  std::string kv_;
  size_t kv_count_ = 0;
  std::vector<T> tensors_;
};

}  // namespace warp::testing
