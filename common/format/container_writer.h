#pragma once

// Writes a NAME.warp container in one streaming pass: trunk tensors chunk by
// chunk, then each bank record by record, then manifest.json last (atomically),
// so memory stays bounded by a few records or chunks whatever the model size,
// and a crash leaves no manifest rather than a half-valid container; a failed
// write removes the partial files. Writes
// run on a background thread while the caller fills the next buffer.
//
// Thread-compatible: one thread drives a writer.

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/bank_format.h"
#include "common/format/codebooks.h"
#include "common/format/manifest.h"
#include "common/io/aligned_buffer.h"
#include "common/io/background_writer.h"
#include "common/io/file.h"

namespace warp {

// Shape and format of one tensor before it has a place in a file.
struct TensorSpec {
  std::string name;
  TensorFormat format = TensorFormat::kF32;
  std::vector<uint64_t> shape;
};

// Lays out the matrices of one expert record: each sub-tensor at the next
// multiple of 64, payload then padding then footer, record_bytes a multiple
// of 4096. REQUIRES: every spec passes ShapeProblem().
BankEntry LayoutBank(uint32_t layer, uint32_t num_experts, const std::vector<TensorSpec>& matrices);

class ContainerWriter {
 public:
  struct Options {
    bool direct_io = true;  // write with O_DIRECT where the filesystem allows
  };

  // Fills `out` with the bytes at [offset, offset + out.size()) of one sub-tensor.
  using ChunkFiller = std::function<void(uint64_t offset, std::span<std::byte> out)>;

  // Creates `dir` (which must not hold a manifest.json yet). `header` supplies
  // architecture, config, fingerprint, source and tokenizer; trunk and banks
  // are filled in by the calls below.
  static absl::StatusOr<std::unique_ptr<ContainerWriter>> Create(const std::filesystem::path& dir,
                                                                 Manifest header,
                                                                 const Options& options);

  // Appends one tensor to trunk.bin at the next 4 KiB boundary. `scale` is
  // ignored for formats without scales.
  absl::Status AddTrunkTensor(const TensorSpec& spec, const ChunkFiller& data,
                              const ChunkFiller& scale);

  // Starts experts-L{layer}.bin. `bank` comes from LayoutBank().
  absl::Status BeginBank(const BankEntry& bank);

  // The buffer of the next expert's record (0, 1, 2, ... in order),
  // record_bytes long: fill its payload, then CommitRecord(). Zero-copy: the
  // buffer is written out in the background while the next one is filled
  // (small records, an engram table's, in groups of 1 MiB).
  std::span<std::byte> NextRecord();

  // Zeroes the padding, writes the footer with the payload CRC, and queues
  // the record for writing. Returns the footer. REQUIRES: NextRecord() first.
  RecordFooter CommitRecord();

  // Starts an engram table's file (DeepSeek V4.1, common/format/
  // engram_table.h): its records, EngramBank(table)'s, are written as a
  // bank's through NextRecord() / CommitRecord() / EndBank().
  absl::Status BeginEngramTable(const EngramTableEntry& table);

  // Waits for the bank's writes and flushes it; write errors surface here.
  // REQUIRES: every expert of the bank was committed.
  absl::Status EndBank();

  // Names the tokenizer files copied into the directory (before Finish()).
  void SetTokenizer(std::optional<TokenizerRef> tokenizer) {
    manifest_.tokenizer = std::move(tokenizer);
  }

  // Names a file of kept release tensors its caller wrote into the directory
  // (before Finish()).
  void AddKeptTensors(KeptTensorsEntry kept) { manifest_.kept.push_back(std::move(kept)); }

  // Writes codebooks.bin and names it in the manifest (before Finish()).
  absl::Status SetCodebooks(const Codebooks& codebooks);

  // Writes manifest.json. The container can be opened afterwards.
  absl::Status Finish();

  // Without a successful Finish() (a write failed, e.g. ENOSPC), removes what
  // it wrote: the directory if Create() made it, else its files.
  ~ContainerWriter();

  const Manifest& manifest() const { return manifest_; }

 private:
  ContainerWriter(std::filesystem::path dir, Manifest header, const Options& options,
                  OpenedFile trunk);
  uint32_t WriteSubTensor(uint64_t bytes, const ChunkFiller& fill, uint32_t crc);

  std::filesystem::path dir_;
  bool created_dir_ = false;
  bool finished_ = false;
  Manifest manifest_;
  Options options_;
  OpenedFile trunk_;
  OpenedFile bank_;  // the bank being written, if any
  absl::Status BeginRecords(const BankEntry& bank);

  BankEntry writing_;  // the bank (or engram table) whose records are being written
  std::filesystem::path bank_path_;
  uint32_t next_expert_ = 0;
  // The records between NextRecord() and their write: a group of
  // group_records_ from group_first_ on (one, unless records are small).
  AlignedBuffer record_;
  uint32_t group_first_ = 0, group_records_ = 1;
  // Declared after the files it writes to, so it is destroyed (and drained) first.
  BackgroundWriter io_;
};

}  // namespace warp
