#include "computed/convert/gguf.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/status.h"

namespace warp::computed {
namespace {

constexpr uint32_t kMagic = 0x46554747;  // "GGUF", little-endian
// Limits that keep a corrupt header from allocating without bound.
constexpr uint64_t kMaxCount = uint64_t{1} << 24;
constexpr uint64_t kMaxString = uint64_t{1} << 26;
constexpr uint32_t kMaxDims = 8;
constexpr uint32_t kTypeArray = 9;

// Little-endian reads over the file through a buffer, with the position for errors.
class Cursor {
 public:
  Cursor(int fd, uint64_t size, const std::string& path) : fd_(fd), size_(size), path_(path) {}

  uint64_t position() const { return pos_; }

  absl::Status Bytes(void* out, uint64_t n) {
    if (n > size_ - std::min(pos_, size_)) {
      return absl::DataLossError(absl::StrCat(path_, ": truncated header: ", n, " bytes at offset ",
                                              pos_, " run past the end (", size_, " bytes)"));
    }
    auto* dst = static_cast<std::byte*>(out);
    while (n > 0) {
      if (pos_ < buffer_start_ || pos_ >= buffer_start_ + buffer_.size()) {
        buffer_start_ = pos_;
        buffer_.resize(std::min<uint64_t>(kChunk, size_ - pos_));
        WARP_RETURN_IF_ERROR(PreadFull(fd_, buffer_, pos_, path_));
      }
      const uint64_t at = pos_ - buffer_start_;
      const uint64_t take = std::min<uint64_t>(n, buffer_.size() - at);
      std::memcpy(dst, buffer_.data() + at, take);
      dst += take;
      pos_ += take;
      n -= take;
    }
    return absl::OkStatus();
  }

  template <typename T>
  absl::StatusOr<T> Scalar() {
    T value;
    WARP_RETURN_IF_ERROR(Bytes(&value, sizeof(T)));
    return value;
  }

  // Bytes from the position to the end of the file.
  uint64_t remaining() const { return size_ - std::min(pos_, size_); }

  absl::StatusOr<std::string> String() {
    WARP_ASSIGN_OR_RETURN(uint64_t n, Scalar<uint64_t>());
    if (n > kMaxString) {
      return absl::InvalidArgumentError(
          absl::StrCat(path_, ": a string of ", n, " bytes at offset ", pos_ - 8));
    }
    // Checked before the allocation: a 40-byte file must not cost 64 MiB.
    if (n > remaining()) {
      return absl::DataLossError(absl::StrCat(path_, ": truncated header: a string of ", n,
                                              " bytes at offset ", pos_ - 8, " runs past the end (",
                                              size_, " bytes)"));
    }
    std::string s(n, '\0');
    WARP_RETURN_IF_ERROR(Bytes(s.data(), n));
    return s;
  }

 private:
  static constexpr uint64_t kChunk = 1 << 20;
  int fd_;
  uint64_t size_, pos_ = 0, buffer_start_ = 0;
  std::string path_;
  std::vector<std::byte> buffer_;
};

absl::StatusOr<GgufValue> ReadValue(Cursor& in, uint32_t type, const std::string& where,
                                    bool in_array = false);

// A scalar stored as `Stored`, held widened as `Held` (one of GgufValue's alternatives).
template <typename Stored, typename Held>
absl::StatusOr<GgufValue> ReadScalar(Cursor& in, uint32_t type) {
  WARP_ASSIGN_OR_RETURN(Stored x, in.Scalar<Stored>());
  return GgufValue{.value = static_cast<Held>(x), .type = type};
}

// The elements of an array value (its element type and count come first);
// arrays do not nest.
absl::StatusOr<GgufArray> ReadArray(Cursor& in, const std::string& where) {
  WARP_ASSIGN_OR_RETURN(uint32_t element, in.Scalar<uint32_t>());
  WARP_ASSIGN_OR_RETURN(uint64_t n, in.Scalar<uint64_t>());
  if (n > kMaxCount) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": an array of ", n, " elements"));
  }
  // Every element takes at least one byte of the file: a count the rest of
  // the file cannot hold is refused before anything is reserved for it.
  if (n > in.remaining()) {
    return absl::DataLossError(
        absl::StrCat(where, ": an array of ", n, " elements runs past the end of the file"));
  }
  GgufArray array;
  array.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    WARP_ASSIGN_OR_RETURN(GgufValue e, ReadValue(in, element, where, /*in_array=*/true));
    array.push_back(std::move(e));
  }
  return array;
}

