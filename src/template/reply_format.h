// How a model writes what is not plain answer text: its tool calls and its reasoning,
// recognised from its chat template's text (the markers the template itself writes), so
// the parser matches what the model was trained to produce.
#pragma once
#include <string>
#include <string_view>

namespace ember {

enum class ToolCallSyntax {
  None,       // the template shows no tool-call format
  Hermes,     // Qwen 2.5/3, Hermes: <tool_call>{"name": ..., "arguments": {...}}</tool_call>
  Llama3Json, // Llama 3.x: {"name": ..., "parameters": {...}}, optionally after <|python_tag|>
  Mistral,    // [TOOL_CALLS][{"name": ..., "arguments": {...}}] or [TOOL_CALLS]name[ARGS]{...}
  Harmony,    // gpt-oss: <|channel|>commentary to=functions.NAME ... <|message|>{args}<|call|>
};

struct ReplyFormat {
  ToolCallSyntax tools = ToolCallSyntax::None;
  bool think_tags = false;  // <think>…</think> reasoning (Qwen3, DeepSeek-R1); Harmony uses channels
};

ReplyFormat reply_format_for(std::string_view template_text);
const char* syntax_name(ToolCallSyntax syntax);

// The text that starts a call of `name` (empty: of some tool) in this syntax, written at the
// end of the prompt to make a forced tool_choice ("required" or a named function) all but
// certain without constrained decoding. Empty for ToolCallSyntax::None.
std::string forced_call_opening(ToolCallSyntax syntax, std::string_view name);

// True when the rendered prompt ends inside an open <think> (a template whose generation
// prompt opens the reasoning, as DeepSeek-R1's and some Qwen3 variants do).
bool prompt_opens_reasoning(std::string_view prompt);

}  // namespace ember
