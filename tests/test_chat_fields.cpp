// The chat-only request fields (engine/chat_fields.h) and what parse_completion_request
// makes of them: tools and tool_choice checked, reasoning_effort mapped into the template's
// kwargs as llama-server maps it, tool-call history messages checked, errors naming the
// field; a forced tool_choice writes its call's opening at the end of the prompt.
#include <doctest/doctest.h>

#include "engine/chat_fields.h"
#include "engine/completion_request.h"
#include "tokenizer/chat_template.h"
#include "util/error.h"

using namespace ember;

namespace {

const char* kTools = R"([{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}])";

json::Value body(const std::string& extra) {
  return json::parse(R"({"messages": [{"role": "user", "content": "hi"}])" + extra + "}", "body");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::InvalidArgument);
    return e.what();
  }
  return "accepted";
}

}  // namespace

TEST_CASE("tools and tool_choice") {
  ChatFields f = read_chat_fields(body(std::string(", \"tools\": ") + kTools));
  CHECK(f.tools.size() == 1);
  CHECK(f.tool_choice.mode == ToolChoice::Mode::Auto);
  CHECK(f.wants_calls());
  CHECK(!f.forces_call());
  f = read_chat_fields(body(std::string(", \"tools\": ") + kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})"));
  CHECK(f.tool_choice.mode == ToolChoice::Mode::Named);
  CHECK(f.tool_choice.name == "get_weather");
  CHECK(f.forces_call());
  f = read_chat_fields(body(std::string(", \"tools\": ") + kTools + R"(, "tool_choice": "none", "parallel_tool_calls": false)"));
  CHECK(!f.wants_calls());
  CHECK(!f.tools.is_null());  // kept for the prompt
  CHECK(!f.parallel_tool_calls);
  CHECK(read_chat_fields(body(R"(, "tools": [])")).tools.is_null());
}

TEST_CASE("bad tool fields: errors naming the field") {
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"(, "tools": {})", "field 'tools'"},
      {R"(, "tools": [{"type": "function"}])", "field 'tools'"},
      {R"(, "tools": [{"type": "retrieval", "function": {"name": "x"}}])", "field 'tools'"},
      {R"(, "tools": [{"type": "function", "function": {"name": ""}}])", "field 'tools'"},
      {R"(, "tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}])", "field 'tools'"},
      {R"(, "tool_choice": "always")", "field 'tool_choice'"},
      {R"(, "tool_choice": "required")", "field 'tool_choice'"},
      {std::string(", \"tools\": ") + kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "other"}})", "field 'tool_choice'"},
      {R"(, "parallel_tool_calls": 1)", "field 'parallel_tool_calls'"},
      {R"(, "reasoning_effort": "max")", "field 'reasoning_effort'"},
      {R"(, "chat_template_kwargs": [])", "field 'chat_template_kwargs'"},
  };
  for (const auto& [extra, want] : cases) {
    CAPTURE(extra);
    CHECK(error_of([&] { read_chat_fields(body(extra)); }).find(want) == 0);
  }
}

TEST_CASE("reasoning_effort maps onto the template's kwargs; the request's own kwargs win") {
  CHECK(read_chat_fields(body(R"(, "reasoning_effort": "none")")).template_kwargs == json::parse(R"({"enable_thinking": false})", "k"));
  CHECK(read_chat_fields(body(R"(, "reasoning_effort": "high")")).template_kwargs == json::parse(R"({"reasoning_effort": "high"})", "k"));
  CHECK(read_chat_fields(body(R"(, "reasoning_effort": "none", "chat_template_kwargs": {"enable_thinking": true})")).template_kwargs ==
        json::parse(R"({"enable_thinking": true})", "k"));
}

TEST_CASE("messages with tool calls and tool results are checked") {
  CHECK_NOTHROW(check_chat_messages(json::parse(R"([
      {"role": "user", "content": "weather?"},
      {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "18C"},
      {"role": "assistant", "content": [{"type": "text", "text": "18C"}], "reasoning_content": "easy"}])", "m")));
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"([{"role": "tool", "content": "x"}])", "messages[0].tool_call_id"},
      {R"([{"role": "user", "content": null}])", "messages[0].content"},
      {R"([{"role": "user"}])", "messages[0]"},
      {R"([{"role": "robot", "content": "x"}])", "messages[0].role"},
      {R"([{"role": "user", "content": "x", "tool_calls": []}])", "messages[0].tool_calls"},
      {R"([{"role": "assistant", "content": null, "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": {}}}]}])", "messages[0].tool_calls[0]"},
      {R"([{"role": "assistant", "content": "x", "reasoning_content": 1}])", "messages[0].reasoning_content"},
  };
  for (const auto& [messages, want] : cases) {
    CAPTURE(messages);
    CHECK(error_of([&] { check_chat_messages(json::parse(messages, "m")); }).find(want) == 0);
  }
}

TEST_CASE("prompt requests refuse chat-only fields") {
  const ChatTemplate tmpl = ChatTemplate::by_name("chatml");
  const ChatSetup chat{&tmpl, reply_format_for("<tool_call>")};
  CHECK(error_of([&] { parse_completion_request(json::parse(R"({"prompt": "x", "tools": []})", "b"), {}, chat); }) ==
        "field 'tools' is for chat requests ('messages')");
}

TEST_CASE("a forced tool_choice ends the prompt with the call's opening, read back as the reply's start") {
  const ChatTemplate tmpl = ChatTemplate::by_name("chatml");
  const ChatSetup chat{&tmpl, reply_format_for("<tool_call>")};
  const json::Value b = body(std::string(", \"tools\": ") + kTools + R"(, "tool_choice": {"type": "function", "function": {"name": "get_weather"}})");
  CompletionRequest r;
  try {
    r = parse_completion_request(b, {}, chat);
  } catch (const Error& e) {
    // Until the model's own template renders tools (the Jinja engine), the fallback refuses them.
    MESSAGE("tools not rendered by this build's chat template: " << std::string(e.what()));
    CHECK(std::string(e.what()).find("tools") != std::string::npos);
    return;
  }
  const std::string opening = forced_call_opening(ToolCallSyntax::Hermes, "get_weather");
  CHECK(r.prompt.substr(r.prompt.size() - opening.size()) == opening);
  CHECK(r.reply.prefill == opening);
  CHECK(r.reply.parse_tools);
}
