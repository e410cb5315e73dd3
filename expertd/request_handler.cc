#include "expertd/request_handler.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/format/manifest.h"
#include "common/logging.h"
#include "common/wire/proto_convert.h"

namespace warp::expertd {

absl::Status RequestHandler::CheckFingerprint(uint64_t fingerprint) const {
  const uint64_t own = store_.container().manifest().fingerprint;
  if (fingerprint == 0 || fingerprint == own) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("model fingerprint ", FingerprintHex(fingerprint),
                   " differs from this daemon's ", FingerprintHex(own)));
}

absl::Status RequestHandler::ForClient(const absl::Status& status) const {
  if (status.ok()) return status;
  Logger("expertd").warn("{}", std::string(status.message()));
  std::string message(status.message());
  for (std::filesystem::path dir = store_.container().dir(); !dir.empty();
       dir = dir == dir.parent_path() ? std::filesystem::path() : dir.parent_path()) {
    // The deepest directory first: "/srv/m.warp/" before "/srv/".
    absl::StrReplaceAll({{dir.string() + "/", ""}}, &message);
  }
  return absl::Status(status.code(), message);
}

absl::StatusOr<std::shared_ptr<ReadBatch>> RequestHandler::Read(const ProtoKeys& keys,
                                                                v1::Priority priority) const {
  if (static_cast<uint32_t>(keys.size()) > max_keys_) {
    return absl::InvalidArgumentError(
        absl::StrCat(keys.size(), " keys exceed the limit of ", max_keys_, " per request"));
  }
  std::vector<ExpertKey> converted;
  converted.reserve(keys.size());
  for (const v1::ExpertKey& key : keys) converted.push_back({key.layer(), key.expert()});
  return store_.Read(converted, FromProto(priority));
}

uint32_t RequestHandler::Prefetch(const ProtoKeys& keys, v1::Priority priority,
                                  ClientId client) const {
  std::vector<ExpertKey> held;
  for (const v1::ExpertKey& key : keys) {
    if (held.size() == max_keys_) break;  // a hint: the excess is dropped
    if (store_.container().RecordOffset(key.layer(), key.expert())) {
      held.push_back({key.layer(), key.expert()});
    }
  }
  store_.PrefetchFor(
      held, priority == v1::PRIORITY_CERTAIN ? Priority::kCertain : Priority::kLookahead, client);
  return static_cast<uint32_t>(held.size());
}

uint32_t RequestHandler::CancelSpeculative(uint32_t through_layer, ClientId client) const {
  return static_cast<uint32_t>(store_.CancelLookahead(through_layer, client));
}

void RequestHandler::Describe(v1::DescribeReply* reply) const {
  const Container& container = store_.container();
  const Manifest& manifest = container.manifest();
  reply->set_model_fingerprint(manifest.fingerprint);
  reply->set_architecture(manifest.architecture);
  reply->set_shard_index(container.shard().first);
  reply->set_num_shards(container.shard().second);
  reply->set_cache_bytes(store_.cache_bytes());
  for (const BankEntry& bank : manifest.banks) {
    v1::BankInfo* info = reply->add_banks();
    info->set_layer(bank.layer);
    info->set_num_experts(bank.num_experts);
    info->set_record_bytes(bank.record_bytes);
    for (uint32_t expert : container.HeldExperts(bank)) info->add_experts(expert);
  }
}

void RequestHandler::Stats(v1::StatsReply* reply) const {
  for (const auto& [name, value] : store_.Counters()) (*reply->mutable_counters())[name] = value;
}

}  // namespace warp::expertd
