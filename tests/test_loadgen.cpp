// The load generator (src/loadgen/, `ember bench-serve`): percentiles and stats as numpy
// computes them, SLO parsing and goodput, the arrival process's mean rate and burstiness,
// SSE parsing with chunks split anywhere, the per-request measurements, workloads and request
// bodies, the report's JSON, the concurrency cap; then over HTTP against an in-process
// httplib::Server that streams scripted responses with known delays, answers 503, breaks a
// stream and ends one without [DONE]; and the CLI end to end against it.
#include <doctest/doctest.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "cli_test_util.h"
#include "loadgen/arrivals.h"
#include "loadgen/metrics.h"
#include "loadgen/report.h"
#include "loadgen/runner.h"
#include "loadgen/sse.h"
#include "loadgen/stream_client.h"
#include "loadgen/workload.h"
#include "sampling/rng.h"
#include "util/error.h"
#include "util/percentile.h"

using namespace ember;
using namespace ember::loadgen;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> sse_events(const std::string& stream, const std::vector<size_t>& cuts) {
  std::vector<std::string> out;
  SseParser p([&](const std::string& d) { out.push_back(d); });
  size_t at = 0;
  for (size_t cut : cuts) {
    p.feed(std::string_view(stream).substr(at, cut - at));
    at = cut;
  }
  p.feed(std::string_view(stream).substr(at));
  p.finish();
  return out;
}

std::string completion_chunk(const std::string& text) {
  return "data: " + nlohmann::json{{"choices", {{{"index", 0}, {"text", text}, {"finish_reason", nullptr}}}}}.dump() +
         "\n\n";
}

std::string usage_chunk(int prompt, int completion) {
  return "data: " +
         nlohmann::json{{"choices", nlohmann::json::array()},
                        {"usage", {{"prompt_tokens", prompt}, {"completion_tokens", completion}}}}
             .dump() +
         "\n\n";
}

RequestResult ok_result(double ttft, double e2e, int tokens) {
  RequestResult r;
  r.status = 200;
  r.ttft_s = ttft, r.e2e_s = e2e, r.output_tokens = tokens, r.prompt_tokens = 10;
  return r;
}

}  // namespace

TEST_CASE("percentile and stats follow numpy (linear interpolation, population std)") {
  const std::vector<double> v{1, 2, 3, 4};
  CHECK(percentile(v, 0.5) == doctest::Approx(2.5));
  CHECK(percentile(v, 0.9) == doctest::Approx(3.7));
  CHECK(percentile(v, 0.99) == doctest::Approx(3.97));
  CHECK(percentile(v, 0) == 1);
  CHECK(percentile(v, 1) == 4);
  CHECK(percentile(std::vector<double>{7}, 0.99) == 7);
  CHECK(percentile(std::vector<double>{}, 0.5) == 0);
  // Floats (the KLD listing) too; an exact rank ignores an infinite neighbour.
  const std::vector<float> f{1, 2, INFINITY};
  CHECK(percentile(f, 0.5) == 2);
  CHECK(percentile(f, 0.25) == doctest::Approx(1.5));
  const Stats s = stats_of({9, 2, 4, 4, 5, 4, 7, 5});  // unsorted on purpose
  CHECK(s.count == 8);
  CHECK(s.mean == doctest::Approx(5));
  CHECK(s.std == doctest::Approx(2));
  CHECK(s.median == doctest::Approx(4.5));
  CHECK(s.p99 == doctest::Approx(8.86));
  const Stats empty = stats_of({});
  CHECK((empty.count == 0 && empty.mean == 0 && empty.p99 == 0));
}

TEST_CASE("--slo parses any subset and refuses malformed specs") {
  const Slo a = parse_slo("ttft:500,tpot:50.5,e2el:9000");
  CHECK(a.ttft_ms == 500);
  CHECK(a.tpot_ms == 50.5);
  CHECK(a.e2el_ms == 9000);
  const Slo b = parse_slo("tpot:20");
  CHECK((b.ttft_ms < 0 && b.tpot_ms == 20 && b.e2el_ms < 0 && b.any()));
  CHECK_FALSE(Slo{}.any());
  for (const char* bad : {"", "ttft", "ttft:", "ttft:abc", "ttft:5ms", "ttft:-1", "itl:5", "ttft:5,", "ttft:5,,tpot:1"})
    CHECK_THROWS_AS(parse_slo(bad), Error);
}

