// The engram's cache on real text (issue 46): the hit rate an LRU of the
// engram's records (WARP's EngramStore: 4 KiB records of 15 rows of 264 B)
// would have, at the sizes asked for, when a release's engram hashes a real
// text. Synthetic runs sample random tokens whose n-grams never repeat, so
// their hit rate is a floor; this replays what a text's n-grams ask for.
//
// The text is tokenized by TOKENIZER (a stand-in when the release's own is not
// at hand: its compressed token map is built by the engine's own rule, so its
// count stands in for engram_compressed_vocab_size), and each file's rows are
// hashed by the engine's EngramHash with CONFIG's engram keys (layers, primes,
// heads, n-grams), a file a sequence from position 0. Each row is a lookup, in
// the order the store sees them (token by token, layer, column): a hit if its
// record is cached or was asked for earlier. Beside it, the same replay over a
// cache of rows (264 B each, as a row-granular store such as vLLM's would
// keep) and the ceilings of an unbounded cache.
//
//   engram_text_sim TOKENIZER CONFIG CACHE_MIB[,CACHE_MIB...] TEXT_FILE...

#include <cstdio>
#include <list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/format/engram_table.h"
#include "common/io/file.h"
#include "computed/model/engram/compressed_token_map.h"
#include "computed/model/engram/engram_hash.h"
#include "computed/model/parse_model_config.h"
#include "computed/text/tokenizer.h"
#include "computed/text/utf8.h"
#include "nlohmann/json.hpp"

namespace {

using warp::computed::EngramHash;

// An LRU of keys, `capacity` of them. Thread-compatible.
class LruSet {
 public:
  explicit LruSet(uint64_t capacity) : capacity_(capacity) {}
  // True on a hit; a miss is inserted, evicting the least recent beyond capacity.
  bool Access(uint64_t key) {
    auto it = where_.find(key);
    if (it != where_.end()) {
      order_.splice(order_.end(), order_, it->second);
      return true;
    }
    order_.push_back(key);
    where_[key] = std::prev(order_.end());
    if (order_.size() > capacity_) {
      where_.erase(order_.front());
      order_.pop_front();
    }
    return false;
  }

 private:
  uint64_t capacity_;
  std::list<uint64_t> order_;
  absl::flat_hash_map<uint64_t, std::list<uint64_t>::iterator> where_;
};

int Fail(const std::string& what) {
  std::fprintf(stderr, "engram_text_sim: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 5) {
    std::fprintf(stderr,
                 "usage: engram_text_sim TOKENIZER CONFIG CACHE_MIB[,CACHE_MIB...] TEXT_FILE...\n");
    return 2;
  }
  auto tokenizer = warp::text::Tokenizer::Load(argv[1]);
  if (!tokenizer.ok()) return Fail(std::string(tokenizer.status().message()));
  auto config_text = warp::ReadFileToString(argv[2]);
  if (!config_text.ok()) return Fail(std::string(config_text.status().message()));
  const auto config_json = nlohmann::ordered_json::parse(*config_text);
  auto config = warp::computed::ParseModelConfig(config_json.value("model_type", ""), config_json);
  if (!config.ok()) return Fail(std::string(argv[2]) + ": " + std::string(config.status().message()));
  const warp::computed::EngramConfig& e = config->engram;
  std::vector<uint64_t> cache_mib;
  const std::vector<std::string> parts = absl::StrSplit(argv[3], ',');
  for (const std::string& part : parts) {
    uint64_t mib = 0;
    if (!absl::SimpleAtoi(part, &mib) || mib == 0) return Fail("bad CACHE_MIB: " + part);
    cache_mib.push_back(mib);
  }

  // The stand-in's compressed map: its own count, by the engine's rule.
  const auto& tok = **tokenizer;
  std::vector<std::string> decoded(tok.vocab_size()), raw(tok.vocab_size());
  absl::flat_hash_set<std::string> keys;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    auto text = tok.Decode({&id, 1}, false);
    if (!text.ok()) return Fail(std::string(text.status().message()));
    decoded[id] = *text;
    if (text->find(warp::text::kReplacementChar) != std::string::npos) {
      raw[id] = tok.IdToToken(id).value_or("");
      keys.insert(raw[id]);
    } else {
      std::string key = warp::computed::NormalizeEngramText(*text);
      keys.insert(key.empty() ? *text : key);
    }
  }
  auto map = warp::computed::BuildCompressedTokenMap(decoded, raw, static_cast<int32_t>(keys.size()));
  if (!map.ok()) return Fail(std::string(map.status().message()));
  std::printf("tokenizer %s: %d ids, %d compressed (the config says %u)\n", argv[1],
              tok.vocab_size(), map->compressed_vocab_size, e.compressed_vocab);

