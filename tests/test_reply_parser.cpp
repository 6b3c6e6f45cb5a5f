// The reply parsers (template/reply_parser.h) on canned model text of every family: the
// answer, the reasoning and the tool calls come apart; a malformed call comes back as
// content; and pushing the text split at every byte boundary (and byte by byte) gives the
// same result as pushing it whole.
#include <doctest/doctest.h>

#include "template/reply_parser.h"

using namespace ember;

namespace {

ReplyParserOptions options(ToolCallSyntax tools, bool think = false, bool open = false) {
  ReplyParserOptions o;
  o.format.tools = tools;
  o.format.think_tags = think;
  o.parse_tools = tools != ToolCallSyntax::None;
  o.reasoning_open = open;
  return o;
}

// Ids are random: compare names and arguments.
std::string describe(const ParsedReply& r) {
  std::string s = "content=[" + r.content + "] reasoning=[" + r.reasoning + "]";
  for (const ToolCall& c : r.tool_calls) s += " call " + c.name + " " + c.arguments;
  return s;
}

ParsedReply pushed(const ReplyParserOptions& o, const std::vector<std::string_view>& parts) {
  std::unique_ptr<ReplyParser> p = make_reply_parser(o);
  ParsedReply r;
  for (std::string_view part : parts) r.add(p->push(part));
  r.add(p->finish());
  return r;
}

// The whole result, checked equal for every split in two, and byte by byte; no piece of
// content or reasoning a stream shows may hold a marker's start that is later taken back.
ParsedReply parse_every_way(const ReplyParserOptions& o, std::string_view text) {
  const ParsedReply whole = parse_reply(o, text);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    CAPTURE(cut);
    CHECK(describe(pushed(o, {text.substr(0, cut), text.substr(cut)})) == describe(whole));
  }
  std::vector<std::string_view> bytes;
  for (size_t i = 0; i < text.size(); ++i) bytes.push_back(text.substr(i, 1));
  CHECK(describe(pushed(o, bytes)) == describe(whole));
  for (const ToolCall& c : whole.tool_calls) {
    CHECK(c.id.rfind("call_", 0) == 0);
    CHECK(c.id.size() == 29);
  }
  return whole;
}

}  // namespace

TEST_CASE("the template's markers choose the syntax") {
  CHECK(reply_format_for("{{- '<tool_call>\\n' }}").tools == ToolCallSyntax::Hermes);
  CHECK(reply_format_for("[TOOL_CALLS] {{ tools }}").tools == ToolCallSyntax::Mistral);
  CHECK(reply_format_for("<|start_header_id|>ipython {% if tools %}").tools == ToolCallSyntax::Llama3Json);
  CHECK(reply_format_for("<|python_tag|>").tools == ToolCallSyntax::Llama3Json);
  CHECK(reply_format_for("<|start|>assistant<|channel|>final<|message|>").tools == ToolCallSyntax::Harmony);
  CHECK(reply_format_for("<|start|>assistant<|channel|>final<|message|><think>").think_tags == false);
  CHECK(reply_format_for("<|im_start|>").tools == ToolCallSyntax::None);
  CHECK(reply_format_for("<|im_start|>assistant\n<think>\n").think_tags);
  CHECK(prompt_opens_reasoning("<|Assistant|><think>\n"));
  CHECK(!prompt_opens_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
}

TEST_CASE("Hermes / Qwen: calls between <tool_call> tags, with text around them") {
  const ParsedReply r = parse_every_way(options(ToolCallSyntax::Hermes),
                                        "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                                        "<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\"}}\n</tool_call>");
  CHECK(r.content == "Let me check.\n");
  REQUIRE(r.tool_calls.size() == 2);
  CHECK(r.tool_calls[0].name == "get_weather");
  CHECK(r.tool_calls[0].arguments == R"({"city":"Paris"})");
  CHECK(r.tool_calls[1].name == "get_time");
  CHECK(r.tool_calls[0].id != r.tool_calls[1].id);
}

TEST_CASE("a malformed call comes back as content, markers included") {
  const std::string bad = "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": }\n</tool_call>";
  ParsedReply r = parse_every_way(options(ToolCallSyntax::Hermes), bad);
  CHECK(r.content == bad);
  CHECK(r.tool_calls.empty());
  r = parse_every_way(options(ToolCallSyntax::Hermes), "<tool_call>{\"arguments\": {}}</tool_call>");  // no name
  CHECK(r.content == "<tool_call>{\"arguments\": {}}</tool_call>");
  r = parse_every_way(options(ToolCallSyntax::Hermes), "x <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1");  // cut off
  CHECK(r.content == "x <tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1");
  r = parse_every_way(options(ToolCallSyntax::Hermes), "<tool_call>{\"name\": \"f\", \"arguments\": \"not json\"}</tool_call>");
  CHECK(r.tool_calls.empty());
}

