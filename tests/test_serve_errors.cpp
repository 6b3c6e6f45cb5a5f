// `ember serve` under bad input and pressure: a table of malformed requests gets 400s in
// OpenAI's error shape naming the field (and the server keeps serving), over-long prompts
// get both counts, the API key, 413, 404 for another model, 503 with Retry-After on a full
// queue, and SIGTERM ending a running request and exiting 0.
#include <doctest/doctest.h>

#include "serve_test_util.h"

using namespace ember;
using namespace ember::test;

namespace {

// The error object of an answer with `status`.
json::Value error_of(const httplib::Result& r, int status) {
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == status);
  const json::Value body = json::parse(r->body, "error body");
  const json::Value& e = body.at("error");
  CHECK(e.at("message").is_string());
  CHECK(e.at("type").is_string());
  CHECK(e.contains("param"));
  CHECK(e.contains("code"));
  return e;
}

}  // namespace

TEST_CASE("malformed requests get 400 naming the field, and the server keeps serving") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "2", "-c", "256"});
  struct Case {
    const char* path;
    std::string body;
    const char* param;  // "" when no field is at fault
  };
  const std::string invalid_utf8 = "{\"prompt\": \"a\xff\xfe\", \"max_tokens\": 2}";
  const Case cases[] = {
      {"/v1/completions", "{\"prompt\": ", ""},
      {"/v1/completions", "not json", ""},
      {"/v1/completions", "[1, 2]", ""},
      {"/v1/completions", invalid_utf8, ""},
      {"/v1/completions", R"({"prompt": 42})", "prompt"},
      {"/v1/completions", R"({"prompt": ""})", "prompt"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": "ten"})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": 1e300})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": 99999999999999999999999})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "a", "max_tokens": -5})", "max_tokens"},
      {"/v1/completions", R"({"prompt": "a", "temperature": 9})", "temperature"},
      {"/v1/completions", R"({"prompt": "a", "top_p": "x"})", "top_p"},
      {"/v1/completions", R"({"prompt": "a", "seed": -1})", "seed"},
      {"/v1/completions", R"({"prompt": "a", "stop": [1]})", "stop"},
      {"/v1/completions", R"({"prompt": "a", "stop": ["a", "b", "c", "d", "e"]})", "stop"},
      {"/v1/completions", R"({"prompt": "a", "n": 2})", "n"},
      {"/v1/completions", R"({"prompt": "a", "stream": "yes"})", "stream"},
      {"/v1/completions", R"({"prompt": "a", "logprobs": 9})", "logprobs"},
      {"/v1/completions", R"({"prompt": "a", "echo": true})", "echo"},
      {"/v1/completions", R"({"messages": [{"role": "user", "content": "x"}]})", "prompt"},
      {"/v1/chat/completions", R"({"messages": []})", "messages"},
      {"/v1/chat/completions", R"({"messages": "hi"})", "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "wizard", "content": "x"}]})", "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user"}]})", "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})", "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]})", "tools"},
      {"/v1/chat/completions", R"({"prompt": "x"})", "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}})", "response_format"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_schema",
          "json_schema": {"name": "n", "schema": {"type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}}}})", "response_format"},
      {"/v1/completions", R"({"prompt": "a", "json_schema": {"not": {}}})", "json_schema"},
      {"/v1/completions", R"({"prompt": "a", "grammar": "root ::= (\"a\"\n"})", "grammar"},
      {"/v1/completions", R"({"prompt": "a", "grammar": "root ::= \"a\"", "json_schema": {}})", ""},
      {"/tokenize", R"({"content": 5})", "content"},
      {"/detokenize", R"({"tokens": [1, 99999]})", "tokens"},
      {"/detokenize", R"({"tokens": [-1]})", "tokens"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.path);
    CAPTURE(c.body);
    const json::Value e = error_of(post(server, c.path, c.body), 400);
    CHECK(e.at("type").get<std::string>() == "invalid_request_error");
    if (*c.param) {
      INFO(e.dump());
      REQUIRE(e.at("param").is_string());
      CHECK(e.at("param").get<std::string>() == c.param);
    }
  }
  const httplib::Result ok = post(server, "/v1/completions", R"({"prompt": "The", "max_tokens": 3})");
  REQUIRE(ok);
  CHECK(ok->status == 200);
}

