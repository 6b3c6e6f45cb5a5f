// The chat-only fields of an OpenAI request, checked: tools, tool_choice,
// parallel_tool_calls, reasoning_effort and chat_template_kwargs, and the shape of the
// messages that carry tool calls and their results. Shared by the server (chat
// completions, and the Responses and Messages APIs translated into it) and `ember batch`.
// Throws Error(InvalidArgument) naming the field.
//
// tool_choice "none" keeps the tools in the prompt, as llama-server and vLLM do by default
// (the model still knows what exists and the prompt's cached prefix stays the same), and
// reads no calls from the reply. "required" and a named function are held to a grammar of
// the tools' parameter schemas where the model writes Hermes calls (completion_request.cpp);
// other syntaxes get the call's opening written into the prompt (reply_format.h's
// forced_call_opening).
// reasoning_effort maps as llama-server maps it: "none" sets the template's
// enable_thinking to false, any other level is passed as the template's reasoning_effort
// (gpt-oss reads it); chat_template_kwargs given by the request win.
#pragma once
#include <string>

#include "util/json.h"

namespace ember {

struct ToolChoice {
  enum class Mode { Auto, None, Required, Named };
  Mode mode = Mode::Auto;
  std::string name;  // Named
};

struct ChatFields {
  json::Value tools;  // null, or a non-empty array of {"type": "function", "function": {...}}
  ToolChoice tool_choice;
  bool parallel_tool_calls = true;
  json::Value template_kwargs = json::Value::object();
  bool wants_calls() const { return !tools.is_null() && tool_choice.mode != ToolChoice::Mode::None; }
  bool forces_call() const { return wants_calls() && tool_choice.mode != ToolChoice::Mode::Auto; }
};

ChatFields read_chat_fields(const json::Value& body);

// messages[i]: role system, developer, user, assistant or tool; content a string, null (an
// assistant turn with tool_calls) or text parts; assistant tool_calls [{id, type
// "function", function {name, arguments (a string)}}]; tool turns a tool_call_id.
void check_chat_messages(const json::Value& messages);

}  // namespace ember
