#pragma once

// The pre-tokenization regexes of tiktoken encodings, by name. tiktoken files
// carry only the ranks; the pattern lives in the encoding's code.

#include <string>
#include <string_view>

namespace warp::text {

// Kimi K2's (tokenization_kimi.py). It uses Rust/Python-regex class
// intersection (`[...&&[^\p{Han}]]`), which regex_translate.h rewrites.
extern const std::string_view kKimiPattern;
extern const std::string_view kCl100kBasePattern;  // tiktoken's cl100k_base pat_str
extern const std::string_view kO200kBasePattern;   // tiktoken's o200k_base pat_str

// "kimi", "cl100k_base" or "o200k_base" -> that pattern; "" -> Kimi's;
// anything else is taken to be a regex and returned as is.
std::string ResolveTiktokenPattern(std::string_view name_or_regex);

}  // namespace warp::text
