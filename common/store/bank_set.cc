#include "common/store/bank_set.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"

namespace warp {

absl::StatusOr<std::unique_ptr<BankSet>> BankSet::Open(std::shared_ptr<const Container> container,
                                                       Options options) {
  if (!options.pread) options.pread = PreadFull;
  auto banks = std::unique_ptr<BankSet>(new BankSet(std::move(container), std::move(options)));
  bool warned = false;
  for (const BankEntry& bank : banks->container_->manifest().banks) {
    WARP_ASSIGN_OR_RETURN(OpenedFile file,
                          OpenForRead(banks->container_->BankPath(bank), /*want_direct=*/true));
    if (!file.direct && !warned) {
      Logger("expertd.store")
          .warn("{}: the filesystem refuses O_DIRECT; reading through the page cache",
                banks->container_->dir().string());
      warned = true;
    }
    banks->files_.push_back(std::move(file));
  }
  return banks;
}

absl::StatusOr<ExpertRecord> BankSet::ReadRecord(const ExpertKey& key) const {
  const Manifest& manifest = container_->manifest();
  const std::optional<uint64_t> offset = container_->RecordOffset(key.layer, key.expert);
  if (!offset) {
    return absl::NotFoundError(absl::StrCat("expert ", key.expert, " of layer ", key.layer,
                                            ": not held by ", container_->dir().string()));
  }
  const BankEntry* bank = manifest.FindBank(key.layer);
  const size_t index = static_cast<size_t>(bank - manifest.banks.data());
  const std::string path = container_->BankPath(*bank).string();
  auto buffer = std::make_shared<AlignedBuffer>(bank->record_bytes);
  std::span<std::byte> bytes = buffer->span().first(bank->record_bytes);
  absl::Status status = options_.pread(files_[index].fd.get(), bytes, *offset, path);
  if (!status.ok()) {
    return Annotate(status, absl::StrCat("expert ", key.expert, " of layer ", key.layer));
  }
  status = CheckRecord(bytes, container_->Expectation(key.layer, key.expert), options_.verify);
  if (!status.ok()) {
    return absl::Status(status.code(),
                        absl::StrCat(status.message(), " (", path, " @", *offset, ")"));
  }
  return ExpertRecord{.key = key, .buffer = std::move(buffer), .record_bytes = bank->record_bytes};
}

}  // namespace warp
