// `ember batch` end to end on the real aidreams260K checkpoint: results in input order, each
// request's text exactly what `ember run` gives it alone (greedy and seeded, at -np 4 with
// chunked prefill; greedy with --draft-ngram and --draft MODEL too), stop strings, OpenAI field errors naming
// the line, exit code 2.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "cli_test_util.h"
#include "moe_models.h"
#include "util/json.h"

using namespace ember;
using namespace ember::test;

namespace {

std::string write_file(const TempDir& dir, const std::string& name, const std::string& text) {
  const std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

// `ember run` alone: the continuation only.
std::string run_alone(const std::string& prompt, int n, const std::vector<std::string>& sampling,
                      const std::string& model = aidreams_gguf()) {
  std::vector<std::string> args{"run", "-m", model, "-p", prompt, "-n", std::to_string(n), "--no-echo"};
  args.insert(args.end(), sampling.begin(), sampling.end());
  const ProcessResult r = run_ember(args);
  REQUIRE(r.exit_code == 0);
  REQUIRE(!r.out.empty());
  return r.out.substr(0, r.out.size() - 1);  // run ends the text with a newline
}

std::vector<json::Value> result_lines(const std::string& out) {
  std::vector<json::Value> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(json::parse(line, "batch output"));
  return lines;
}

void check_batch_equals_run(const std::string& model) {
  TempDir dir("batch");
  const std::string prompts[] = {"The", "Once upon a time", "In the quiet of the night the stars", "A"};
  std::string jsonl;
  for (int i = 0; i < 4; ++i) {
    const bool seeded = i % 2 == 1;
    jsonl += "{\"prompt\": " + json::quote(prompts[i]) + ", \"max_tokens\": " + std::to_string(10 + 5 * i) +
             (seeded ? ", \"temperature\": 0.9, \"seed\": " + std::to_string(40 + i) : ", \"temperature\": 0") + "}\n";
  }
  const std::string path = write_file(dir, "requests.jsonl", jsonl);
  const ProcessResult r = run_ember({"batch", "-m", model, "-f", path, "-np", "4", "--batch-tokens", "5"});
  REQUIRE(r.exit_code == 0);
  const std::vector<json::Value> lines = result_lines(r.out);
  REQUIRE(lines.size() == 4);
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    const bool seeded = i % 2 == 1;
    const std::string want = run_alone(prompts[i], 10 + 5 * i,
                                       seeded ? std::vector<std::string>{"--temp", "0.9", "-s", std::to_string(40 + i)}
                                              : std::vector<std::string>{"--temp", "0"},
                                       model);
    CHECK(lines[i].at("index").get<int64_t>() == i);
    CHECK(lines[i].at("text").get<std::string>() == want);
    CHECK(lines[i].at("completion_tokens").get<int64_t>() == 10 + 5 * i);
    CHECK(lines[i].at("finish_reason").get<std::string>() == "length");
  }
  CHECK(r.err.find("requests/s") != std::string::npos);
  CHECK(r.err.find("TTFT: p50") != std::string::npos);
}

}  // namespace

TEST_CASE("batch gives every request what run gives it alone, in input order") { check_batch_equals_run(aidreams_gguf()); }

TEST_CASE("batch on a mixture-of-experts model: every request what run gives it alone") {
  check_batch_equals_run(tiny_moe_model("qwen3moe"));  // a step's rows grouped by expert across requests
}

TEST_CASE("batch on gpt-oss (MXFP4 experts with biases, sinks, a window): every request what run gives it alone") {
  check_batch_equals_run(tiny_moe_model("gpt-oss", "mxfp4_moe"));
}