TEST_CASE("goodput counts the successful requests meeting every SLO") {
  std::vector<RequestResult> rs{ok_result(0.1, 1.0, 10), ok_result(0.3, 1.0, 10), ok_result(0.1, 5.0, 10),
                                ok_result(0.1, 0.2, 1)};
  rs.push_back(ok_result(0.01, 0.05, 5));
  rs.back().failure = Failure::Busy;  // fast but failed: never good
  const Slo slo = parse_slo("ttft:200,tpot:200");
  // TPOT = (e2e - ttft) / (tokens - 1): 100 ms, 77.8 ms, 544 ms, 0 (a single token).
  CHECK(meets_slo(rs[0], slo));
  CHECK_FALSE(meets_slo(rs[1], slo));  // TTFT 300 ms
  CHECK_FALSE(meets_slo(rs[2], slo));  // TPOT 544 ms
  CHECK(meets_slo(rs[3], slo));
  CHECK_FALSE(meets_slo(rs[4], slo));
  const Summary s = summarize(rs, {1, 1, 1, 1, 1}, 2.0, 3, slo);
  CHECK(s.completed == 4);
  CHECK(s.failed == 1);
  CHECK(s.failed_busy == 1);
  CHECK(s.good == 2);
  CHECK(s.goodput == doctest::Approx(1.0));
  CHECK(s.request_throughput == doctest::Approx(2.0));
  CHECK(s.output_tokens == 31);
  CHECK(s.output_throughput == doctest::Approx(15.5));
  CHECK(s.input_tokens == 40);
  CHECK(s.tpot_ms.count == 3);  // the single-token request has no TPOT
  CHECK(s.ttft_ms.mean == doctest::Approx(150));
}

TEST_CASE("a request without usage counts its estimated prompt tokens") {
  RequestResult r = ok_result(0.1, 1, 4);
  r.prompt_tokens = -1;
  const Summary s = summarize({r, ok_result(0.1, 1, 4)}, {33, 7}, 1.0, 1, Slo{});
  CHECK(s.input_tokens == 43);
  CHECK(s.usage_missing == 1);
  CHECK_FALSE(s.has_slo);
}

TEST_CASE("arrivals: inf sends all at once; gamma gaps keep the mean rate whatever the burstiness") {
  for (double t : arrival_times(5, {})) CHECK(t == 0);
  const int n = 20001;
  for (double b : {0.5, 1.0, 4.0}) {
    CAPTURE(b);
    const std::vector<double> t = arrival_times(n, {10.0, b, 7});
    CHECK(t.front() == 0);
    std::vector<double> gaps;
    for (int i = 1; i < n; ++i) gaps.push_back(t[i] - t[i - 1]);
    const Stats s = stats_of(gaps);
    CHECK(s.mean == doctest::Approx(0.1).epsilon(0.03));  // rate = (n - 1) / last arrival
    CHECK(s.std / s.mean == doctest::Approx(1 / std::sqrt(b)).epsilon(0.05));  // gamma's CV
  }
  CHECK(arrival_times(50, {3.0, 1.0, 1}) == arrival_times(50, {3.0, 1.0, 1}));
  CHECK(arrival_times(50, {3.0, 1.0, 1}) != arrival_times(50, {3.0, 1.0, 2}));
  CHECK_THROWS_AS(arrival_times(5, {0.0, 1.0, 0}), Error);
  CHECK_THROWS_AS(arrival_times(5, {-1.0, 1.0, 0}), Error);
  CHECK_THROWS_AS(arrival_times(5, {1.0, 0.0, 0}), Error);
}

TEST_CASE("gamma draws have the shape's mean and variance") {
  Rng rng(3);
  for (double shape : {0.3, 1.0, 5.0}) {
    CAPTURE(shape);
    std::vector<double> v;
    for (int i = 0; i < 40000; ++i) v.push_back(gamma_sample(rng, shape, 2.0));
    const Stats s = stats_of(v);
    CHECK(s.mean == doctest::Approx(2.0 * shape).epsilon(0.03));
    CHECK(s.std * s.std == doctest::Approx(4.0 * shape).epsilon(0.06));
  }
}

