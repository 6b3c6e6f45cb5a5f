// The API writers on canned reply pieces (server/reply_writer.h): OpenAI chat's tool-call
// deltas join by index to the whole answer's calls; the Responses API's event sequence
// and numbering; Anthropic's content blocks and events; and the Responses and Messages
// requests translated into chat completions bodies, with 400s naming the field.
#include <doctest/doctest.h>

#include "serve_test_util.h"
#include "server/messages_api.h"
#include "server/openai_format.h"
#include "server/responses_api.h"
#include "tokenizer/tokenizer.h"

using namespace ember;
using namespace ember::server;
using ember::test::sse_payloads;

namespace {

ReplyPiece text(std::string s) { return ReplyPiece{ReplyPiece::Kind::Content, std::move(s), {}}; }
ReplyPiece thought(std::string s) { return ReplyPiece{ReplyPiece::Kind::Reasoning, std::move(s), {}}; }
ReplyPiece call(std::string name, std::string args) {
  return ReplyPiece{ReplyPiece::Kind::ToolCall, {}, ToolCall{new_tool_call_id(), std::move(name), std::move(args)}};
}

// A reply as a stream would deliver it, and the same merged.
const std::vector<ReplyPieces>& updates() {
  static const std::vector<ReplyPieces> u{{thought("Weather")}, {thought(" needed."), text("Checking")},
                                          {text(" now."), call("get_weather", R"({"city":"Paris"})")},
                                          {call("get_time", R"({"tz":"CET"})")}};
  return u;
}
ParsedReply merged() {
  ParsedReply r;
  for (const ReplyPieces& p : updates()) r.add(p);
  return r;
}

StreamResult finished(const char* reason) {
  StreamResult r;
  r.finish_reason = reason;
  r.prompt_tokens = 40;
  r.completion_tokens = 12;
  r.cached_tokens = 32;
  return r;
}

std::string stream_of(ReplyWriter& w, const StreamResult& result) {
  std::string out = w.stream_start();
  for (const ReplyPieces& p : updates()) out += w.stream_pieces(p, {});
  return out + w.stream_end(result);
}

std::vector<json::Value> events_of(const std::string& sse) {
  std::vector<json::Value> out;
  for (const std::string& data : sse_payloads(sse))
    if (data != "[DONE]") out.push_back(json::parse(data, "event"));
  return out;
}

// The "event:" names of a stream, in order; each must match its data's "type".
std::vector<std::string> event_names(const std::string& sse) {
  std::vector<std::string> names;
  std::istringstream in(sse);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("event: ", 0) == 0) names.push_back(line.substr(7));
  const std::vector<json::Value> events = events_of(sse);
  REQUIRE(events.size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) CHECK(events[i].at("type").get<std::string>() == names[i]);
  return names;
}

const Tokenizer& tiny_tokenizer() {
  static const Tokenizer tok = Tokenizer::from_gguf(gguf::File::open(test::aidreams_gguf()));
  return tok;
}

}  // namespace

