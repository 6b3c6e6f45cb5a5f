#include "template/tool_call.h"

#include <random>

#include "util/error.h"
#include "util/json.h"

namespace ember {
namespace {

constexpr size_t kMaxCalls = 64;  // in one reply; more is no call the client could want

std::optional<json::Value> parse_json(std::string_view text) {
  try {
    return json::parse(text, "tool call");
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::string trim(std::string_view s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string_view::npos) return {};
  const size_t b = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(a, b - a + 1));
}

// Arguments as an object, or as a string holding an object (some models quote them).
std::optional<std::string> arguments_text(const json::Value* args) {
  if (!args || args->is_null()) return std::string("{}");
  if (args->is_object()) return args->dump(-1, ' ', false, json::Value::error_handler_t::replace);
  if (args->is_string()) {
    const std::optional<json::Value> inner = parse_json(json::as_string(*args));
    if (inner && inner->is_object()) return json::as_string(*args);
  }
  return std::nullopt;
}

// {"name": ..., "arguments"|"parameters": {...}} as one call.
std::optional<ToolCall> call_of(const json::Value& v) {
  if (!v.is_object()) return std::nullopt;
  const json::Value* name = json::find(v, "name");
  if (!name || !name->is_string() || json::as_string(*name).empty()) return std::nullopt;
  const json::Value* args = json::find(v, "arguments");
  if (!args) args = json::find(v, "parameters");
  std::optional<std::string> text = arguments_text(args);
  if (!text) return std::nullopt;
  return ToolCall{new_tool_call_id(), json::as_string(*name), std::move(*text)};
}

// JSON objects one after another, separated by whitespace or ';'.
std::optional<std::vector<ToolCall>> object_sequence(std::string_view body) {
  std::vector<ToolCall> calls;
  size_t at = 0;
  for (;;) {
    at = body.find_first_not_of(" \t\r\n;", at);
    if (at == std::string_view::npos) break;
    if (body[at] != '{' || calls.size() >= kMaxCalls) return std::nullopt;
    const size_t end = json_value_end(body, at);
    if (end == std::string_view::npos) return std::nullopt;
    const std::optional<json::Value> v = parse_json(body.substr(at, end - at));
    std::optional<ToolCall> call = v ? call_of(*v) : std::nullopt;
    if (!call) return std::nullopt;
    calls.push_back(std::move(*call));
    at = end;
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

std::optional<std::vector<ToolCall>> mistral_calls(std::string_view body) {
  std::vector<ToolCall> calls;
  constexpr std::string_view kSeparator = "[TOOL_CALLS]", kArgs = "[ARGS]";
  for (size_t from = 0; from <= body.size();) {
    size_t to = body.find(kSeparator, from);
    if (to == std::string_view::npos) to = body.size();
    const std::string part = trim(body.substr(from, to - from));
    from = to + kSeparator.size();
    if (part.empty()) continue;
    if (calls.size() >= kMaxCalls) return std::nullopt;
    if (part.front() == '[') {  // the JSON array of the older tokenizers
      const std::optional<json::Value> v = parse_json(part);
      if (!v || !v->is_array() || json::as_array(*v).empty()) return std::nullopt;
      for (const json::Value& item : json::as_array(*v)) {
        std::optional<ToolCall> call = call_of(item);
        if (!call || calls.size() >= kMaxCalls) return std::nullopt;
        calls.push_back(std::move(*call));
      }
    } else {  // name[ARGS]{...} of the newer ones
      const size_t args = part.find(kArgs);
      if (args == std::string::npos) return std::nullopt;
      std::optional<ToolCall> call = read_named_call(trim(std::string_view(part).substr(0, args)), std::string_view(part).substr(args + kArgs.size()));
      if (!call) return std::nullopt;
      calls.push_back(std::move(*call));
    }
  }
  if (calls.empty()) return std::nullopt;
  return calls;
}

}  // namespace

std::string new_tool_call_id() {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  static thread_local std::mt19937_64 rng(std::random_device{}());
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return id;
}

size_t json_value_end(std::string_view text, size_t from) {
  size_t depth = 0;
  bool in_string = false;
  for (size_t i = from; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > json::kMaxDepth) return std::string_view::npos;
    } else if (c == '}' || c == ']') {
      if (depth == 0) return std::string_view::npos;
      if (--depth == 0) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::optional<std::vector<ToolCall>> read_tool_calls(ToolCallSyntax syntax, std::string_view body) {
  switch (syntax) {
    case ToolCallSyntax::Hermes: {
      const std::optional<json::Value> v = parse_json(trim(body));
      std::optional<ToolCall> call = v ? call_of(*v) : std::nullopt;
      if (!call) return std::nullopt;
      return std::vector<ToolCall>{std::move(*call)};
    }
    case ToolCallSyntax::Llama3Json: return object_sequence(body);
    case ToolCallSyntax::Mistral: return mistral_calls(body);
    case ToolCallSyntax::None:
    case ToolCallSyntax::Harmony: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<ToolCall> read_named_call(std::string_view name, std::string_view arguments) {
  if (name.empty()) return std::nullopt;
  for (char c : name)
    if (c == ' ' || c == '<' || c == '\n' || c == '"') return std::nullopt;
  const std::optional<json::Value> v = parse_json(trim(arguments));
  if (!v || !v->is_object()) return std::nullopt;
  return ToolCall{new_tool_call_id(), std::string(name), v->dump(-1, ' ', false, json::Value::error_handler_t::replace)};
}

}  // namespace ember
