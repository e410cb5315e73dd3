#pragma once

// BankSet: the open bank files of one container directory, and verified
// reads of whole records from them (one aligned O_DIRECT pread per record;
// buffered where the filesystem refuses O_DIRECT, with one warning).
//
// Thread-safe: immutable after Open; reads are preads.

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "common/format/container.h"
#include "common/io/file.h"
#include "common/store/expert_source.h"

namespace warp {

class BankSet {
 public:
  static absl::StatusOr<std::unique_ptr<BankSet>> Open(std::shared_ptr<const Container> container);

  // Reads and verifies the record of `key`. NotFound if this directory does
  // not hold it; DataLoss "expert E of layer L: checksum mismatch (FILE @ OFFSET)".
  absl::StatusOr<ExpertRecord> ReadRecord(const ExpertKey& key) const;

  const Container& container() const { return *container_; }

 private:
  explicit BankSet(std::shared_ptr<const Container> container)
      : container_(std::move(container)) {}

  std::shared_ptr<const Container> container_;
  std::vector<OpenedFile> files_;  // indexed like manifest().banks
};

// The embedded ExpertSource: reads straight from local bank files.
// Thread-safe.
class LocalExpertSource : public ExpertSource {
 public:
  explicit LocalExpertSource(std::unique_ptr<BankSet> banks) : banks_(std::move(banks)) {}
  std::vector<absl::StatusOr<ExpertRecord>> Read(std::span<const ExpertKey> keys) override;

 private:
  std::unique_ptr<BankSet> banks_;
};

}  // namespace warp
