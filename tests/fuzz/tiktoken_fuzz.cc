// A tiktoken BPE file (`base64(token) rank` lines), loaded with Kimi's
// pre-tokenization pattern and two special tokens as computed does, then a
// few encodes and decodes. Load takes the file's text; no tokenizer_config.json
// is beside it.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "computed/text/tiktoken.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warp::text;
  warp::fuzz::Init();
  static const LoadOptions options{
      .tiktoken_pattern = "kimi",
      .tiktoken_special_tokens = {{"<|im_end|>", 300}, {"[BOS]", 301}},
  };
  const auto path = warp::fuzz::ScratchDir() / "tiktoken" / "tiktoken.model";
  absl::StatusOr<std::unique_ptr<TiktokenTokenizer>> tokenizer =
      TiktokenTokenizer::Load(path, warp::fuzz::AsText(data, size), options);
  if (!tokenizer.ok()) return 0;
  for (const char* text :
       {"", "Hello, world! 123  ab\n\tÉté 日本語 [BOS]<|im_end|> 🙂", "aaaaaaaa"}) {
    absl::StatusOr<std::vector<int32_t>> ids = (*tokenizer)->Encode(text, true);
    if (ids.ok()) (void)(*tokenizer)->Decode(*ids, false);
  }
  const int32_t vocab = (*tokenizer)->vocab_size();
  const std::vector<int32_t> ids = {0, 1, vocab / 2, vocab - 1, vocab, 300};
  (void)(*tokenizer)->Decode(ids, true);
  (void)(*tokenizer)->Decode(ids, false);
  return 0;
}
