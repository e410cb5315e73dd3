#include "expertd/shard.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/format/bank_format.h"
#include "common/format/container.h"
#include "common/format/manifest.h"
#include "common/format/usage_file.h"
#include "common/io/aligned_buffer.h"
#include "common/io/background_writer.h"
#include "common/io/file.h"
#include "common/progress.h"
#include "common/status.h"
#include "expertd/bank_scanner.h"
#include "expertd/placement.h"
#include "expertd/probe.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;

// Reads of the original are whole records, about this many bytes at a time.
constexpr uint64_t kReadChunkBytes = 64 << 20;
// Records bound for one shard are gathered into pieces of this size (or one
// record, if larger) before they are written, so small records still make
// large writes.
constexpr uint64_t kStageBytes = 8 << 20;

absl::Status CheckArguments(const std::vector<fs::path>& dirs, const std::vector<double>& weights) {
  if (dirs.size() < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("sharding needs at least 2 shard directories, got ", dirs.size()));
  }
  if (!weights.empty() && weights.size() != dirs.size()) {
    return absl::InvalidArgumentError(absl::StrCat(weights.size(), " weights for ", dirs.size(),
                                                   " shard directories; give one per directory"));
  }
  for (size_t i = 0; i < weights.size(); ++i) {
    if (!(weights[i] > 0) || !std::isfinite(weights[i])) {
      return absl::InvalidArgumentError(absl::StrCat("weight ", i + 1, " (", weights[i], ", for ",
                                                     dirs[i].string(),
                                                     ") is not a positive number"));
    }
  }
  return absl::OkStatus();
}

// Every target must be new to this run: distinct, and not already a container.
absl::Status CheckTargets(const std::vector<fs::path>& dirs) {
  std::vector<fs::path> seen;
  for (const fs::path& dir : dirs) {
    std::error_code error;
    fs::path canonical = fs::weakly_canonical(dir, error);
    if (error) canonical = dir.lexically_normal();
    if (std::find(seen.begin(), seen.end(), canonical) != seen.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat(dir.string(), ": given twice; each shard needs its own directory"));
    }
    seen.push_back(std::move(canonical));
    if (fs::exists(dir / kManifestFile)) {
      return absl::AlreadyExistsError(absl::StrCat(
          dir.string(), ": already holds a container (manifest.json); shard into new directories"));
    }
  }
  return absl::OkStatus();
}

// The shard's manifest: the model's, with the trunk, the engram tables and
// the kept tensors left behind (the original serves them) and a shard_map.
Manifest ShardManifest(const Manifest& model, uint32_t num_shards, uint32_t index,
                       const ExpertsByLayer& held) {
  Manifest shard = model;
  shard.trunk.clear();
  shard.trunk_bytes = 0;
  shard.engram.clear();
  shard.kept.clear();
  shard.shard_map = ShardMap{.num_shards = num_shards, .shard_index = index, .held = held};
  return shard;
}

// The part of one shard's bank file not yet written: records gathered in
// `stage` until it is full, then written in the background at `written`.
struct BankOutput {
  OpenedFile file;
  std::string path;
  AlignedBuffer stage;
  uint64_t staged = 0;   // bytes of stage in use
  uint64_t written = 0;  // file offset of stage[0]
};

void Flush(BankOutput& out, BackgroundWriter& io) {
  if (out.staged == 0) return;
  io.Submit(out.file.fd.get(), out.path, std::move(out.stage), out.staged, out.written);
  out.stage = AlignedBuffer();
  out.written += out.staged;
  out.staged = 0;
}

void Append(BankOutput& out, std::span<const std::byte> record, uint64_t stage_bytes,
            BackgroundWriter& io) {
  if (out.staged + record.size() > stage_bytes) Flush(out, io);
  if (out.stage.size() == 0) out.stage = io.Acquire(stage_bytes);
  std::memcpy(out.stage.data() + out.staged, record.data(), record.size());
  out.staged += record.size();
}

