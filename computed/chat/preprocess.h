#pragma once

// The source rewrites @huggingface/jinja applies before tokenizing (see
// lexer.h for the list), done by hand instead of with its regular
// expressions, and keeping each output byte's offset in the original source
// so that errors can name the line and column the author sees.
//
// Thread-safe: pure function.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace warp::chat {

struct Preprocessed {
  std::string text;
  std::vector<size_t> origin;  // origin[i]: source offset of text[i]; one extra entry for the end
};

Preprocessed Preprocess(std::string_view source);

}  // namespace warp::chat
