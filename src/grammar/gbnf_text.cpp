#include "grammar/gbnf_text.h"

#include <fmt/format.h>

namespace ember::grammar {

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (char ch : bytes) {
    const auto c = static_cast<uint8_t>(ch);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += ch;
    } else if (c < 0x20 || c == 0x7F) {
      out += fmt::format("\\x{:02X}", c);
    } else {
      out += ch;  // GBNF reads literals as UTF-8; JSON text and names are valid UTF-8
    }
  }
  return out + "\"";
}

std::string gbnf_class(const std::vector<CodePointRange>& ranges, bool negate) {
  std::string out = negate ? "[^" : "[";
  for (const auto& [lo, hi] : ranges) {
    out += fmt::format("\\U{:08X}", lo);
    if (hi != lo) out += fmt::format("-\\U{:08X}", hi);
  }
  return out + "]";
}

}  // namespace ember::grammar
