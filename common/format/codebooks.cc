#include "common/format/codebooks.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/crc32c.h"
#include "common/io/file.h"
#include "common/status.h"

namespace warp {
namespace {

constexpr std::string_view kMagic = "WARPVQ3R";
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxNameBytes = 64;

void PutU32(std::string& out, uint32_t v) {
  char bytes[4];
  std::memcpy(bytes, &v, 4);
  out.append(bytes, 4);
}

// Reads little-endian fields from the front of a byte string, failing past its end.
class FieldReader {
 public:
  explicit FieldReader(std::string_view bytes) : bytes_(bytes) {}
  bool U32(uint32_t& v) { return Take(&v, 4); }
  bool Bytes(void* out, size_t n) { return Take(out, n); }
  size_t offset() const { return offset_; }

 private:
  bool Take(void* out, size_t n) {
    if (bytes_.size() - offset_ < n) return false;
    std::memcpy(out, bytes_.data() + offset_, n);
    offset_ += n;
    return true;
  }
  std::string_view bytes_;
  size_t offset_ = 0;
};

}  // namespace

void Vq3rCodebook::ComputeSums() {
  for (uint32_t code = 0; code < kVq3rEntries * kVq3rEntries; ++code) {
    for (uint32_t k = 0; k < kVq3rDim; ++k) {
      sums[code * kVq3rDim + k] = Centroid(0, code & 63, k) + Centroid(1, code >> 6, k);
    }
  }
}

const Vq3rCodebook* Codebooks::Find(uint32_t layer, std::string_view matrix) const {
  auto it = codebooks_.find(std::pair<uint32_t, std::string>(layer, matrix));
  return it == codebooks_.end() ? nullptr : &it->second;
}

void Codebooks::Add(uint32_t layer, std::string matrix, const Vq3rCodebook& codebook) {
  Vq3rCodebook& slot = codebooks_[{layer, std::move(matrix)}];
  slot = codebook;
  slot.ComputeSums();
}

// Layout: magic "WARPVQ3R", u32 version, u32 count; per codebook u32 layer,
// u32 name bytes, the name, 512 f32 centroids; then u32 CRC32C of all before.
std::string Codebooks::Serialize() const {
  std::string out(kMagic);
  PutU32(out, kVersion);
  PutU32(out, static_cast<uint32_t>(codebooks_.size()));
  for (const auto& [key, codebook] : codebooks_) {
    PutU32(out, key.first);
    PutU32(out, static_cast<uint32_t>(key.second.size()));
    out += key.second;
    out.append(reinterpret_cast<const char*>(codebook.centroids.data()),
               sizeof(codebook.centroids));
  }
  PutU32(out, Crc32c(out));
  return out;
}

absl::StatusOr<Codebooks> Codebooks::Parse(std::string_view bytes, std::string_view where) {
  const auto error = [&](auto&&... what) {
    return absl::DataLossError(absl::StrCat(std::string(where), ": ", what...));
  };
  if (bytes.size() < kMagic.size() + 12 || bytes.substr(0, kMagic.size()) != kMagic) {
    return error("not a codebooks file (no \"WARPVQ3R\" magic)");
  }
  uint32_t stored_crc;
  std::memcpy(&stored_crc, bytes.data() + bytes.size() - 4, 4);
  const uint32_t crc = Crc32c(bytes.substr(0, bytes.size() - 4));
  if (crc != stored_crc) {
    return error("CRC32C ", crc, " does not match the stored ", stored_crc,
                 " (the file is damaged)");
  }
  FieldReader reader(bytes.substr(kMagic.size(), bytes.size() - kMagic.size() - 4));
  uint32_t version = 0, count = 0;
  reader.U32(version);
  reader.U32(count);
  if (version != kVersion) return error("version ", version, "; this build reads ", kVersion);
  Codebooks books;
  for (uint32_t i = 0; i < count; ++i) {
    uint32_t layer = 0, name_bytes = 0;
    std::string name;
    Vq3rCodebook codebook;
    bool ok = reader.U32(layer) && reader.U32(name_bytes) && name_bytes <= kMaxNameBytes;
    if (ok) {
      name.resize(name_bytes);
      ok = reader.Bytes(name.data(), name_bytes) &&
           reader.Bytes(codebook.centroids.data(), sizeof(codebook.centroids));
    }
    if (!ok) return error("codebook ", i, " of ", count, " is truncated or malformed");
    for (uint32_t v = 0; v < kVq3rValues; ++v) {
      if (!std::isfinite(codebook.centroids[v])) {
        return error("layer ", layer, " ", name, ": centroid value ", v, " is not finite");
      }
    }
    if (books.Find(layer, name) != nullptr) {
      return error("layer ", layer, " ", name, " has two codebooks");
    }
    books.Add(layer, std::move(name), codebook);
  }
  return books;
}

absl::StatusOr<Codebooks> Codebooks::Load(const std::filesystem::path& path,
                                          const Manifest& manifest) {
  WARP_ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path));
  WARP_ASSIGN_OR_RETURN(Codebooks books, Parse(bytes, path.string()));
  size_t needed = 0;
  for (const BankEntry& bank : manifest.banks) {
    for (const TensorEntry& matrix : bank.matrices) {
      if (!NeedsCodebook(matrix.format)) continue;
      ++needed;
      if (books.Find(bank.layer, matrix.name) == nullptr) {
        return absl::DataLossError(absl::StrCat(path.string(), ": no codebook for layer ",
                                                bank.layer, " ", matrix.name, " (",
                                                std::string(TensorFormatName(matrix.format)), ")"));
      }
    }
  }
  if (books.size() != needed) {
    return absl::DataLossError(absl::StrCat(path.string(), ": ", books.size(),
                                            " codebooks for the manifest's ", needed,
                                            " vector-quantized matrices"));
  }
  return books;
}

}  // namespace warp
