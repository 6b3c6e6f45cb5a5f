// Special tokens (parse-special on/off, user-defined tokens), BOS/EOS per metadata and overrides,
// end-of-generation ids, pieces, and errors for bad input.
#include <doctest/doctest.h>

#include <algorithm>

#include "test_tokenizer_util.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

using ember::Tokenizer;
using ember::test::load_vocab;

TEST_CASE("parse_special turns control-token text into the token, and only then") {
  const Tokenizer gpt2 = load_vocab("gpt-2");
  const std::string text = "a<|endoftext|>b";
  const auto on = gpt2.encode(text, false, true);
  CHECK(on == std::vector<int32_t>{64, 50256, 65});
  const auto off = gpt2.encode(text, false, false);
  CHECK(std::find(off.begin(), off.end(), 50256) == off.end());
  CHECK(gpt2.decode(off) == text);
  CHECK(gpt2.decode(on) == "ab");                      // control tokens are not text...
  CHECK(gpt2.decode(on, /*render_special=*/true) == text);  // ...unless asked for

  const Tokenizer spm = load_vocab("llama-spm");
  const auto s_on = spm.encode("<s>Hi</s>", false, true);
  CHECK(s_on.front() == 1);
  CHECK(s_on.back() == 2);
  const auto s_off = spm.encode("<s>Hi</s>", false, false);
  CHECK(std::count(s_off.begin(), s_off.end(), 1) == 0);
  CHECK(spm.decode(s_off) == "<s>Hi</s>");
}

TEST_CASE("user-defined tokens are matched even without parse_special") {
  // mpt / gpt-neox add user-defined tokens for runs of spaces.
  const Tokenizer mpt = load_vocab("mpt");
  const auto ids = mpt.encode("x" + std::string(24, ' ') + "y", false, false);
  CHECK(std::find(ids.begin(), ids.end(), 50254) != ids.end());  // the 24-space token
  CHECK(mpt.decode(ids) == "x" + std::string(24, ' ') + "y");
}

TEST_CASE("BOS/EOS follow the metadata and can be overridden") {
  Tokenizer spm = load_vocab("llama-spm");  // add_bos_token = true, add_eos_token = false
  CHECK(spm.add_bos());
  CHECK_FALSE(spm.add_eos());
  CHECK(spm.encode("Hello", true, false) == std::vector<int32_t>{1, 15043});
  CHECK(spm.encode("Hello", false, false) == std::vector<int32_t>{15043});
  spm.set_add_bos(false);
  spm.set_add_eos(true);
  CHECK(spm.encode("Hello", true, false) == std::vector<int32_t>{15043, 2});

  const Tokenizer gpt2 = load_vocab("gpt-2");  // no add_bos key: byte-level BPE adds none
  CHECK_FALSE(gpt2.add_bos());
  CHECK(gpt2.encode("Hello", true, false) == std::vector<int32_t>{15496});

  const Tokenizer coder = load_vocab("deepseek-coder");  // add_bos_token = true
  CHECK(coder.encode("x", true, false).front() == 32013);
  CHECK(coder.is_eog(32014));
  CHECK(coder.is_control(32013));
  CHECK_FALSE(coder.is_control(100));
}

TEST_CASE("pieces and token texts") {
  const Tokenizer spm = load_vocab("llama-spm");
  CHECK(spm.piece(15043) == " Hello");
  CHECK(spm.token_text(15043) == "\xe2\x96\x81Hello");
  CHECK(spm.piece(13) == "\n");  // <0x0A>
  const Tokenizer gpt2 = load_vocab("gpt-2");
  CHECK(gpt2.piece(198) == "\n");
  CHECK(gpt2.token_text(198) == "\xc4\x8a");
  CHECK(gpt2.n_vocab() == 50257);
  CHECK_THROWS_AS((void)gpt2.piece(50257), ember::Error);
  CHECK_THROWS_AS((void)gpt2.piece(-1), ember::Error);
}

TEST_CASE("SentencePiece decode drops the space prefix only at the start") {
  const Tokenizer spm = load_vocab("llama-spm");
  CHECK(spm.decode(spm.encode("Hello world", true, false)) == "Hello world");
  CHECK(spm.decode(spm.encode(" Hello", false, false)) == " Hello");
  using SD = ember::StreamingDecoder;
  SD keep(spm, SD::LeadingSpace::Keep);  // continuing after a prompt: the space is real
  CHECK(keep.push(3186) == " world");
}

TEST_CASE("a vocabulary with an unknown pre-tokenizer is rejected with the name") {
  ember::Vocab v;
  v.model = ember::VocabModel::BytePairBpe;
  v.pre = "future-bpe";
  v.tokens = {{"a", 0.0f, ember::TokenType::Normal}};
  try {
    Tokenizer t(std::move(v));
    FAIL("expected an error");
  } catch (const ember::Error& e) {
    CHECK(e.kind() == ember::ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("future-bpe") != std::string::npos);
  }
}
