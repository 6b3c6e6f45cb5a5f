// The GBNF parser and the byte-level matcher against hand-checked strings, the token mask
// against a brute-force check (every token's bytes fed to the matcher) over a small
// vocabulary, and llama.cpp's own grammar files parsing.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "grammar/gbnf_parser.h"
#include "grammar/matcher.h"
#include "grammar/token_grammar.h"
#include "grammar/token_matcher.h"
#include "grammar/utf8_ranges.h"
#include "util/error.h"

using namespace ember;
using namespace ember::grammar;

namespace {

std::shared_ptr<const Grammar> compile(std::string_view text) { return std::make_shared<const Grammar>(parse_gbnf(text)); }

// Whether the whole string is in the language (fed in one piece, or byte by byte).
bool matches(const std::shared_ptr<const Grammar>& g, std::string_view s, bool bytewise = false) {
  Matcher m(g);
  if (bytewise) {
    for (char c : s)
      if (!m.accept(std::string_view(&c, 1))) return false;
  } else if (!m.accept(s)) {
    return false;
  }
  return m.can_end();
}

// Whether s is a prefix of some string in the language.
bool is_prefix(const std::shared_ptr<const Grammar>& g, std::string_view s) {
  Matcher m(g);
  return m.accept(s);
}

std::string error_of(std::string_view text) {
  try {
    parse_gbnf(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

const char* kJson = R"(
root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}" ws
array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]" ws
string ::=
  "\"" (
    [^"\\\x7F\x00-\x1F] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) # escapes
  )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)";

}  // namespace

TEST_CASE("literals, classes, groups and repetition") {
  auto g = compile("root ::= \"ab\" [c-e]+ (\"x\" | \"yz\")? [0-9]{2,3}\n");
  CHECK(matches(g, "abc12"));
  CHECK(matches(g, "abcdeyz123"));
  CHECK(matches(g, "abcx99", true));
  CHECK_FALSE(matches(g, "ab12"));      // + needs one
  CHECK_FALSE(matches(g, "abc1"));      // {2,3}
  CHECK_FALSE(matches(g, "abc1234"));
  CHECK_FALSE(matches(g, "abcy12"));
  CHECK(is_prefix(g, "abcy"));
  CHECK_FALSE(is_prefix(g, "abf"));
}

TEST_CASE("Unicode classes match whole UTF-8 characters, split anywhere") {
  auto g = compile("root ::= [^a]+ \"é\" .\n");
  CHECK(matches(g, "b\xE2\x82\xAC" "é€"));  // "b€é€"
  CHECK(matches(g, "日本éx", true));
  CHECK_FALSE(matches(g, "aé€"));
  CHECK_FALSE(is_prefix(g, "\xE2\x82\x41"));  // a broken sequence
  CHECK_FALSE(is_prefix(g, "\xED\xA0\x80"));  // a surrogate
  CHECK(is_prefix(g, "\xF0\x9F"));            // half an emoji
}

TEST_CASE("UTF-8 sequences cover exactly the encodings of a range") {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    uint32_t lo = rng() % 0x110000, hi = rng() % 0x110000;
    if (trial % 3 == 0) hi = lo + rng() % 300;
    if (hi > kMaxCodePoint) hi = kMaxCodePoint;
    if (lo > hi) std::swap(lo, hi);
    std::vector<ByteRangeSequence> seqs;
    utf8_sequences(lo, hi, seqs);
    auto covered = [&](const std::string& e) {
      for (const auto& s : seqs) {
        if (s.size() != e.size()) continue;
        bool all = true;
        for (size_t i = 0; i < s.size(); ++i) all &= static_cast<uint8_t>(e[i]) >= s[i].first && static_cast<uint8_t>(e[i]) <= s[i].second;
        if (all) return true;
      }
      return false;
    };
    for (int k = 0; k < 200; ++k) {
      const uint32_t cp = rng() % 0x110000;
      if (cp >= 0xD800 && cp <= 0xDFFF) continue;
      CHECK(covered(encode_utf8(cp)) == (cp >= lo && cp <= hi));
    }
  }
}

TEST_CASE("the JSON grammar") {
  auto g = compile(kJson);
  CHECK(matches(g, R"({"a": [1, 2.5e3, "x\"y\u00e9"], "b": {"c": null}})"));
  CHECK(matches(g, "{}", true));
  CHECK(matches(g, R"({"k": "€"})", true));
  CHECK_FALSE(matches(g, R"({"a": 01})"));
  CHECK_FALSE(matches(g, R"({"a" 1})"));
  CHECK_FALSE(matches(g, R"({"a": "x)"));
  CHECK(is_prefix(g, R"({"a": [1, )"));
  CHECK_FALSE(matches(g, "[1]"));  // root is an object
}

