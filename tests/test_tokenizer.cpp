// Tokenizer tests against the test vectors of real vocabularies (../shared/vocab, made with the
// Hugging Face tokenizers by llama.cpp's converter scripts), plus round trips and streaming.
#include <doctest/doctest.h>

#include <filesystem>
#include <random>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "test_tokenizer_util.h"

using ember::Tokenizer;
using ember::test::load_vocab;
using ember::test::read_cases;
using ember::test::vocab_path;

namespace {

std::string show(std::string_view s) { return ember::test::escape(s); }

std::string join(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : " ") + std::to_string(id);
  return s;
}

void check_vectors(const char* name) {
  const Tokenizer tok = load_vocab(name);
  const auto cases = read_cases(name);
  REQUIRE(cases.size() > 10);
  int failures = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const auto got = tok.encode(cases[i].text, /*add_special=*/false, /*parse_special=*/false);
    if (got != cases[i].ids) {
      ++failures;
      MESSAGE(name << " case " << i << " '" << show(cases[i].text) << "'\n  want " << join(cases[i].ids)
                   << "\n  got  " << join(got));
    }
  }
  CHECK_MESSAGE(failures == 0, name << ": " << failures << " of " << cases.size() << " cases differ");
}

}  // namespace

TEST_CASE("vectors: llama-spm") { check_vectors("llama-spm"); }
TEST_CASE("vectors: gpt-2") { check_vectors("gpt-2"); }
TEST_CASE("vectors: falcon") { check_vectors("falcon"); }
TEST_CASE("vectors: deepseek-llm") { check_vectors("deepseek-llm"); }
TEST_CASE("vectors: refact") { check_vectors("refact"); }
TEST_CASE("vectors: starcoder") { check_vectors("starcoder"); }

TEST_CASE("round trip: decode(encode(x)) == x for every vocabulary") {
  // All test strings of all vector files, plus bytes that are not valid UTF-8.
  std::vector<std::string> texts;
  for (const char* name : ember::test::kVectorVocabs) {
    for (auto& c : read_cases(name)) texts.push_back(c.text);
  }
  texts.push_back("invalid \xff\xfe bytes \xc3 and a cut emoji \xf0\x9f\xa6");
  texts.push_back("tabs\tand\r\nCRLF  and   runs    of     spaces      \n\n\n");
  const std::string invalid_utf8 = texts[texts.size() - 2];
  for (const std::string name : ember::test::kAllVocabs) {
    CAPTURE(name);
    const Tokenizer tok = load_vocab(name);
    // Vocabularies trained on valid UTF-8 may lack tokens for bytes that never occur in it
    // (C0, C1, F5..FF): they cannot represent such input, so it is left out for them.
    bool all_bytes = true;
    for (int b = 0; b < 256; ++b) {
      const std::string byte(1, static_cast<char>(b));
      all_bytes = all_bytes && tok.decode(tok.encode(byte, false, false)) == byte;
    }
    for (const std::string& x : texts) {
      if (x == invalid_utf8 && !all_bytes) continue;
      CAPTURE(show(x));
      const auto ids = tok.encode(x, false, false);
      CHECK(tok.decode(ids) == x);
      // With BOS: the decoder skips it and still drops the space prefix.
      if (tok.add_bos()) CHECK(tok.decode(tok.encode(x, true, false)) == x);
    }
  }
}

TEST_CASE("streaming decoder equals the whole decode, one token at a time") {
  using SD = ember::StreamingDecoder;
  const std::string text = "Emoji \xf0\x9f\x98\xb6\xe2\x80\x8d\xf0\x9f\x8c\xab\xef\xb8\x8f, accents "
                           "C\xe1\xbb\xad" "a Vi\xe1\xbb\x87t, CJK \xe6\x88\x91\xe6\x83\xb3 and a lone \xff byte";
  for (const std::string name : ember::test::kAllVocabs) {
    CAPTURE(name);
    const Tokenizer tok = load_vocab(name);
    const auto ids = tok.encode(text, false, false);
    for (auto mode : {SD::LeadingSpace::StripFirst, SD::LeadingSpace::Keep}) {
      SD d(tok, mode);
      std::string streamed;
      for (int32_t id : ids) {
        const std::string part = d.push(id);
        // Nothing printed may end inside a character that more bytes could still complete.
        CHECK(ember::test::ends_on_character_boundary(part));
        streamed += part;
      }
      streamed += d.flush();
      if (mode == SD::LeadingSpace::StripFirst) {
        CHECK(streamed == tok.decode(ids));
      } else {
        std::string pieces;
        for (int32_t id : ids) {
          if (!tok.is_control(id)) pieces += tok.piece(id);
        }
        CHECK(streamed == pieces);
      }
    }
  }
}

TEST_CASE("streaming decoder holds back a split emoji until its last byte") {
  const Tokenizer tok = load_vocab("llama-spm");
  // U+1F999 is not in the Llama 2 vocabulary: it becomes four <0xNN> byte tokens.
  const auto ids = tok.encode("\xf0\x9f\xa6\x99", false, false);
  REQUIRE(ids.size() == 5);  // "▁" then four bytes
  ember::StreamingDecoder d(tok, ember::StreamingDecoder::LeadingSpace::Keep);
  CHECK(d.push(ids[0]) == " ");
  CHECK(d.push(ids[1]).empty());
  CHECK(d.push(ids[2]).empty());
  CHECK(d.push(ids[3]).empty());
  CHECK(d.push(ids[4]) == "\xf0\x9f\xa6\x99");
  CHECK(d.flush().empty());
}

TEST_CASE("round trip on random text (fixed seed) for every vocabulary") {
  // Random mixes of ASCII, Latin-1, Cyrillic, CJK, Hangul, emoji with ZWJ and variation
  // selectors, combining marks, exotic spaces and line breaks; plus raw bytes where the
  // vocabulary can represent every byte.
  static const char32_t kPool[] = {U'a', U'Z', U'0', U'9', U' ', U' ', U' ', U'\n', U'\t', U'\r', U'\'', U'.',
                                   U'(', U'$', 0xE9, 0xDF, 0x430, 0x44F, 0x4E2D, 0x6587, 0xD55C, 0x1F600,
                                   0x1F999, 0x200D, 0xFE0F, 0x301, 0x3000, 0xA0, 0x2003, 0x85, 0x663, 0xBD};
  std::mt19937 rng(1234);
  auto random_text = [&](bool raw_bytes) {
    std::string s;
    const int n = std::uniform_int_distribution<int>(1, 40)(rng);
    for (int i = 0; i < n; ++i) {
      if (raw_bytes && rng() % 10 == 0) {
        s += static_cast<char>(rng() % 256);
      } else {
        ember::append_utf8(s, kPool[rng() % std::size(kPool)]);
      }
    }
    return s;
  };
  for (const std::string name : ember::test::kAllVocabs) {
    CAPTURE(name);
    const Tokenizer tok = load_vocab(name);
    const bool all_bytes = name == "llama-spm" || name == "phi-3" || name == "baichuan" || name == "gpt-2";
    int failures = 0;
    for (int i = 0; i < 300; ++i) {
      const std::string x = random_text(all_bytes && i % 2 == 1);
      if (tok.decode(tok.encode(x, false, false)) != x && ++failures <= 3) MESSAGE("differs: '" << show(x) << "'");
    }
    CHECK(failures == 0);
  }
}
