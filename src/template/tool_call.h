// One tool call as the OpenAI API carries it, and reading the JSON a model writes for it.
// A call the model wrote wrongly is not an error: the readers return nothing and the
// caller gives the text back as content.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "template/reply_format.h"

namespace ember {

struct ToolCall {
  std::string id;         // "call_" + 24 random letters and digits
  std::string name;
  std::string arguments;  // a JSON object, as text (OpenAI's "arguments" string)
  bool operator==(const ToolCall&) const = default;
};

std::string new_tool_call_id();

// The calls in the text between a syntax's call markers (the markers themselves removed),
// or nothing when it is not well formed. Hermes: one {"name", "arguments"} object; Llama 3:
// one or more {"name", "parameters"} objects separated by ';' or whitespace; Mistral: a
// JSON array of {"name", "arguments"}, or name[ARGS]{...} pieces separated by [TOOL_CALLS].
std::optional<std::vector<ToolCall>> read_tool_calls(ToolCallSyntax syntax, std::string_view body);

// Harmony's arguments: the message body of a call already named by its header.
std::optional<ToolCall> read_named_call(std::string_view name, std::string_view arguments);

// The end of the JSON object or array starting at text[from] (one past its closing
// bracket), or npos when it does not close. Only brackets and strings are looked at.
size_t json_value_end(std::string_view text, size_t from);

}  // namespace ember