TEST_CASE("batch --draft-ngram gives greedy requests exactly what run gives them alone, drafts accepted") {
  TempDir dir("batch-draft");
  const std::string prompts[] = {"Once upon a time there was a little girl. Once upon a time there was a little",
                                 "The cat sat on the mat. The cat sat on the mat. The cat",
                                 "One day, Lily went to the park. One day, Lily went to the park. One day,"};
  std::string jsonl;
  for (int i = 0; i < 3; ++i)
    jsonl += "{\"prompt\": " + json::quote(prompts[i]) + ", \"max_tokens\": " + std::to_string(40 + 7 * i) +
             ", \"temperature\": 0}\n";
  const std::string path = write_file(dir, "requests.jsonl", jsonl);
  const ProcessResult r = run_ember({"batch", "-m", aidreams_gguf(), "-f", path, "-np", "3", "--draft-ngram", "3"});
  REQUIRE(r.exit_code == 0);
  const std::vector<json::Value> lines = result_lines(r.out);
  REQUIRE(lines.size() == 3);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(lines[i].at("text").get<std::string>() == run_alone(prompts[i], 40 + 7 * i, {"--temp", "0"}));
  }
  const size_t at = r.err.find("drafts: ");
  REQUIRE(at != std::string::npos);
  long drafted = 0, accepted = 0;
  REQUIRE(std::sscanf(r.err.c_str() + at, "drafts: %ld drafted, %ld accepted", &drafted, &accepted) == 2);
  CHECK(accepted > 0);
  CHECK(accepted <= drafted);

  const ProcessResult bad =
      run_ember({"batch", "-m", aidreams_gguf(), "-f", path, "--draft", aidreams_gguf(), "--draft-ngram", "3"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("give either --draft FILE or --draft-ngram N, not both") != std::string::npos);
  CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);

  const ProcessResult too_far =
      run_ember({"batch", "-m", aidreams_gguf(), "-f", path, "--draft-ngram", "3", "--draft-max", "32"});
  CHECK(too_far.exit_code == 2);
  CHECK(too_far.err.find("--draft-max 32 must be between 1 and 31") != std::string::npos);
}

// The checkpoint drafts for itself (every greedy draft accepted, sampled ones mostly): the
// text stays what run gives alone, greedy and seeded, with preemption in a small pool.
TEST_CASE("batch --draft MODEL gives every request what run gives it alone, drafts accepted") {
  TempDir dir("batch-draft-model");
  const std::string prompts[] = {"Once upon a time", "The cat sat on the mat.", "One day, Lily went to the park.", "A",
                                 "She said", "Tom had a red ball"};
  std::string jsonl;
  for (int i = 0; i < 6; ++i)
    jsonl += "{\"prompt\": " + json::quote(prompts[i]) + ", \"max_tokens\": " + std::to_string(30 + 5 * i) +
             ", \"temperature\": 0}\n";
  const std::string path = write_file(dir, "requests.jsonl", jsonl);
  const ProcessResult r = run_ember({"batch", "-t", "1", "-m", aidreams_gguf(), "-f", path, "-np", "6", "--batch-tokens",
                                     "16", "--kv-size", "256", "--draft", aidreams_gguf(), "--draft-max", "4"});
  REQUIRE(r.exit_code == 0);
  const std::vector<json::Value> lines = result_lines(r.out);
  REQUIRE(lines.size() == 6);
  for (int i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(lines[i].at("text").get<std::string>() == run_alone(prompts[i], 30 + 5 * i, {"--temp", "0"}));
  }
  const size_t at = r.err.find("drafts: ");
  REQUIRE(at != std::string::npos);
  long drafted = 0, accepted = 0;
  REQUIRE(std::sscanf(r.err.c_str() + at, "drafts: %ld drafted, %ld accepted", &drafted, &accepted) == 2);
  CHECK(accepted > 0);
  CHECK(accepted == drafted);  // the model itself: every greedy draft is its own argmax
}

