#include "common/format/container.h"

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/format/engram_table.h"
#include "common/format/manifest_checks.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"
#include "common/status.h"

namespace warp {
namespace {

namespace fs = std::filesystem;

absl::Status CheckFileSize(const fs::path& path, uint64_t expected, std::string_view rule) {
  WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(path, /*want_direct=*/false));
  WARP_ASSIGN_OR_RETURN(uint64_t size, FileSize(file.fd.get(), path.string()));
  if (size != expected) {
    return absl::DataLossError(absl::StrCat(path.string(), ": size ", size, " is not ",
                                            std::string(rule), " = ", expected));
  }
  return absl::OkStatus();
}

// Reads the 4 KiB page holding the footer of the record in `slot`.
absl::Status CheckFooter(const OpenedFile& file, const fs::path& path, const BankEntry& bank,
                         uint32_t slot, const RecordExpectation& expected) {
  AlignedBuffer page(kBankAlignment);
  const uint64_t offset = (uint64_t{slot} + 1) * bank.record_bytes - kBankAlignment;
  WARP_RETURN_IF_ERROR(PreadFull(file.fd.get(), page.span(), offset, path.string()));
  absl::Status status = CheckRecord(page.span(), expected, /*check_crc=*/false);
  if (!status.ok()) {
    return Annotate(status, absl::StrCat(path.string(), " @", slot * bank.record_bytes));
  }
  return absl::OkStatus();
}

}  // namespace

std::string BankFileName(uint32_t layer) { return absl::StrCat("experts-L", layer, ".bin"); }

Container::Container(fs::path dir, Manifest manifest)
    : dir_(std::move(dir)), manifest_(std::move(manifest)) {
  for (const BankEntry& bank : manifest_.banks) {
    std::vector<uint32_t> held;
    if (manifest_.shard_map) {
      const std::span<const uint32_t> experts = manifest_.shard_map->HeldExperts(bank.layer);
      held.assign(experts.begin(), experts.end());
    } else {
      for (uint32_t expert = 0; expert < bank.num_experts; ++expert) held.push_back(expert);
    }
    std::vector<int32_t> slots(bank.num_experts, -1);
    for (size_t slot = 0; slot < held.size(); ++slot) {
      slots[held[slot]] = static_cast<int32_t>(slot);
    }
    held_experts_.push_back(std::move(held));
    slot_of_expert_.push_back(std::move(slots));
  }
}

absl::StatusOr<fs::path> Container::ContainedFile(const std::string& name) const {
  const fs::path path = dir_ / name;
  std::error_code error;
  const fs::path root = fs::weakly_canonical(dir_, error);
  const fs::path target = error ? fs::path() : fs::weakly_canonical(path, error);
  if (error) return absl::InvalidArgumentError(absl::StrCat(path.string(), ": ", error.message()));
  const fs::path relative = target.lexically_relative(root);
  if (relative.empty() || *relative.begin() == "..") {
    return absl::InvalidArgumentError(absl::StrCat(path.string(), ": resolves to ", target.string(),
                                                   ", outside the container ", root.string()));
  }
  return path;
}

