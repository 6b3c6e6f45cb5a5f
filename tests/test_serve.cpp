// `ember serve` end to end on the aidreams260K checkpoint and tiny MoE files (gpt-oss
// included): streamed and whole answers agree, parallel clients each get what `ember run`
// gives them alone, stop strings, log-probabilities, /metrics, a client that hangs up
// mid-stream gives its sequence and blocks back, and --draft MODEL keeps every answer while
// /metrics counts its drafts.
#include <doctest/doctest.h>

#include "moe_models.h"
#include "serve_test_util.h"

using namespace ember;
using namespace ember::test;

namespace {

std::string run_alone(const std::string& prompt, int n, const std::vector<std::string>& sampling,
                      const std::string& model = aidreams_gguf()) {
  std::vector<std::string> args{"run", "-t", "1", "-m", model, "-p", prompt, "-n", std::to_string(n), "--no-echo"};
  args.insert(args.end(), sampling.begin(), sampling.end());
  const ProcessResult r = run_ember(args);
  REQUIRE(r.exit_code == 0);
  return r.out.substr(0, r.out.size() - 1);  // run ends the text with a newline
}

std::string completion_body(const std::string& prompt, int max_tokens, const std::string& extra = "") {
  return "{\"prompt\": " + json::quote(prompt) + ", \"max_tokens\": " + std::to_string(max_tokens) + extra + "}";
}

json::Value parse_ok(const httplib::Result& r) {
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  return json::parse(r->body, "response");
}

// The text of a streamed answer, checking the chunks' envelope on the way.
std::string streamed_text(const std::string& body, bool chat, std::string* finish, json::Value* usage) {
  const std::vector<std::string> events = sse_payloads(body);
  REQUIRE(events.size() >= 2);
  CHECK(events.back() == "[DONE]");
  std::string text, id;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    const json::Value e = json::parse(events[i], "event");
    CHECK(e.at("object").get<std::string>() == (chat ? "chat.completion.chunk" : "text_completion"));
    if (id.empty()) id = e.at("id").get<std::string>();
    CHECK(e.at("id").get<std::string>() == id);  // one id per response
    if (e.at("choices").empty()) {
      *usage = e.at("usage");
      continue;
    }
    const json::Value& c = e.at("choices").at(0);
    text += chat ? (c.at("delta").contains("content") ? c.at("delta").at("content").get<std::string>() : "") : c.at("text").get<std::string>();
    if (!c.at("finish_reason").is_null()) *finish = c.at("finish_reason").get<std::string>();
  }
  return text;
}

}  // namespace

TEST_CASE("streamed and whole answers give the same text, completions and chat") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "2", "-c", "256"});
  for (const bool chat : {false, true}) {
    CAPTURE(chat);
    const std::string path = chat ? "/v1/chat/completions" : "/v1/completions";
    const std::string body = chat ? R"({"messages": [{"role": "user", "content": "Tell me a story"}], "max_tokens": 24, "temperature": 0)"
                                  : R"({"prompt": "Once upon a time", "max_tokens": 24, "temperature": 0)";
    const json::Value whole = parse_ok(post(server, path, body + "}"));
    const json::Value& choice = whole.at("choices").at(0);
    const std::string want = chat ? choice.at("message").at("content").get<std::string>() : choice.at("text").get<std::string>();
    CHECK(!want.empty());
    CHECK(whole.at("usage").at("completion_tokens").get<int64_t>() == 24);
    const httplib::Result r = post(server, path, body + R"(, "stream": true, "stream_options": {"include_usage": true}})");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    CHECK(r->get_header_value("Content-Type").find("text/event-stream") == 0);
    std::string finish;
    json::Value usage;
    CHECK(streamed_text(r->body, chat, &finish, &usage) == want);
    CHECK(finish == "length");
    REQUIRE(usage.is_object());
    CHECK(usage.at("completion_tokens").get<int64_t>() == 24);
    CHECK(usage.at("prompt_tokens").get<int64_t>() == whole.at("usage").at("prompt_tokens").get<int64_t>());
  }
}

// Six parallel clients (greedy and seeded, streamed or not) against `ember run` alone.
static void check_parallel_clients_equal_run(const std::string& model) {
  ServerProcess server({"-t", "1", "-m", model, "-np", "4", "-c", "256", "--batch-tokens", "7"});
  const std::string prompts[] = {"The", "Once upon a time", "In the quiet of the night the stars", "A", "She said", "Lily"};
  constexpr int n = 6;
  std::vector<std::string> got(n);
  std::vector<std::thread> clients;
  for (int i = 0; i < n; ++i)
    clients.emplace_back([&, i] {
      const bool seeded = i % 2 == 1;
      const std::string extra = seeded ? ", \"temperature\": 0.9, \"seed\": " + std::to_string(40 + i) : ", \"temperature\": 0";
      const std::string stream = i % 3 == 0 ? ", \"stream\": true" : "";
      const httplib::Result r = post(server, "/v1/completions", completion_body(prompts[i], 12 + 3 * i, extra + stream));
      if (!r || r->status != 200) return;
      if (stream.empty()) {
        got[i] = json::parse(r->body, "response").at("choices").at(0).at("text").get<std::string>();
      } else {
        std::string finish;
        json::Value usage;
        got[i] = streamed_text(r->body, false, &finish, &usage);
      }
    });
  for (auto& c : clients) c.join();
  for (int i = 0; i < n; ++i) {
    CAPTURE(i);
    const bool seeded = i % 2 == 1;
    CHECK(got[i] == run_alone(prompts[i], 12 + 3 * i,
                              seeded ? std::vector<std::string>{"--temp", "0.9", "-s", std::to_string(40 + i)}
                                     : std::vector<std::string>{"--temp", "0"},
                              model));
  }
}