TEST_CASE("SSE events come out whole wherever the reads split them") {
  const std::string stream = "data: {\"a\":1}\n\n: a comment\r\nevent: x\r\ndata: {\"b\":2}\r\n\r\ndata: one\ndata: two\n\ndata: [DONE]\n\n";
  const std::vector<std::string> want{"{\"a\":1}", "{\"b\":2}", "one\ntwo", "[DONE]"};
  CHECK(sse_events(stream, {}) == want);
  std::vector<size_t> every_byte;
  for (size_t i = 1; i < stream.size(); ++i) every_byte.push_back(i);
  CHECK(sse_events(stream, every_byte) == want);
  for (size_t cut = 1; cut < stream.size(); ++cut) {
    CAPTURE(cut);
    CHECK(sse_events(stream, {cut}) == want);
  }
  // The last event without its blank line (a server closing right after it) still counts.
  CHECK(sse_events("data: x\n\ndata:y", {}) == std::vector<std::string>{"x", "y"});
}

TEST_CASE("chunks: completion text, chat delta, usage, [DONE], errors") {
  CHECK(parse_chunk(R"({"choices":[{"text":"hi"}]})").text == "hi");
  CHECK(parse_chunk(R"({"choices":[{"delta":{"content":"yo"}}]})").text == "yo");
  CHECK(parse_chunk(R"({"choices":[{"delta":{"role":"assistant","content":null}}]})").text.empty());
  const StreamChunk u = parse_chunk(R"({"choices":[],"usage":{"prompt_tokens":61,"completion_tokens":64}})");
  CHECK((u.prompt_tokens == 61 && u.completion_tokens == 64 && u.text.empty()));
  CHECK(parse_chunk(R"({"choices":[{"text":"a"}],"usage":null})").prompt_tokens == -1);
  CHECK(parse_chunk("[DONE]").done);
  CHECK_FALSE(parse_chunk("not json").error.empty());
  CHECK_FALSE(parse_chunk(R"({"error":{"message":"boom"}})").error.empty());
}

TEST_CASE("StreamRecorder: TTFT to the first text, ITL between texts, tokens from usage") {
  const Clock::time_point t0 = Clock::now();
  StreamRecorder rec(t0);
  rec.on_status(200);
  rec.on_body("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\"}}]}\n\n", t0 + 50ms);  // no text yet
  rec.on_body(completion_chunk("a") + "da", t0 + 100ms);
  rec.on_body("ta: {\"choices\":[{\"text\":\"b\"}]}\n\n", t0 + 130ms);  // completes at 130 ms
  rec.on_body(completion_chunk("c") + completion_chunk("d"), t0 + 200ms);  // two in one read: ITL 0
  rec.on_body(usage_chunk(61, 7) + "data: [DONE]\n\n", t0 + 210ms);
  const RequestResult r = rec.finish(t0 + 220ms, "");
  CHECK(r.ok());
  CHECK(r.ttft_s == doctest::Approx(0.100));
  REQUIRE(r.itl_s.size() == 3);
  CHECK(r.itl_s[0] == doctest::Approx(0.030));
  CHECK(r.itl_s[1] == doctest::Approx(0.070));
  CHECK(r.itl_s[2] == doctest::Approx(0.0));
  CHECK(r.e2e_s == doctest::Approx(0.220));
  CHECK(r.text_chunks == 4);
  CHECK(r.output_tokens == 7);  // usage wins over the chunk count
  CHECK(r.prompt_tokens == 61);
  CHECK(r.tpot_s() == doctest::Approx(0.120 / 6));
}

