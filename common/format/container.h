#pragma once

// A NAME.warp container opened for reading: the parsed manifest plus every
// check that makes the hot read path safe without further validation (file
// sizes, alignment, extents, footers of the first and last record of each bank).
// Reading records is the store's job; this class only says where they are.
//
// Thread-safe: immutable after Open().

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/bank_format.h"
#include "common/format/codebooks.h"
#include "common/format/manifest.h"

namespace warp {

class Container {
 public:
  struct Options {
    // Read the first and last record footer of each bank at open to check
    // magic, key and fingerprint. One 4 KiB read per checked record.
    bool check_footers = true;
  };

  // Opens and validates the container directory `dir`. Errors are
  // NotFound / InvalidArgument / FailedPrecondition / DataLoss and name the
  // file and the problem, e.g. "m.warp/experts-L3.bin: size 12288 is not
  // record_bytes 4096 x 4 experts = 16384".
  static absl::StatusOr<std::unique_ptr<Container>> Open(const std::filesystem::path& dir,
                                                         const Options& options);
  static absl::StatusOr<std::unique_ptr<Container>> Open(const std::filesystem::path& dir) {
    return Open(dir, Options{});
  }

  const Manifest& manifest() const { return manifest_; }
  // The codebooks of the vq3r_b32 matrices; empty when the banks use none.
  const Codebooks& codebooks() const { return codebooks_; }
  const std::filesystem::path& dir() const { return dir_; }
  std::filesystem::path ManifestPath() const { return dir_ / kManifestFile; }
  std::filesystem::path TrunkPath() const { return dir_ / kTrunkFile; }
  std::filesystem::path BankPath(const BankEntry& bank) const { return dir_ / bank.file; }
  // DIR/name if it resolves (symbolic links followed) to a file inside the
  // container's directory; InvalidArgument naming both paths if it leaves it.
  // For the text files (tokenizer, template, configs) that are printed or
  // rendered: a link to /etc/passwd must not become a chat template.
  absl::StatusOr<std::filesystem::path> ContainedFile(const std::string& name) const;

  // Byte offset of the record of (layer, expert) in its bank file, or nullopt
  // when the layer is dense, the expert is out of range, or another shard holds it.
  std::optional<uint64_t> RecordOffset(uint32_t layer, uint32_t expert) const;

  // What the record of (layer, expert) must contain. REQUIRES: layer has a bank.
  RecordExpectation Expectation(uint32_t layer, uint32_t expert) const;

  // Experts of `bank` whose records this directory holds, in file order.
  const std::vector<uint32_t>& HeldExperts(const BankEntry& bank) const;

  // Serves only experts e with e % num_shards == shard_index of an unsharded
  // container (expertd serve --shard I/N: several daemons over one copy of the
  // banks). The others become unknown keys. REQUIRES: before it is shared.
  absl::Status RestrictToShard(uint32_t shard_index, uint32_t num_shards);

  // (index, count) of the shard this container serves: from its shard map,
  // or RestrictToShard; (0, 1) for the whole model.
  std::pair<uint32_t, uint32_t> shard() const;

 private:
  Container(std::filesystem::path dir, Manifest manifest);

  std::filesystem::path dir_;
  Manifest manifest_;
  Codebooks codebooks_;
  // Indexed like manifest_.banks: held experts in file order, and for each
  // expert its slot in the file (-1 if not held).
  std::vector<std::vector<uint32_t>> held_experts_;
  std::vector<std::vector<int32_t>> slot_of_expert_;
  std::optional<std::pair<uint32_t, uint32_t>> restricted_;  // RestrictToShard
};

// The bank file name the writer uses for `layer`: "experts-L{layer}.bin".
std::string BankFileName(uint32_t layer);

}  // namespace warp