// One metadata value of gguf_type `type`; `where` names it in errors.
absl::StatusOr<GgufValue> ReadValue(Cursor& in, uint32_t type, const std::string& where,
                                    bool in_array) {
  switch (type) {
    case 0:
      return ReadScalar<uint8_t, uint64_t>(in, type);
    case 1:
      return ReadScalar<int8_t, int64_t>(in, type);
    case 2:
      return ReadScalar<uint16_t, uint64_t>(in, type);
    case 3:
      return ReadScalar<int16_t, int64_t>(in, type);
    case 4:
      return ReadScalar<uint32_t, uint64_t>(in, type);
    case 5:
      return ReadScalar<int32_t, int64_t>(in, type);
    case 6:
      return ReadScalar<float, double>(in, type);
    case 7:
      return ReadScalar<uint8_t, bool>(in, type);  // any nonzero byte is true
    case 8: {
      WARP_ASSIGN_OR_RETURN(std::string x, in.String());
      return GgufValue{.value = std::move(x), .type = type};
    }
    case 10:
      return ReadScalar<uint64_t, uint64_t>(in, type);
    case 11:
      return ReadScalar<int64_t, int64_t>(in, type);
    case 12:
      return ReadScalar<double, double>(in, type);
    case kTypeArray: {
      if (in_array) return absl::InvalidArgumentError(absl::StrCat(where, ": nested arrays"));
      WARP_ASSIGN_OR_RETURN(GgufArray array, ReadArray(in, where));
      return GgufValue{.value = std::move(array), .type = type};
    }
    default:
      return absl::InvalidArgumentError(absl::StrCat(where, ": unknown value type ", type));
  }
}

// The fixed fields at the start of a GGUF file, after its magic.
struct GgufHeader {
  uint32_t version = 0;
  uint64_t num_tensors = 0;
  uint64_t num_kv = 0;  // metadata key-value pairs
};

// The magic and the header, checked: a version WARP reads, plausible counts.
absl::StatusOr<GgufHeader> ReadHeader(Cursor& in, const std::string& where) {
  WARP_ASSIGN_OR_RETURN(uint32_t magic, in.Scalar<uint32_t>());
  if (magic != kMagic) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": not a GGUF file (magic 0x", absl::Hex(magic, absl::kZeroPad8), ")"));
  }
  GgufHeader header;
  WARP_ASSIGN_OR_RETURN(header.version, in.Scalar<uint32_t>());
  if (header.version != 2 && header.version != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": GGUF version ", header.version, " is not supported (2, 3)"));
  }
  WARP_ASSIGN_OR_RETURN(header.num_tensors, in.Scalar<uint64_t>());
  WARP_ASSIGN_OR_RETURN(header.num_kv, in.Scalar<uint64_t>());
  if (header.num_tensors > kMaxCount || header.num_kv > kMaxCount) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", header.num_tensors, " tensors and ",
                                                   header.num_kv,
                                                   " metadata keys: not a plausible header"));
  }
  return header;
}

