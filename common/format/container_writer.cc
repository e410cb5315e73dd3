#include "common/format/container_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/check.h"
#include "common/crc32c.h"
#include "common/format/container.h"
#include "common/format/engram_table.h"
#include "common/status.h"

namespace warp {
namespace {

namespace fs = std::filesystem;

// Trunk tensors are streamed through a buffer of this size: large enough for
// full-speed sequential writes, small enough to keep the writer's memory flat.
constexpr uint64_t kTrunkChunkBytes = 8 << 20;
// Records smaller than this (an engram table's 4 KiB) are written this many
// bytes at a time: one pwrite a 4 KiB record ran at ~9k IOPS, 37 MB/s, on the
// O_DIRECT disk this was measured on; a release's two engram tables are 51 M records.
constexpr uint64_t kRecordGroupBytes = 1 << 20;
// Buffers in flight: one being filled, one being written, one queued.
constexpr size_t kWriteBuffers = 3;

}  // namespace

BankEntry LayoutBank(uint32_t layer, uint32_t num_experts,
                     const std::vector<TensorSpec>& matrices) {
  BankEntry bank;
  bank.layer = layer;
  bank.file = BankFileName(layer);
  bank.num_experts = num_experts;
  uint64_t end = 0;
  for (const TensorSpec& spec : matrices) {
    WARP_CHECK(ShapeProblem(spec.format, spec.shape).empty());
    TensorEntry entry{.name = spec.name, .format = spec.format, .shape = spec.shape};
    entry.data = {AlignUp(end, kSubTensorAlignment), DataBytes(spec.format, spec.shape)};
    end = entry.data.offset + entry.data.bytes;
    if (HasScale(spec.format)) {
      entry.scale = Extent{AlignUp(end, kSubTensorAlignment), ScaleBytes(spec.format, spec.shape)};
      end = entry.scale->offset + entry.scale->bytes;
    }
    bank.matrices.push_back(std::move(entry));
  }
  bank.payload_bytes = end;
  bank.record_bytes = RecordBytesFor(end);
  return bank;
}

ContainerWriter::ContainerWriter(fs::path dir, Manifest header, const Options& options,
                                 OpenedFile trunk)
    : dir_(std::move(dir)),
      manifest_(std::move(header)),
      options_(options),
      trunk_(std::move(trunk)),
      io_(kWriteBuffers) {}

absl::StatusOr<std::unique_ptr<ContainerWriter>> ContainerWriter::Create(const fs::path& dir,
                                                                         Manifest header,
                                                                         const Options& options) {
  std::error_code error;
  const bool created_dir = !fs::exists(dir, error);
  fs::create_directories(dir, error);
  if (error) return absl::InternalError(absl::StrCat(dir.string(), ": ", error.message()));
  if (fs::exists(dir / kManifestFile)) {
    return absl::AlreadyExistsError(
        absl::StrCat(dir.string(), ": already holds a container; remove it first"));
  }
  header.format_version = kFormatVersion;
  header.trunk.clear();
  header.banks.clear();
  header.trunk_bytes = 0;
  WARP_ASSIGN_OR_RETURN(OpenedFile trunk, OpenForWrite(dir / kTrunkFile, options.direct_io));
  auto writer = std::unique_ptr<ContainerWriter>(
      new ContainerWriter(dir, std::move(header), options, std::move(trunk)));
  writer->created_dir_ = created_dir;
  return writer;
}

ContainerWriter::~ContainerWriter() {
  if (finished_) return;
  // Unfinished (a write failed, or the caller gave up): nothing of it may be
  // mistaken for a container, nor fill the disk that just ran out.
  io_.Drain().IgnoreError();
  trunk_ = OpenedFile{};
  bank_ = OpenedFile{};
  std::error_code error;
  if (created_dir_) {
    fs::remove_all(dir_, error);
    return;
  }
  fs::remove(dir_ / kTrunkFile, error);
  fs::remove(dir_ / (std::string(kManifestFile) + ".tmp"), error);
  for (const BankEntry& bank : manifest_.banks) fs::remove(dir_ / bank.file, error);
  for (const EngramTableEntry& table : manifest_.engram) fs::remove(dir_ / table.file, error);
  for (const KeptTensorsEntry& kept : manifest_.kept) fs::remove(dir_ / kept.file, error);
  if (manifest_.codebooks_file) fs::remove(dir_ / *manifest_.codebooks_file, error);
  if (manifest_.tokenizer) {
    for (const std::string& file : manifest_.tokenizer->files) fs::remove(dir_ / file, error);
    if (!manifest_.tokenizer->chat_template.empty()) {
      fs::remove(dir_ / manifest_.tokenizer->chat_template, error);
    }
  }
}

uint32_t ContainerWriter::WriteSubTensor(uint64_t bytes, const ChunkFiller& fill, uint32_t crc) {
  for (uint64_t done = 0; done < bytes; done += kTrunkChunkBytes) {
    const uint64_t n = std::min(kTrunkChunkBytes, bytes - done);
    AlignedBuffer chunk = io_.Acquire(kTrunkChunkBytes);
    fill(done, chunk.span().first(n));
    crc = Crc32cExtend(crc, chunk.span().first(n));
    // Pad the tail to the 4 KiB boundary where the next sub-tensor starts.
    const uint64_t padded = AlignUp(n, kBankAlignment);
    std::memset(chunk.data() + n, 0, padded - n);
    io_.Submit(trunk_.fd.get(), (dir_ / kTrunkFile).string(), std::move(chunk), padded,
               manifest_.trunk_bytes + done);
  }
  manifest_.trunk_bytes += AlignUp(bytes, kBankAlignment);
  return crc;
}

absl::Status ContainerWriter::AddTrunkTensor(const TensorSpec& spec, const ChunkFiller& data,
                                             const ChunkFiller& scale) {
  if (std::string problem = ShapeProblem(spec.format, spec.shape); !problem.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("trunk tensor ", spec.name, ": ", problem));
  }
  TensorEntry entry{.name = spec.name, .format = spec.format, .shape = spec.shape};
  entry.data = {manifest_.trunk_bytes, DataBytes(spec.format, spec.shape)};
  uint32_t crc = WriteSubTensor(entry.data.bytes, data, 0);
  if (HasScale(spec.format)) {
    entry.scale = Extent{manifest_.trunk_bytes, ScaleBytes(spec.format, spec.shape)};
    crc = WriteSubTensor(entry.scale->bytes, scale, crc);
  }
  entry.crc32c = crc;
  manifest_.trunk.push_back(std::move(entry));
  return absl::OkStatus();
}

