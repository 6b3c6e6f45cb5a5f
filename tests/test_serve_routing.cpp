// What load balancers and LLM routers need from `ember serve`: the routing metrics (KV
// usage in 0..1, the cache's shape, prefix-cache lookups and hits in tokens) under ember's
// names and, with --metrics-compat vllm, under vLLM's, moving as requests run; /metrics
// without the API key under --metrics-no-auth; and the drain on SIGTERM: /health and new
// requests get 503 at once while a running stream goes on to its `data: [DONE]`.
#include <doctest/doctest.h>

#include <atomic>

#include "serve_test_util.h"
#include "server/metrics_routing.h"
#include "util/error.h"

using namespace ember;
using namespace ember::test;

namespace {

const std::string kVllmLabels = "{engine=\"0\",model_name=\"aid\"}";

std::string metrics_of(const ServerProcess& server) {
  const httplib::Result r = server.client().Get("/metrics");
  REQUIRE(r);
  REQUIRE(r->status == 200);
  return r->body;
}

// A prompt of `n` words from aidreams' vocabulary (more tokens than words).
std::string words(int n) {
  std::string out = "Once";
  for (int i = 1; i < n; ++i) out += i % 3 ? " upon a" : " time";
  return out;
}

std::string long_request(bool stream) {
  return std::string(R"({"prompt": "Once", "max_tokens": 3000, "ignore_eos": true)") +
         (stream ? R"(, "stream": true, "stream_options": {"include_usage": true}})" : "}");
}

// Polls /metrics until `series` reads `value` (about 5 s at most).
bool wait_for_metric(const ServerProcess& server, const std::string& series, double value) {
  for (int i = 0; i < 500; ++i) {
    if (metric(metrics_of(server), series) == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_CASE("KV usage is the fullest group's owned share; label values are escaped") {
  using server::kv_cache_usage;
  CHECK(kv_cache_usage({}) == 0);
  CHECK(kv_cache_usage({{0, 0, 0, 0, 0}}) == 0);  // an empty pool is not full
  // window, total, used, cached, free: cached blocks count as free.
  CHECK(kv_cache_usage({{0, 100, 25, 70, 5}}) == doctest::Approx(0.25));
  CHECK(kv_cache_usage({{0, 100, 25, 0, 75}, {512, 50, 40, 0, 10}}) == doctest::Approx(0.8));
  server::EngineSnapshot e;
  e.kv = {{0, 64, 16, 0, 48}};
  e.kv_block_size = 32;
  e.scheduler.prefix_lookup_tokens = 100;
  e.scheduler.cached_tokens = 64;
  std::string out;
  server::append_routing_metrics(out, e, {"a\"b\\c\nd", true});
  CHECK(out.find("ember_kv_cache_usage_perc 0.25\n") != std::string::npos);
  CHECK(out.find("ember_cache_config_info{block_size=\"32\",num_gpu_blocks=\"64\"} 1\n") != std::string::npos);
  CHECK(out.find("ember_prefix_cache_queries_total 100\n") != std::string::npos);
  CHECK(out.find("ember_prefix_cache_hits_total 64\n") != std::string::npos);
  CHECK(out.find("vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"a\\\"b\\\\c\\nd\"} 64\n") != std::string::npos);
  CHECK(server::parse_metrics_compat("vllm"));
  CHECK_FALSE(server::parse_metrics_compat("none"));
  CHECK_THROWS_AS(server::parse_metrics_compat("VLLM"), Error);
}

TEST_CASE("routing metrics: cache shape, KV usage and prefix-cache tokens, under ember's and vLLM's names") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "2", "-c", "4096", "--alias", "aid", "--metrics-compat", "vllm"});
  std::string m = metrics_of(server);
  CHECK(m.find("ember_cache_config_info{block_size=\"32\",num_gpu_blocks=\"256\"} 1\n") != std::string::npos);
  CHECK(m.find("vllm:cache_config_info{block_size=\"32\",enable_prefix_caching=\"True\",engine=\"0\",num_gpu_blocks=\"256\"} 1\n") !=
        std::string::npos);
  CHECK(m.find("# TYPE vllm:prefix_cache_queries_total counter") != std::string::npos);
  CHECK(metric(m, "ember_kv_cache_usage_perc") == 0);
  CHECK(metric(m, "vllm:num_requests_running" + kVllmLabels) == 0);

  SUBCASE("usage and running move while a request runs, and fall back after") {
    std::thread running([&] { CHECK(post(server, "/v1/completions", long_request(false))->status == 200); });
    REQUIRE(wait_for_metric(server, "vllm:num_requests_running" + kVllmLabels, 1));
    m = metrics_of(server);
    const double usage = metric(m, "ember_kv_cache_usage_perc");
    CHECK(usage > 0);
    CHECK(usage <= 1);
    CHECK(metric(m, "vllm:kv_cache_usage_perc" + kVllmLabels) == usage);
    CHECK(metric(m, "vllm:gpu_cache_usage_perc" + kVllmLabels) == usage);
    CHECK(metric(m, "vllm:num_requests_waiting" + kVllmLabels) == metric(m, "ember_requests_waiting"));
    running.join();
    // The engine publishes its snapshot after the step that answered: poll for it.
    REQUIRE(wait_for_metric(server, "vllm:generation_tokens_total" + kVllmLabels, 3000));
    m = metrics_of(server);
    CHECK(metric(m, "ember_kv_cache_usage_perc") == 0);  // its blocks are cached, not owned
    CHECK(metric(m, "vllm:num_requests_running" + kVllmLabels) == 0);
  }
  SUBCASE("a repeated prompt is counted as lookups, then as hits in whole blocks") {
    const std::string body = "{\"prompt\": " + json::quote(words(120)) + ", \"max_tokens\": 1}";
    const httplib::Result first = post(server, "/v1/completions", body);
    REQUIRE(first);
    REQUIRE(first->status == 200);
    const int prompt_tokens = json::parse(first->body, "response").at("usage").at("prompt_tokens").get<int>();
    REQUIRE(prompt_tokens > 64);
    REQUIRE(wait_for_metric(server, "ember_prefix_cache_queries_total", prompt_tokens));
    CHECK(metric(metrics_of(server), "ember_prefix_cache_hits_total") == 0);
    REQUIRE(post(server, "/v1/completions", body)->status == 200);
    REQUIRE(wait_for_metric(server, "ember_prefix_cache_queries_total", 2 * prompt_tokens));
    m = metrics_of(server);
    const double hits = metric(m, "ember_prefix_cache_hits_total");
    CHECK(hits >= 32 * ((prompt_tokens - 1) / 32));  // every full block before the last token
    CHECK(hits < prompt_tokens);                      // the last token is always computed
    CHECK(metric(m, "vllm:prefix_cache_queries_total" + kVllmLabels) == 2 * prompt_tokens);
    CHECK(metric(m, "vllm:prefix_cache_hits_total" + kVllmLabels) == hits);
  }
}

TEST_CASE("without --metrics-compat there are no vLLM names; a bad value is refused") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "1", "-c", "128"});
  const std::string m = metrics_of(server);
  CHECK(m.find("ember_kv_cache_usage_perc") != std::string::npos);
  CHECK(m.find("vllm:") == std::string::npos);
  const ProcessResult bad = run_ember({"serve", "-m", aidreams_gguf(), "--metrics-compat", "sglang"});
  CHECK(bad.exit_code != 0);
  CHECK(bad.err.find("--metrics-compat 'sglang' must be vllm or none") != std::string::npos);
}