// `num_kv` metadata pairs; a key twice is an error.
absl::StatusOr<std::map<std::string, GgufValue>> ReadMetadata(Cursor& in, const std::string& where,
                                                              uint64_t num_kv) {
  std::map<std::string, GgufValue> metadata;
  for (uint64_t i = 0; i < num_kv; ++i) {
    WARP_ASSIGN_OR_RETURN(std::string key, in.String());
    WARP_ASSIGN_OR_RETURN(uint32_t type, in.Scalar<uint32_t>());
    WARP_ASSIGN_OR_RETURN(GgufValue value, ReadValue(in, type, absl::StrCat(where, ": ", key)));
    if (!metadata.emplace(key, std::move(value)).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": metadata key ", key, " twice"));
    }
  }
  return metadata;
}

// `t.dims` from the directory; returns the element count, which must be
// nonzero and at most 2^50.
absl::StatusOr<uint64_t> ReadDims(Cursor& in, const std::string& where, GgufTensor& t) {
  WARP_ASSIGN_OR_RETURN(uint32_t n_dims, in.Scalar<uint32_t>());
  if (n_dims == 0 || n_dims > kMaxDims) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": tensor ", t.name, " has ", n_dims, " dimensions"));
  }
  uint64_t elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    WARP_ASSIGN_OR_RETURN(uint64_t dim, in.Scalar<uint64_t>());
    if (dim == 0 || __builtin_mul_overflow(elements, dim, &elements) ||
        elements > (uint64_t{1} << 50)) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": tensor ", t.name, " has an impossible shape"));
    }
    t.dims.push_back(dim);
  }
  return elements;
}

// One entry of the tensor directory, checked: a type WARP reads, whole
// blocks per row, an aligned offset. The offset is still relative to the data section.
absl::StatusOr<GgufTensor> ReadTensorInfo(Cursor& in, const std::string& where,
                                          uint64_t alignment) {
  GgufTensor t;
  WARP_ASSIGN_OR_RETURN(t.name, in.String());
  WARP_ASSIGN_OR_RETURN(uint64_t elements, ReadDims(in, where, t));
  WARP_ASSIGN_OR_RETURN(t.type, in.Scalar<uint32_t>());
  WARP_ASSIGN_OR_RETURN(uint64_t relative, in.Scalar<uint64_t>());
  const std::optional<GgmlBlock> block = GgmlBlockOf(t.type);
  if (!block) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": tensor ", t.name, " is ", GgmlTypeName(t.type), ", which WARP does not read"));
  }
  if (t.dims[0] % block->elements != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": tensor ", t.name, " (", GgmlTypeName(t.type), ") has rows of ",
                     t.dims[0], " elements, not whole blocks of ", block->elements));
  }
  if (relative % alignment != 0) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tensor ", t.name, " at offset ",
                                                   relative, " is not aligned to ", alignment));
  }
  t.bytes = elements / block->elements * block->bytes;
  t.offset = relative;
  return t;
}

// Makes each tensor's offset absolute, refusing one whose bytes are not all
// in the file (`size` bytes).
absl::Status PlaceInFile(const std::string& where, std::vector<GgufTensor>& tensors,
                         uint64_t data_start, uint64_t size) {
  for (GgufTensor& t : tensors) {
    // An offset that wraps past 2^64 would land inside the file, on the wrong bytes.
    uint64_t offset = 0;
    if (__builtin_add_overflow(t.offset, data_start, &offset) || offset > size ||
        t.bytes > size - offset) {
      return absl::DataLossError(
          absl::StrCat(where, ": tensor ", t.name, " (", t.bytes, " bytes at offset ", t.offset,
                       " of the data section at ", data_start, ") runs past the end of the file (",
                       size, " bytes)"));
    }
    t.offset = offset;
  }
  return absl::OkStatus();
}