absl::StatusOr<std::unique_ptr<Container>> Container::Open(const fs::path& dir,
                                                           const Options& options) {
  const fs::path manifest_path = dir / kManifestFile;
  WARP_ASSIGN_OR_RETURN(std::string text, ReadFileToString(manifest_path));
  WARP_ASSIGN_OR_RETURN(Manifest manifest, ParseManifest(text, manifest_path.string()));
  // Sizes on disk before any table is sized from the manifest's counts.
  WARP_RETURN_IF_ERROR(
      CheckFileSize(dir / kTrunkFile, manifest.trunk_bytes, "trunk.bytes of the manifest"));
  for (const BankEntry& bank : manifest.banks) {
    const uint64_t held = ExpertsHeld(bank, manifest.shard_map);
    WARP_RETURN_IF_ERROR(
        CheckFileSize(dir / bank.file, bank.record_bytes * held,  // both bounded: no overflow
                      absl::StrCat("record_bytes ", bank.record_bytes, " x ", held, " experts")));
  }

  for (const EngramTableEntry& table : manifest.engram) {
    WARP_RETURN_IF_ERROR(CheckFileSize(
        dir / table.file, EngramRecords(table) * kEngramRecordBytes,
        absl::StrCat(EngramRecords(table), " records of ", kEngramRecordBytes, " bytes for ",
                     table.rows, " rows")));
  }
  for (const KeptTensorsEntry& kept : manifest.kept) {
    WARP_RETURN_IF_ERROR(CheckFileSize(dir / kept.file, kept.bytes,
                                       absl::StrCat("bytes of the kept ", kept.about)));
  }
  for (const TensorEntry& tensor : manifest.trunk) {
    if (NeedsCodebook(tensor.format)) {  // codebooks are per bank matrix
      return absl::InvalidArgumentError(absl::StrCat(
          manifest_path.string(), ": trunk tensor ", tensor.name, " is ",
          std::string(TensorFormatName(tensor.format)), ", which only bank matrices may be"));
    }
  }
  Codebooks codebooks;
  if (manifest.codebooks_file) {
    WARP_ASSIGN_OR_RETURN(codebooks, Codebooks::Load(dir / *manifest.codebooks_file, manifest));
  } else {
    for (const BankEntry& bank : manifest.banks) {
      for (const TensorEntry& matrix : bank.matrices) {
        if (NeedsCodebook(matrix.format)) {
          return absl::InvalidArgumentError(
              absl::StrCat(manifest_path.string(), ": bank of layer ", bank.layer, " matrix ",
                           matrix.name, " is ", std::string(TensorFormatName(matrix.format)),
                           " but the manifest names no codebooks"));
        }
      }
    }
  }

  auto container = std::unique_ptr<Container>(new Container(dir, std::move(manifest)));
  container->codebooks_ = std::move(codebooks);
  const Manifest& m = container->manifest_;
  for (size_t i = 0; i < m.banks.size(); ++i) {
    const BankEntry& bank = m.banks[i];
    const fs::path path = container->BankPath(bank);
    const uint64_t held = container->held_experts_[i].size();
    if (!options.check_footers || held == 0) continue;
    WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(path, /*want_direct=*/true));
    for (uint32_t slot : {uint32_t{0}, static_cast<uint32_t>(held - 1)}) {
      const uint32_t expert = container->held_experts_[i][slot];
      WARP_RETURN_IF_ERROR(
          CheckFooter(file, path, bank, slot, container->Expectation(bank.layer, expert)));
    }
  }
  for (const EngramTableEntry& table : m.engram) {
    if (!options.check_footers) break;
    const BankEntry bank = EngramBank(table);
    const fs::path path = dir / table.file;
    WARP_ASSIGN_OR_RETURN(OpenedFile file, OpenForRead(path, /*want_direct=*/true));
    for (uint32_t record : {uint32_t{0}, bank.num_experts - 1}) {
      WARP_RETURN_IF_ERROR(CheckFooter(file, path, bank, record,
                                       {.layer = bank.layer,
                                        .expert = record,
                                        .payload_bytes = bank.payload_bytes,
                                        .fingerprint = m.fingerprint}));
    }
  }
  return container;
}

std::optional<uint64_t> Container::RecordOffset(uint32_t layer, uint32_t expert) const {
  for (size_t i = 0; i < manifest_.banks.size(); ++i) {
    const BankEntry& bank = manifest_.banks[i];
    if (bank.layer != layer) continue;
    if (expert >= bank.num_experts || slot_of_expert_[i][expert] < 0) return std::nullopt;
    return static_cast<uint64_t>(slot_of_expert_[i][expert]) * bank.record_bytes;
  }
  return std::nullopt;
}

RecordExpectation Container::Expectation(uint32_t layer, uint32_t expert) const {
  const BankEntry* bank = manifest_.FindBank(layer);
  WARP_CHECK(bank != nullptr);
  return RecordExpectation{.layer = layer,
                           .expert = expert,
                           .payload_bytes = bank->payload_bytes,
                           .fingerprint = manifest_.fingerprint};
}

absl::Status Container::RestrictToShard(uint32_t shard_index, uint32_t num_shards) {
  if (num_shards == 0 || shard_index >= num_shards) {
    return absl::InvalidArgumentError(
        absl::StrCat("shard ", shard_index, "/", num_shards, ": need 0 <= I < N"));
  }
  if (manifest_.shard_map) {
    return absl::FailedPreconditionError(
        absl::StrCat(dir_.string(), ": is already shard ", manifest_.shard_map->shard_index, " of ",
                     manifest_.shard_map->num_shards, "; --shard applies to a whole model"));
  }
  for (size_t i = 0; i < manifest_.banks.size(); ++i) {
    std::vector<uint32_t> held;
    for (uint32_t expert : held_experts_[i]) {
      if (expert % num_shards == shard_index) {
        held.push_back(expert);
      } else {
        slot_of_expert_[i][expert] = -1;  // its record stays in the file, unserved
      }
    }
    held_experts_[i] = std::move(held);
  }
  restricted_ = std::make_pair(shard_index, num_shards);
  return absl::OkStatus();
}

std::pair<uint32_t, uint32_t> Container::shard() const {
  if (restricted_) return *restricted_;
  if (manifest_.shard_map)
    return {manifest_.shard_map->shard_index, manifest_.shard_map->num_shards};
  return {0, 1};
}

const std::vector<uint32_t>& Container::HeldExperts(const BankEntry& bank) const {
  const size_t index = static_cast<size_t>(&bank - manifest_.banks.data());
  WARP_CHECK(index < held_experts_.size());
  return held_experts_[index];
}

}  // namespace warp