TEST_CASE("an unclosed call at the end still counts when its JSON is whole") {
  const ParsedReply r = parse_every_way(options(ToolCallSyntax::Hermes), "<tool_call>\n{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}\n");
  REQUIRE(r.tool_calls.size() == 1);
  CHECK(r.tool_calls[0].arguments == R"({"a": 1})");  // a quoted object is passed as written
  CHECK(r.content.empty());
}

TEST_CASE("without tools, tool-call text is the answer") {
  ReplyParserOptions o = options(ToolCallSyntax::Hermes);
  o.parse_tools = false;
  const std::string text = "<tool_call>{\"name\": \"f\", \"arguments\": {}}</tool_call>";
  CHECK(parse_every_way(o, text).content == text);
}

TEST_CASE("Llama 3: a reply that is a JSON call, with or without <|python_tag|>") {
  ParsedReply r = parse_every_way(options(ToolCallSyntax::Llama3Json),
                                  "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}; {\"name\": \"f\", \"parameters\": {}}");
  REQUIRE(r.tool_calls.size() == 2);
  CHECK(r.tool_calls[0].arguments == R"({"city":"Paris"})");
  CHECK(r.tool_calls[1].arguments == "{}");
  CHECK(r.content.empty());
  r = parse_every_way(options(ToolCallSyntax::Llama3Json), "<|python_tag|>{\"name\": \"f\", \"parameters\": {\"x\": [1, \"}\"]}}");
  REQUIRE(r.tool_calls.size() == 1);
  CHECK(r.tool_calls[0].arguments == R"({"x":[1,"}"]})");
  r = parse_every_way(options(ToolCallSyntax::Llama3Json), "{\"answer\": 42} is JSON");  // not a call
  CHECK(r.content == "{\"answer\": 42} is JSON");
  r = parse_every_way(options(ToolCallSyntax::Llama3Json), "Use {braces} freely");
  CHECK(r.content == "Use {braces} freely");
}

TEST_CASE("Mistral: [TOOL_CALLS] with a JSON array, and the name[ARGS] form") {
  ParsedReply r = parse_every_way(options(ToolCallSyntax::Mistral),
                                  "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, {\"name\": \"g\", \"arguments\": {}}]");
  REQUIRE(r.tool_calls.size() == 2);
  CHECK(r.tool_calls[1].name == "g");
  r = parse_every_way(options(ToolCallSyntax::Mistral), "Sure.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Paris\"}[TOOL_CALLS]g[ARGS]{}");
  CHECK(r.content == "Sure.");
  REQUIRE(r.tool_calls.size() == 2);
  CHECK(r.tool_calls[0].arguments == R"({"city":"Paris"})");
  r = parse_every_way(options(ToolCallSyntax::Mistral), "[TOOL_CALLS][{\"name\": 3}]");
  CHECK(r.content == "[TOOL_CALLS][{\"name\": 3}]");
}

