// The agent protocols end to end on the aidreams260K checkpoint: /v1/responses and
// /v1/messages give the chat path's text (whole and streamed, in their event sequences),
// x-api-key and Bearer keys, CORS, count_tokens, /apply-template, /props, the prefix
// cache's cached_tokens, and 400s naming the field.
#include <doctest/doctest.h>

#include "serve_test_util.h"

using namespace ember;
using namespace ember::test;

namespace {

const httplib::Headers kKey{{"x-api-key", "sk-test"}};

json::Value ok_json(const httplib::Result& r) {
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  return json::parse(r->body, "response");
}

std::vector<json::Value> events(const httplib::Result& r, std::vector<std::string>* names = nullptr) {
  REQUIRE(r);
  REQUIRE(r->status == 200);
  CHECK(r->get_header_value("Content-Type").find("text/event-stream") == 0);
  std::vector<json::Value> out;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("event: ", 0) == 0 && names) names->push_back(line.substr(7));
    if (line.rfind("data: ", 0) == 0 && line != "data: [DONE]") out.push_back(json::parse(line.substr(6), "event"));
  }
  return out;
}

ServerProcess& server() {
  static ServerProcess s({"-t", "1", "-m", aidreams_gguf(), "-np", "2", "-c", "256", "--api-key", "sk-test", "--alias", "tiny",
                          "--cors-origins", "http://app.example"});
  return s;
}

std::string chat_text(const std::string& system, const std::string& user, int max_tokens) {
  const std::string body = R"({"messages": [{"role": "system", "content": )" + json::quote(system) + R"(}, {"role": "user", "content": )" +
                           json::quote(user) + R"(}], "temperature": 0, "max_tokens": )" + std::to_string(max_tokens) + "}";
  return ok_json(post(server(), "/v1/chat/completions", body, kKey)).at("choices").at(0).at("message").at("content").get<std::string>();
}

}  // namespace

TEST_CASE("Responses: the chat path's text, whole and streamed, numbered events") {
  const std::string want = chat_text("Be poetic.", "The sea", 16);
  const std::string body = R"({"model": "tiny", "instructions": "Be poetic.", "input": [{"role": "user", "content": [{"type": "input_text", "text": "The sea"}]}], "max_output_tokens": 16, "temperature": 0)";
  const json::Value whole = ok_json(post(server(), "/v1/responses", body + "}", kKey));
  CHECK(whole.at("object") == "response");
  CHECK(whole.at("status") == "incomplete");
  CHECK(whole.at("output").at(0).at("content").at(0).at("text") == want);
  CHECK(whole.at("usage").at("output_tokens") == 16);

  std::vector<std::string> names;
  const std::vector<json::Value> e = events(post(server(), "/v1/responses", body + R"(, "stream": true})", kKey), &names);
  REQUIRE(names.size() == e.size());
  REQUIRE(names.size() >= 8);
  CHECK(names[0] == "response.created");
  CHECK(names[1] == "response.in_progress");
  CHECK(names[2] == "response.output_item.added");
  CHECK(names[3] == "response.content_part.added");
  CHECK(names.back() == "response.incomplete");
  std::string text;
  for (size_t i = 0; i < e.size(); ++i) {
    CHECK(e[i].at("type") == names[i]);
    CHECK(e[i].at("sequence_number") == static_cast<int64_t>(i));
    if (names[i] == "response.output_text.delta") text += e[i].at("delta").get<std::string>();
  }
  CHECK(text == want);
  CHECK(e.back().at("response").at("output").at(0).at("content").at(0).at("text") == want);
}

