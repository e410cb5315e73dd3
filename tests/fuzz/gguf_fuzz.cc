// A GGUF file: header, metadata key/values, tensor directory. GgufFile::Open
// checks all of it against the file's size; then what is built from the
// metadata: the tokenizer files (GgufTokenizer) and the whole import
// (architecture, config.json, tensor names, chat template) the converter runs.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "computed/convert/gguf.h"
#include "computed/convert/gguf_import.h"
#include "computed/convert/gguf_tokenizer.h"
#include "computed/model/model_config.h"
#include "computed/model/parse_model_config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warp;
  using namespace warp::computed;
  fuzz::Init();
  const auto path = fuzz::ScratchDir() / "model.gguf";
  fuzz::WriteFileOrDie(path, fuzz::AsText(data, size));
  absl::StatusOr<std::unique_ptr<GgufFile>> file = GgufFile::Open(path);
  if (!file.ok()) return 0;
  std::vector<std::byte> bytes(256);
  for (const GgufTensor& tensor : (*file)->tensors()) {
    const uint64_t n = std::min<uint64_t>(tensor.bytes, bytes.size());
    (void)(*file)->Read(tensor, 0, std::span(bytes).first(n));
  }
  (void)GgufTokenizer(**file);
  absl::StatusOr<GgufImport> imported = ImportGguf(path);
  if (!imported.ok()) return 0;
  const auto model_type = imported->config.find("model_type");
  if (model_type != imported->config.end() && model_type->is_string()) {
    (void)ParseModelConfig(model_type->get<std::string>(), imported->config);
  }
  return 0;
}