// The data section as ggml writes it: each tensor's bytes start where the
// previous tensor's end, rounded up to the alignment, and the file ends with
// the last one (and its padding). A gap, an overlap or bytes left after the
// last tensor mean the directory does not describe the data: a shifted or
// duplicated offset, or a tensor count short of the directory, reads other
// tensors' bytes and runs with wrong weights. Offsets in messages are the
// directory's, relative to the data section. REQUIRES: offsets absolute and in
// bounds, aligned relative to `data_start`.
absl::Status CheckDataLayout(const std::string& where, const std::vector<GgufTensor>& tensors,
                             uint64_t data_start, uint64_t size, uint64_t alignment) {
  std::vector<const GgufTensor*> by_offset;
  by_offset.reserve(tensors.size());
  for (const GgufTensor& t : tensors) by_offset.push_back(&t);
  std::stable_sort(by_offset.begin(), by_offset.end(),
            [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  const GgufTensor* previous = nullptr;
  uint64_t end = 0;  // of the previous tensor, relative to the data section
  for (const GgufTensor* t : by_offset) {
    const uint64_t begin = t->offset - data_start;
    if (previous != nullptr && begin < end) {
      return absl::DataLossError(absl::StrCat(
          where, ": tensor ", t->name, " at data offset ", begin, " overlaps tensor ",
          previous->name, " (bytes [", previous->offset - data_start, ", ", end,
          ") of the data section)"));
    }
    if (begin - end >= alignment) {
      return absl::DataLossError(absl::StrCat(
          where, ": bytes [", end, ", ", begin, ") of the data section belong to no tensor (",
          previous != nullptr ? absl::StrCat("between tensor ", previous->name, " and ")
                              : std::string("before "),
          "tensor ", t->name, "): a shifted offset, or a tensor missing from the directory"));
    }
    previous = t;
    end = begin + t->bytes;
  }
  const uint64_t data_bytes = size > data_start ? size - data_start : 0;
  if (data_bytes > end && data_bytes - end >= alignment) {
    return absl::DataLossError(absl::StrCat(
        where, ": ", data_bytes - end, " bytes at the end of the data section belong to no tensor",
        previous != nullptr ? absl::StrCat(" (the last, ", previous->name, ", ends at data offset ",
                                           end, ")")
                            : std::string(" (the directory has none)"),
        ": is the header's tensor count (", tensors.size(), ") short?"));
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<GgmlBlock> GgmlBlockOf(uint32_t type) {
  switch (static_cast<GgmlType>(type)) {
    case GgmlType::kF32:
      return GgmlBlock{1, 4};
    case GgmlType::kF16:
      return GgmlBlock{1, 2};
    case GgmlType::kBF16:
      return GgmlBlock{1, 2};
    case GgmlType::kQ4_0:
      return GgmlBlock{32, 18};
    case GgmlType::kQ4_1:
      return GgmlBlock{32, 20};
    case GgmlType::kQ5_0:
      return GgmlBlock{32, 22};
    case GgmlType::kQ5_1:
      return GgmlBlock{32, 24};
    case GgmlType::kQ8_0:
      return GgmlBlock{32, 34};
    case GgmlType::kQ8_1:
      return GgmlBlock{32, 36};
    case GgmlType::kQ2_K:
      return GgmlBlock{256, 84};
    case GgmlType::kQ3_K:
      return GgmlBlock{256, 110};
    case GgmlType::kQ4_K:
      return GgmlBlock{256, 144};
    case GgmlType::kQ5_K:
      return GgmlBlock{256, 176};
    case GgmlType::kQ6_K:
      return GgmlBlock{256, 210};
    case GgmlType::kQ8_K:
      return GgmlBlock{256, 292};
    case GgmlType::kMXFP4:
      return GgmlBlock{32, 17};
  }
  return std::nullopt;
}

std::string GgmlTypeName(uint32_t type) {
  static const std::map<uint32_t, const char*> names = {
      {0, "F32"},   {1, "F16"},   {2, "Q4_0"},  {3, "Q4_1"},  {6, "Q5_0"},  {7, "Q5_1"},
      {8, "Q8_0"},  {9, "Q8_1"},  {10, "Q2_K"}, {11, "Q3_K"}, {12, "Q4_K"}, {13, "Q5_K"},
      {14, "Q6_K"}, {15, "Q8_K"}, {30, "BF16"}, {39, "MXFP4"}};
  auto it = names.find(type);
  return it != names.end() ? it->second : absl::StrCat("type ", type);
}

absl::StatusOr<std::unique_ptr<GgufFile>> GgufFile::Open(const std::filesystem::path& path) {
  const std::string where = path.string();
  WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(path, /*want_direct=*/false));
  WARP_ASSIGN_OR_RETURN(uint64_t size, FileSize(file.fd.get(), where));
  auto g = std::unique_ptr<GgufFile>(new GgufFile());
  g->path_ = path;
  Cursor in(file.fd.get(), size, where);
  WARP_ASSIGN_OR_RETURN(const GgufHeader header, ReadHeader(in, where));
  g->version_ = header.version;
  WARP_ASSIGN_OR_RETURN(g->metadata_, ReadMetadata(in, where, header.num_kv));
  if (g->metadata_.contains("general.alignment")) {
    WARP_ASSIGN_OR_RETURN(g->alignment_, g->Uint("general.alignment"));
    if (g->alignment_ == 0 || (g->alignment_ & (g->alignment_ - 1)) != 0) {
      return g->KeyError("general.alignment", "must be a power of two");
    }
  }
  for (uint64_t i = 0; i < header.num_tensors; ++i) {
    WARP_ASSIGN_OR_RETURN(GgufTensor t, ReadTensorInfo(in, where, g->alignment_));
    if (!g->by_name_.emplace(t.name, g->tensors_.size()).second) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": tensor ", t.name, " twice"));
    }
    g->tensors_.push_back(std::move(t));
  }
  // The data section starts at the directory's end, rounded up to the alignment.
  uint64_t data_start = 0;
  if (__builtin_add_overflow(in.position(), g->alignment_ - 1, &data_start)) {
    return g->KeyError("general.alignment", "puts the tensor data past 2^64 bytes");
  }
  data_start = data_start / g->alignment_ * g->alignment_;
  WARP_RETURN_IF_ERROR(PlaceInFile(where, g->tensors_, data_start, size));
  WARP_RETURN_IF_ERROR(CheckDataLayout(where, g->tensors_, data_start, size, g->alignment_));
  g->fd_ = std::move(file.fd);
  return g;
}