TEST_CASE("Messages: the chat path's text, whole and streamed with event lines; count_tokens") {
  const std::string want = chat_text("Be poetic.", "The sea", 12);
  const std::string body = R"({"model": "claude-whatever", "max_tokens": 12, "system": "Be poetic.", "messages": [{"role": "user", "content": [{"type": "text", "text": "The sea"}]}], "temperature": 0)";
  const json::Value whole = ok_json(post(server(), "/v1/messages", body + "}", kKey));
  CHECK(whole.at("type") == "message");
  CHECK(whole.at("model") == "claude-whatever");
  CHECK(whole.at("content").at(0).at("type") == "text");
  CHECK(whole.at("content").at(0).at("text") == want);
  CHECK(whole.at("stop_reason") == "max_tokens");
  const int64_t prompt_tokens = whole.at("usage").at("input_tokens").get<int64_t>() + whole.at("usage").at("cache_read_input_tokens").get<int64_t>();

  std::vector<std::string> names;
  const std::vector<json::Value> e = events(post(server(), "/v1/messages", body + R"(, "stream": true})", kKey), &names);
  REQUIRE(names.size() >= 6);
  CHECK(names[0] == "message_start");
  CHECK(names[1] == "ping");
  CHECK(names[2] == "content_block_start");
  CHECK(names[names.size() - 3] == "content_block_stop");
  CHECK(names[names.size() - 2] == "message_delta");
  CHECK(names.back() == "message_stop");
  std::string text;
  for (size_t i = 0; i < e.size(); ++i) {
    CHECK(e[i].at("type") == names[i]);
    if (names[i] == "content_block_delta") text += e[i].at("delta").at("text").get<std::string>();
  }
  CHECK(text == want);
  CHECK(e[e.size() - 2].at("delta").at("stop_reason") == "max_tokens");

  const json::Value count = ok_json(post(server(), "/v1/messages/count_tokens",
                                         R"({"model": "x", "system": "Be poetic.", "messages": [{"role": "user", "content": "The sea"}]})", kKey));
  CHECK(count.at("input_tokens") == prompt_tokens);
}

TEST_CASE("API keys: Bearer and x-api-key; 401 otherwise") {
  const std::string body = R"({"max_tokens": 2, "messages": [{"role": "user", "content": "x"}]})";
  CHECK(post(server(), "/v1/messages", body, kKey)->status == 200);
  CHECK(post(server(), "/v1/messages", body, {{"Authorization", "Bearer sk-test"}})->status == 200);
  CHECK(post(server(), "/v1/messages", body, {{"x-api-key", "sk-wrong"}})->status == 401);
  CHECK(post(server(), "/v1/messages", body)->status == 401);
  CHECK(post(server(), "/v1/responses", R"({"input": "x", "max_output_tokens": 2})", {{"x-api-key", "sk-test"}})->status == 200);
}

TEST_CASE("CORS: preflight without a key, Allow-Origin for allowed origins only") {
  httplib::Client c = server().client();
  httplib::Result pre = c.Options("/v1/chat/completions", {{"Origin", "http://app.example"}, {"Access-Control-Request-Method", "POST"},
                                                           {"Access-Control-Request-Headers", "authorization, content-type"}});
  REQUIRE(pre);
  CHECK(pre->status == 204);
  CHECK(pre->get_header_value("Access-Control-Allow-Origin") == "http://app.example");
  CHECK(pre->get_header_value("Access-Control-Allow-Headers") == "authorization, content-type");
  CHECK(pre->get_header_value("Access-Control-Allow-Methods").find("POST") != std::string::npos);
  httplib::Result get = c.Get("/v1/models", {{"Origin", "http://app.example"}, {"x-api-key", "sk-test"}});
  REQUIRE(get);
  CHECK(get->status == 200);
  CHECK(get->get_header_value("Access-Control-Allow-Origin") == "http://app.example");
  httplib::Result denied = c.Get("/v1/models", {{"Origin", "http://evil.example"}, {"x-api-key", "sk-test"}});
  REQUIRE(denied);
  CHECK(!denied->has_header("Access-Control-Allow-Origin"));
  httplib::Result unauthorized = c.Get("/v1/models", {{"Origin", "http://app.example"}});
  REQUIRE(unauthorized);
  CHECK(unauthorized->status == 401);  // the browser can read the error
  CHECK(unauthorized->get_header_value("Access-Control-Allow-Origin") == "http://app.example");
}