TEST_CASE("StreamRecorder: failures by kind") {
  const Clock::time_point t0 = Clock::now();
  const auto run = [&](int status, const std::string& body, const std::string& transport) {
    StreamRecorder rec(t0);
    if (status) rec.on_status(status);
    if (!body.empty()) rec.on_body(body, t0 + 10ms);
    return rec.finish(t0 + 20ms, transport);
  };
  const RequestResult no_usage = run(200, completion_chunk("x") + completion_chunk("y") + "data: [DONE]\n\n", "");
  CHECK(no_usage.ok());
  CHECK(no_usage.output_tokens == 2);  // no usage: the chunks with text
  CHECK(no_usage.prompt_tokens == -1);
  const RequestResult busy = run(503, R"({"error":{"message":"queue full"}})", "");
  CHECK(busy.failure == Failure::Busy);
  CHECK(busy.error.find("queue full") != std::string::npos);
  CHECK(run(400, "bad", "").failure == Failure::Status);
  CHECK(run(0, "", "Could not establish connection").failure == Failure::Transport);
  CHECK(run(200, completion_chunk("x"), "").failure == Failure::Stream);  // no [DONE]
  CHECK(run(200, completion_chunk("x"), "Failed to read connection").failure == Failure::Transport);
  CHECK(run(200, "data: [DONE]\n\n", "").failure == Failure::Stream);  // no text at all
  CHECK(run(200, "data: {\"error\":{\"message\":\"oom\"}}\n\ndata: [DONE]\n\n", "").failure == Failure::Stream);
}

TEST_CASE("synthetic workload: seeded words, lengths within the range ratio") {
  const std::vector<WorkItem> a = synthetic_workload({200, 60, 64, 0.5, 11});
  REQUIRE(a.size() == 200);
  int min_in = 1 << 30, max_in = 0;
  for (const WorkItem& w : a) {
    const std::string p = w.input.get<std::string>();
    CHECK(std::count(p.begin(), p.end(), ' ') + 1 == w.approx_prompt_tokens);
    CHECK((w.max_tokens >= 32 && w.max_tokens <= 96));
    min_in = std::min(min_in, w.approx_prompt_tokens), max_in = std::max(max_in, w.approx_prompt_tokens);
  }
  CHECK((min_in >= 30 && max_in <= 90 && max_in - min_in > 40));
  const std::vector<WorkItem> b = synthetic_workload({200, 60, 64, 0.5, 11});
  CHECK(a[17].input == b[17].input);
  CHECK(synthetic_workload({2, 60, 64, 0.5, 12})[0].input != a[0].input);
  for (const WorkItem& w : synthetic_workload({5, 60, 64, 0, 1})) CHECK((w.approx_prompt_tokens == 60 && w.max_tokens == 64));
  CHECK_THROWS_AS(synthetic_workload({1, 0, 64, 0, 1}), Error);
  CHECK_THROWS_AS(synthetic_workload({1, 60, 64, 1.0, 1}), Error);
}

TEST_CASE("request bodies stream greedily for exactly max_tokens") {
  WorkItem item{"hello there", 64, 2};
  const nlohmann::json c = request_body(item, Endpoint::Completions, "m");
  CHECK(c["prompt"] == "hello there");
  CHECK(c["model"] == "m");
  CHECK(c["max_tokens"] == 64);
  CHECK(c["stream"] == true);
  CHECK(c["stream_options"]["include_usage"] == true);
  CHECK(c["ignore_eos"] == true);
  CHECK(c["temperature"] == 0);
  const nlohmann::json chat = request_body(item, Endpoint::Chat, "");
  CHECK_FALSE(chat.contains("model"));
  CHECK(chat["messages"] == nlohmann::json::parse(R"([{"role":"user","content":"hello there"}])"));
  item.input = nlohmann::json::parse(R"([{"role":"user","content":"x"}])");
  CHECK_THROWS_AS(request_body(item, Endpoint::Completions, ""), Error);
  CHECK(parse_endpoint("/v1/chat/completions") == Endpoint::Chat);
  CHECK_THROWS_AS(parse_endpoint("/completion"), Error);
}

