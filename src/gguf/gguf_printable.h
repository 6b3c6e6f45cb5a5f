// Names, keys and string values from a file go into one-line error messages and listings:
// control bytes and invalid UTF-8 are escaped (\n, \xNN) and long text is cut, so hostile
// bytes cannot break the line. Valid UTF-8 (CJK tokens, emoji) passes through unchanged.
#pragma once
#include <string>
#include <string_view>

namespace ember::gguf {

std::string printable(std::string_view s, size_t max_bytes = 96);


}  // namespace ember::gguf
