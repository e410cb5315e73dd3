#pragma once

// GPT-2's reversible map between bytes and printable characters, used by
// byte-level BPE: printable Latin-1 bytes stand for themselves, the other 68
// bytes for U+0100..U+0143 in order (so ' ' is 'Ġ' U+0120, '\n' is 'Ċ').

#include <cstdint>
#include <string>
#include <string_view>

namespace warp::text {

// Each byte of `bytes` replaced by its character (UTF-8).
std::string BytesToChars(std::string_view bytes);

// The byte that `code_point` stands for, or -1 if it stands for none.
int CharToByte(char32_t code_point);

}  // namespace warp::text