TEST_CASE("prompts file: prompt or messages, max_tokens, bad lines named, repeated to --num-prompts") {
  test::TempDir dir("loadgen");
  const std::string path = dir.file("p.jsonl");
  std::ofstream(path) << "{\"prompt\":\"one two three\"}\n\n{\"messages\":[{\"role\":\"user\",\"content\":\"a b\"}],\"max_tokens\":5}\n";
  const std::vector<WorkItem> all = read_prompts_file(path, 64, 0);
  REQUIRE(all.size() == 2);
  CHECK((all[0].max_tokens == 64 && all[0].approx_prompt_tokens == 3));
  CHECK((all[1].max_tokens == 5 && all[1].input.is_array() && all[1].approx_prompt_tokens == 2));
  const std::vector<WorkItem> five = read_prompts_file(path, 64, 5);
  REQUIRE(five.size() == 5);
  CHECK(five[4].input == all[0].input);
  CHECK(read_prompts_file(path, 64, 1).size() == 1);
  std::ofstream(path) << "{\"prompt\":\"ok\"}\n{\"text\":\"no\"}\n";
  try {
    read_prompts_file(path, 64, 0);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find("p.jsonl:2:") != std::string::npos);
  }
  std::ofstream(path) << "{\"prompt\":\"ok\",\"max_tokens\":0}\n";
  CHECK_THROWS_AS(read_prompts_file(path, 64, 0), Error);
}

TEST_CASE("prompts file: whole answers and sessions; request bodies that do not stream") {
  test::TempDir dir("loadgen");
  const std::string path = dir.file("s.jsonl");
  std::ofstream(path) << "{\"prompt\":\"a\",\"stream\":false,\"session\":\"s7\"}\n{\"prompt\":\"b\"}\n";
  const std::vector<WorkItem> items = read_prompts_file(path, 8, 0);
  REQUIRE(items.size() == 2);
  CHECK((!items[0].stream && items[0].session == "s7"));
  CHECK((items[1].stream && items[1].session.empty()));
  const nlohmann::json whole = request_body(items[0], Endpoint::Completions, "");
  CHECK(whole["stream"] == false);
  CHECK_FALSE(whole.contains("stream_options"));
  std::ofstream(path) << "{\"prompt\":\"a\",\"stream\":\"no\"}\n";
  CHECK_THROWS_AS(read_prompts_file(path, 8, 0), Error);
  std::ofstream(path) << "{\"prompt\":\"a\",\"session\":3}\n";
  CHECK_THROWS_AS(read_prompts_file(path, 8, 0), Error);
}

TEST_CASE("StreamRecorder: a whole answer is one JSON body; cut, empty or an error body fails") {
  const Clock::time_point t0 = Clock::now();
  const auto run = [&](int status, const std::string& body, const std::string& transport) {
    StreamRecorder rec(t0, /*streamed=*/false);
    rec.on_status(status);
    if (!body.empty()) rec.on_body(body, t0 + 10ms);
    return rec.finish(t0 + 20ms, transport);
  };
  const std::string chat = R"({"choices":[{"message":{"role":"assistant","content":"hi"}}],"usage":{"prompt_tokens":5,"completion_tokens":3}})";
  const RequestResult ok = run(200, chat, "");
  CHECK(ok.ok());
  CHECK((ok.output_tokens == 3 && ok.prompt_tokens == 5));
  CHECK(ok.ttft_s == doctest::Approx(0.010));
  CHECK(run(200, R"({"choices":[{"text":"x"}]})", "").ok());
  CHECK(run(200, chat.substr(0, 30), "Failed to read connection").failure == Failure::Transport);
  CHECK(run(200, chat.substr(0, 30), "").failure == Failure::Stream);  // a cut body is no answer
  CHECK(run(200, R"({"choices":[]})", "").failure == Failure::Stream);
  CHECK(run(200, R"({"error":{"message":"boom"}})", "").failure == Failure::Stream);
  CHECK(run(503, R"({"error":{"message":"draining"}})", "").failure == Failure::Busy);
}

