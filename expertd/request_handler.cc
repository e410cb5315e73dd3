#include "expertd/request_handler.h"

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/format/engram_table.h"
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
  std::vector<ExpertKey> experts, engram;
  std::vector<size_t> expert_positions, engram_positions;
  experts.reserve(keys.size());
  for (int i = 0; i < keys.size(); ++i) {
    const bool is_engram = engram_ != nullptr && keys[i].layer() >= kEngramKeyBase;
    (is_engram ? engram : experts).push_back({keys[i].layer(), keys[i].expert()});
    (is_engram ? engram_positions : expert_positions).push_back(i);
  }
  if (engram.empty()) return store_.Read(experts, FromProto(priority));
  if (experts.empty()) return engram_->Read(engram);
  auto batch = std::make_shared<ReadBatch>(keys.size());
  ForwardInto(*store_.Read(experts, FromProto(priority)), batch, std::move(expert_positions));
  ForwardInto(*engram_->Read(engram), batch, std::move(engram_positions));
  return batch;
}

uint32_t RequestHandler::Prefetch(const ProtoKeys& keys, v1::Priority priority,
                                  ClientId client) const {
  std::vector<ExpertKey> held, engram;
  for (const v1::ExpertKey& key : keys) {
    if (held.size() + engram.size() == max_keys_) break;  // a hint: the excess is dropped
    if (store_.container().RecordOffset(key.layer(), key.expert())) {
      held.push_back({key.layer(), key.expert()});
    } else if (engram_ != nullptr && key.layer() >= kEngramKeyBase) {
      engram.push_back({key.layer(), key.expert()});  // the engram store drops unknown keys
    }
  }
  if (!engram.empty()) engram_->Prefetch(engram);
  store_.PrefetchFor(
      held, priority == v1::PRIORITY_CERTAIN ? Priority::kCertain : Priority::kLookahead, client);
  return static_cast<uint32_t>(held.size() + engram.size());
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
  reply->set_disk_read_bytes_per_second(disk_read_bytes_per_second_);
  for (const BankEntry& bank : manifest.banks) {
    v1::BankInfo* info = reply->add_banks();
    info->set_layer(bank.layer);
    info->set_num_experts(bank.num_experts);
    info->set_record_bytes(bank.record_bytes);
    for (uint32_t expert : container.HeldExperts(bank)) info->add_experts(expert);
  }
  if (engram_ == nullptr) return;
  reply->set_engram_cache_bytes(engram_->cache_bytes());
  for (const EngramTableEntry& table : engram_->tables()) {
    v1::EngramTableInfo* info = reply->add_engram_tables();
    info->set_layer(table.layer);
    info->set_rows(table.rows);
    info->set_row_bytes(table.row_bytes);
    info->set_records(EngramRecords(table));
  }
}

void RequestHandler::Stats(v1::StatsReply* reply) const {
  for (const auto& [name, value] : store_.Counters()) (*reply->mutable_counters())[name] = value;
  if (engram_ == nullptr) return;
  for (const auto& [name, value] : engram_->CounterMap()) {
    (*reply->mutable_counters())["expertd." + name] = value;
  }
}

}  // namespace warp::expertd
