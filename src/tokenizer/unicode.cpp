#include "tokenizer/unicode.h"

#include <algorithm>
#include <array>
#include <utility>

#ifdef EMBER_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

namespace ember::unicode {

namespace {

struct ClassRange {
  uint32_t first;
  uint8_t cls;
};
constexpr ClassRange kClassRanges[] = {
#include "tokenizer/unicode_table.inc"
};
constexpr ClassRange kCaseRanges[] = {
#include "tokenizer/unicode_case_table.inc"
};

uint8_t range_value(const ClassRange* begin, const ClassRange* end, char32_t cp) {
  const auto* it = std::upper_bound(begin, end, cp, [](char32_t v, const ClassRange& r) { return v < r.first; });
  return (it - 1)->cls;
}

#ifdef EMBER_HAVE_UTF8PROC
CharClass class_from_utf8proc(char32_t cp) {
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL: case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO:
      return CharClass::Letter;
    case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL: case UTF8PROC_CATEGORY_NO:
      return CharClass::Number;
    case UTF8PROC_CATEGORY_PC: case UTF8PROC_CATEGORY_PD: case UTF8PROC_CATEGORY_PS:
    case UTF8PROC_CATEGORY_PE: case UTF8PROC_CATEGORY_PI: case UTF8PROC_CATEGORY_PF:
    case UTF8PROC_CATEGORY_PO:
      return CharClass::Punctuation;
    case UTF8PROC_CATEGORY_SM: case UTF8PROC_CATEGORY_SC: case UTF8PROC_CATEGORY_SK:
    case UTF8PROC_CATEGORY_SO:
      return CharClass::Symbol;
    case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC: case UTF8PROC_CATEGORY_ME:
      return CharClass::Mark;
    case UTF8PROC_CATEGORY_ZS: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP:
      return CharClass::Separator;
    default:
      return CharClass::Other;
  }
}
#endif

// ASCII is by far the most common input: classify it from a 128-entry table.
const std::array<CharClass, 128>& ascii_classes() {
  static const std::array<CharClass, 128> table = [] {
    std::array<CharClass, 128> t{};
    for (char32_t c = 0; c < 128; ++c) t[c] = char_class_from_table(c);
    return t;
  }();
  return table;
}

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes
// map to U+0100.. in byte order.
struct ByteMap {
  std::array<std::string, 256> to_char;
  std::array<int16_t, 512> from_cp;  // every stand-in is below U+0200
  ByteMap() {
    from_cp.fill(-1);
    int next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      const char32_t cp = printable ? static_cast<char32_t>(b) : static_cast<char32_t>(next++);
      append_utf8(to_char[b], cp);
      from_cp[cp] = static_cast<int16_t>(b);
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

}  // namespace

CharClass char_class_from_table(char32_t cp) {
  if (cp >= 0x110000) return CharClass::Other;
  return static_cast<CharClass>(range_value(std::begin(kClassRanges), std::end(kClassRanges), cp));
}

LetterCase letter_case_from_table(char32_t cp) {
  if (cp >= 0x110000) return LetterCase::None;
  return static_cast<LetterCase>(range_value(std::begin(kCaseRanges), std::end(kCaseRanges), cp));
}

LetterCase letter_case(char32_t cp) {
  if (cp < 128) {
    if (cp >= 'A' && cp <= 'Z') return LetterCase::Upper;
    return cp >= 'a' && cp <= 'z' ? LetterCase::Lower : LetterCase::None;
  }
  if (cp >= 0x110000) return LetterCase::None;
#ifdef EMBER_HAVE_UTF8PROC
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LT: return LetterCase::Upper;
    case UTF8PROC_CATEGORY_LL: return LetterCase::Lower;
    case UTF8PROC_CATEGORY_LM: case UTF8PROC_CATEGORY_LO: case UTF8PROC_CATEGORY_MN: case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
      return LetterCase::Both;
    default: return LetterCase::None;
  }
#else
  return letter_case_from_table(cp);
#endif
}

CharClass char_class(char32_t cp) {
  if (cp < 128) return ascii_classes()[cp];
  if (cp >= 0x110000) return CharClass::Other;
#ifdef EMBER_HAVE_UTF8PROC
  return class_from_utf8proc(cp);
#else
  return char_class_from_table(cp);
#endif
}

bool is_whitespace(char32_t cp) {
  // The White_Space property (PropList.txt); it has not changed since Unicode 6.3.
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F:
    case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

Decoded decode_utf8(std::string_view s, size_t i) {
  const auto b0 = static_cast<uint8_t>(s[i]);
  if (b0 < 0x80) return {b0, 1};
  const Decoded invalid{kInvalidByte + b0, 1};
  uint32_t len;
  char32_t cp;
  char32_t min;
  if ((b0 & 0xE0) == 0xC0) { len = 2; cp = b0 & 0x1F; min = 0x80; }
  else if ((b0 & 0xF0) == 0xE0) { len = 3; cp = b0 & 0x0F; min = 0x800; }
  else if ((b0 & 0xF8) == 0xF0) { len = 4; cp = b0 & 0x07; min = 0x10000; }
  else return invalid;
  if (i + len > s.size()) return invalid;
  for (uint32_t k = 1; k < len; ++k) {
    const auto b = static_cast<uint8_t>(s[i + k]);
    if ((b & 0xC0) != 0x80) return invalid;
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return invalid;
  return {cp, len};
}

size_t complete_utf8_prefix(std::string_view s) {
  // Only the last three bytes can belong to an unfinished sequence: find a lead byte there
  // whose sequence runs past the end while every byte after it is a continuation byte.
  const size_t n = s.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto b = static_cast<uint8_t>(s[n - back]);
    if ((b & 0xC0) == 0x80) continue;  // continuation: keep looking for its lead
    size_t need = 0;
    if ((b & 0xE0) == 0xC0) need = 2;
    else if ((b & 0xF0) == 0xE0) need = 3;
    else if ((b & 0xF8) == 0xF0) need = 4;
    if (need > back) {
      // Hold it back only if the bytes so far can begin a valid character: pad with the lowest
      // and the highest continuation byte (E0/F0 need a high second byte, ED/F4 a low one).
      bool could_complete = false;
      for (const char pad : {static_cast<char>(0x80), static_cast<char>(0xBF)}) {
        std::string t(s.substr(n - back));
        t.resize(need, pad);
        could_complete = could_complete || decode_utf8(t, 0).len == need;
      }
      return could_complete ? n - back : n;
    }
    return n;  // ASCII, an invalid byte, or a sequence that is complete
  }
  return n;
}

const std::string& byte_to_bpe_char(uint8_t b) { return byte_map().to_char[b]; }

int bpe_char_to_byte(char32_t cp) { return cp < 512 ? byte_map().from_cp[cp] : -1; }

}  // namespace ember::unicode