// What one ShardContainer run shares between banks.
struct Copier {
  const Container& model;
  const std::vector<fs::path>& dirs;
  ShardReport& report;
  AlignedBuffer read_buffer;
  uint64_t stage_bytes;
  ProgressBar progress;
  BackgroundWriter io;  // last: drained before the rest is destroyed
};

// Reads the bank of the original in large chunks, checks every record and
// appends it to the output of each shard holding it.
absl::Status CopyRecords(Copier& c, const BankEntry& bank, std::vector<BankOutput>& outputs) {
  std::vector<std::vector<uint32_t>> holders(bank.num_experts);  // [expert]: shards, increasing
  for (uint32_t s = 0; s < c.report.held.size(); ++s) {
    for (uint32_t expert : c.report.held[s].at(bank.layer)) holders[expert].push_back(s);
  }
  WARP_RETURN_IF_ERROR(ScanBank(c.model, bank, c.read_buffer, [&](const BankChunk& chunk) {
    for (size_t i = 0; i < chunk.size(); ++i) {
      if (!chunk.checks[i].ok()) {
        return absl::DataLossError(absl::StrCat(
            chunk.checks[i].message(),
            "; not sharding a container with a corrupt record: repair or rebuild it first"));
      }
      const std::vector<uint32_t>& shards = holders[chunk.experts[i]];
      for (uint32_t shard : shards) {
        Append(outputs[shard], chunk.record(i), c.stage_bytes, c.io);
        ++c.report.records[shard];
        c.report.replicated[shard] += shards.size() > 1;
      }
    }
    c.report.bytes_copied += chunk.bytes.size();
    c.progress.Advance(chunk.bytes.size());
    return absl::OkStatus();
  }));
  for (BankOutput& out : outputs) Flush(out, c.io);
  return absl::OkStatus();
}

absl::Status CopyBank(Copier& c, const BankEntry& bank) {
  std::vector<BankOutput> outputs(c.dirs.size());
  for (size_t s = 0; s < c.dirs.size(); ++s) {
    outputs[s].path = (c.dirs[s] / bank.file).string();
    WARP_ASSIGN_OR_RETURN(outputs[s].file, OpenForWrite(outputs[s].path, /*want_direct=*/true));
  }
  // Queued writes use the output descriptors: drain before they close, even on error.
  absl::Status status = CopyRecords(c, bank, outputs);
  absl::Status written = c.io.Drain();
  WARP_RETURN_IF_ERROR(status);
  WARP_RETURN_IF_ERROR(written);
  for (const BankOutput& out : outputs) {
    if (::fdatasync(out.file.fd.get()) != 0) return ErrnoToStatus(errno, out.path);
  }
  return absl::OkStatus();
}

absl::Status WriteShards(const Container& model, const std::vector<fs::path>& dirs,
                         bool show_progress, ShardReport& report) {
  const Manifest& manifest = model.manifest();
  uint64_t max_record = 0;
  uint64_t total = 0;
  for (const BankEntry& bank : manifest.banks) {
    max_record = std::max(max_record, bank.record_bytes);
    total += bank.record_bytes * bank.num_experts;
  }
  for (const fs::path& dir : dirs) {
    // The trunk stays with the original: each shard gets an empty trunk.bin.
    WARP_ASSIGN_OR_RETURN(OpenedFile trunk, OpenForWrite(dir / kTrunkFile, /*want_direct=*/false));
  }
  // At most one staging buffer per shard is held while up to two are written.
  Copier c{.model = model,
           .dirs = dirs,
           .report = report,
           .read_buffer = AlignedBuffer(std::max(max_record, kReadChunkBytes)),
           .stage_bytes = std::max(max_record, kStageBytes),
           .progress = ProgressBar("shard", total, show_progress),
           .io = BackgroundWriter(dirs.size() + 2)};
  for (const BankEntry& bank : manifest.banks) WARP_RETURN_IF_ERROR(CopyBank(c, bank));
  // Manifests last, once every bank is on disk: until then no shard is a container.
  for (uint32_t s = 0; s < dirs.size(); ++s) {
    const Manifest shard =
        ShardManifest(manifest, static_cast<uint32_t>(dirs.size()), s, report.held[s]);
    WARP_RETURN_IF_ERROR(
        WriteFileAtomically(dirs[s] / kManifestFile, ManifestToJson(shard).dump(1) + "\n"));
  }
  c.progress.Finish();
  report.seconds = c.progress.elapsed_seconds();
  return absl::OkStatus();
}