TEST_CASE("the JSON report carries vLLM's key names and every request") {
  std::vector<RequestResult> rs{ok_result(0.1, 1.0, 10), ok_result(0.3, 2.0, 10)};
  rs[0].itl_s = {0.05, 0.07};
  rs.push_back(RequestResult{});
  rs.back().failure = Failure::Busy, rs.back().status = 503, rs.back().error = "HTTP 503: full";
  const Summary s = summarize(rs, {1, 1, 1}, 4.0, 2, parse_slo("ttft:200"));
  const nlohmann::json config = {{"url", "http://x/v1/completions"}, {"num_prompts", 3}};
  const nlohmann::json j = json_report(s, config, rs);
  CHECK(j["completed"] == 2);
  CHECK(j["failed"] == 1);
  CHECK(j["failed_503"] == 1);
  CHECK(j["duration"] == 4.0);
  CHECK(j["max_concurrent_requests"] == 2);
  CHECK(j["total_output_tokens"] == 20);
  CHECK(j["output_throughput"].get<double>() == doctest::Approx(5.0));
  CHECK(j["total_token_throughput"].get<double>() == doctest::Approx(10.0));
  CHECK(j["mean_ttft_ms"].get<double>() == doctest::Approx(200));
  CHECK(j["p99_ttft_ms"].get<double>() == doctest::Approx(298));
  CHECK(j["median_itl_ms"].get<double>() == doctest::Approx(60));
  CHECK(j["request_goodput"].get<double>() == doctest::Approx(0.25));
  CHECK(j["config"] == config);
  REQUIRE(j["requests"].size() == 3);
  CHECK(j["requests"][2]["failure"] == "http_503");
  CHECK(j["requests"][0]["itl_ms"].size() == 2);
  CHECK(json_report(summarize(rs, {1, 1, 1}, 4.0, 2, Slo{}), config, rs)["request_goodput"].is_null());
  const std::string md = markdown_report(s, config, rs);
  CHECK(md.find("| output token throughput (tok/s) | 5.00 |") != std::string::npos);
  CHECK(md.find("| goodput (req/s meeting every SLO) | 0.25 (1 of 3) |") != std::string::npos);
  CHECK(md.find("first error: HTTP 503: full") != std::string::npos);
}

TEST_CASE("run_schedule caps requests in flight and releases them at their arrival times") {
  const auto started = std::make_shared<std::vector<double>>(8);
  const Clock::time_point t0 = Clock::now();
  const auto send = [&](size_t i) {
    (*started)[i] = std::chrono::duration<double>(Clock::now() - t0).count();
    std::this_thread::sleep_for(60ms);
    return ok_result(0.01, 0.06, 2);
  };
  size_t last_done = 0;
  const RunOutcome capped = run_schedule(std::vector<double>(8, 0.0), 3, send, [&](size_t d) { last_done = d; });
  CHECK(capped.peak_concurrency == 3);
  CHECK(last_done == 8);
  CHECK(capped.results.size() == 8);
  CHECK(capped.duration_s >= 0.17);  // 3 waves of 60 ms at least
  CHECK(run_schedule(std::vector<double>(8, 0.0), 0, send).peak_concurrency == 8);
  const std::vector<double> arrivals{0, 0.1, 0.2, 0.3};
  const Clock::time_point t1 = Clock::now();
  const auto send_timed = [&](size_t i) {
    (*started)[i] = std::chrono::duration<double>(Clock::now() - t1).count();
    return ok_result(0.01, 0.01, 2);
  };
  const RunOutcome spaced = run_schedule(arrivals, 0, send_timed);
  for (size_t i = 0; i < arrivals.size(); ++i) CHECK((*started)[i] >= arrivals[i]);
  CHECK(spaced.peak_concurrency == 1);
}

// ---- over HTTP ----

