#include "template/reply_format.h"

#include "util/json.h"

namespace ember {

ReplyFormat reply_format_for(std::string_view t) {
  auto has = [&](std::string_view marker) { return t.find(marker) != std::string_view::npos; };
  ReplyFormat f;
  f.think_tags = has("<think>") || has("</think>");
  if (has("<|channel|>") && has("<|message|>")) {
    f.tools = ToolCallSyntax::Harmony;
    f.think_tags = false;  // reasoning is the analysis channel
  } else if (has("<tool_call>")) {
    f.tools = ToolCallSyntax::Hermes;
  } else if (has("[TOOL_CALLS]")) {
    f.tools = ToolCallSyntax::Mistral;
  } else if (has("<|python_tag|>") || (has("<|start_header_id|>") && has("tools"))) {
    f.tools = ToolCallSyntax::Llama3Json;
  }
  return f;
}

const char* syntax_name(ToolCallSyntax syntax) {
  switch (syntax) {
    case ToolCallSyntax::None: return "none";
    case ToolCallSyntax::Hermes: return "hermes";
    case ToolCallSyntax::Llama3Json: return "llama3-json";
    case ToolCallSyntax::Mistral: return "mistral";
    case ToolCallSyntax::Harmony: return "harmony";
  }
  return "none";
}

std::string forced_call_opening(ToolCallSyntax syntax, std::string_view name) {
  // A named call opens its arguments' object too: small models given only `"arguments": `
  // were seen to write a bare number there.
  const std::string quoted = name.empty() ? "\"" : json::quote(name) + ", ";
  switch (syntax) {
    case ToolCallSyntax::None: return {};
    case ToolCallSyntax::Hermes: return "<tool_call>\n{\"name\": " + quoted + (name.empty() ? "" : "\"arguments\": {");
    case ToolCallSyntax::Llama3Json: return "{\"name\": " + quoted + (name.empty() ? "" : "\"parameters\": {");
    case ToolCallSyntax::Mistral: return "[TOOL_CALLS][{\"name\": " + quoted + (name.empty() ? "" : "\"arguments\": {");
    case ToolCallSyntax::Harmony:
      return name.empty() ? "<|channel|>commentary to=functions." : "<|channel|>commentary to=functions." + std::string(name) +
                                                                       " <|constrain|>json<|message|>{";
  }
  return {};
}

bool prompt_opens_reasoning(std::string_view prompt) {
  const size_t end = prompt.find_last_not_of(" \t\r\n");
  if (end == std::string_view::npos) return false;
  const std::string_view trimmed = prompt.substr(0, end + 1);
  constexpr std::string_view kOpen = "<think>";
  return trimmed.size() >= kOpen.size() && trimmed.substr(trimmed.size() - kOpen.size()) == kOpen;
}

}  // namespace ember
