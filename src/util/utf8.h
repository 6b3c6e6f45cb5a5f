// UTF-8 facts shared by the GGUF listings, JSON output (json::quote) and the tokenizer.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace ember {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there are not
// one (bad lead or continuation byte, truncated, overlong, surrogate, past U+10FFFF).
size_t utf8_valid_length(std::string_view s, size_t i);

// Appends the UTF-8 encoding of a code point (<= U+10FFFF).
void append_utf8(std::string& out, char32_t cp);

}  // namespace ember