  warp::computed::EngramHashOptions options{.vocab_size = static_cast<int64_t>(e.bucket_base),
                                            .max_ngram_size = static_cast<int32_t>(e.max_ngram),
                                            .num_heads = static_cast<int32_t>(e.heads),
                                            .compressed_vocab_size = map->compressed_vocab_size,
                                            .pad_id = map->lookup.at(e.pad_token)};
  for (uint32_t layer : e.layers) options.layer_ids.push_back(static_cast<int32_t>(layer));
  auto hash = EngramHash::Create(options);
  if (!hash.ok()) return Fail(std::string(hash.status().message()));
  const uint32_t row_bytes = e.head_dim + e.head_dim / 32;
  const uint64_t per_record = warp::EngramRowsPerRecord(row_bytes);

  // Every file's rows, in the store's order; a row's key: (table, row).
  std::vector<uint64_t> rows;
  uint64_t tokens = 0;
  for (int i = 4; i < argc; ++i) {
    auto text = warp::ReadFileToString(argv[i]);
    if (!text.ok()) return Fail(std::string(text.status().message()));
    auto ids = tok.Encode(warp::text::Utf8Lossy(*text));
    if (!ids.ok()) return Fail(std::string(argv[i]) + ": " + std::string(ids.status().message()));
    std::vector<int32_t> compressed;
    for (int32_t id : *ids) compressed.push_back(map->lookup[id]);
    const std::vector<int64_t> hashed = hash->HashSequence(compressed);
    for (size_t r = 0; r < hashed.size(); ++r) {
      const uint64_t table = (r % hash->rows_per_token()) / hash->num_columns();
      rows.push_back((table << 40) | static_cast<uint64_t>(hashed[r]));
    }
    tokens += ids->size();
  }
  auto record_of = [&](uint64_t key) { return (key >> 40) << 40 | ((key & ((1ull << 40) - 1)) / per_record); };
  absl::flat_hash_set<uint64_t> seen_rows, seen_records;
  uint64_t row_ceiling = 0, record_ceiling = 0;
  for (uint64_t key : rows) {
    row_ceiling += !seen_rows.insert(key).second;
    record_ceiling += !seen_records.insert(record_of(key)).second;
  }
  const double n = static_cast<double>(rows.size());
  std::printf("%llu tokens of %d files, %zu rows a token: %llu row lookups, %zu distinct rows "
              "(%.1f MiB of rows), %zu distinct records (%.1f MiB)\n",
              static_cast<unsigned long long>(tokens), argc - 4, hash->rows_per_token(),
              static_cast<unsigned long long>(rows.size()), seen_rows.size(),
              seen_rows.size() * row_bytes / 1048576.0, seen_records.size(),
              seen_records.size() * warp::kEngramRecordBytes / 1048576.0);
  std::printf("| cache | records of 4 KiB (WARP) | rows of %u B |\n|---|---|---|\n", row_bytes);
  for (uint64_t mib : cache_mib) {
    LruSet records((mib << 20) / warp::kEngramRecordBytes), row_cache((mib << 20) / row_bytes);
    uint64_t record_hits = 0, row_hits = 0;
    for (uint64_t key : rows) {
      record_hits += records.Access(record_of(key));
      row_hits += row_cache.Access(key);
    }
    std::printf("| %llu MiB | %.1f%% | %.1f%% |\n", static_cast<unsigned long long>(mib),
                100 * record_hits / n, 100 * row_hits / n);
  }
  std::printf("| unbounded | %.1f%% | %.1f%% |\n", 100 * record_ceiling / n, 100 * row_ceiling / n);
  return 0;
}