TEST_CASE("OpenAI chat: streamed tool-call fragments joined by index equal the whole answer") {
  const ResponseHeader h = make_header(Endpoint::ChatCompletions, "m");
  const json::Value whole = json::parse(openai_writer(h, {}, tiny_tokenizer())->whole(merged(), {}, finished("stop")), "whole");
  const json::Value& message = whole.at("choices").at(0).at("message");
  CHECK(whole.at("choices").at(0).at("finish_reason") == "tool_calls");
  CHECK(message.at("content") == "Checking now.");
  CHECK(message.at("reasoning_content") == "Weather needed.");
  CHECK(message.at("reasoning") == "Weather needed.");
  CHECK(whole.at("usage").at("prompt_tokens_details").at("cached_tokens") == 32);
  REQUIRE(message.at("tool_calls").size() == 2);

  auto writer = openai_writer(h, {false, true}, tiny_tokenizer());
  const std::string sse = stream_of(*writer, finished("stop"));
  CHECK(sse.substr(sse.size() - 14) == "data: [DONE]\n\n");
  std::string content, reasoning, finish;
  std::map<int64_t, json::Value> calls;
  for (const json::Value& e : events_of(sse)) {
    if (e.at("choices").empty()) {
      CHECK(e.at("usage").at("completion_tokens") == 12);
      continue;
    }
    const json::Value& c = e.at("choices").at(0);
    const json::Value& d = c.at("delta");
    if (d.contains("content")) content += d.at("content").get<std::string>();
    if (d.contains("reasoning_content")) reasoning += d.at("reasoning_content").get<std::string>();
    if (!c.at("finish_reason").is_null()) finish = c.at("finish_reason").get<std::string>();
    if (!d.contains("tool_calls")) continue;
    for (const json::Value& t : d.at("tool_calls")) {
      json::Value& joined = calls[t.at("index").get<int64_t>()];
      if (t.contains("id")) joined["id"] = t.at("id"), joined["name"] = t.at("function").at("name"), joined["arguments"] = "";
      joined["arguments"] = joined.at("arguments").get<std::string>() + t.at("function").at("arguments").get<std::string>();
    }
  }
  CHECK(content == "Checking now.");
  CHECK(reasoning == "Weather needed.");
  CHECK(finish == "tool_calls");
  REQUIRE(calls.size() == 2);
  for (int i = 0; i < 2; ++i) {
    CHECK(calls[i].at("name") == message.at("tool_calls").at(i).at("function").at("name"));
    CHECK(calls[i].at("arguments") == message.at("tool_calls").at(i).at("function").at("arguments"));
  }
}

TEST_CASE("OpenAI chat: a reply without calls keeps its finish reason; content is null only beside calls") {
  const ResponseHeader h = make_header(Endpoint::ChatCompletions, "m");
  ParsedReply only_calls;
  only_calls.tool_calls.push_back(ToolCall{new_tool_call_id(), "f", "{}"});
  json::Value j = json::parse(openai_writer(h, {}, tiny_tokenizer())->whole(only_calls, {}, finished("length")), "w");
  CHECK(j.at("choices").at(0).at("message").at("content").is_null());
  CHECK(j.at("choices").at(0).at("finish_reason") == "length");
  j = json::parse(openai_writer(h, {}, tiny_tokenizer())->whole(ParsedReply{}, {}, finished("stop")), "w");
  CHECK(j.at("choices").at(0).at("message").at("content") == "");
  CHECK(!j.at("choices").at(0).at("message").contains("tool_calls"));
  CHECK(j.at("choices").at(0).at("finish_reason") == "stop");
}

TEST_CASE("Responses: the event sequence, numbered in order, and the final response") {
  auto writer = responses_writer(ResponsesEcho{"m", json::parse(R"({"input": "x", "tools": []})", "req")});
  const std::string sse = stream_of(*writer, finished("stop"));
  const std::vector<std::string> want{
      "response.created", "response.in_progress",
      "response.output_item.added", "response.reasoning_text.delta", "response.reasoning_text.delta",
      "response.reasoning_text.done", "response.output_item.done",
      "response.output_item.added", "response.content_part.added", "response.output_text.delta", "response.output_text.delta",
      "response.output_text.done", "response.content_part.done", "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
      "response.output_item.done",
      "response.output_item.added", "response.function_call_arguments.delta", "response.function_call_arguments.done",
      "response.output_item.done", "response.completed"};
  CHECK(event_names(sse) == want);
  const std::vector<json::Value> events = events_of(sse);
  for (size_t i = 0; i < events.size(); ++i) CHECK(events[i].at("sequence_number") == static_cast<int64_t>(i));
  const json::Value& done = events.back().at("response");
  CHECK(done.at("status") == "completed");
  REQUIRE(done.at("output").size() == 4);
  CHECK(done.at("output").at(0).at("type") == "reasoning");
  CHECK(done.at("output").at(1).at("content").at(0).at("text") == "Checking now.");
  CHECK(done.at("output").at(2).at("type") == "function_call");
  CHECK(done.at("output").at(2).at("arguments") == R"({"city":"Paris"})");
  CHECK(done.at("usage").at("input_tokens_details").at("cached_tokens") == 32);
  // Items are numbered by their place in the output.
  CHECK(events[2].at("output_index") == 0);
  CHECK(events[7].at("output_index") == 1);
  CHECK(events[9].at("output_index") == 1);
  CHECK(events[18].at("output_index") == 3);

  const json::Value whole = json::parse(responses_writer(ResponsesEcho{"m", json::Value::object()})->whole(merged(), {}, finished("length")), "w");
  CHECK(whole.at("status") == "incomplete");
  CHECK(whole.at("incomplete_details").at("reason") == "max_output_tokens");
  CHECK(whole.at("output").size() == 4);
}