namespace {

constexpr auto kFirstDelay = 150ms;  // before the first token
constexpr auto kGap = 80ms;          // between tokens
constexpr int kTokens = 5;

// A server that streams scripted SSE: /v1/completions sends kTokens chunks (the first after
// kFirstDelay, then kGap apart), usage and [DONE]; /busy/v1/completions answers 503;
// /broken/v1/completions drops the connection after two chunks; /nodone/v1/completions ends
// cleanly without [DONE].
class ScriptedServer {
 public:
  ScriptedServer() {
    server_.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
      ++requests_;
      const std::lock_guard lock(mutex_);
      last_body_ = req.body;
      stream(res, kTokens, true, true);
    });
    server_.Post("/busy/v1/completions", [](const httplib::Request&, httplib::Response& res) {
      res.status = 503;
      res.set_content(R"({"error":{"code":503,"message":"queue full","type":"unavailable_error"}})", "application/json");
    });
    server_.Post("/broken/v1/completions",
                 [](const httplib::Request&, httplib::Response& res) { stream(res, 2, false, false); });
    server_.Post("/nodone/v1/completions",
                 [](const httplib::Request&, httplib::Response& res) { stream(res, 2, false, true); });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(1ms);
  }
  ~ScriptedServer() {
    server_.stop();
    thread_.join();
  }
  std::string url(const std::string& prefix = "") const { return "http://127.0.0.1:" + std::to_string(port_) + prefix; }
  int requests() const { return requests_; }
  std::string last_body() const {
    const std::lock_guard lock(mutex_);
    return last_body_;
  }

 private:
  // `tokens` chunks; then usage and [DONE] when `finish`; `clean` false drops the connection.
  static void stream(httplib::Response& res, int tokens, bool finish, bool clean) {
    res.set_chunked_content_provider("text/event-stream", [=](size_t, httplib::DataSink& sink) {
      const auto send = [&](const std::string& s) { sink.write(s.data(), s.size()); };
      for (int i = 0; i < tokens; ++i) {
        std::this_thread::sleep_for(i == 0 ? std::chrono::milliseconds(kFirstDelay) : kGap);
        send(completion_chunk(std::to_string(i)));
      }
      if (!clean) return false;
      if (finish) send(usage_chunk(12, tokens) + "data: [DONE]\n\n");
      sink.done();
      return true;
    });
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<int> requests_{0};
  mutable std::mutex mutex_;
  std::string last_body_;
};

}  // namespace

TEST_CASE("URLs: origin and path prefix; only http") {
  const Target t = make_target("http://127.0.0.1:8080/", "/v1/completions", "k");
  CHECK(t.origin == "http://127.0.0.1:8080");
  CHECK(t.path == "/v1/completions");
  CHECK(make_target("http://h:1/proxy/", "/v1/chat/completions", "").path == "/proxy/v1/chat/completions");
  CHECK_THROWS_AS(make_target("https://h", "/v1/completions", ""), Error);
  CHECK_THROWS_AS(make_target("127.0.0.1:8080", "/v1/completions", ""), Error);
}

TEST_CASE("over HTTP: TTFT and ITL of a scripted stream, 503s, broken and unfinished streams") {
  ScriptedServer server;
  const RequestResult r = post_completion(make_target(server.url(), "/v1/completions", ""), "{}", 30);
  INFO(r.error);
  REQUIRE(r.ok());
  CHECK(r.status == 200);
  CHECK(r.ttft_s >= 0.14);
  CHECK(r.ttft_s < 0.14 + 0.5);
  REQUIRE(r.itl_s.size() == kTokens - 1);
  for (double gap : r.itl_s) CHECK((gap >= 0.07 && gap < 0.07 + 0.5));
  CHECK(r.output_tokens == kTokens);
  CHECK(r.prompt_tokens == 12);
  CHECK(r.e2e_s >= r.ttft_s + 0.07 * (kTokens - 1));

  const RequestResult busy = post_completion(make_target(server.url("/busy"), "/v1/completions", ""), "{}", 30);
  CHECK(busy.failure == Failure::Busy);
  CHECK(busy.error.find("queue full") != std::string::npos);
  const RequestResult broken = post_completion(make_target(server.url("/broken"), "/v1/completions", ""), "{}", 30);
  CHECK_FALSE(broken.ok());
  CHECK((broken.failure == Failure::Transport || broken.failure == Failure::Stream));
  const RequestResult nodone = post_completion(make_target(server.url("/nodone"), "/v1/completions", ""), "{}", 30);
  CHECK(nodone.failure == Failure::Stream);
  CHECK(nodone.error.find("[DONE]") != std::string::npos);
  const RequestResult missing = post_completion(make_target(server.url(), "/v1/nothing", ""), "{}", 30);
  CHECK(missing.failure == Failure::Status);
  CHECK(missing.status == 404);
  const RequestResult slow = post_completion(make_target(server.url(), "/v1/completions", ""), "{}", 0.2);
  CHECK(slow.failure == Failure::Transport);
  CHECK(slow.error.find("--timeout") != std::string::npos);
}

