// The grammar of a forced tool call: the model must call one of the given tools, in the
// Hermes format Qwen 2.5/3 (and others) are trained on, with arguments that match the
// tool's parameter schema:
//   <tool_call>
//   {"name": "get_weather", "arguments": {"city": "Paris"}}
//   </tool_call>
// tool_choice "required" passes every tool, a named tool_choice just that one.
#pragma once
#include <span>
#include <string>

#include "util/json.h"

namespace ember::grammar {

struct ToolSchema {
  std::string name;
  json::Value parameters;  // a JSON schema (null or absent: any object)
};

// GBNF text (root rule `root`); with `parallel`, one or more calls separated by newlines.
// Throws what json_schema_to_gbnf throws for a parameter schema it cannot compile.
std::string tool_call_gbnf(std::span<const ToolSchema> tools, bool parallel);

}  // namespace ember::grammar
