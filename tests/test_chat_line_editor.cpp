// The pieces under `ember chat`'s terminal: key decoding (escape sequences, bracketed paste,
// UTF-8), the edit buffer, history, the progress bar text and JSON string escaping.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/generation_stats.h"
#include "util/json.h"
#include "util/line_buffer.h"
#include "util/line_keys.h"
#include "util/progress.h"
#include "util/text_width.h"

using namespace ember;

namespace {

// Decodes all keys in `bytes`.
std::vector<Key> keys_of(const std::string& bytes) {
  size_t at = 0;
  const ByteSource source = [&](int) { return at < bytes.size() ? static_cast<unsigned char>(bytes[at++]) : -2; };
  std::vector<Key> keys;
  for (;;) {
    Key k = read_key(source);
    if (k.kind == KeyKind::Closed) return keys;
    keys.push_back(std::move(k));
  }
}

std::vector<KeyKind> kinds_of(const std::string& bytes) {
  std::vector<KeyKind> out;
  for (const Key& k : keys_of(bytes)) out.push_back(k.kind);
  return out;
}

}  // namespace

TEST_CASE("escape sequences decode to keys") {
  using K = KeyKind;
  CHECK(kinds_of("\x1b[A\x1b[B\x1b[C\x1b[D") == std::vector<K>{K::Up, K::Down, K::Right, K::Left});
  CHECK(kinds_of("\x1bOA\x1bOH\x1bOF") == std::vector<K>{K::Up, K::Home, K::End});
  CHECK(kinds_of("\x1b[H\x1b[F\x1b[1~\x1b[4~\x1b[3~") == std::vector<K>{K::Home, K::End, K::Home, K::End, K::Delete});
  CHECK(kinds_of("\x1b[1;5C\x1b[1;5D\x1b" "b\x1b" "f") == std::vector<K>{K::WordRight, K::WordLeft, K::WordLeft, K::WordRight});
  CHECK(kinds_of("\x01\x05\x03\x04\x0b\x15\x17\x0c\x7f\r\n") ==
        std::vector<K>{K::Home, K::End, K::Interrupt, K::EndOfFile, K::KillToEnd, K::KillToStart, K::KillWord,
                       K::ClearScreen, K::Backspace, K::Enter, K::Enter});
  CHECK(kinds_of("\x1b\r") == std::vector<K>{K::NewLine});
  CHECK(kinds_of("\x1b[99;9Z") == std::vector<K>{K::Ignored});  // unknown, consumed whole
}

TEST_CASE("bracketed paste is one key with normalised line ends, even with escapes inside") {
  const std::vector<Key> keys = keys_of("\x1b[200~one\r\ntwo\rthree\x1b[Afour\x1b[201~x");
  REQUIRE(keys.size() == 2);
  CHECK(keys[0].kind == KeyKind::Paste);
  CHECK(keys[0].text == "one\ntwo\nthree\x1b[Afour");
  CHECK(keys[1].text == "x");
}

TEST_CASE("UTF-8 characters arrive whole") {
  const std::vector<Key> keys = keys_of("h\xc3\xa9\xe4\xb8\xad\xf0\x9f\x99\x82");
  REQUIRE(keys.size() == 4);
  CHECK(keys[1].text == "\xc3\xa9");
  CHECK(keys[2].text == "\xe4\xb8\xad");
  CHECK(keys[3].text == "\xf0\x9f\x99\x82");
  CHECK(codepoint_columns(decode_at(keys[2].text, 0)) == 2);  // CJK is wide
  CHECK(codepoint_columns(U'e') == 1);
  CHECK(codepoint_columns(0x0301) == 0);  // combining acute accent
}

TEST_CASE("the edit buffer moves and deletes by code point, line and word") {
  LineBuffer b;
  b.insert("h\xc3\xa9llo w\xc3\xb6rld");
  b.left();
  b.left();
  b.left();
  b.backspace();  // removes the two-byte "ö"
  CHECK(b.text() == "h\xc3\xa9llo wrld");
  b.home();
  b.right();
  b.right();  // after "é"
  CHECK(b.cursor() == 3);
  b.erase_forward();
  CHECK(b.text() == "h\xc3\xa9lo wrld");
  b.end();
  b.kill_word();
  CHECK(b.text() == "h\xc3\xa9lo ");
  b.insert("x\ny z");
  b.home();  // start of the second line
  CHECK(b.cursor() == b.text().find('\n') + 1);
  b.kill_to_end();
  CHECK(b.text() == "h\xc3\xa9lo x\n");
  b.insert("abc");
  b.left();
  b.kill_to_start();
  CHECK(b.text() == "h\xc3\xa9lo x\nc");
  b.set("one two  three");
  b.word_left();
  CHECK(b.cursor() == 9);
  b.word_left();
  CHECK(b.cursor() == 4);
  b.word_right();
  CHECK(b.cursor() == 7);
}

TEST_CASE("history browses older and newer entries and restores the draft") {
  History h(3);
  h.add("a");
  h.add("b");
  h.add("b");  // immediate repeat: skipped
  h.add("");
  h.add("c");
  h.add("d");  // capacity 3: "a" falls out
  CHECK(h.entries() == std::vector<std::string>{"b", "c", "d"});
  h.start("draft");
  CHECK(*h.older() == "d");
  CHECK(*h.older() == "c");
  CHECK(*h.older() == "b");
  CHECK(h.older() == nullptr);
  CHECK(*h.newer() == "c");
  CHECK(*h.newer() == "d");
  CHECK(*h.newer() == "draft");
  CHECK(h.newer() == nullptr);
}

TEST_CASE("progress bar text") {
  CHECK(ProgressBar::render("load", 0.0f, 20) == "load [>       ]   0%");
  CHECK(ProgressBar::render("load", 0.5f, 20) == "load [====>   ]  50%");
  CHECK(ProgressBar::render("load", 1.0f, 20) == "load [========] 100%");
  CHECK(ProgressBar::render("load", 7.0f, 20) == "load [========] 100%");  // clamped
  CHECK(ProgressBar::render("load", 0.5f, 20).size() == 20);
}

TEST_CASE("JSON strings escape control characters and never carry invalid UTF-8") {
  CHECK(json::quote("a\"b\\c\nd\te\x01") == "\"a\\\"b\\\\c\\nd\\te\\u0001\"");
  CHECK(json::quote("caf\xc3\xa9 \xe4\xb8\xad") == "\"caf\xc3\xa9 \xe4\xb8\xad\"");
  CHECK(json::quote("bad \xff end") == "\"bad \xef\xbf\xbd end\"");
  CHECK(json::quote("cut \xe4\xb8") == "\"cut \xef\xbf\xbd\xef\xbf\xbd\"");
  CHECK(json::quote("\xc0\xaf") == "\"\xef\xbf\xbd\xef\xbf\xbd\"");  // overlong encoding of '/'
}
