// `ember tokenize` end to end through the real binary (EMBER_BINARY).
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "test_tokenizer_util.h"

namespace {

struct Result {
  int exit_code;
  std::string out;
};

Result run(const std::string& args) {
  const std::string cmd = std::string(EMBER_BINARY) + " tokenize " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

std::string temp_file(const std::string& name, const std::string& content) {
  const auto path = std::filesystem::temp_directory_path() / ("ember_test_tokenize_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(path, std::ios::binary) << content;
  return path.string();
}

}  // namespace

TEST_CASE("ember tokenize --ids --no-bos --no-parse-special prints the ids of the file's exact bytes") {
  for (const char* name : {"llama-spm", "gpt-2", "deepseek-llm"}) {
    CAPTURE(name);
    // A test string with its trailing newline: the newline must be tokenized too.
    const auto cases = ember::test::read_cases(name);
    const std::string text = cases[1].text + "\n";
    const auto tok = ember::test::load_vocab(name);
    std::string want;
    for (int32_t id : tok.encode(text, false, false)) want += (want.empty() ? "" : " ") + std::to_string(id);
    const std::string file = temp_file(name, text);
    const Result r = run("-m " + ember::test::vocab_path(name) + " -f " + file + " --ids --no-bos --no-parse-special");
    std::filesystem::remove(file);
    CHECK(r.exit_code == 0);
    CHECK(r.out == want + "\n");
  }
}

TEST_CASE("ember tokenize lists pieces, adds BOS by default and parses special text") {
  const std::string m = "-m " + ember::test::vocab_path("llama-spm");
  const Result r = run(m + " -p 'Hello<s>'");
  CHECK(r.exit_code == 0);
  CHECK(r.out == "      1 '<s>'\n  15043 ' Hello'\n      1 '<s>'\n");
  const Result ids = run(m + " -p 'Hello' --ids");
  CHECK(ids.out == "1 15043\n");
  const Result pieces = run(m + " -p 'Hello' --no-bos --show-pieces");
  CHECK(pieces.out == "  15043 ' Hello'  \xe2\x96\x81Hello (normal)\n");
}

TEST_CASE("ember tokenize fails cleanly on bad input") {
  CHECK(run("-m /nonexistent.gguf -p x").exit_code != 0);
  CHECK(run("-m " + ember::test::vocab_path("gpt-2")).exit_code == 2);  // neither -p nor -f
  const std::string junk = temp_file("junk.gguf", "not a gguf file at all");
  CHECK(run("-m " + junk + " -p x").exit_code != 0);
  std::filesystem::remove(junk);
}