// Removes what a failed run wrote: its files, then the directories it created
// if they are empty.
void RemovePartialShards(const Manifest& model, const std::vector<fs::path>& dirs,
                         const std::vector<fs::path>& created) {
  std::error_code ignored;
  for (const fs::path& dir : dirs) {
    fs::remove(dir / kManifestFile, ignored);
    fs::remove(dir / kTrunkFile, ignored);
    for (const BankEntry& bank : model.banks) fs::remove(dir / bank.file, ignored);
  }
  for (const fs::path& dir : created) fs::remove(dir, ignored);
}

}  // namespace

absl::StatusOr<ShardReport> ShardContainer(const fs::path& model, const std::vector<fs::path>& dirs,
                                           const ShardOptions& options) {
  WARP_RETURN_IF_ERROR(CheckArguments(dirs, options.weights));
  if (options.probe_weights && !options.weights.empty()) {
    return absl::InvalidArgumentError("give weights or probe them (--probe-weights), not both");
  }
  if (options.replica_bytes > 0 && options.usage_file.empty()) {
    return absl::InvalidArgumentError(
        "replicas need a usage file (--usage, from computed --learn): it says which experts are "
        "hot");
  }
  WARP_ASSIGN_OR_RETURN(auto container, Container::Open(model));
  const Manifest& manifest = container->manifest();
  if (manifest.shard_map) {
    return absl::FailedPreconditionError(
        absl::StrCat(model.string(), ": is itself shard ", manifest.shard_map->shard_index, " of ",
                     manifest.shard_map->num_shards, "; shard the original container instead"));
  }
  WARP_RETURN_IF_ERROR(CheckTargets(dirs));

  std::optional<UsageTable> usage;
  if (!options.usage_file.empty()) {
    WARP_ASSIGN_OR_RETURN(usage, ReadUsageFile(options.usage_file));
    if (usage->fingerprint != manifest.fingerprint) {
      return absl::FailedPreconditionError(absl::StrCat(
          options.usage_file.string(), ": counts model ", FingerprintHex(usage->fingerprint),
          ", not ", model.string(), " (", FingerprintHex(manifest.fingerprint), ")"));
    }
  }
  ShardReport report;
  report.records.assign(dirs.size(), 0);
  report.replicated.assign(dirs.size(), 0);

  std::vector<fs::path> created;
  for (const fs::path& dir : dirs) {
    std::error_code error;
    if (fs::create_directories(dir, error)) created.push_back(dir);
    if (error) {
      RemovePartialShards(manifest, {}, created);
      return absl::InternalError(absl::StrCat(dir.string(), ": ", error.message()));
    }
  }
  // A probe reads at least its first 8 MiB piece, so every rate is positive.
  for (size_t s = 0; options.probe_weights && s < dirs.size(); ++s) {
    absl::StatusOr<DiskProbe> probe = ProbeDirectory(dirs[s]);
    if (!probe.ok()) {
      RemovePartialShards(manifest, {}, created);
      return probe.status();
    }
    report.probed.push_back(probe->bytes_per_second());
  }
  report.held = PlaceExperts(manifest.banks, static_cast<uint32_t>(dirs.size()),
                             {.weights = options.probe_weights ? report.probed : options.weights,
                              .usage = usage ? &*usage : nullptr,
                              .replica_bytes = options.replica_bytes});
  absl::Status status = WriteShards(*container, dirs, options.show_progress, report);
  if (!status.ok()) {
    RemovePartialShards(manifest, dirs, created);
    return status;
  }
  return report;
}

}  // namespace warp::expertd
