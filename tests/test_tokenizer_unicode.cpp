// Unicode facts used by the pre-tokenizers: UTF-8 decoding, character classes (utf8proc vs the
// table generated from the Unicode Character Database), and the streaming boundary rule.
#include <doctest/doctest.h>

#include "tokenizer/unicode.h"

using namespace ember::unicode;

TEST_CASE("decode_utf8 accepts valid characters and rejects malformed ones byte by byte") {
  CHECK(decode_utf8("A", 0).cp == U'A');
  CHECK(decode_utf8("\xc3\xa9", 0).cp == 0xE9);
  CHECK(decode_utf8("\xf0\x9f\xa6\x99", 0).cp == 0x1F999);
  CHECK(decode_utf8("\xf0\x9f\xa6\x99", 0).len == 4);
  for (const char* bad : {"\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe0\x80\x80", "\x80", "\xff", "\xc3"}) {
    CAPTURE(bad);
    CHECK(decode_utf8(bad, 0).cp >= kInvalidByte);
    CHECK(decode_utf8(bad, 0).len == 1);
  }
}

TEST_CASE("complete_utf8_prefix holds back only sequences that can still complete") {
  CHECK(complete_utf8_prefix("abc") == 3);
  CHECK(complete_utf8_prefix("a\xf0\x9f") == 1);
  CHECK(complete_utf8_prefix("a\xf0\x9f\xa6") == 1);
  CHECK(complete_utf8_prefix("a\xf0\x9f\xa6\x99") == 5);
  CHECK(complete_utf8_prefix("a\xc3") == 1);
  CHECK(complete_utf8_prefix("\xff") == 1);          // never valid: nothing to wait for
  CHECK(complete_utf8_prefix("x\xed\xa0") == 3);     // a surrogate can never complete
  CHECK(complete_utf8_prefix("x\xe0\x80") == 3);     // nor an overlong form
  CHECK(complete_utf8_prefix("x\xe0\xa0") == 1);     // U+0800.. can
}

TEST_CASE("character classes of representative code points") {
  CHECK(char_class(U'A') == CharClass::Letter);
  CHECK(char_class(0x4E2D) == CharClass::Letter);     // 中
  CHECK(char_class(U'7') == CharClass::Number);
  CHECK(char_class(0x0663) == CharClass::Number);     // ARABIC-INDIC DIGIT THREE
  CHECK(char_class(0x00BD) == CharClass::Number);     // ½
  CHECK(char_class(U'!') == CharClass::Punctuation);
  CHECK(char_class(0x00BF) == CharClass::Punctuation);  // ¿
  CHECK(char_class(U'$') == CharClass::Symbol);
  CHECK(char_class(0x20AC) == CharClass::Symbol);     // €
  CHECK(char_class(0x1F600) == CharClass::Symbol);    // 😀
  CHECK(char_class(0x0301) == CharClass::Mark);       // combining acute
  CHECK(char_class(0x3000) == CharClass::Separator);
  CHECK(char_class(0x200D) == CharClass::Other);      // ZWJ (Cf)
  CHECK(is_whitespace(0x3000));
  CHECK(is_whitespace(U'\n'));
  CHECK(is_whitespace(0x85));
  CHECK_FALSE(is_whitespace(0x200B));                 // ZERO WIDTH SPACE is not White_Space
  CHECK_FALSE(is_whitespace(0x1C));
}

TEST_CASE("the generated table agrees with utf8proc wherever both know the code point") {
  // They may differ only where a newer Unicode version (utf8proc's) assigned a code point the
  // table's older database leaves unassigned (class Other).
  int differ = 0;
  int newer_only = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    const CharClass a = char_class(cp);
    const CharClass b = char_class_from_table(cp);
    if (a == b) continue;
    if (b == CharClass::Other) ++newer_only;
    else ++differ;
  }
  CHECK(differ == 0);
  CHECK(newer_only < 6000);  // Unicode 15 added 4489 characters
}

TEST_CASE("the generated letter-case table agrees with utf8proc wherever both know the code point") {
  int differ = 0, newer_only = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    const LetterCase a = letter_case(cp), b = letter_case_from_table(cp);
    if (a == b) continue;
    if (b == LetterCase::None && char_class_from_table(cp) == CharClass::Other) ++newer_only;
    else ++differ;
  }
  CHECK(differ == 0);
  CHECK(newer_only < 6000);
  CHECK(letter_case(U'\u00c9') == LetterCase::Upper);   // É Lu
  CHECK(letter_case(U'\u01c5') == LetterCase::Upper);   // ǅ Lt
  CHECK(letter_case(U'\u00e9') == LetterCase::Lower);   // é Ll
  CHECK(letter_case(U'\u4e16') == LetterCase::Both);    // 世 Lo
  CHECK(letter_case(U'\u0301') == LetterCase::Both);    // combining acute, Mn
  CHECK(letter_case(U'1') == LetterCase::None);
}

TEST_CASE("byte-level stand-ins are a bijection over the 256 bytes") {
  for (int b = 0; b < 256; ++b) {
    const std::string& s = byte_to_bpe_char(static_cast<uint8_t>(b));
    CHECK(bpe_char_to_byte(decode_utf8(s, 0).cp) == b);
  }
  CHECK(byte_to_bpe_char(' ') == "\xc4\xa0");   // Ġ
  CHECK(byte_to_bpe_char('\n') == "\xc4\x8a");  // Ċ
  CHECK(byte_to_bpe_char('A') == "A");
}