TEST_CASE("Messages: content blocks, their events, and stop reasons") {
  auto writer = messages_writer("claude-x");
  const std::string sse = stream_of(*writer, finished("stop"));
  const std::vector<std::string> want{"message_start", "ping",
                                      "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
                                      "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
                                      "content_block_start", "content_block_delta", "content_block_stop",
                                      "content_block_start", "content_block_delta", "content_block_stop",
                                      "message_delta", "message_stop"};
  CHECK(event_names(sse) == want);
  const std::vector<json::Value> e = events_of(sse);
  CHECK(e[2].at("content_block").at("type") == "thinking");
  CHECK(e[3].at("delta").at("type") == "thinking_delta");
  CHECK(e[6].at("index") == 1);
  CHECK(e[7].at("delta").at("text") == "Checking");
  CHECK(e[10].at("content_block").at("type") == "tool_use");
  CHECK(e[10].at("content_block").at("id").get<std::string>().rfind("toolu_", 0) == 0);
  CHECK(e[11].at("delta").at("partial_json") == R"({"city":"Paris"})");
  CHECK(e[15].at("index") == 3);
  CHECK(e[16].at("delta").at("stop_reason") == "tool_use");
  CHECK(e[16].at("usage").at("cache_read_input_tokens") == 32);

  const json::Value whole = json::parse(messages_writer("claude-x")->whole(merged(), {}, finished("stop")), "w");
  CHECK(whole.at("stop_reason") == "tool_use");
  REQUIRE(whole.at("content").size() == 4);
  CHECK(whole.at("content").at(2).at("input").at("city") == "Paris");
  ParsedReply plain;
  plain.content = "Hi";
  CHECK(json::parse(messages_writer("m")->whole(plain, {}, finished("stop")), "w").at("stop_reason") == "end_turn");
  CHECK(json::parse(messages_writer("m")->whole(plain, {}, finished("length")), "w").at("stop_reason") == "max_tokens");
}