TEST_CASE("batch --context-shift: requests longer than the context shift it as run does alone") {
  TempDir dir("batch-shift");
  const std::string prompts[] = {"The", "Once upon a time", "A"};
  std::string jsonl;
  for (int i = 0; i < 3; ++i)
    jsonl += "{\"prompt\": " + json::quote(prompts[i]) + ", \"max_tokens\": " + std::to_string(60 + 10 * i) +
             (i == 1 ? ", \"temperature\": 0.8, \"seed\": 3}\n" : ", \"temperature\": 0}\n");
  const std::string path = write_file(dir, "requests.jsonl", jsonl);
  const ProcessResult r = run_ember({"batch", "-m", aidreams_gguf(), "-f", path, "-np", "3", "-c", "32",
                                     "--context-shift", "--keep", "2", "--batch-tokens", "7"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const std::vector<json::Value> lines = result_lines(r.out);
  REQUIRE(lines.size() == 3);
  int past_the_context = 0;
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    std::vector<std::string> flags{"-c", "32", "--context-shift", "--keep", "2"};
    if (i == 1) flags.insert(flags.end(), {"--temp", "0.8", "-s", "3"});
    else flags.insert(flags.end(), {"--temp", "0"});
    CHECK(lines[i].at("text").get<std::string>() == run_alone(prompts[i], 60 + 10 * i, flags));
    past_the_context += lines[i].at("completion_tokens").get<int64_t>() > 32;
  }
  CHECK(past_the_context > 0);
}

TEST_CASE("batch stop strings end a text before them") {
  TempDir dir("batch-stop");
  const std::string full = run_alone("The", 20, {"--temp", "0"});
  REQUIRE(full.size() > 12);
  const std::string stop = full.substr(8, 4);
  const std::string path = write_file(dir, "r.jsonl", "{\"prompt\": \"The\", \"max_tokens\": 20, \"temperature\": 0, \"stop\": " +
                                                          json::quote(stop) + "}\n");
  const ProcessResult r = run_ember({"batch", "-m", aidreams_gguf(), "-f", path});
  REQUIRE(r.exit_code == 0);
  const std::vector<json::Value> lines = result_lines(r.out);
  REQUIRE(lines.size() == 1);
  CHECK(lines[0].at("text").get<std::string>() == full.substr(0, full.find(stop)));
  CHECK(lines[0].at("finish_reason").get<std::string>() == "stop");
}

TEST_CASE("batch refuses a bad request line naming it, with exit code 2") {
  TempDir dir("batch-bad");
  const std::pair<std::string, std::string> cases[] = {
      {"{\"prompt\": 3}", "'prompt' must be a non-empty string"},
      {"{\"prompt\": \"a\", \"temperature\": \"hot\"}", "'temperature' must be a number"},
      {"{\"prompt\": \"a\", \"max_tokens\": -4}", "'max_tokens' = -4"},
      {"{\"prompt\": \"a\", \"n\": 2}", "'n' = 2"},
      {"{\"messages\": [{\"role\": \"wizard\", \"content\": \"x\"}]}", "role 'wizard'"},
      {"{\"prompt\": \"a\", \"messages\": []}", "exactly one of"},
      {"{\"prompt\": \"a\"", "batch"},
  };
  for (const auto& c : cases) {
    const std::string& line = c.first;  // not a structured binding: clang 14's CAPTURE lambda cannot name one
    const std::string& message = c.second;
    CAPTURE(line);
    const std::string path = write_file(dir, "r.jsonl", "{\"prompt\": \"fine\"}\n" + line + "\n");
    const ProcessResult r = run_ember({"batch", "-m", aidreams_gguf(), "-f", path});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("r.jsonl:2:") != std::string::npos);
    CHECK(r.err.find(message) != std::string::npos);
    CHECK(r.out.empty());
  }
}

TEST_CASE("batch chat lines take the chat fields; bad ones are errors naming the line and field") {
  TempDir dir("batch-chat");
  // The same chat request with and without chat-only fields that do not change this model's
  // prompt: the same greedy text, and no reasoning or calls in its output line.
  const std::string chat = R"("messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 12, "temperature": 0)";
  const std::string path = write_file(dir, "chat.jsonl",
                                      "{" + chat + "}\n{" + chat + R"(, "chat_template_kwargs": {"enable_thinking": false}, "reasoning_effort": "low", "tool_choice": "none", "parallel_tool_calls": false})" + "\n");
  const ProcessResult r = run_ember({"batch", "-m", aidreams_gguf(), "-f", path, "-np", "2"});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const std::vector<json::Value> lines = result_lines(r.out);
  REQUIRE(lines.size() == 2);
  CHECK(lines[0].at("text") == lines[1].at("text"));
  CHECK(!lines[1].contains("tool_calls"));
  CHECK(!lines[1].contains("reasoning_content"));

  const std::vector<std::pair<std::string, std::string>> bad{
      {R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {}}]})", "field 'tools'"},
      {R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "field 'tool_choice'"},
      {R"({"messages": [{"role": "tool", "content": "x"}]})", "messages[0].tool_call_id"},
      {R"({"prompt": "x", "chat_template_kwargs": {}})", "field 'chat_template_kwargs'"},
  };
  for (const auto& [line, want] : bad) {
    CAPTURE(line);
    const std::string p = write_file(dir, "bad.jsonl", "{\"prompt\": \"ok\"}\n" + line + "\n");
    const ProcessResult e = run_ember({"batch", "-m", aidreams_gguf(), "-f", p});
    CHECK(e.exit_code == 2);
    CHECK(e.err.find("bad.jsonl:2: " + want) != std::string::npos);
  }
}
