// The Unicode facts the tokenizers need: UTF-8 decoding that never fails (an invalid byte is
// its own "code point", so arbitrary bytes survive tokenization), general-category classes and
// White_Space for the pre-tokenizer patterns, and GPT-2's byte <-> character mapping.
#pragma once
#include "util/utf8.h"  // append_utf8
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace ember::unicode {

// Coarse general category: the first letter of the Unicode category (Lu/Ll/... -> Letter).
enum class CharClass : uint8_t { Letter, Number, Punctuation, Symbol, Mark, Separator, Other };

// Class of a code point: from utf8proc when ember is built with it, otherwise from the table
// generated from the Unicode Character Database (unicode_table.inc).
CharClass char_class(char32_t cp);
// The same from the generated table only (for the cross-check test).
CharClass char_class_from_table(char32_t cp);
// The letter classes of o200k's pattern (gpt-4o, gpt-oss): [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}] is
// Upper or Both, [\p{Ll}\p{Lm}\p{Lo}\p{M}] Lower or Both (Both: Lm, Lo and the marks M).
enum class LetterCase : uint8_t { None, Upper, Lower, Both };
LetterCase letter_case(char32_t cp);
// The same from the generated table only (unicode_case_table.inc, for the cross-check test).
LetterCase letter_case_from_table(char32_t cp);
// Unicode White_Space property (what regex \s matches in the tokenizers' patterns).
bool is_whitespace(char32_t cp);

// Marks a byte that does not start a valid UTF-8 sequence (outside the code point range).
inline constexpr char32_t kInvalidByte = 0x110000;

struct Decoded {
  char32_t cp;  // kInvalidByte + byte for an invalid byte
  uint32_t len; // bytes consumed, >= 1
};
// Decodes the character at s[i] (i < s.size()). Overlong forms, surrogates and truncated
// sequences are rejected byte by byte.
Decoded decode_utf8(std::string_view s, size_t i);

// Length of the longest prefix of `s` that does not end inside a UTF-8 sequence that could
// still be completed by more bytes. Invalid bytes count as complete (they will never improve).
size_t complete_utf8_prefix(std::string_view s);

// GPT-2 byte-level mapping: every byte has a printable stand-in character.
const std::string& byte_to_bpe_char(uint8_t b);  // UTF-8 of the stand-in
int bpe_char_to_byte(char32_t cp);               // -1 when cp is no stand-in

}  // namespace ember::unicode