TEST_CASE("syntax errors name line and column") {
  CHECK(error_of("root ::= \"a\"\nx ::= \"b\" ) \n") == "grammar line 2 column 11: unexpected ')'");
  CHECK(error_of("root ::= \"a\" )\n") == "grammar line 1 column 14: unexpected ')'");
  CHECK(error_of("root ::= (\"a\"\n").find("expected ')'") != std::string::npos);
  CHECK(error_of("root ::= \"\\q\"\n").find("unknown escape") != std::string::npos);
  CHECK(error_of("root ::= foo\n") == "grammar: rule 'foo' is used but never defined");
  CHECK(error_of("root ::= root \"a\" | \"b\"\n") == "grammar: rule 'root' is left-recursive");
  CHECK(error_of("root ::= x\nx ::= [a]? root\n").find("left-recursive") != std::string::npos);
  CHECK(error_of("a ::= \"x\"\n").find("no rule 'root'") != std::string::npos);
  CHECK(error_of("root ::= \"a\"{3,1}\n").find("maximum below") != std::string::npos);
  CHECK(error_of("root ::= \"a\"{99999}\n").find("repetition count") != std::string::npos);
  CHECK(error_of("root ::= <tool>\n").find("token references") != std::string::npos);
}

TEST_CASE("pathological grammars are refused or bounded, not followed forever") {
  // Repetitions adding up past the element bound.
  std::string big = "root ::= ";
  for (int i = 0; i < 120; ++i) big += "\"a\"{10000} ";
  CHECK(error_of(big + "\n").find("more than") != std::string::npos);
  // Exponentially ambiguous: a* a* a* ... keeps many parses; bounded by kMaxStacks.
  std::string text = "root ::= ";
  for (int i = 0; i < 40; ++i) text += "\"a\"* ";
  auto g = compile(text + "\n");
  Matcher m(g);
  bool threw = false;
  try {
    for (int i = 0; i < 100; ++i) m.accept("a");
  } catch (const Error&) {
    threw = true;
  }
  CHECK((threw || m.can_end()));
}

TEST_CASE("rollback returns to earlier states") {
  auto g = compile(kJson);
  Matcher m(g);
  REQUIRE(m.accept("{\"a\""));
  REQUIRE(m.accept(": 1"));
  REQUIRE(m.accept("}"));
  CHECK(m.can_end());
  m.rollback(2);
  CHECK_FALSE(m.can_end());
  CHECK_FALSE(m.accept("}"));
  CHECK(m.accept(": [true]}"));
  CHECK(m.can_end());
  CHECK(m.steps() == 2);
}

TEST_CASE("the token mask equals a brute-force check of every token") {
  // A small vocabulary with multi-byte characters split across tokens.
  std::vector<std::string> pieces = {"{", "}", "\"", "\":", " ", "a", "ab", "\"a", "1", "12", ",", "\xC3",
                                     "\xA9", "é", "\xE2\x82", "\xAC\"", "null", "nu", "ll", "[", "]", "\n", "\\", "\\\"",
                                     "tr", "ue", "{\"", "\"}", "", "x"};
  std::vector<bool> in(pieces.size(), true);
  in[28] = false;  // a control token (no bytes)
  const std::vector<int32_t> ends = {28};
  auto tg = std::make_shared<const TokenGrammar>(compile(kJson), std::make_shared<const TokenTrie>(pieces, in));
  std::mt19937 rng(3);
  for (int run = 0; run < 30; ++run) {
    TokenMatcher tm(tg);
    Matcher brute(tg->grammar());
    for (int step = 0; step < 40; ++step) {
      std::vector<float> logits(pieces.size(), 0.0f);
      const size_t n = tm.mask(logits, ends);
      std::vector<int32_t> ok;
      for (size_t t = 0; t < pieces.size(); ++t) {
        bool expect;
        if (t == 28) {
          expect = brute.can_end();
        } else {
          expect = brute.accept(pieces[t]);
          if (expect) brute.rollback(1);
        }
        CHECK_MESSAGE(std::isinf(logits[t]) == !expect, "token ", t, " at step ", step);
        if (expect) ok.push_back(static_cast<int32_t>(t));
      }
      CHECK(n == ok.size());
      if (ok.empty()) break;
      const int32_t pick = ok[rng() % ok.size()];
      if (pick == 28) break;
      REQUIRE(tm.accept(pick));
      REQUIRE(brute.accept(pieces[pick]));
    }
  }
}

TEST_CASE("llama.cpp's grammar files parse") {
  const char* home = std::getenv("HOME");
  const std::filesystem::path dir = std::filesystem::path(home ? home : "") /
                                    ".cache/ember-llamacpp/0.3.36/llama_cpp_python-0.3.36/vendor/llama.cpp/grammars";
  if (!std::filesystem::exists(dir)) {
    MESSAGE("llama.cpp sources not extracted (tools/lib/llamacpp-build.sh): skipped");
    return;
  }
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().extension() != ".gbnf") continue;
    std::ifstream f(e.path());
    std::stringstream ss;
    ss << f.rdbuf();
    CAPTURE(e.path().string());
    CHECK_NOTHROW(parse_gbnf(ss.str()));
    ++n;
  }
  CHECK(n >= 5);
  std::ifstream f(dir / "arithmetic.gbnf");
  std::stringstream ss;
  ss << f.rdbuf();
  auto g = std::make_shared<const Grammar>(parse_gbnf(ss.str()));
  CHECK(matches(g, "(1+2)*3 = x\n"));
  CHECK_FALSE(matches(g, "(1+2)*3\n"));
}
