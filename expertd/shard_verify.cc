#include "expertd/shard_verify.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/crc32c.h"
#include "common/format/bank_format.h"
#include "common/format/container.h"
#include "common/format/manifest.h"
#include "common/io/aligned_buffer.h"
#include "common/io/file.h"
#include "common/progress.h"
#include "common/status.h"
#include "expertd/bank_scanner.h"

namespace warp::expertd {
namespace {

namespace fs = std::filesystem;

// Unheld experts listed in one problem line before the rest are only counted.
constexpr size_t kMaxListedExperts = 16;

struct Shard {
  std::string name;  // the directory as given
  std::unique_ptr<Container> container;

  const ShardMap& map() const { return *container->manifest().shard_map; }
};

// Opens each shard directory and keeps those that belong to `model`: a
// shard_map, the model's fingerprint and the model's banks. Reports the others.
std::vector<Shard> OpenShards(const Container& model, const std::vector<fs::path>& dirs,
                              VerifyReport& report) {
  const Manifest& want = model.manifest();
  const nlohmann::ordered_json want_banks = ManifestToJson(want)["banks"];
  std::vector<Shard> shards;
  for (const fs::path& dir : dirs) {
    // Footers are checked record by record, like `expertd verify` does.
    auto container = Container::Open(dir, {.check_footers = false});
    if (!container.ok()) {
      report.problems.push_back(std::string(container.status().message()));
      continue;
    }
    const Manifest& got = (*container)->manifest();
    const std::string name = dir.string();
    if (!got.shard_map) {
      report.problems.push_back(
          absl::StrCat(name, ": not a shard (its manifest has no shard_map)"));
    } else if (got.fingerprint != want.fingerprint) {
      report.problems.push_back(
          absl::StrCat(name, ": fingerprint ", FingerprintHex(got.fingerprint),
                       " differs from the model's ", FingerprintHex(want.fingerprint)));
    } else if (ManifestToJson(got)["banks"] != want_banks) {
      report.problems.push_back(
          absl::StrCat(name, ": banks differ from the model's (layers or record layout)"));
    } else {
      shards.push_back({name, std::move(*container)});
    }
  }
  return shards;
}

// The maps must agree with the first shard's on num_shards, and name each index once.
void CheckShardMaps(const std::vector<Shard>& shards, VerifyReport& report) {
  if (shards.empty()) return;
  const Shard& first = shards[0];
  std::vector<const Shard*> by_index(first.map().num_shards, nullptr);
  for (const Shard& shard : shards) {
    const ShardMap& map = shard.map();
    if (map.num_shards != first.map().num_shards) {
      report.problems.push_back(absl::StrCat(shard.name, ": num_shards ", map.num_shards,
                                             " differs from ", first.name, "'s ",
                                             first.map().num_shards));
      continue;
    }
    if (const Shard* other = by_index[map.shard_index]; other != nullptr) {
      report.problems.push_back(absl::StrCat(shard.name, ": shard_index ", map.shard_index,
                                             " is also ", other->name, "'s"));
    } else {
      by_index[map.shard_index] = &shard;
    }
  }
  for (size_t i = 0; i < by_index.size(); ++i) {
    if (by_index[i] == nullptr) {
      report.problems.push_back(absl::StrCat("shard ", i, " of ", by_index.size(), " is missing"));
    }
  }
}

// Every expert of every bank must be held by a shard (by several: replicas).
// Shards passed OpenShards, so their banks are the model's, index for index.
void CheckCoverage(const Container& model, const std::vector<Shard>& shards, VerifyReport& report) {
  const std::vector<BankEntry>& banks = model.manifest().banks;
  for (size_t b = 0; b < banks.size(); ++b) {
    std::vector<uint32_t> holders(banks[b].num_experts, 0);
    for (const Shard& shard : shards) {
      const BankEntry& bank = shard.container->manifest().banks[b];
      for (uint32_t expert : shard.container->HeldExperts(bank)) ++holders[expert];
    }
    std::vector<uint32_t> unheld;
    for (uint32_t expert = 0; expert < holders.size(); ++expert) {
      if (holders[expert] == 0) unheld.push_back(expert);
    }
    if (unheld.empty()) continue;
    const size_t listed = std::min(unheld.size(), kMaxListedExperts);
    std::string line = absl::StrCat("layer ", banks[b].layer, ": ", unheld.size(), " of ",
                                    holders.size(), " experts held by no shard: ",
                                    absl::StrJoin(unheld.begin(), unheld.begin() + listed, ", "));
    if (listed < unheld.size()) absl::StrAppend(&line, ", ... (", unheld.size() - listed, " more)");
    report.problems.push_back(std::move(line));
  }
}

// State of one pass over the model and its shards.
struct Scan {
  const Container& model;
  const std::vector<Shard>& shards;
  AlignedBuffer model_buffer;  // whole records of the model, read_chunk_bytes at most
  AlignedBuffer shard_buffer;  // a shard's records among those, so never larger
  ProgressBar progress;
  VerifyReport& report;
};

void CheckOne(std::span<const std::byte> record, const RecordExpectation& expected,
              const fs::path& path, uint64_t offset, VerifyReport& report) {
  absl::Status status = CheckRecordAt(record, expected, path, offset);
  if (!status.ok()) report.problems.push_back(std::string(status.message()));
  ++report.records_checked;
}

// Checks the records `shard` holds among experts [first, end) of bank `b`,
// against their footers and against `original`, the model's records of
// [first, end). A shard file holds its experts in increasing order, so they
// are one contiguous run of slots: one read.
absl::Status CompareShardRecords(Scan& scan, const Shard& shard, size_t b, const OpenedFile& file,
                                 uint32_t first, uint32_t end,
                                 std::span<const std::byte> original) {
  const BankEntry& bank = shard.container->manifest().banks[b];
  const std::vector<uint32_t>& held = shard.container->HeldExperts(bank);
  const size_t lo = std::lower_bound(held.begin(), held.end(), first) - held.begin();
  const size_t hi = std::lower_bound(held.begin(), held.end(), end) - held.begin();
  if (lo == hi) return absl::OkStatus();
  const fs::path path = shard.container->BankPath(bank);
  const uint64_t rb = bank.record_bytes;
  std::span<std::byte> bytes = scan.shard_buffer.span().first((hi - lo) * rb);
  WARP_RETURN_IF_ERROR(PreadFull(file.fd.get(), bytes, lo * rb, path.string()));
  for (size_t slot = lo; slot < hi; ++slot) {
    const uint32_t expert = held[slot];
    std::span<const std::byte> record = bytes.subspan((slot - lo) * rb, rb);
    CheckOne(record, shard.container->Expectation(bank.layer, expert), path, slot * rb,
             scan.report);
    if (std::memcmp(record.data(), original.data() + (expert - first) * rb, rb) != 0) {
      scan.report.problems.push_back(absl::StrCat("expert ", expert, " of layer ", bank.layer,
                                                  ": differs from the original (", path.string(),
                                                  " @", slot * rb, ")"));
    }
  }
  scan.report.bytes_read += bytes.size();
  scan.progress.Advance(bytes.size());
  return absl::OkStatus();
}

// Streams bank `b` of the model in chunks of whole records, checking each, and
// for each chunk checks and compares the matching records of every shard.
absl::Status VerifyBankSet(Scan& scan, size_t b) {
  const BankEntry& bank = scan.model.manifest().banks[b];
  std::vector<OpenedFile> shard_files;
  for (const Shard& shard : scan.shards) {
    const fs::path shard_path = shard.container->BankPath(shard.container->manifest().banks[b]);
    WARP_ASSIGN_OR_RETURN(OpenedFile shard_file, OpenForRead(shard_path, /*want_direct=*/true));
    shard_files.push_back(std::move(shard_file));
  }
  // The model is unsharded: its chunk of experts [first, first + size) is one run.
  return ScanBank(scan.model, bank, scan.model_buffer, [&](const BankChunk& chunk) {
    for (const absl::Status& check : chunk.checks) {
      if (!check.ok()) scan.report.problems.push_back(std::string(check.message()));
    }
    scan.report.records_checked += chunk.size();
    scan.report.bytes_read += chunk.bytes.size();
    scan.progress.Advance(chunk.bytes.size());
    const uint32_t first = chunk.experts.front();
    for (size_t s = 0; s < scan.shards.size(); ++s) {
      WARP_RETURN_IF_ERROR(CompareShardRecords(scan, scan.shards[s], b, shard_files[s], first,
                                               first + static_cast<uint32_t>(chunk.size()),
                                               chunk.bytes));
    }
    return absl::OkStatus();
  });
}

uint64_t TotalBytes(const Container& model, const std::vector<Shard>& shards, bool check_trunk) {
  uint64_t total = 0;
  for (const TensorEntry& tensor : model.manifest().trunk) {
    if (check_trunk) total += tensor.data.bytes + (tensor.scale ? tensor.scale->bytes : 0);
  }
  for (const BankEntry& bank : model.manifest().banks)
    total += bank.record_bytes * bank.num_experts;
  for (const Shard& shard : shards) {
    for (const BankEntry& bank : shard.container->manifest().banks) {
      total += bank.record_bytes * shard.container->HeldExperts(bank).size();
    }
  }
  return total;
}

}  // namespace

absl::StatusOr<VerifyReport> VerifyShardSet(const fs::path& model,
                                            const std::vector<fs::path>& shard_dirs,
                                            const VerifyOptions& options) {
  WARP_ASSIGN_OR_RETURN(auto container, Container::Open(model, {.check_footers = false}));
  if (const auto& map = container->manifest().shard_map) {
    return absl::FailedPreconditionError(absl::StrCat(
        model.string(), ": is itself shard ", map->shard_index, " of ", map->num_shards,
        "; give the original container first, then its shards, or verify the shard alone"));
  }
  VerifyReport report;
  const std::vector<Shard> shards = OpenShards(*container, shard_dirs, report);
  CheckShardMaps(shards, report);
  CheckCoverage(*container, shards, report);

  uint64_t max_record = 0;
  for (const BankEntry& bank : container->manifest().banks) {
    max_record = std::max(max_record, bank.record_bytes);
  }
  const uint64_t buffer_bytes = std::max(max_record, options.read_chunk_bytes);
  Scan scan{.model = *container,
            .shards = shards,
            .model_buffer = AlignedBuffer(buffer_bytes),
            .shard_buffer = AlignedBuffer(buffer_bytes),
            .progress = ProgressBar("verify", TotalBytes(*container, shards, options.check_trunk),
                                    options.show_progress),
            .report = report};
  if (options.check_trunk) {
    WARP_RETURN_IF_ERROR(VerifyTrunk(scan.model, scan.model_buffer, scan.progress, scan.report));
  }
  for (size_t b = 0; b < container->manifest().banks.size(); ++b) {
    WARP_RETURN_IF_ERROR(VerifyBankSet(scan, b));
  }
  scan.progress.Finish();
  report.seconds = scan.progress.elapsed_seconds();
  return report;
}

}  // namespace warp::expertd