TEST_CASE("a prompt plus max_tokens beyond the context gets 400 with both counts") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "1", "-c", "64"});
  const json::Value e = error_of(post(server, "/v1/completions", R"({"prompt": "Once upon a time", "max_tokens": 100})"), 400);
  CHECK(e.at("code").get<std::string>() == "context_length_exceeded");
  const std::string m = e.at("message").get<std::string>();
  CHECK(m.find("+ max_tokens 100") != std::string::npos);
  CHECK(m.find("context of 64") != std::string::npos);
  std::string long_prompt;
  for (int i = 0; i < 80; ++i) long_prompt += "Once upon a time ";
  error_of(post(server, "/v1/completions", "{\"prompt\": " + json::quote(long_prompt) + "}"), 400);
}

TEST_CASE("the API key, unknown models, unknown routes and oversized bodies") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "1", "-c", "128", "--api-key", "s3cret", "--max-body", "4", "--alias", "aid"});
  const std::string body = R"({"prompt": "The", "max_tokens": 2})";
  CHECK(error_of(post(server, "/v1/completions", body), 401).at("type").get<std::string>() == "authentication_error");
  error_of(post(server, "/v1/completions", body, {{"Authorization", "Bearer s3cre"}}), 401);
  error_of(post(server, "/v1/completions", body, {{"Authorization", "s3cret"}}), 401);
  error_of(server.client().Get("/v1/models"), 401);
  const httplib::Headers auth{{"Authorization", "Bearer s3cret"}};
  const httplib::Result ok = post(server, "/v1/completions", body, auth);
  REQUIRE(ok);
  CHECK(ok->status == 200);
  const httplib::Result health = server.client().Get("/health");  // open without the key
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(error_of(post(server, "/v1/completions", R"({"model": "gpt-4", "prompt": "x"})", auth), 404).at("param").get<std::string>() == "model");
  const httplib::Result named = post(server, "/v1/completions", R"({"model": "aid", "prompt": "x", "max_tokens": 1})", auth);
  REQUIRE(named);
  CHECK(named->status == 200);
  error_of(server.client().Get("/v1/nothing", auth), 404);
  const std::string big = "{\"prompt\": \"" + std::string(8000, 'a') + "\"}";
  error_of(post(server, "/v1/completions", big, auth), 413);
}

TEST_CASE("a full queue gets 503 with Retry-After; SIGTERM finishes the running request and exits 0") {
  ServerProcess server({"-t", "1", "-m", aidreams_gguf(), "-np", "1", "--max-queue", "0", "-c", "4096"});
  std::string first;
  std::thread long_request([&] {
    const httplib::Result r = post(server, "/v1/completions", R"({"prompt": "Once", "max_tokens": 3000, "ignore_eos": true})");
    if (r && r->status == 200) first = r->body;
  });
  // Wait until it runs, then one more request finds no slot and no queue.
  for (int i = 0; i < 500; ++i) {
    const httplib::Result m = server.client().Get("/metrics");
    if (m && metric(m->body, "ember_requests_running") == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  const httplib::Result busy = post(server, "/v1/completions", R"({"prompt": "The", "max_tokens": 2})");
  const json::Value e = error_of(busy, 503);
  CHECK(e.at("code").get<std::string>() == "queue_full");
  CHECK(busy->get_header_value("Retry-After") == "1");
  CHECK(server.terminate() == 0);
  long_request.join();
  REQUIRE(!first.empty());  // it was finished, not cut
  const json::Value done = json::parse(first, "response");
  CHECK(done.at("usage").at("completion_tokens").get<int64_t>() == 3000);
  CHECK(server.log().find("SIGTERM") != std::string::npos);
}