TEST_CASE("parallel clients each get what run gives their request alone") {
  check_parallel_clients_equal_run(aidreams_gguf());
}

TEST_CASE("parallel clients of a mixture-of-experts model each get what run gives them alone") {
  check_parallel_clients_equal_run(tiny_moe_model("qwen3moe"));  // steps group rows by expert across clients
}

TEST_CASE("parallel clients of gpt-oss (MXFP4 experts, sinks, sliding window) each get what run gives alone") {
  check_parallel_clients_equal_run(tiny_moe_model("gpt-oss", "mxfp4_moe"));
}

TEST_CASE("a stop string ends the text before it, streamed or not") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "2", "-c", "256"});
  const std::string full = run_alone("The", 30, {"--temp", "0"});
  REQUIRE(full.size() > 12);
  const std::string stop = full.substr(8, 4);
  const std::string want = full.substr(0, full.find(stop));
  const std::string body = completion_body("The", 30, ", \"temperature\": 0, \"stop\": " + json::quote(stop));
  const json::Value whole = parse_ok(post(server, "/v1/completions", body));
  CHECK(whole.at("choices").at(0).at("text").get<std::string>() == want);
  CHECK(whole.at("choices").at(0).at("finish_reason").get<std::string>() == "stop");
  const httplib::Result r = post(server, "/v1/completions", completion_body("The", 30, ", \"temperature\": 0, \"stream\": true, \"stop\": " + json::quote(stop)));
  REQUIRE(r);
  std::string finish;
  json::Value usage;
  CHECK(streamed_text(r->body, false, &finish, &usage) == want);
  CHECK(finish == "stop");
}

TEST_CASE("log-probabilities: the chosen token's and the likeliest ones, in each endpoint's shape") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "1", "-c", "256"});
  const json::Value c = parse_ok(post(server, "/v1/completions", completion_body("Once", 4, ", \"temperature\": 0, \"logprobs\": 3")));
  const json::Value& lp = c.at("choices").at(0).at("logprobs");
  REQUIRE(lp.at("tokens").size() == 4);
  for (size_t i = 0; i < 4; ++i) {
    const double chosen = lp.at("token_logprobs").at(i).get<double>();
    const auto& top = json::as_object(lp.at("top_logprobs").at(i));
    REQUIRE(top.size() == 3);
    CHECK(chosen <= 0);
    // Greedy: the chosen token is the likeliest one.
    CHECK(top.begin()->first == lp.at("tokens").at(i).get<std::string>());
    CHECK(top.begin()->second.get<double>() == doctest::Approx(chosen));
  }
  const json::Value chat = parse_ok(post(server, "/v1/chat/completions",
                                         R"({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "logprobs": true, "top_logprobs": 2})"));
  const auto& content = json::as_array(chat.at("choices").at(0).at("logprobs").at("content"));
  REQUIRE(content.size() == 3);
  CHECK(content[0].at("top_logprobs").size() == 2);
  CHECK(content[0].at("bytes").is_array());
}

TEST_CASE("/metrics parses, counts tokens, and a client that hangs up frees its sequence and blocks") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "2", "-c", "4096"});
  parse_ok(post(server, "/v1/completions", completion_body("Once upon a time", 8)));
  stream_and_hang_up(server.port(), "/v1/completions",
                     completion_body("Once upon a time", 4000, ", \"ignore_eos\": true, \"stream\": true"));
  std::string text;
  double running = -1, used = -1;
  for (int i = 0; i < 500; ++i) {  // the server notices at its next write
    const httplib::Result r = server.client().Get("/metrics");
    REQUIRE(r);
    text = r->body;
    running = metric(text, "ember_requests_running");
    used = metric(text, "ember_kv_blocks_used{window=\"0\"}");
    if (running == 0 && used == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  INFO(text);
  CHECK(running == 0);
  CHECK(used == 0);
  const double generated = metric(text, "ember_generation_tokens_total");
  CHECK(generated >= 8);
  CHECK(generated < 4000);  // the abandoned request did not run to its end
  CHECK(metric(text, "ember_time_to_first_token_seconds_count") >= 2);
  CHECK(metric(text, "ember_inter_token_latency_seconds_count") >= 7);
  // Every sample line is "name{labels} number" or "name number".
  std::istringstream in(text);
  const std::regex sample(R"(^[a-z_:]+(\{[a-z_]+="[^"]*"(,[a-z_]+="[^"]*")*\})? [-+0-9.eInf]+$)");
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') CHECK_MESSAGE(std::regex_match(line, sample), line);
}

TEST_CASE("serve --draft MODEL: parallel greedy clients get what run gives alone, drafts counted") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "3", "-c", "256", "--draft", aidreams_gguf()});
  const std::string prompts[] = {"Once upon a time", "The cat", "Lily"};
  std::vector<std::string> got(3);
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i)
    clients.emplace_back([&, i] {
      const httplib::Result r = post(server, "/v1/completions", completion_body(prompts[i], 20 + 5 * i, ", \"temperature\": 0"));
      if (r && r->status == 200) got[i] = json::parse(r->body, "response").at("choices").at(0).at("text").get<std::string>();
    });
  for (auto& c : clients) c.join();
  for (int i = 0; i < 3; ++i) CHECK(got[i] == run_alone(prompts[i], 20 + 5 * i, {"--temp", "0"}));
  const httplib::Result m = server.client().Get("/metrics");
  REQUIRE(m);
  CHECK(metric(m->body, "ember_draft_accepted_tokens_total") > 0);
  CHECK(metric(m->body, "ember_draft_tokens_total") >= metric(m->body, "ember_draft_accepted_tokens_total"));
}