TEST_CASE("/apply-template and /props in llama-server's shapes") {
  const json::Value t = ok_json(post(server(), "/apply-template", R"({"messages": [{"role": "user", "content": "Hi"}]})", kKey));
  const std::string prompt = t.at("prompt").get<std::string>();
  CHECK(prompt.find("Hi") != std::string::npos);
  const json::Value tok = ok_json(post(server(), "/tokenize", R"({"content": )" + json::quote(prompt) + R"(, "add_special": true})", kKey));
  const json::Value chat = ok_json(post(server(), "/v1/chat/completions", R"({"messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1})", kKey));
  CHECK(chat.at("usage").at("prompt_tokens") == static_cast<int64_t>(tok.at("tokens").size()));

  const json::Value props = ok_json(server().client().Get("/props", kKey));
  CHECK(props.at("total_slots") == 2);
  CHECK(props.at("default_generation_settings").at("n_ctx") == 256);
  CHECK(props.at("model_alias") == "tiny");
  CHECK(props.at("chat_template").is_string());
  CHECK(props.at("chat_template_caps").at("supports_tools") == false);  // no tool-call syntax in its template
  CHECK(props.at("bos_token").is_string());
}

TEST_CASE("usage.prompt_tokens_details.cached_tokens counts the prefix cache's blocks") {
  std::string long_text;
  for (int i = 0; i < 6; ++i) long_text += "The sea is calm and the sky is wide. ";
  const std::string body = R"({"messages": [{"role": "user", "content": )" + json::quote(long_text) + R"(}], "max_tokens": 1})";
  const json::Value first = ok_json(post(server(), "/v1/chat/completions", body, kKey));
  const json::Value second = ok_json(post(server(), "/v1/chat/completions", body, kKey));
  const int64_t prompt = second.at("usage").at("prompt_tokens").get<int64_t>();
  const int64_t cached = second.at("usage").at("prompt_tokens_details").at("cached_tokens").get<int64_t>();
  REQUIRE(prompt > 64);
  CHECK(cached >= 32);
  CHECK(cached < prompt);
  CHECK(cached % 32 == 0);  // whole blocks
  CHECK(first.at("usage").at("prompt_tokens_details").at("cached_tokens").get<int64_t>() <= cached);
}

TEST_CASE("agent requests the server refuses: 400 naming the field") {
  struct Case {
    const char* path;
    const char* body;
    const char* param;
  };
  const std::vector<Case> cases{
      {"/v1/responses", R"({"input": "x", "previous_response_id": "resp_1"})", "previous_response_id"},
      {"/v1/responses", R"({"input": "x", "model": "other"})", "model"},
      {"/v1/chat/completions", R"({"messages": [{"role": "tool", "content": "18C"}]})", "messages"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "tool_choice": "required"})", "tool_choice"},
      {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "x"}], "reasoning_effort": 3})", "reasoning_effort"},
      {"/v1/completions", R"({"prompt": "x", "tools": []})", "tools"},
      {"/apply-template", R"({"messages": "x"})", "messages"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.body);
    const httplib::Result r = post(server(), c.path, c.body, kKey);
    REQUIRE(r);
    CHECK(r->status == (std::string(c.param) == "model" ? 404 : 400));
    const json::Value e = json::parse(r->body, "error");
    CHECK(e.at("error").at("param") == c.param);
  }
  const httplib::Result m = post(server(), "/v1/messages", R"({"messages": [{"role": "user", "content": "x"}]})", kKey);
  REQUIRE(m);
  CHECK(m->status == 400);
  const json::Value e = json::parse(m->body, "error");
  CHECK(e.at("type") == "error");
  CHECK(e.at("error").at("type") == "invalid_request_error");
  CHECK(e.at("error").at("message").get<std::string>().find("max_tokens") != std::string::npos);
}
