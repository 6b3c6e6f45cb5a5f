#include "grammar/tool_call.h"

#include "grammar/gbnf_text.h"
#include "grammar/json_schema.h"
#include "util/error.h"

namespace ember::grammar {

std::string tool_call_gbnf(std::span<const ToolSchema> tools, bool parallel) {
  if (tools.empty()) fail(ErrorKind::InvalidArgument, "a forced tool call needs at least one tool");
  SchemaCompiler compiler;
  std::string call = "(";
  for (size_t i = 0; i < tools.size(); ++i) {
    const json::Value any_object = json::Value::object({{"type", "object"}});
    const json::Value& params = tools[i].parameters.is_null() ? any_object : tools[i].parameters;
    const std::string args = compiler.compile(params, "tool-args-" + std::to_string(i));
    call += (i ? " | " : "") + gbnf_literal("\"name\"") + " ws \":\" ws " + gbnf_literal(json::quote(tools[i].name)) +
            " ws \",\" ws " + gbnf_literal("\"arguments\"") + " ws \":\" ws " + args;
  }
  call += ")";
  std::string out = "tool-call ::= \"<tool_call>\" \"\\n\"? \"{\" ws " + call + " \"}\" \"\\n\"? \"</tool_call>\"\n";
  out += parallel ? "root ::= tool-call (\"\\n\" tool-call)*\n" : "root ::= tool-call\n";
  return out + compiler.rules();
}

}  // namespace ember::grammar
