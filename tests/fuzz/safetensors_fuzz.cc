// A safetensors file: the 8-byte header length, the JSON header, the data.
// Checkpoint::Open validates every entry (dtype, shape, offsets inside the
// file); each tensor that passes is then read back the ways the converter
// reads it, which must stay inside the file whatever the header said.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "computed/convert/safetensors.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warp;
  using namespace warp::computed;
  fuzz::Init();
  static const std::filesystem::path dir = [] {
    const auto path = fuzz::ScratchDir() / "safetensors";
    std::filesystem::create_directories(path);
    return path;
  }();
  fuzz::WriteFileOrDie(dir / "model.safetensors", fuzz::AsText(data, size));
  absl::StatusOr<std::unique_ptr<Checkpoint>> checkpoint = Checkpoint::Open(dir);
  if (!checkpoint.ok()) return 0;
  std::vector<std::byte> raw(4096);
  std::vector<float> floats(1024);
  for (const auto& [name, tensor] : (*checkpoint)->tensors()) {
    const uint64_t n = std::min<uint64_t>(tensor.bytes, raw.size());
    (void)(*checkpoint)->Read(tensor, tensor.bytes - n, std::span(raw).first(n));
    if (IsCodeDtype(tensor.dtype) || tensor.shape.empty()) continue;
    const uint64_t cols = tensor.shape.back();
    if (cols == 0 || cols > floats.size()) continue;
    const SourceTensor* scale = (*checkpoint)->Find(name + "_scale_inv");
    (void)(*checkpoint)->ReadRowsAsFloat(tensor, scale, 0, 1, std::span(floats).first(cols));
  }
  return 0;
}