TEST_CASE("Responses requests become chat bodies") {
  const json::Value chat = chat_body_from_responses(json::parse(R"({
    "model": "m", "instructions": "Be terse.", "max_output_tokens": 50, "reasoning": {"effort": "low"},
    "input": [{"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
              {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
              {"type": "function_call_output", "call_id": "c1", "output": "18C"}],
    "tools": [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}],
    "tool_choice": {"type": "function", "name": "get_weather"}})", "req"));
  const json::Value& m = chat.at("messages");
  REQUIRE(m.size() == 4);
  CHECK(m[0] == json::parse(R"({"role": "system", "content": "Be terse."})", "x"));
  CHECK(m[1].at("content") == "Weather?");
  CHECK(m[2].at("role") == "assistant");
  CHECK(m[2].at("content").is_null());
  CHECK(m[2].at("tool_calls").at(0).at("function").at("arguments") == "{\"city\":\"Paris\"}");
  CHECK(m[3] == json::parse(R"({"role": "tool", "tool_call_id": "c1", "content": "18C"})", "x"));
  CHECK(chat.at("tools").at(0).at("function").at("name") == "get_weather");
  CHECK(chat.at("tool_choice").at("function").at("name") == "get_weather");
  CHECK(chat.at("max_tokens") == 50);
  CHECK(chat.at("reasoning_effort") == "low");
  CHECK(chat_body_from_responses(json::parse(R"({"input": "hi"})", "r")).at("messages").at(0).at("role") == "user");
}

TEST_CASE("Messages requests become chat bodies") {
  const json::Value chat = chat_body_from_messages(json::parse(R"({
    "model": "claude", "max_tokens": 64, "system": [{"type": "text", "text": "Be terse."}], "stop_sequences": ["END"],
    "messages": [{"role": "user", "content": "Weather?"},
                 {"role": "assistant", "content": [{"type": "thinking", "thinking": "Call it.", "signature": "s"},
                                                   {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "18C"},
                                              {"type": "text", "text": "And tomorrow?"}]}],
    "tools": [{"name": "get_weather", "description": "d", "input_schema": {"type": "object"}}],
    "tool_choice": {"type": "any", "disable_parallel_tool_use": true}, "thinking": {"type": "disabled"}})", "req"));
  const json::Value& m = chat.at("messages");
  REQUIRE(m.size() == 5);
  CHECK(m[0].at("content") == "Be terse.");
  CHECK(m[2].at("reasoning_content") == "Call it.");
  CHECK(m[2].at("tool_calls").at(0).at("id") == "toolu_1");
  CHECK(json::parse(m[2].at("tool_calls").at(0).at("function").at("arguments").get<std::string>(), "a").at("city") == "Paris");
  CHECK(m[3] == json::parse(R"({"role": "tool", "tool_call_id": "toolu_1", "content": "18C"})", "x"));
  CHECK(m[4].at("content") == "And tomorrow?");
  CHECK(chat.at("tools").at(0).at("function").at("parameters").at("type") == "object");
  CHECK(chat.at("tool_choice") == "required");
  CHECK(chat.at("parallel_tool_calls") == false);
  CHECK(chat.at("stop").at(0) == "END");
  CHECK(chat.at("chat_template_kwargs").at("enable_thinking") == false);
  CHECK(!chat.contains("model"));  // echoed, not checked
}

TEST_CASE("bad Responses and Messages requests: 400 naming the field") {
  struct Case {
    bool responses;
    const char* body;
    const char* param;
  };
  const std::vector<Case> cases{
      {true, R"({"input": "x", "previous_response_id": "resp_1"})", "previous_response_id"},
      {true, R"({})", "input"},
      {true, R"({"input": 3})", "input"},
      {true, R"({"input": [{"type": "image", "url": "x"}]})", "input"},
      {true, R"({"input": [{"type": "function_call", "name": "f"}]})", "input"},
      {true, R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools"},
      {true, R"({"input": "x", "tool_choice": {"type": "file_search"}})", "tool_choice"},
      {true, R"({"input": "x", "text": {"format": {"type": "json_schema"}}})", "text"},
      {true, R"({"input": "x", "instructions": 5})", "instructions"},
      {false, R"({"messages": [{"role": "user", "content": "x"}]})", "max_tokens"},
      {false, R"({"max_tokens": 5, "messages": []})", "messages"},
      {false, R"({"max_tokens": 5, "messages": [{"role": "system", "content": "x"}]})", "messages"},
      {false, R"({"max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "image"}]}]})", "messages"},
      {false, R"({"max_tokens": 5, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "f", "input": 1}]}]})", "messages"},
      {false, R"({"max_tokens": 5, "system": 3, "messages": [{"role": "user", "content": "x"}]})", "system"},
      {false, R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tool_choice": {"type": "maybe"}})", "tool_choice"},
      {false, R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "bash_20250124", "name": "bash"}]})", "tools"},
      {false, R"({"max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "thinking": {"type": "sometimes"}})", "thinking"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.body);
    const json::Value body = json::parse(c.body, "case");
    try {
      if (c.responses) chat_body_from_responses(body);
      else chat_body_from_messages(body);
      FAIL("accepted");
    } catch (const ApiError& e) {
      CHECK(e.status == 400);
      CHECK(e.param == c.param);
    }
  }
  CHECK_NOTHROW(chat_body_from_messages(json::parse(R"({"messages": [{"role": "user", "content": "x"}]})", "c"), true));
}

TEST_CASE("Anthropic's error shape") {
  const json::Value e = json::parse(anthropic_error_body(ApiError(401, "authentication_error", "no key")), "e");
  CHECK(e.at("type") == "error");
  CHECK(e.at("error").at("type") == "authentication_error");
  CHECK(e.at("error").at("message") == "no key");
}