const GgufTensor* GgufFile::Find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

absl::Status GgufFile::KeyError(const std::string& key, std::string_view problem) const {
  return absl::InvalidArgumentError(
      absl::StrCat(path_.string(), ": ", key, ": ", std::string(problem)));
}

absl::StatusOr<uint64_t> GgufFile::Uint(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) return KeyError(key, "missing");
  if (const auto* u = std::get_if<uint64_t>(&it->second.value)) return *u;
  if (const auto* i = std::get_if<int64_t>(&it->second.value); i && *i >= 0) return uint64_t(*i);
  return KeyError(key, "must be a non-negative integer");
}

absl::StatusOr<double> GgufFile::Float(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) return KeyError(key, "missing");
  if (const auto* d = std::get_if<double>(&it->second.value)) return *d;
  if (const auto* u = std::get_if<uint64_t>(&it->second.value)) return double(*u);
  if (const auto* i = std::get_if<int64_t>(&it->second.value)) return double(*i);
  return KeyError(key, "must be a number");
}

absl::StatusOr<std::string> GgufFile::String(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) return KeyError(key, "missing");
  if (const auto* s = std::get_if<std::string>(&it->second.value)) return *s;
  return KeyError(key, "must be a string");
}

absl::Status GgufFile::Read(const GgufTensor& tensor, uint64_t offset,
                            std::span<std::byte> out) const {
  if (offset > tensor.bytes || out.size() > tensor.bytes - offset) {
    return absl::OutOfRangeError(absl::StrCat(path_.string(), ": tensor ", tensor.name, ": bytes [",
                                              offset, ", ", offset + out.size(), ") of ",
                                              tensor.bytes));
  }
  return PreadFull(fd_.get(), out, tensor.offset + offset, path_.string());
}

}  // namespace warp::computed
