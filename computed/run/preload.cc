#include "computed/run/preload.h"

#include <algorithm>
#include <chrono>

#include "absl/container/flat_hash_set.h"
#include "common/status.h"

namespace warp::computed {

std::vector<ExpertKey> FitInCache(const Manifest& manifest, uint64_t cache_bytes,
                                  std::span<const ExpertKey> keys) {
  std::vector<ExpertKey> fit;
  absl::flat_hash_set<ExpertKey> chosen;
  uint64_t bytes = 0;
  for (const ExpertKey& key : keys) {
    const BankEntry* bank = manifest.FindBank(key.layer);
    if (bank == nullptr || key.expert >= bank->num_experts || chosen.contains(key)) continue;
    if (bytes + bank->record_bytes > cache_bytes) continue;
    bytes += bank->record_bytes;
    chosen.insert(key);
    fit.push_back(key);
  }
  return fit;
}

std::vector<ExpertKey> PreloadSet(const Manifest& manifest, uint64_t cache_bytes,
                                  std::span<const ExpertKey> first) {
  std::vector<ExpertKey> keys(first.begin(), first.end());
  for (const BankEntry& bank : manifest.banks) {
    for (uint32_t expert = 0; expert < bank.num_experts; ++expert)
      keys.push_back({bank.layer, expert});
  }
  return FitInCache(manifest, cache_bytes, keys);
}

absl::StatusOr<PreloadFigures> Preload(ExpertSource& source, std::span<const ExpertKey> keys,
                                       size_t in_flight) {
  const auto start = std::chrono::steady_clock::now();
  PreloadFigures figures;
  in_flight = std::max<size_t>(1, in_flight);
  for (size_t begin = 0; begin < keys.size(); begin += in_flight) {
    const std::span<const ExpertKey> batch =
        keys.subspan(begin, std::min(in_flight, keys.size() - begin));
    // Demand priority: nothing else reads yet, and a later use of a preloaded
    // record is then a plain cache hit, not a prediction's.
    for (absl::StatusOr<ExpertRecord>& record : source.ReadAll(batch, Priority::kDemand)) {
      if (!record.ok()) return record.status();  // its leases are dropped here
      figures.bytes += record->record_bytes;
      ++figures.records;
    }
  }
  figures.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return figures;
}

}  // namespace warp::computed
