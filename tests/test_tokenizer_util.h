// Shared helpers of the tokenizer tests: the vocabularies in ../shared/vocab and their vectors.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace ember::test {

inline constexpr const char* kVectorVocabs[] = {"llama-spm", "gpt-2", "falcon", "deepseek-llm", "refact", "starcoder"};
inline constexpr const char* kAllVocabs[] = {"llama-spm", "phi-3", "baichuan", "gpt-2", "falcon", "deepseek-llm",
                                             "deepseek-coder", "refact", "starcoder", "mpt", "gpt-neox"};

inline std::string vocab_path(const std::string& name) {
  return std::string(EMBER_SHARED_DIR) + "/vocab/ggml-vocab-" + name + ".gguf";
}

inline Tokenizer load_vocab(const std::string& name) {
  return Tokenizer::from_gguf(gguf::File::open(vocab_path(name)));
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct Case {
  std::string text;
  std::vector<int32_t> ids;
};

// .inp: strings each followed by "\n__ggml_vocab_test__\n"; .out: one line of ids per string.
inline std::vector<Case> read_cases(const std::string& name) {
  const std::string inp = read_file(vocab_path(name) + ".inp");
  const std::string out = read_file(vocab_path(name) + ".out");
  static const std::string kSep = "\n__ggml_vocab_test__\n";
  std::vector<Case> cases;
  for (size_t pos = 0; pos < inp.size();) {
    const size_t end = inp.find(kSep, pos);
    if (end == std::string::npos) break;
    cases.push_back({inp.substr(pos, end - pos), {}});
    pos = end + kSep.size();
  }
  std::istringstream lines(out);
  std::string line;
  for (Case& c : cases) {
    if (!std::getline(lines, line)) throw std::runtime_error(name + ".out has fewer lines than cases");
    std::istringstream ids(line);
    for (int32_t id; ids >> id;) c.ids.push_back(id);
  }
  return cases;
}

inline std::string escape(std::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) out += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
    else out += static_cast<char>(c);
  }
  return out;
}

inline bool ends_on_character_boundary(std::string_view s) {
  return unicode::complete_utf8_prefix(s) == s.size();
}

}  // namespace ember::test
