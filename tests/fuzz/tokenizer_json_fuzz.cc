// A Hugging Face tokenizer.json: ParseTokenizerJson (the streamed vocab and
// merges, the rest a DOM), HfTokenizer::Create (every component: normalizer,
// pre-tokenizer regexes, BPE model, added tokens, post-processor, decoder),
// then a few encodes and decodes, the way a prompt and a generation use it.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "computed/text/hf_tokenizer.h"
#include "computed/text/tokenizer_json.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace warp::text;
  warp::fuzz::Init();
  absl::StatusOr<TokenizerJson> json =
      ParseTokenizerJson(warp::fuzz::AsText(data, size), "tokenizer.json");
  if (!json.ok()) return 0;
  absl::StatusOr<std::unique_ptr<HfTokenizer>> tokenizer =
      HfTokenizer::Create(*std::move(json), "tokenizer.json");
  if (!tokenizer.ok()) return 0;
  for (const char* text :
       {"", " Hello, world! 123  ab\n\tÉté 日本語 <s>[INST]</s> 🙂", "aaaaaaaa"}) {
    absl::StatusOr<std::vector<int32_t>> ids = (*tokenizer)->Encode(text, true);
    if (ids.ok()) (void)(*tokenizer)->Decode(*ids, false);
  }
  const int32_t vocab = (*tokenizer)->vocab_size();
  std::vector<int32_t> ids = {0, 1, vocab / 2, vocab - 1, vocab};
  (void)(*tokenizer)->Decode(ids, true);
  StreamingDecoder stream(**tokenizer);
  for (int32_t id : ids) (void)stream.Push(id);
  (void)stream.Flush();
  return 0;
}