absl::Status ContainerWriter::BeginBank(const BankEntry& bank) {
  WARP_CHECK(!bank_.fd.valid());
  WARP_CHECK(manifest_.banks.empty() || manifest_.banks.back().layer < bank.layer);
  manifest_.banks.push_back(bank);
  return BeginRecords(bank);
}

absl::Status ContainerWriter::BeginEngramTable(const EngramTableEntry& table) {
  WARP_CHECK(!bank_.fd.valid());
  WARP_CHECK(manifest_.engram.empty() || manifest_.engram.back().layer < table.layer);
  manifest_.engram.push_back(table);
  return BeginRecords(EngramBank(table));
}

absl::Status ContainerWriter::BeginRecords(const BankEntry& bank) {
  writing_ = bank;
  bank_path_ = dir_ / bank.file;
  WARP_ASSIGN_OR_RETURN(bank_, OpenForWrite(bank_path_, options_.direct_io));
  next_expert_ = 0;
  return absl::OkStatus();
}

std::span<std::byte> ContainerWriter::NextRecord() {
  WARP_CHECK(bank_.fd.valid());
  const BankEntry& bank = writing_;
  WARP_CHECK(next_expert_ < bank.num_experts);
  if (record_.size() == 0) {
    group_records_ = static_cast<uint32_t>(std::max<uint64_t>(1, kRecordGroupBytes / bank.record_bytes));
    group_first_ = next_expert_;
    record_ = io_.Acquire(uint64_t{group_records_} * bank.record_bytes);
  }
  return record_.span().subspan(uint64_t{next_expert_ - group_first_} * bank.record_bytes,
                                 bank.record_bytes);
}

RecordFooter ContainerWriter::CommitRecord() {
  const BankEntry& bank = writing_;
  const uint64_t in_group = next_expert_ - group_first_;
  WARP_CHECK(record_.size() >= (in_group + 1) * bank.record_bytes);
  std::span<std::byte> record = record_.span().subspan(in_group * bank.record_bytes, bank.record_bytes);
  std::memset(record.data() + bank.payload_bytes, 0, bank.record_bytes - bank.payload_bytes);
  RecordFooter footer{.layer = bank.layer,
                      .expert = next_expert_,
                      .payload_crc32c = Crc32c(record.first(bank.payload_bytes)),
                      .payload_bytes = bank.payload_bytes,
                      .fingerprint = manifest_.fingerprint};
  EncodeFooter(footer, record);
  ++next_expert_;
  if (in_group + 1 == group_records_ || next_expert_ == bank.num_experts) {
    io_.Submit(bank_.fd.get(), bank_path_.string(), std::move(record_),
               (in_group + 1) * bank.record_bytes, uint64_t{group_first_} * bank.record_bytes);
    record_ = AlignedBuffer();
  }
  return footer;
}

absl::Status ContainerWriter::EndBank() {
  WARP_CHECK(bank_.fd.valid());
  WARP_CHECK(next_expert_ == writing_.num_experts);
  WARP_RETURN_IF_ERROR(io_.Drain());
  if (::fdatasync(bank_.fd.get()) != 0) return ErrnoToStatus(errno, bank_path_.string());
  bank_ = OpenedFile{};
  return absl::OkStatus();
}

absl::Status ContainerWriter::SetCodebooks(const Codebooks& codebooks) {
  manifest_.codebooks_file = std::string(kCodebooksFile);
  return WriteFileAtomically(dir_ / kCodebooksFile, codebooks.Serialize());
}

absl::Status ContainerWriter::Finish() {
  WARP_CHECK(!bank_.fd.valid());
  WARP_RETURN_IF_ERROR(io_.Drain());
  if (::fdatasync(trunk_.fd.get()) != 0) {
    return ErrnoToStatus(errno, (dir_ / kTrunkFile).string());
  }
  trunk_ = OpenedFile{};
  WARP_RETURN_IF_ERROR(
      WriteFileAtomically(dir_ / kManifestFile, ManifestToJson(manifest_).dump(1) + "\n"));
  finished_ = true;
  return absl::OkStatus();
}

}  // namespace warp