TEST_CASE("over HTTP: a refused connection is a transport failure") {
  // A port that was just listened on and closed again refuses connections.
  httplib::Server probe;
  const int port = probe.bind_to_any_port("127.0.0.1");
  std::thread listener([&] { probe.listen_after_bind(); });
  while (!probe.is_running()) std::this_thread::sleep_for(1ms);
  probe.stop();
  listener.join();
  const RequestResult r =
      post_completion(make_target("http://127.0.0.1:" + std::to_string(port), "/v1/completions", ""), "{}", 5);
  CHECK(r.failure == Failure::Transport);
}

TEST_CASE("over HTTP: a schedule of streams and 503s adds up") {
  ScriptedServer server;
  const Target ok = make_target(server.url(), "/v1/completions", "");
  const Target busy = make_target(server.url("/busy"), "/v1/completions", "");
  const RunOutcome run = run_schedule(std::vector<double>(6, 0.0), 4,
                                      [&](size_t i) { return post_completion(i % 3 == 2 ? busy : ok, "{}", 30); });
  const Summary s = summarize(run.results, std::vector<int>(6, 1), run.duration_s, run.peak_concurrency, Slo{});
  CHECK(s.completed == 4);
  CHECK(s.failed == 2);
  CHECK(s.failed_busy == 2);
  CHECK(s.output_tokens == 4 * kTokens);
  CHECK(s.input_tokens == 4 * 12);
  CHECK(run.peak_concurrency <= 4);
  CHECK(run.peak_concurrency >= 2);
  CHECK(s.ttft_ms.median >= 140);
  CHECK(server.requests() == 4);
}

TEST_CASE("ember bench-serve end to end: report, JSON and the request bodies it sends") {
  ScriptedServer server;
  test::TempDir dir("loadgen-cli");
  const std::string out = dir.file("r.json");
  const test::ProcessResult r =
      test::run_ember({"bench-serve", server.url(), "--num-prompts", "6", "--max-concurrency", "3", "--input-len", "20",
                       "--output-len", "5", "--model", "tiny", "--slo", "ttft:60000", "--json", out});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("| successful requests | 6 |") != std::string::npos);
  CHECK(r.out.find("| peak concurrent requests | 3 |") != std::string::npos);
  CHECK(r.out.find("| TTFT (time to first token) |") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(test::slurp(out));
  CHECK(j["completed"] == 6);
  CHECK(j["total_output_tokens"] == 6 * kTokens);
  CHECK(j["request_goodput"].get<double>() > 0);
  CHECK(j["median_ttft_ms"].get<double>() >= 140);
  const nlohmann::json body = nlohmann::json::parse(server.last_body());
  CHECK(body["model"] == "tiny");
  CHECK(body["max_tokens"] == 5);
  CHECK(body["stream"] == true);
  CHECK(body["ignore_eos"] == true);
  const std::string prompt = body["prompt"].get<std::string>();
  CHECK(std::count(prompt.begin(), prompt.end(), ' ') == 19);
}

TEST_CASE("ember bench-serve: bad flags are one line with exit 2; all failing is exit 3") {
  ScriptedServer server;
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"bench-serve", server.url(), "--request-rate", "0"},
        {"bench-serve", server.url(), "--request-rate", "fast"},
        {"bench-serve", server.url(), "--slo", "ttft"},
        {"bench-serve", server.url(), "--endpoint", "/completion"},
        {"bench-serve", server.url(), "--range-ratio", "1.5"},
        {"bench-serve", "localhost:80"},
        {"bench-serve", server.url(), "--num-prompts", "x"},
        {"bench-serve"}}) {
    const test::ProcessResult r = test::run_ember(args);
    CAPTURE(args.back());
    CHECK(r.exit_code == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
  const test::ProcessResult busy = test::run_ember({"bench-serve", server.url("/busy"), "--num-prompts", "3"});
  CHECK(busy.exit_code == 3);
  CHECK(busy.out.find("503: 3") != std::string::npos);
  CHECK(server.requests() == 0);
}