TEST_CASE("a model that fails to load is one line and an exit, also when it fails before the listener runs") {
  // The load can fail before the listening thread reaches its accept loop, where httplib's
  // stop() did nothing: about one start in two then listened forever.
  for (int i = 0; i < 12; ++i) {
    const ProcessResult r = run_ember({"serve", "-m", "/nonexistent/model.gguf", "--port", "0"}, {}, std::chrono::seconds(20));
    REQUIRE(r.exit_code != 128 + SIGKILL);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find("/nonexistent/model.gguf") != std::string::npos);
  }
}

TEST_CASE("--metrics-no-auth opens /metrics only; without it /metrics needs the key") {
  ServerProcess open({"-t", "1", "-m", aidreams_gguf(), "-np", "1", "-c", "128", "--api-key", "k", "--metrics-no-auth"});
  CHECK(open.client().Get("/metrics")->status == 200);
  CHECK(open.client().Get("/v1/models")->status == 401);
  CHECK(post(open, "/v1/completions", R"({"prompt": "The", "max_tokens": 1})")->status == 401);
  ServerProcess closed({"-t", "1", "-m", aidreams_gguf(), "-np", "1", "-c", "128", "--api-key", "k"});
  CHECK(closed.client().Get("/metrics")->status == 401);
  CHECK(closed.client().Get("/metrics", {{"Authorization", "Bearer k"}})->status == 200);
}

TEST_CASE("--drain-grace: after SIGTERM an idle server still answers 503 until the grace is over") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "1", "-c", "128", "--drain-grace", "1.5"});
  const auto start = std::chrono::steady_clock::now();
  ::kill(server.pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  const httplib::Result h = server.client().Get("/health");
  REQUIRE(h);  // not a refused connection
  CHECK(h->status == 503);
  CHECK(post(server, "/v1/completions", R"({"prompt": "The", "max_tokens": 1})")->status == 503);
  CHECK(server.terminate() == 0);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(1500));
  CHECK(run_ember({"serve", "-m", aidreams_gguf(), "--drain-grace", "-1"}).exit_code != 0);
}

TEST_CASE("SIGTERM drains: /health and new requests get 503 at once, a running stream ends with [DONE], exit 0") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "2", "-c", "4096"});
  std::string streamed;
  std::atomic<bool> first_bytes{false};
  std::thread stream([&] {
    httplib::Client c = server.client();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.body = long_request(true);
    req.set_header("Content-Type", "application/json");
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      streamed.append(data, n);
      first_bytes = true;
      return true;
    };
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    CHECK(c.send(req, res, error));
    CHECK(res.status == 200);
  });
  for (int i = 0; i < 500 && !first_bytes; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(first_bytes);
  const pid_t pid = server.pid();
  ::kill(pid, SIGTERM);
  int health = 0;
  for (int i = 0; i < 100 && health != 503; ++i) {
    const httplib::Result h = server.client().Get("/health");
    health = h ? h->status : 0;
    if (health != 503) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(health == 503);
  const httplib::Result late = post(server, "/v1/completions", R"({"prompt": "The", "max_tokens": 2})");
  REQUIRE(late);
  CHECK(late->status == 503);
  CHECK(late->body.find("shutting_down") != std::string::npos);
  CHECK(late->get_header_value("Retry-After") == "1");
  CHECK(server.terminate() == 0);
  stream.join();
  const std::vector<std::string> events = sse_payloads(streamed);
  REQUIRE(events.size() >= 3);
  CHECK(events.back() == "[DONE]");
  const json::Value usage = json::parse(events[events.size() - 2], "usage chunk").at("usage");
  CHECK(usage.at("completion_tokens").get<int>() == 3000);
}
