// The hand-written pre-tokenizer scanners against the families' regular expressions, evaluated
// by Python's `regex` module (tests/data/tokenizer/gen_pretokenize_golden.py). This covers the
// families without vocabulary test vectors here (llama3, qwen2, deepseek-coder, default, gpt-4o:
// tiktoken's o200k_base pattern).
#include <doctest/doctest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "test_tokenizer_util.h"
#include "tokenizer/pretokenizer.h"
#include "util/error.h"

namespace {

std::string from_hex(std::string_view hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out += static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16));
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  return parts;
}

}  // namespace

TEST_CASE("pre-tokenizers split exactly like their regular expressions") {
  const std::string golden = ember::test::read_file(std::string(EMBER_SOURCE_DIR) + "/tests/data/tokenizer/pretokenize_golden.txt");
  std::map<std::string, int> checked, failed;
  for (const std::string& line : split(golden, '\n')) {
    const auto fields = split(line, '\t');
    REQUIRE(fields.size() == 3);
    const std::string text = from_hex(fields[1]);
    std::vector<std::string> want;
    for (const auto& h : split(fields[2], ',')) want.push_back(from_hex(h));
    std::vector<std::string_view> got_views;
    ember::pretokenize(ember::pretokenizer_from_name(fields[0]), text, got_views);
    const std::vector<std::string> got(got_views.begin(), got_views.end());
    ++checked[fields[0]];
    if (got != want) {
      ++failed[fields[0]];
      std::string w, g;
      for (auto& p : want) w += "[" + ember::test::escape(p) + "]";
      for (auto& p : got) g += "[" + ember::test::escape(p) + "]";
      MESSAGE(fields[0] << " '" << ember::test::escape(text) << "'\n  want " << w << "\n  got  " << g);
    }
  }
  for (const auto& [family, n] : checked) {
    CAPTURE(family);
    CHECK(n > 40);
    CHECK(failed[family] == 0);
  }
  CHECK(checked.size() == 9);
}

TEST_CASE("an unknown tokenizer.ggml.pre is a clear Unsupported error") {
  try {
    (void)ember::pretokenizer_from_name("no-such-pre");
    FAIL("expected an error");
  } catch (const ember::Error& e) {
    CHECK(e.kind() == ember::ErrorKind::Unsupported);
    CHECK(std::string(e.what()).find("'no-such-pre'") != std::string::npos);
    CHECK(std::string(e.what()).find("llama-bpe") != std::string::npos);
  }
}
