#pragma once

// manifest.json of a NAME.warp container, as a value type, and its JSON
// encoding. Field meanings, types and units: docs/FORMAT.md#manifestjson.
// Parsing checks types and presence only; cross-file checks (sizes, alignment,
// footers) are the Container's job at open.

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/tensor_format.h"
#include "nlohmann/json.hpp"

namespace warp {

// The only format version this build reads and writes. See FORMAT.md#versioning.
inline constexpr uint32_t kFormatVersion = 1;
inline constexpr std::string_view kManifestFile = "manifest.json";
inline constexpr std::string_view kTrunkFile = "trunk.bin";

struct Extent {
  uint64_t offset = 0;  // bytes from the start of the file (trunk) or record (bank)
  uint64_t bytes = 0;
};

// One dense tensor in trunk.bin or one matrix inside an expert record.
struct TensorEntry {
  std::string name;  // Hugging Face name (trunk) or gate_proj/up_proj/down_proj
  TensorFormat format = TensorFormat::kF32;
  std::vector<uint64_t> shape;  // row-major; matrices are [out_features, in_features]
  Extent data;
  std::optional<Extent> scale;     // present iff HasScale(format)
  std::optional<uint32_t> crc32c;  // trunk only: CRC32C of data bytes then scale bytes
};

// The experts of one MoE layer: the file experts-L{layer}.bin.
struct BankEntry {
  uint32_t layer = 0;                 // decoder layer index
  std::string file;                   // relative to the container directory
  uint32_t num_experts = 0;           // routed experts of this layer in the whole model
  uint64_t record_bytes = 0;          // multiple of 4096
  uint64_t payload_bytes = 0;         // <= record_bytes - 32
  std::vector<TensorEntry> matrices;  // in record order
};

// DeepSeek V4.1's engram table for decoder layer `layer`: `rows` rows of
// `row_bytes` (head_dim E4M3 codes, then head_dim / 32 E8M0 scales), packed
// into 4 KiB records (common/format/engram_table.h).
struct EngramTableEntry {
  uint32_t layer = 0;      // the decoder layer it feeds
  std::string file;        // engram-L{layer}.bin, relative to the container directory
  uint64_t rows = 0;
  uint32_t row_bytes = 0;  // a multiple of 33: 32 codes and one scale per block
};

// Release tensors WARP does not run yet but keeps, verbatim (names, dtypes,
// shapes, bytes), for a later use without reconverting: one safetensors file
// (DeepSeek V4.1's DSpark stages, mtp.*, in dspark.safetensors).
struct KeptTensorsEntry {
  std::string file;   // relative to the container directory
  std::string about;  // what they are, for people
  uint64_t tensors = 0;
  uint64_t bytes = 0;  // of the file
};

struct TokenizerRef {
  std::vector<std::string> files;  // relative paths, e.g. tokenizer.json
  std::string chat_template;       // relative path of the Jinja template, "" if none
};

// Experts by layer: [layer] = expert numbers, increasing.
using ExpertsByLayer = std::map<uint32_t, std::vector<uint32_t>>;

// Which experts a shard directory holds (docs/FORMAT.md#shards). Absent from
// an unsharded container.
struct ShardMap {
  uint32_t num_shards = 1;
  uint32_t shard_index = 0;  // the shard this directory holds
  // held[layer]: the experts of that layer's bank this shard holds, increasing;
  // a layer not listed holds none. Shards may hold the same expert (replicas).
  ExpertsByLayer held;

  // The experts of `layer` held here; empty for a layer not listed.
  std::span<const uint32_t> HeldExperts(uint32_t layer) const;
};

struct Manifest {
  uint32_t format_version = kFormatVersion;
  std::string architecture;       // Hugging Face model_type, e.g. "deepseek_v3"
  nlohmann::ordered_json config;  // the release's config.json (synth writes one alike)
  uint64_t fingerprint = 0;       // written into every record footer
  std::string source;             // how the container was made, for humans
  std::optional<TokenizerRef> tokenizer;
  std::optional<std::string> codebooks_file;  // only for vector-quantized formats
  uint64_t trunk_bytes = 0;                   // size of trunk.bin
  std::vector<TensorEntry> trunk;
  std::vector<BankEntry> banks;  // increasing layer order
  std::vector<EngramTableEntry> engram;  // increasing layer order; empty: no engram memory
  std::vector<KeptTensorsEntry> kept;    // empty: none
  std::optional<ShardMap> shard_map;

  const BankEntry* FindBank(uint32_t layer) const;  // nullptr for a dense layer
  const TensorEntry* FindTrunkTensor(std::string_view name) const;
};

nlohmann::ordered_json ManifestToJson(const Manifest& manifest);

// Parses manifest JSON text. Errors name `source_name` and the field path,
// e.g. "m.warp/manifest.json: banks[2].record_bytes: missing".
absl::StatusOr<Manifest> ParseManifest(std::string_view text, std::string_view source_name);

// Number of experts of `bank` held by the shard described by `shard_map`
// (all of them when unsharded).
uint32_t ExpertsHeld(const BankEntry& bank, const std::optional<ShardMap>& shard_map);

// Lower-case 16-digit hex, the manifest's spelling of a fingerprint.
std::string FingerprintHex(uint64_t fingerprint);

}  // namespace warp
