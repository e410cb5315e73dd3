// Record footers, as the two readers of untrusted records meet them:
//   - a client checking a record it received (CheckReceived: the daemon may
//     be wrong or hostile), over the input as it is;
//   - a container whose bank file ends with the input as its last record:
//     Container::Open checks the first and last footers, then `expertd verify`
//     reads every record and checks footers and CRC32C.
// Seeds are the tiny container's last record and near-copies of it.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "common/client/received_record.h"
#include "common/format/bank_format.h"
#include "common/format/container.h"
#include "common/io/file.h"
#include "expertd/verify.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// The tiny container's bank of layer 1 (4 records of 4096 bytes) less its last record.
const std::string& BankPrefix(const std::filesystem::path& bank) {
  static const std::string* prefix = [&] {
    auto bytes = warp::ReadFileToString(bank);
    if (!bytes.ok() || bytes->size() < warp::kBankAlignment) std::abort();
    return new std::string(bytes->substr(0, bytes->size() - warp::kBankAlignment));
  }();
  return *prefix;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warp;
  fuzz::Init();
  const auto bytes = std::as_bytes(std::span(data, size));
  const auto& dir = fuzz::TinyContainer("footer.warp");
  const auto bank = dir / BankFileName(1);
  const std::string& prefix = BankPrefix(bank);

  (void)CheckReceived(bytes, {.layer = 1, .expert = 3}, 0x0123456789abcdefull);

  fuzz::WriteFileOrDie(bank, prefix + std::string(fuzz::AsText(data, size)));
  absl::StatusOr<std::unique_ptr<Container>> container = Container::Open(dir);
  if (!container.ok()) return 0;
  (void)expertd::VerifyContainer(dir,
                                 {.read_chunk_bytes = 4 * kBankAlignment, .check_trunk = false});
  return 0;
}