TEST_CASE("gpt-oss Harmony: analysis is reasoning, final the answer, functions.NAME a call") {
  ParsedReply r = parse_every_way(options(ToolCallSyntax::Harmony),
                                  "<|channel|>analysis<|message|>Need the weather.<|end|><|start|>assistant<|channel|>commentary "
                                  "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>");
  CHECK(r.reasoning == "Need the weather.");
  CHECK(r.content.empty());
  REQUIRE(r.tool_calls.size() == 1);
  CHECK(r.tool_calls[0].name == "get_weather");
  CHECK(r.tool_calls[0].arguments == R"({"city":"Paris"})");
  r = parse_every_way(options(ToolCallSyntax::Harmony),
                      "<|channel|>analysis<|message|>Think.<|end|><|start|>assistant<|channel|>final<|message|>Hello <|there|>!");
  CHECK(r.reasoning == "Think.");
  CHECK(r.content == "Hello <|there|>!");
  r = parse_every_way(options(ToolCallSyntax::Harmony), "<|channel|>commentary to=functions.f<|message|>{oops<|call|>");
  CHECK(r.content == "<|channel|>commentary to=functions.f<|message|>{oops<|call|>");
  r = parse_every_way(options(ToolCallSyntax::Harmony), "plain text, no header");
  CHECK(r.content == "plain text, no header");
}

TEST_CASE("<think> reasoning: opened by the reply or by the prompt") {
  ParsedReply r = parse_every_way(options(ToolCallSyntax::None, true), "<think>\nThe user greets.\n</think>\n\nHello!");
  CHECK(r.reasoning == "\nThe user greets.\n");
  CHECK(r.content == "Hello!");
  r = parse_every_way(options(ToolCallSyntax::None, true, true), "Pondering</think>Answer");
  CHECK(r.reasoning == "Pondering");
  CHECK(r.content == "Answer");
  r = parse_every_way(options(ToolCallSyntax::None, true, true), "Never closed");
  CHECK(r.reasoning == "Never closed");
  CHECK(r.content.empty());
  r = parse_every_way(options(ToolCallSyntax::None, true), "No reasoning, but <think> later");
  CHECK(r.content == "No reasoning, but <think> later");
  r = parse_every_way(options(ToolCallSyntax::None, false), "<think>x</think>y");  // not a thinking template
  CHECK(r.content == "<think>x</think>y");
}

TEST_CASE("Qwen3: reasoning, then a call") {
  const ParsedReply r = parse_every_way(options(ToolCallSyntax::Hermes, true),
                                        "<think>\nI should call it.\n</think>\n\n<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": \"é\"}}\n</tool_call>");
  CHECK(r.reasoning == "\nI should call it.\n");
  CHECK(r.content.empty());
  REQUIRE(r.tool_calls.size() == 1);
  CHECK(r.tool_calls[0].arguments == "{\"a\":\"é\"}");
}

TEST_CASE("a forced call's opening, written by the prompt, is read as the reply's start") {
  for (ToolCallSyntax s : {ToolCallSyntax::Hermes, ToolCallSyntax::Llama3Json, ToolCallSyntax::Mistral, ToolCallSyntax::Harmony}) {
    CAPTURE(syntax_name(s));
    ReplyParserOptions o = options(s);
    o.prefill = forced_call_opening(s, "get_weather");
    const std::string rest = s == ToolCallSyntax::Harmony ? "\"city\": \"Paris\"}<|call|>"
                             : s == ToolCallSyntax::Hermes ? "\"city\": \"Paris\"}}\n</tool_call>"
                             : s == ToolCallSyntax::Mistral ? "\"city\": \"Paris\"}}]"
                                                             : "\"city\": \"Paris\"}}";
    const ParsedReply r = parse_every_way(o, rest);
    REQUIRE(r.tool_calls.size() == 1);
    CHECK(r.tool_calls[0].name == "get_weather");
    CHECK(r.tool_calls[0].arguments == R"({"city":"Paris"})");
    CHECK(r.content.empty());
  }
}

TEST_CASE("marker tails and JSON value ends") {
  CHECK(marker_prefix_tail("abc<tool_c", {"<tool_call>"}) == 7);
  CHECK(marker_prefix_tail("abc<tool_call>", {"<tool_call>"}) == 0);  // whole markers are found, not held
  CHECK(marker_prefix_tail("abc", {"<tool_call>"}) == 0);
  CHECK(json_value_end(R"({"a": "}"} tail)", 0) == 10);
  CHECK(json_value_end(R"({"a": [1, 2)", 0) == std::string_view::npos);
  CHECK(json_value_end("}", 0) == std::string_view::npos);
}
