// `ember chat --draft` / `--draft-ngram`: every reply of a multi-turn conversation is the
// same text as without drafting (greedy), through turns that reuse the cache, a context so
// small that old messages are dropped (both caches roll back), /clear and a new system
// prompt. And the draft model follows the same history as the target: the target itself as
// its draft, drafting on every round (--draft-fixed), accepts 100% in every turn; a draft
// whose cache went stale (holding tokens the target's does not) would disagree.
#include <doctest/doctest.h>

#include <regex>

#include "cli_test_util.h"

using namespace ember::test;

namespace {

const std::string& q4_draft() {
  static TempDir dir("spec-chat");
  static const std::string path = [] {
    const std::string out = dir.file("aidreams-q4_0.gguf");
    const ProcessResult r = run_ember({"quantize", aidreams_gguf(), out, "q4_0"});
    if (r.exit_code != 0) {
      std::fprintf(stderr, "quantize failed (%d): %s\n", r.exit_code, r.err.c_str());
      std::abort();
    }
    return out;
  }();
  return path;
}

// Five turns with a /clear and a system prompt change; /stats after each reply, /show at
// the end. With -c 128 the later turns drop the oldest messages.
const std::string kScript =
    "hello\n/stats\n"
    "how are you today\n/stats\n"
    "tell me about the sea and the moon\n/stats\n"
    "/clear\n/system You are a poet.\n"
    "the stars\n/stats\n"
    "and the night\n/stats\n"
    "/show\n/exit\n";

ProcessResult chat(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"chat", "-t", "1", "-m", aidreams_gguf(), "--chat-template", "chatml", "-c", "128",
                                   "-n", "20", "--temp", "0", "--ignore-eos"};
  args.insert(args.end(), extra.begin(), extra.end());
  return run_ember(args, kScript);
}

// The conversation as /show printed it (replies included).
std::string shown(const std::string& out) {
  const size_t at = out.find("[user] ");
  return at == std::string::npos ? std::string() : out.substr(at);
}

}  // namespace

TEST_CASE("chat --draft: greedy replies equal plain decoding, turn after turn") {
  const ProcessResult plain = chat({});
  INFO("plain stderr: ", plain.err);
  REQUIRE(plain.exit_code == 0);
  const std::string want = shown(plain.out);
  REQUIRE(want.find("[assistant] ") != std::string::npos);
  CHECK(plain.out.find("speculative") == std::string::npos);
  CHECK(plain.err.find("dropped") != std::string::npos);  // the small context did drop messages

  const std::vector<std::vector<std::string>> configs = {
      {"--draft", aidreams_gguf(), "--draft-fixed", "--draft-max", "4"},
      {"--draft", q4_draft()},
      {"--draft", q4_draft(), "--draft-fixed", "--draft-max", "6"},
      {"--draft-ngram", "3"},
      {"--draft-ngram", "2", "--draft-fixed"},
  };
  for (const auto& extra : configs) {
    std::string label;
    for (const auto& a : extra) label += a + " ";
    CAPTURE(label);
    const ProcessResult r = chat(extra);
    INFO("stderr: ", r.err);
    REQUIRE(r.exit_code == 0);
    CHECK(shown(r.out) == want);
    // One speculative block per /stats.
    size_t blocks = 0;
    for (size_t at = r.out.find("speculative ("); at != std::string::npos; at = r.out.find("speculative (", at + 1))
      ++blocks;
    CHECK(blocks == 5);
  }
}

TEST_CASE("chat --draft: the draft model sees the target's history in every turn") {
  const ProcessResult r = chat({"--draft", aidreams_gguf(), "--draft-fixed", "--draft-max", "4"});
  INFO("stdout: ", r.out, "\nstderr: ", r.err);
  REQUIRE(r.exit_code == 0);
  const std::regex line(R"(speculative \(draft model\): drafted (\d+), accepted (\d+) \(([0-9.]+)%\))");
  int turns = 0;
  for (std::sregex_iterator it(r.out.begin(), r.out.end(), line), end; it != end; ++it) {
    ++turns;
    CAPTURE(turns);
    CHECK(std::stoi((*it)[1]) > 0);
    CHECK((*it)[1] == (*it)[2]);  // every drafted token accepted
  }
  CHECK(turns == 5);
}

TEST_CASE("chat: --draft and --draft-ngram together are refused with one clear line") {
  const ProcessResult r = run_ember({"chat", "-m", aidreams_gguf(), "--chat-template", "chatml", "--draft",
                                     aidreams_gguf(), "--draft-ngram", "3"},
                                    "hi\n");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("not both") != std::string::npos);
}
