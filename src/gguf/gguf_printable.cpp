#include "gguf/gguf_printable.h"

#include <fmt/format.h>

#include <algorithm>

#include "util/utf8.h"

namespace ember::gguf {

std::string printable(std::string_view s, size_t max_bytes) {
  std::string out;
  out.reserve(std::min(s.size(), max_bytes) + 8);
  size_t i = 0;
  while (i < s.size() && out.size() < max_bytes) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const size_t n = utf8_valid_length(s, i);
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (n == 0 || c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out.append(s.substr(i, n));
    i += n == 0 ? 1 : n;
  }
  if (i < s.size()) out += fmt::format("...({} bytes)", s.size());
  return out;
}

}  // namespace ember::gguf
